import assert from "node:assert/strict";
import {
  defaultAllowedHosts,
  isLoopbackHostname,
  OriginPolicy,
  parseAllowedHosts,
  parseAllowedOrigins,
} from "../../server/mcp/origin.ts";

function request(headers: Record<string, string>, url = "http://127.0.0.1:7777/v1/mcp"): Request {
  return new Request(url, { method: "POST", headers });
}

Deno.test("loopback host names are recognised, look-alikes are not", () => {
  for (const name of ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "[::1]", "::1"]) {
    assert.equal(isLoopbackHostname(name), true, name);
  }
  for (
    const name of [
      "localhost.attacker.example",
      "127.0.0.1.nip.io",
      "128.0.0.1",
      "127.0.0.256",
      "0.0.0.0",
      "[::]",
      "attacker.example",
    ]
  ) {
    assert.equal(isLoopbackHostname(name), false, name);
  }
});

Deno.test("the default policy admits loopback origins at any port and nothing else", () => {
  const policy = new OriginPolicy();
  for (
    const origin of [
      "http://localhost:6274",
      "http://127.0.0.1:7777",
      "https://localhost",
      "http://[::1]:3000",
    ]
  ) {
    assert.equal(policy.isAllowedOrigin(origin), true, origin);
  }
  for (
    const origin of [
      "https://attacker.example",
      "http://localhost.attacker.example",
      "null",
      "file://",
      "vscode-webview://abc",
      "http://localhost:6274/path",
      "",
    ]
  ) {
    assert.equal(policy.isAllowedOrigin(origin), false, origin);
  }
});

Deno.test("a request without Origin passes; a foreign Origin gets 403 originNotAllowed", () => {
  const policy = new OriginPolicy();
  assert.equal(policy.check(request({})), null);
  const refusal = policy.check(request({ origin: "https://attacker.example" }));
  assert.equal(refusal?.status, 403);
  assert.equal(refusal?.code, "originNotAllowed");
  assert.equal(refusal?.extra?.header, "origin");
});

Deno.test("a foreign Host (DNS rebinding) gets 403 under the loopback host list", () => {
  const policy = new OriginPolicy();
  assert.equal(policy.check(request({ host: "localhost:7777" })), null);
  assert.equal(policy.check(request({ host: "[::1]:7777" })), null);
  const refusal = policy.check(request({ host: "rebind.attacker.example:7777" }));
  assert.equal(refusal?.status, 403);
  assert.equal(refusal?.extra?.header, "host");
  assert.equal(policy.check(request({ host: "localhost:notaport" }))?.status, 403);
  assert.equal(policy.check(request({}, "http://attacker.example:7777/v1/mcp"))?.status, 403);
});

Deno.test("configured origins are exact; the list replaces the default", () => {
  const policy = new OriginPolicy({ allowedOrigins: ["https://ide.example.com"] });
  assert.equal(policy.isAllowedOrigin("https://ide.example.com"), true);
  assert.equal(policy.isAllowedOrigin("https://IDE.example.com"), true);
  assert.equal(policy.isAllowedOrigin("http://ide.example.com"), false);
  assert.equal(policy.isAllowedOrigin("https://ide.example.com:8443"), false);
  assert.equal(policy.isAllowedOrigin("http://localhost:6274"), false);
  assert.equal(new OriginPolicy({ allowedOrigins: [] }).isAllowedOrigin("http://localhost"), false);
});

Deno.test("allowed hosts accept names, loopback and the * wildcard", () => {
  const named = new OriginPolicy({ allowedHosts: ["mcp.example.com"] });
  assert.equal(named.isAllowedHost("mcp.example.com"), true);
  assert.equal(named.isAllowedHost("MCP.example.com:443"), true);
  assert.equal(named.isAllowedHost("localhost:7777"), false);
  const any = new OriginPolicy({ allowedHosts: ["*"] });
  assert.equal(any.isAllowedHost("whatever.example:1"), true);
  assert.deepEqual(defaultAllowedHosts("127.0.0.1"), ["loopback"]);
  assert.deepEqual(defaultAllowedHosts("::1"), ["loopback"]);
  assert.deepEqual(defaultAllowedHosts("0.0.0.0"), ["*"]);
});

Deno.test("allow-lists parse from comma-separated text and fail closed on typos", () => {
  assert.deepEqual(parseAllowedOrigins(" loopback , https://ide.example.com/ ,"), [
    "loopback",
    "https://ide.example.com",
  ]);
  assert.deepEqual(parseAllowedHosts("loopback,*,mcp.example.com"), [
    "loopback",
    "*",
    "mcp.example.com",
  ]);
  assert.throws(() => parseAllowedOrigins("ide.example.com"), TypeError);
  assert.throws(() => parseAllowedOrigins("https://ide.example.com/path"), TypeError);
  assert.throws(() => parseAllowedOrigins("null"), TypeError);
  assert.throws(() => parseAllowedHosts("https://mcp.example.com"), TypeError);
  assert.throws(() => new OriginPolicy({ allowedOrigins: ["*"] }), TypeError);
});
