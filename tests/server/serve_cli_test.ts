/**
 * Black-box tests of the `serve` command line: usage errors exit 2, runtime failures exit 1,
 * both with one line on stderr; the flags and the store variable take effect.
 */
import assert from "node:assert/strict";
import { createTestBootstrap, SERVE_PERMISSIONS, startServer } from "../support/server.ts";
import { assertError, call, principalBody } from "./_http.ts";

const MAIN = new URL("../../cli/main.ts", import.meta.url).href;

async function runServe(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const home = await Deno.makeTempDir({ prefix: "automation-runtime-cli-" });
  try {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", ...SERVE_PERMISSIONS, MAIN, "serve", ...args],
      env: {
        PATH: Deno.env.get("PATH") ?? "",
        HOME: home,
        XDG_CONFIG_HOME: `${home}/.config`,
        DENO_DIR: Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME")}/.cache/deno`,
        NO_COLOR: "1",
        ...env,
      },
      clearEnv: true,
      stdin: "null",
    }).output();
    return {
      code: output.code,
      stdout: new TextDecoder().decode(output.stdout),
      stderr: new TextDecoder().decode(output.stderr),
    };
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

function bootstrapEnv(): Record<string, string> {
  const bootstrap = createTestBootstrap();
  return {
    AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: bootstrap.token,
    AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: bootstrap.principalId,
    AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: bootstrap.capabilities.join(","),
    AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: bootstrap.expiresAt,
  };
}

function oneLine(stderr: string): string {
  const lines = stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, `expected one stderr line, got:\n${stderr}`);
  return lines[0];
}

Deno.test("serve --help prints the usage and exits 0", async () => {
  const result = await runServe(["--help"]);
  assert.equal(result.code, 0);
  assert.match(result.stdout, /Usage: automation-runtime serve/);
  assert.match(result.stdout, /--max-body-bytes/);
});

Deno.test("serve usage errors exit 2 with one line on stderr", async () => {
  for (
    const args of [
      ["--bogus"],
      ["--port", "70000"],
      ["--port", "http"],
      ["--max-body-bytes", "0"],
      ["extra"],
    ]
  ) {
    const result = await runServe(args, bootstrapEnv());
    assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
    assert.match(oneLine(result.stderr), /^automation-runtime: .*--help/);
  }
});

Deno.test("serve runtime failures exit 1 with one line that holds no secret", async () => {
  const noBootstrap = await runServe(["--hostname", "0.0.0.0", "--port", "0"]);
  assert.equal(noBootstrap.code, 1, noBootstrap.stderr);
  oneLine(noBootstrap.stderr);

  const env = bootstrapEnv();
  const badStore = await runServe(["--port", "0", "--store", "mysql://app:hunter2@db/app"], env);
  assert.equal(badStore.code, 1, badStore.stderr);
  const line = oneLine(badStore.stderr);
  assert.ok(!line.includes("hunter2"));
  assert.ok(!badStore.stderr.includes(env.AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN));

  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const busy = await runServe(["--port", String(listener.addr.port)], env);
    assert.equal(busy.code, 1, busy.stderr);
    assert.match(oneLine(busy.stderr), /already in use/);
  } finally {
    listener.close();
  }
});

Deno.test("serve --max-body-bytes and AUTOMATION_RUNTIME_STORE take effect", async () => {
  const home = await Deno.makeTempDir({ prefix: "automation-runtime-cli-" });
  const storePath = `${home}/custom/runtime.kv`;
  const server = await startServer({
    home,
    args: ["--max-body-bytes", "300"],
    env: { AUTOMATION_RUNTIME_STORE: storePath },
  });
  try {
    const small = await call(server.url, "POST", "/v1/principals", {
      bearer: server.bearer,
      headers: { "idempotency-key": crypto.randomUUID() },
      body: principalBody(),
    });
    assert.equal(small.status, 201, small.text);
    const large = await call(server.url, "POST", "/v1/principals", {
      bearer: server.bearer,
      headers: { "idempotency-key": crypto.randomUUID() },
      body: { ...principalBody(), pad: "x".repeat(300) },
    });
    assertError(large, {
      status: 413,
      code: "payloadTooLarge",
      layer: "interface",
      fields: { maxBytes: 300 },
    });
    assert.ok((await Deno.stat(storePath)).isFile);
  } finally {
    await server.stop();
    await Deno.remove(home, { recursive: true });
  }
});
