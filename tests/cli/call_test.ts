/**
 * `automation-runtime call METHOD PATH [--data …]`: one request with the shared headers the SDK
 * sends, the body printed, exit 0 on 2xx and 1 otherwise (with one line on stderr), usage errors
 * exit 2; and the clock correction of the SDK on a service whose clock is off.
 */
import assert from "node:assert/strict";
import { BEARER_PATTERN, clientEnv, makeTempHome, runCli } from "../support/cli.ts";
import { startServer } from "../support/server.ts";
import { startSkewedService } from "../support/skewed_service.ts";

function lines(text: string): string[] {
  return text.split("\n").filter((line) => line !== "");
}

function correlationIds(logs: string[]): string[] {
  return logs.flatMap((line) => {
    if (!line.startsWith("{")) return [];
    const entry = JSON.parse(line);
    return entry.msg === "request" && typeof entry.correlationId === "string"
      ? [entry.correlationId]
      : [];
  });
}

Deno.test("call sends the shared headers, prints the body and exits 0 on 2xx", async () => {
  const server = await startServer();
  const temp = await makeTempHome();
  try {
    const env = clientEnv(temp, server);
    const runtime = await runCli(["call", "GET", "/v1/runtime"], { env });
    assert.equal(runtime.code, 0, runtime.stderr);
    assert.equal(runtime.stderr, "");
    assert.equal(JSON.parse(runtime.stdout).principalId, server.bootstrap.principalId);

    // A POST gets an idempotency key of its own; the body comes from a file.
    const principalId = crypto.randomUUID();
    const body = {
      principalId,
      capabilities: ["session:read"],
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
      name: "call test",
    };
    const file = `${temp.home}/principal.json`;
    await Deno.writeTextFile(file, JSON.stringify(body));
    const issued = await runCli(["call", "post", "/v1/principals", "--data", `@${file}`], { env });
    assert.equal(issued.code, 0, issued.stderr);
    const created = JSON.parse(issued.stdout);
    assert.equal(created.principalId, principalId);
    assert.equal(created.name, "call test");
    assert.match(created.bearer, BEARER_PATTERN);

    // The same key and body replay the first answer; from standard input this time.
    const again = JSON.stringify({ ...body, principalId: crypto.randomUUID(), name: "replayed" });
    const replay = () =>
      runCli(["call", "POST", "/v1/principals", "--data", "@-", "--idempotency-key", "k-1"], {
        env,
        stdin: again,
      });
    const first = await replay();
    const second = await replay();
    assert.equal(first.code, 0, first.stderr);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(JSON.parse(second.stdout).bearer, JSON.parse(first.stdout).bearer);

    const listed = await runCli(["call", "GET", "/v1/principals?limit=5"], { env });
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      JSON.parse(listed.stdout).principals.map((p: { name?: string }) => p.name),
      ["call test", "replayed"],
    );

    // A 204 prints nothing.
    const revoked = await runCli(["call", "DELETE", `/v1/principals/${principalId}`], { env });
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal(revoked.stdout, "");

    // Each call carried a correlation id of its own.
    const ids = correlationIds(server.logs());
    assert.ok(ids.length >= 6, server.logs().join("\n"));
    assert.equal(new Set(ids).size, ids.length, "a fresh correlation id per call");
  } finally {
    await temp.cleanup();
    await server.stop();
  }
});

Deno.test("call prints a refusal's error body, one line on stderr, and exits 1", async () => {
  const server = await startServer();
  const temp = await makeTempHome();
  try {
    const env = clientEnv(temp, server);
    const unknown = crypto.randomUUID();
    const refused = await runCli(["call", "DELETE", `/v1/principals/${unknown}`], { env });
    assert.equal(refused.code, 1);
    assert.equal(JSON.parse(refused.stdout).error.code, "notFound");
    assert.equal(lines(refused.stderr).length, 1, refused.stderr);
    assert.match(refused.stderr, /^automation-runtime: .*HTTP 404, notFound, correlation id /);

    // An idempotency key reused with another body: the 422 body and its line.
    const body = (id: string) =>
      JSON.stringify({
        principalId: id,
        capabilities: ["session:read"],
        expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
      });
    const args = ["call", "POST", "/v1/principals", "--idempotency-key", "call-conflict"];
    assert.equal(
      (await runCli([...args, "--data", body(crypto.randomUUID())], { env })).code,
      0,
    );
    const conflict = await runCli([...args, "--data", body(crypto.randomUUID())], { env });
    assert.equal(conflict.code, 1);
    assert.equal(JSON.parse(conflict.stdout).error.code, "idempotencyConflict");
    assert.ok(!conflict.stderr.includes(server.bearer) && !conflict.stdout.includes(server.bearer));

    const noService = await runCli(["call", "GET", "/v1/runtime"], {
      env: { ...env, AUTOMATION_RUNTIME_URL: "http://127.0.0.1:9" },
    });
    assert.equal(noService.code, 1);
    assert.equal(noService.stdout, "");
    assert.match(noService.stderr, /connectionFailed/);
  } finally {
    await temp.cleanup();
    await server.stop();
  }
});

Deno.test("call: usage errors exit 2 with one line and send nothing", async () => {
  const temp = await makeTempHome();
  try {
    const env = { ...temp.env, AUTOMATION_RUNTIME_URL: "http://127.0.0.1:9" };
    for (
      const args of [
        ["call"],
        ["call", "GET"],
        ["call", "FETCH", "/v1/runtime"],
        ["call", "GET", "v1/runtime"],
        ["call", "GET", "/v1/a b"],
        ["call", "POST", "/v1/runs", "--data", "{not json"],
        ["call", "GET", "/v1/runs", "--data", "{}"],
        ["call", "GET", "/v1/runtime", "extra"],
        ["call", "GET", "/v1/runtime", "--token", "art_x"],
      ]
    ) {
      const result = await runCli(args, { env });
      assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
      assert.equal(result.stdout, "");
      assert.equal(lines(result.stderr).length, 1, result.stderr);
      assert.match(result.stderr, /see `automation-runtime call --help`/);
    }
  } finally {
    await temp.cleanup();
  }
});

Deno.test("call corrects its deadline against a service whose clock is two minutes ahead", async () => {
  const service = await startSkewedService(120_000);
  const temp = await makeTempHome();
  try {
    const env = clientEnv(temp, { url: service.url, bearer: service.token });
    const result = await runCli(["call", "GET", "/v1/runtime"], { env });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, "");
    assert.deepEqual(service.seen.map((answer) => answer.status), [408, 200]);
    // Every client command shares the correction: principal list does the same.
    service.seen.length = 0;
    const listed = await runCli(["principal", "list"], { env });
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(service.seen.map((answer) => answer.status), [408, 200]);
  } finally {
    await temp.cleanup();
    await service.close();
  }
});
