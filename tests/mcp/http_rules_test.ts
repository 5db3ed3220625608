/**
 * Black-box tests of the rules of `/v1/mcp` over raw HTTP against the real `serve`
 * (docs/mcp.md "The endpoint's rules").
 */
import assert from "node:assert/strict";
import { call, issuePrincipal } from "../server/_http.ts";
import { startServer } from "../support/server.ts";
import {
  answerOf,
  initializeMessage,
  mcpFetch,
  openSession,
  PROTOCOL_VERSION,
  rawHttp,
  readEvents,
  rpc,
} from "./_mcp.ts";
import { toolsFor } from "./_tools.ts";

const MAX_BODY = 65_536;

// deno-lint-ignore no-explicit-any
async function json(response: Response): Promise<any> {
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    assert.fail(`not JSON (${response.status}): ${text}`);
  }
}

async function assertRuntimeError(response: Response, status: number, code: string) {
  const body = await json(response);
  assert.equal(response.status, status, JSON.stringify(body));
  assert.equal(body.error?.code, code, JSON.stringify(body));
  assert.equal(typeof body.error.correlationId, "string");
  assert.equal(response.headers.get("x-content-type-options"), "nosniff");
  return body;
}

async function assertJsonRpcError(response: Response, status: number, code: number) {
  const body = await json(response);
  assert.equal(response.status, status, JSON.stringify(body));
  assert.equal(body.jsonrpc, "2.0");
  assert.equal(body.id, null);
  assert.equal(body.error?.code, code, JSON.stringify(body));
  return body;
}

