/**
 * Black-box tests across restarts of the real `serve`: acknowledged principals and revocations
 * survive, a rotated bootstrap orphans the old principals, SIGTERM lets a request in flight
 * finish, and no bearer ever reaches the logs.
 */
import assert from "node:assert/strict";
import { createTestBootstrap, sharedHeaders, startServer } from "../support/server.ts";
import { assertError, call, issuePrincipal, principalBody } from "./_http.ts";

Deno.test("state survives a restart; a rotated bootstrap orphans old principals; logs hold no bearer", async () => {
  const home = await Deno.makeTempDir({ prefix: "automation-runtime-restart-" });
  const bootstrap = createTestBootstrap();
  const logs: string[] = [];
  const secrets: string[] = [bootstrap.token];
  try {
    const key = crypto.randomUUID();
    const keptBody = principalBody();
    let keptText: string;
    let kept: { principalId: string; bearer: string };
    let revoked: { principalId: string; bearer: string };

    const first = await startServer({ home, bootstrap });
    try {
      const created = await call(first.url, "POST", "/v1/principals?trace=1", {
        bearer: first.bearer,
        headers: { "idempotency-key": key },
        body: keptBody,
      });
      assert.equal(created.status, 201, created.text);
      keptText = created.text;
      kept = created.json;
      revoked = await issuePrincipal(first.url, first.bearer);
      secrets.push(kept.bearer, revoked.bearer);
      const revoke = await call(first.url, "DELETE", `/v1/principals/${revoked.principalId}`, {
        bearer: first.bearer,
      });
      assert.equal(revoke.status, 204);
    } finally {
      assert.equal(await first.stop(), 0);
      logs.push(...first.logs());
    }

    const second = await startServer({ home, bootstrap });
    try {
      const runtime = await call(second.url, "GET", "/v1/runtime", { bearer: kept.bearer });
      assert.equal(runtime.status, 200, runtime.text);
      assert.equal(runtime.json.principalId, kept.principalId);
      const refused = await call(second.url, "GET", "/v1/runtime", { bearer: revoked.bearer });
      assertError(refused, { status: 401, code: "authenticationFailed", layer: "auth" });
      const list = await call(second.url, "GET", "/v1/principals", { bearer: second.bearer });
      const entries = new Map(
        list.json.principals.map((entry: { principalId: string }) => [entry.principalId, entry]),
      );
      assert.equal((entries.get(kept.principalId) as { revokedAt?: string }).revokedAt, undefined);
      assert.equal(
        typeof (entries.get(revoked.principalId) as { revokedAt?: string }).revokedAt,
        "string",
      );
      const replay = await call(second.url, "POST", "/v1/principals?trace=1", {
        bearer: second.bearer,
        headers: { "idempotency-key": key },
        body: keptBody,
      });
      assert.equal(replay.status, 201);
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
      assert.equal(replay.text, keptText, "the replay after a restart carries the same bearer");
    } finally {
      assert.equal(await second.stop(), 0);
      logs.push(...second.logs());
    }

    const rotated = await startServer({ home });
    secrets.push(rotated.bearer);
    try {
      for (const old of [kept.bearer, bootstrap.token]) {
        const result = await call(rotated.url, "GET", "/v1/runtime", { bearer: old });
        assertError(result, { status: 401, code: "authenticationFailed", layer: "auth" });
      }
      const list = await call(rotated.url, "GET", "/v1/principals", { bearer: rotated.bearer });
      assert.deepEqual(list.json.principals, []);
    } finally {
      assert.equal(await rotated.stop(), 0);
      logs.push(...rotated.logs());
    }
  } finally {
    await Deno.remove(home, { recursive: true });
  }

  const requests = logs.map((line) => JSON.parse(line)).filter((entry) => entry.msg === "request");
  assert.ok(requests.length >= 10, `request lines: ${requests.length}`);
  for (const entry of requests) {
    for (const field of ["time", "method", "path", "status", "durationMs", "correlationId"]) {
      assert.ok(field in entry, `${field} in ${JSON.stringify(entry)}`);
    }
    assert.ok("principalId" in entry);
    assert.ok(!entry.path.includes("?"), "paths are logged without their query");
  }
  assert.ok(logs.some((line) => JSON.parse(line).msg === "listening"));
  assert.ok(logs.some((line) => JSON.parse(line).msg === "shutting down"));
  const text = logs.join("\n");
  for (const secret of secrets) assert.ok(!text.includes(secret), "a bearer reached the log");
  assert.ok(!text.includes("art_"));
});

Deno.test("SIGTERM lets a request in flight finish before the process exits 0", async () => {
  const server = await startServer();
  const gate = Promise.withResolvers<void>();
  const started = Promise.withResolvers<void>();
  const body = JSON.stringify(principalBody());
  let stopping: Promise<number> | undefined;
  try {
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        started.resolve();
        await gate.promise;
        controller.enqueue(new TextEncoder().encode(body));
        controller.close();
      },
    });
    const pending = fetch(`${server.url}/v1/principals`, {
      method: "POST",
      headers: sharedHeaders(server.bearer, {
        "idempotency-key": crypto.randomUUID(),
        "content-type": "application/json",
      }),
      body: stream,
    });
    await started.promise;
    // Let the server take the request up to its body read, then ask it to stop.
    await new Promise((resolve) => setTimeout(resolve, 200));
    stopping = server.stop();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const refused = await call(server.url, "GET", "/v1/runtime", { bearer: server.bearer });
    assertError(refused, { status: 503, code: "shuttingDown", layer: "internal" });
    gate.resolve();
    const response = await pending;
    const text = await response.text();
    assert.equal(response.status, 201, text);
    assert.match(JSON.parse(text).bearer, /^art_/);
    assert.equal(await stopping, 0);
    assert.ok(server.logs().some((line) => line.includes('"shutting down"')));
  } finally {
    gate.resolve();
    await (stopping ?? server.stop());
  }
});

Deno.test("a bootstrap that expires while serving answers 401 tokenExpired", async () => {
  const server = await startServer({
    bootstrap: { expiresAt: new Date(Date.now() + 2_500).toISOString() },
  });
  try {
    assert.equal(
      (await call(server.url, "GET", "/v1/runtime", { bearer: server.bearer })).status,
      200,
    );
    await new Promise((resolve) =>
      setTimeout(resolve, Date.parse(server.bootstrap.expiresAt) - Date.now() + 50)
    );
    const result = await call(server.url, "GET", "/v1/runtime", { bearer: server.bearer });
    assertError(result, { status: 401, code: "tokenExpired", layer: "auth" });
  } finally {
    await server.stop();
  }
});
