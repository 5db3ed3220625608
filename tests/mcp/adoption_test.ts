/**
 * Sessions across two servers sharing one store and one bootstrap, in process: a session opened
 * on one is adopted by the other on its first request there, only for the principal that opened
 * it; ids are bound to their key and principal; a DELETE ends the session on the server that
 * received it.
 */
import assert from "node:assert/strict";
import { deriveBootstrapCredential } from "../../server/bootstrap/credential.ts";
import { createJsonLogger } from "../../server/log.ts";
import { SessionIds } from "../../server/mcp/session_id.ts";
import { createRuntimeServer } from "../../server/server.ts";
import { openKvStore } from "../../server/store/kv/mod.ts";
import { sharedHeaders } from "../support/server.ts";
import { answerOf, mcpFetch, openSession, rpc } from "./_mcp.ts";

async function pair() {
  const bearer = `art_${crypto.randomUUID().replaceAll("-", "")}${"D".repeat(11)}`;
  const bootstrap = deriveBootstrapCredential({
    token: bearer,
    principalId: crypto.randomUUID(),
    capabilities: ["session:read", "authority:admin"],
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    source: "environment",
  });
  const store = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
  const servers = [0, 1].map(() =>
    createRuntimeServer({
      bootstrap,
      store,
      cleanupIntervalMs: 0,
      logger: createJsonLogger({ write() {}, batchMs: 0 }),
    })
  );
  const [a, b] = servers.map((server) => (request: Request) => server.handler(request));
  return {
    bearer,
    a,
    b,
    async issueReader(): Promise<string> {
      const response = await a(
        new Request("http://127.0.0.1:7777/v1/principals", {
          method: "POST",
          headers: sharedHeaders(bearer, {
            "idempotency-key": crypto.randomUUID(),
            "content-type": "application/json",
          }),
          body: JSON.stringify({
            principalId: crypto.randomUUID(),
            capabilities: ["session:read"],
            expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
          }),
        }),
      );
      const body = await response.json();
      assert.equal(response.status, 201, JSON.stringify(body));
      return body.bearer;
    },
    async [Symbol.asyncDispose]() {
      for (const server of servers) await server.close();
      await store.close();
    },
  };
}

async function call(
  handler: (request: Request) => Promise<Response>,
  bearer: string,
  sessionId: string,
  id: number,
) {
  const response = await mcpFetch(handler, {
    bearer,
    sessionId,
    body: rpc(id, "tools/call", { name: "runtime_info", arguments: {} }),
  });
  if (response.status !== 200) {
    await response.body?.cancel();
    return { status: response.status, principalId: null };
  }
  const answer = await answerOf(response, id);
  return { status: 200, principalId: answer.result.structuredContent.principalId as string };
}

Deno.test("mcp adoption: a session opened on one server works on the other", async () => {
  await using servers = await pair();
  const sessionId = await openSession(servers.a, servers.bearer);
  const onB = await call(servers.b, servers.bearer, sessionId, 1);
  assert.equal(onB.status, 200);
  const onA = await call(servers.a, servers.bearer, sessionId, 2);
  assert.deepEqual(onA, onB);
  // Three requests of the session on B at once: adopted once, all answered.
  const fresh = await openSession(servers.a, servers.bearer);
  const answers = await Promise.all(
    [3, 4, 5].map((id) => call(servers.b, servers.bearer, fresh, id)),
  );
  assert.deepEqual(answers.map((answer) => answer.status), [200, 200, 200]);
});

Deno.test("mcp adoption: another principal's session id is 404 on both servers", async () => {
  await using servers = await pair();
  const reader = await servers.issueReader();
  const sessionId = await openSession(servers.a, servers.bearer);
  assert.equal((await call(servers.b, reader, sessionId, 1)).status, 404);
  assert.equal((await call(servers.a, reader, sessionId, 2)).status, 404);
  // Not adopted for the intruder, and still intact for its owner.
  assert.equal((await call(servers.b, servers.bearer, sessionId, 3)).status, 200);
  const foreignId = new SessionIds(crypto.getRandomValues(new Uint8Array(32)))
    .mint("anyone", "2025-11-25");
  assert.equal((await call(servers.b, servers.bearer, foreignId, 4)).status, 404);
  assert.equal((await call(servers.b, servers.bearer, "not-a-session", 5)).status, 404);
});

Deno.test("mcp adoption: a DELETE ends the session on the server that received it", async () => {
  await using servers = await pair();
  const sessionId = await openSession(servers.a, servers.bearer);
  assert.equal((await call(servers.b, servers.bearer, sessionId, 1)).status, 200);
  const ended = await mcpFetch(servers.b, { method: "DELETE", bearer: servers.bearer, sessionId });
  assert.equal(ended.status, 200);
  await ended.body?.cancel();
  assert.equal((await call(servers.b, servers.bearer, sessionId, 2)).status, 404);
});

Deno.test("session ids: bound to their key, principal and revision", () => {
  const key = crypto.getRandomValues(new Uint8Array(32));
  const ids = new SessionIds(key);
  const id = ids.mint("principal-a", "2025-06-18");
  assert.match(id, /^[A-Za-z0-9_-]{22}\.2025-06-18\.[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(new SessionIds(key).verify(id, "principal-a"), {
    protocolVersion: "2025-06-18",
  });
  assert.equal(ids.verify(id, "principal-b"), null);
  assert.equal(ids.verify(id.replace("2025-06-18", "2025-11-25"), "principal-a"), null);
  assert.equal(new SessionIds(new Uint8Array(32)).verify(id, "principal-a"), null);
  assert.equal(ids.verify(`${id}x`, "principal-a"), null);
  assert.notEqual(ids.mint("principal-a", "2025-06-18"), id, "a fresh nonce each time");
});