Deno.test("mcp: the endpoint's own rules over raw HTTP against the real serve", async (t) => {
  const server = await startServer({ args: ["--max-body-bytes", String(MAX_BODY)] });
  const { url, bearer } = server;
  try {
    const sessionId = await openSession(url, bearer);
    const reader = await issuePrincipal(url, bearer, { capabilities: ["session:read"] });

    await t.step("a request without Origin (IDE, agent, SDK) is served", async () => {
      const response = await mcpFetch(url, { bearer, sessionId, body: rpc(1, "ping") });
      assert.equal(response.status, 200);
      assert.deepEqual((await answerOf(response, 1)).result, {});
    });

    await t.step("a foreign Origin gets 403 before authentication", async () => {
      for (const who of [null, bearer]) {
        const response = await mcpFetch(url, {
          bearer: who,
          body: initializeMessage(),
          headers: { origin: "https://attacker.example" },
        });
        await assertRuntimeError(response, 403, "originNotAllowed");
        assert.equal(response.headers.get("access-control-allow-origin"), null);
      }
      const preflight = await fetch(`${url}/v1/mcp`, {
        method: "OPTIONS",
        headers: { origin: "https://attacker.example", "access-control-request-method": "POST" },
      });
      await assertRuntimeError(preflight, 403, "originNotAllowed");
    });

    await t.step(
      "a loopback Origin is served with CORS headers; its preflight passes",
      async () => {
        const origin = "http://localhost:6274";
        const response = await mcpFetch(url, {
          bearer,
          sessionId,
          body: rpc(2, "ping"),
          headers: { origin },
        });
        assert.equal(response.status, 200);
        assert.equal(response.headers.get("access-control-allow-origin"), origin);
        assert.match(response.headers.get("access-control-expose-headers") ?? "", /mcp-session-id/);
        await answerOf(response, 2);
        const preflight = await fetch(`${url}/v1/mcp`, {
          method: "OPTIONS",
          headers: { origin, "access-control-request-method": "POST" },
        });
        assert.equal(preflight.status, 204);
        assert.equal(preflight.headers.get("access-control-allow-origin"), origin);
        assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /authorization/);
        assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /mcp-session-id/);
        await preflight.body?.cancel();
      },
    );

    await t.step("a foreign Host on the loopback server (DNS rebinding) gets 403", async () => {
      const port = new URL(url).port;
      const message = JSON.stringify(initializeMessage());
      const common: [string, string][] = [
        ["authorization", `Bearer ${bearer}`],
        ["accept", "application/json, text/event-stream"],
        ["content-type", "application/json"],
      ];
      const rebound = await rawHttp(
        url,
        "POST /v1/mcp HTTP/1.1",
        [["host", `rebind.attacker.example:${port}`], ...common],
        message,
      );
      assert.equal(rebound.status, 403, rebound.body);
      assert.match(rebound.body, /originNotAllowed/);
      const loopback = await rawHttp(
        url,
        "POST /v1/mcp HTTP/1.1",
        [["host", `localhost:${port}`], ...common],
        message,
      );
      assert.equal(loopback.status, 200, loopback.body);
      const opened = /^mcp-session-id: *(\S+)/im.exec(loopback.head)?.[1];
      assert.ok(opened);
      const ended = await mcpFetch(url, { method: "DELETE", bearer, sessionId: opened });
      assert.equal(ended.status, 200);
      await ended.body?.cancel();
    });

    await t.step("no bearer, a bad one, or two Authorization headers are refused", async () => {
      const missing = await mcpFetch(url, { bearer: null, body: initializeMessage() });
      await assertRuntimeError(missing, 401, "authenticationFailed");
      assert.match(missing.headers.get("www-authenticate") ?? "", /^Bearer/);
      const unknown = await mcpFetch(url, { bearer: `art_${"x".repeat(43)}`, sessionId });
      await assertRuntimeError(unknown, 401, "authenticationFailed");
      const port = new URL(url).port;
      const twice = await rawHttp(url, "POST /v1/mcp HTTP/1.1", [
        ["host", `127.0.0.1:${port}`],
        ["authorization", `Bearer ${bearer}`],
        ["authorization", `Bearer ${bearer}`],
        ["accept", "application/json, text/event-stream"],
        ["content-type", "application/json"],
      ], JSON.stringify(initializeMessage()));
      assert.equal(twice.status, 400, twice.body);
      assert.match(twice.body, /duplicateHeader/);
    });

    await t.step("x-correlation-id and x-deadline are optional, validated and echoed", async () => {
      const correlationId = crypto.randomUUID();
      const deadline = new Date(Date.now() + 60_000).toISOString();
      const echoed = await mcpFetch(url, {
        bearer,
        sessionId,
        body: rpc(3, "ping"),
        headers: { "x-correlation-id": correlationId, "x-deadline": deadline },
      });
      assert.equal(echoed.status, 200);
      assert.equal(echoed.headers.get("x-correlation-id"), correlationId);
      assert.equal(echoed.headers.get("x-deadline"), deadline);
      await answerOf(echoed, 3);

      const plain = await mcpFetch(url, { bearer, sessionId, body: rpc(4, "ping") });
      assert.equal(plain.headers.get("x-correlation-id"), null);
      await answerOf(plain, 4);

      const badId = await mcpFetch(url, {
        bearer,
        sessionId,
        body: rpc(5, "ping"),
        headers: { "x-correlation-id": "not-a-uuid" },
      });
      const body = await assertRuntimeError(badId, 400, "invalidHeader");
      assert.equal(body.error.header, "x-correlation-id");

      const past = await mcpFetch(url, {
        bearer,
        sessionId,
        body: rpc(6, "ping"),
        headers: { "x-deadline": new Date(Date.now() - 1000).toISOString() },
      });
      await assertRuntimeError(past, 408, "deadlineExceeded");
      const far = await mcpFetch(url, {
        bearer,
        sessionId,
        body: rpc(7, "ping"),
        headers: { "x-deadline": new Date(Date.now() + 3_600_000).toISOString() },
      });
      await assertRuntimeError(far, 400, "invalidHeader");
    });

    await t.step("a bad Accept gets 406", async () => {
      const post = await mcpFetch(url, {
        bearer,
        sessionId,
        body: rpc(8, "ping"),
        headers: { accept: "application/json" },
      });
      await assertJsonRpcError(post, 406, -32000);
      const get = await mcpFetch(url, {
        method: "GET",
        bearer,
        sessionId,
        headers: { accept: "application/json" },
      });
      await assertJsonRpcError(get, 406, -32000);
    });

    await t.step(
      "an unknown MCP-Protocol-Version gets 400; any supported one is accepted",
      async () => {
        const unsupported = await mcpFetch(url, {
          bearer,
          sessionId,
          body: rpc(9, "ping"),
          headers: { "mcp-protocol-version": "1999-01-01" },
        });
        await assertJsonRpcError(unsupported, 400, -32000);
        // Negotiated on 2025-11-25; the SDK's own server accepts any supported revision.
        const other = await mcpFetch(url, {
          bearer,
          sessionId,
          body: rpc(10, "ping"),
          headers: { "mcp-protocol-version": "2025-06-18" },
        });
        assert.equal(other.status, 200);
        assert.deepEqual((await answerOf(other, 10)).result, {});
      },
    );

    await t.step("an unknown session id gets 404", async () => {
      const response = await mcpFetch(url, {
        bearer,
        sessionId: "no-such-session",
        body: rpc(11, "ping"),
      });
      const body = await assertJsonRpcError(response, 404, -32001);
      const other = await mcpFetch(url, {
        bearer: reader.bearer,
        sessionId: "no-such-session",
        body: rpc(11, "ping"),
      });
      assert.deepEqual(await assertJsonRpcError(other, 404, -32001), body);
    });

    await t.step("another principal's session id gets the same 404 and stays intact", async () => {
      for (const method of ["POST", "GET", "DELETE"]) {
        const response = await mcpFetch(url, {
          method,
          bearer: reader.bearer,
          sessionId,
          body: method === "POST" ? rpc(12, "tools/list") : undefined,
        });
        await assertJsonRpcError(response, 404, -32001);
      }
      const owner = await mcpFetch(url, { bearer, sessionId, body: rpc(13, "ping") });
      assert.equal(owner.status, 200);
      await answerOf(owner, 13);
    });

    await t.step("GET and DELETE need a session id; a deleted session is gone", async () => {
      const get = await mcpFetch(url, { method: "GET", bearer });
      await assertJsonRpcError(get, 400, -32000);
      const notInit = await mcpFetch(url, { bearer, body: rpc(14, "tools/list") });
      await assertJsonRpcError(notInit, 400, -32000);
      const doomed = await openSession(url, bearer);
      const ended = await mcpFetch(url, { method: "DELETE", bearer, sessionId: doomed });
      assert.equal(ended.status, 200);
      await ended.body?.cancel();
      const after = await mcpFetch(url, { bearer, sessionId: doomed, body: rpc(15, "ping") });
      await assertJsonRpcError(after, 404, -32001);
    });

    await t.step("other methods get 405 with Allow", async () => {
      const response = await mcpFetch(url, { method: "PUT", bearer, sessionId, body: "{}" });
      await assertRuntimeError(response, 405, "methodNotAllowed");
      assert.equal(response.headers.get("allow"), "GET, POST, DELETE");
    });

    await t.step("a body over the limit gets 413, declared or streamed", async () => {
      const big = JSON.stringify(rpc(16, "ping", { pad: "x".repeat(MAX_BODY) }));
      const declared = await mcpFetch(url, { bearer, sessionId, body: big });
      await assertRuntimeError(declared, 413, "payloadTooLarge");
      const opening = await mcpFetch(url, { bearer, body: big });
      await assertRuntimeError(opening, 413, "payloadTooLarge");
      const bytes = new TextEncoder().encode(big);
      const streamed = await mcpFetch(url, {
        bearer,
        sessionId,
        body: new ReadableStream<Uint8Array>({
          start(controller) {
            for (let at = 0; at < bytes.length; at += 8192) {
              controller.enqueue(bytes.subarray(at, at + 8192));
            }
            controller.close();
          },
        }),
      });
      await assertRuntimeError(streamed, 413, "payloadTooLarge");
      const fits = await mcpFetch(url, {
        bearer,
        sessionId,
        body: rpc(17, "ping", { pad: "x".repeat(MAX_BODY - 200) }),
      });
      assert.equal(fits.status, 200);
      await answerOf(fits, 17);
    });

    await t.step("malformed JSON and malformed JSON-RPC get 400 parse errors", async () => {
      const broken = await mcpFetch(url, { bearer, sessionId, body: '{"jsonrpc": "2.0", ' });
      await assertJsonRpcError(broken, 400, -32700);
      const notRpc = await mcpFetch(url, { bearer, sessionId, body: { hello: "world" } });
      await assertJsonRpcError(notRpc, 400, -32700);
      const brokenInit = await mcpFetch(url, { bearer, body: "[" });
      await assertJsonRpcError(brokenInit, 400, -32700);
      const wrongType = await mcpFetch(url, {
        bearer,
        sessionId,
        body: rpc(18, "ping"),
        headers: { "content-type": "text/plain" },
      });
      await assertJsonRpcError(wrongType, 415, -32000);
    });

    await t.step("a revoked bearer is refused on its next message inside its session", async () => {
      const holder = await issuePrincipal(url, bearer, { capabilities: ["session:read"] });
      const held = await openSession(url, holder.bearer);
      const before = await mcpFetch(url, {
        bearer: holder.bearer,
        sessionId: held,
        body: rpc(19, "tools/list"),
      });
      assert.deepEqual(
        (await answerOf(before, 19)).result.tools.map((tool: { name: string }) => tool.name),
        toolsFor(["session:read"]),
      );
      const revoked = await call(url, "DELETE", `/v1/principals/${holder.principalId}`, {
        bearer,
      });
      assert.equal(revoked.status, 204, revoked.text);
      const after = await mcpFetch(url, {
        bearer: holder.bearer,
        sessionId: held,
        body: rpc(20, "tools/list"),
      });
      await assertRuntimeError(after, 401, "authenticationFailed");
      assert.match(after.headers.get("www-authenticate") ?? "", /^Bearer/);
    });

    await t.step(
      "an expired bearer is refused on its next message inside its session",
      async () => {
        const soon = new Date(Date.now() + 1500).toISOString();
        const holder = await issuePrincipal(url, bearer, {
          capabilities: ["session:read"],
          expiresAt: soon,
        });
        const held = await openSession(url, holder.bearer);
        await new Promise((resolve) => setTimeout(resolve, Date.parse(soon) - Date.now() + 50));
        const after = await mcpFetch(url, {
          bearer: holder.bearer,
          sessionId: held,
          body: rpc(21, "ping"),
        });
        await assertRuntimeError(after, 401, "tokenExpired");
      },
    );

    await t.step("an interrupted answer is replayed from Last-Event-ID", async () => {
      const call = rpc(22, "tools/call", { name: "runtime_info", arguments: {} });
      const response = await mcpFetch(url, { bearer, sessionId, body: call });
      assert.equal(response.status, 200);
      const [priming] = await readEvents(response, () => true);
      assert.ok(priming.id !== null, "the stream starts with a priming event id");
      assert.equal(priming.data, "");
      const resumed = await mcpFetch(url, {
        method: "GET",
        bearer,
        sessionId,
        headers: { "last-event-id": priming.id },
      });
      assert.equal(resumed.status, 200);
      const answer = await answerOf(resumed, 22);
      assert.equal(answer.result.structuredContent.principalId, server.bootstrap.principalId);

      const foreign = await mcpFetch(url, {
        method: "GET",
        bearer: reader.bearer,
        sessionId,
        headers: { "last-event-id": priming.id },
      });
      await assertJsonRpcError(foreign, 404, -32001);
    });

    await t.step("a session opened on 2025-06-18 accepts any supported revision", async () => {
      const response = await mcpFetch(url, {
        bearer,
        body: initializeMessage("2025-06-18"),
      });
      const older = response.headers.get("mcp-session-id");
      assert.equal((await answerOf(response, 0)).result.protocolVersion, "2025-06-18");
      assert.ok(older !== null);
      const latest = await mcpFetch(url, {
        bearer,
        sessionId: older,
        body: rpc(23, "ping"),
        headers: { "mcp-protocol-version": PROTOCOL_VERSION },
      });
      assert.equal(latest.status, 200);
      await answerOf(latest, 23);
      const matching = await mcpFetch(url, {
        bearer,
        sessionId: older,
        body: rpc(24, "ping"),
        headers: { "mcp-protocol-version": "2025-06-18" },
      });
      assert.equal(matching.status, 200);
      await answerOf(matching, 24);
    });
  } finally {
    await server.stop();
  }
});

Deno.test("mcp: --mcp-allowed-origins replaces the loopback default", async () => {
  const server = await startServer({
    args: ["--mcp-allowed-origins", "https://ide.example.com"],
  });
  try {
    const allowed = await mcpFetch(server.url, {
      bearer: server.bearer,
      body: initializeMessage(),
      headers: { origin: "https://ide.example.com" },
    });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers.get("access-control-allow-origin"), "https://ide.example.com");
    await answerOf(allowed, 0);
    const loopback = await mcpFetch(server.url, {
      bearer: server.bearer,
      body: initializeMessage(),
      headers: { origin: "http://localhost:6274" },
    });
    await assertRuntimeError(loopback, 403, "originNotAllowed");
  } finally {
    await server.stop();
  }
});

Deno.test("mcp: a malformed allowed-origin list stops serve with a usage error", async () => {
  await assert.rejects(
    startServer({ args: ["--mcp-allowed-origins", "ide.example.com"] }),
    /exited with 2[\s\S]*mcp-allowed-origins/,
  );
});
