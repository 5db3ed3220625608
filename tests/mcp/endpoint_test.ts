/**
 * The MCP endpoint in process (`createRuntimeServer` with an in-memory store): session
 * lifetime (idle expiry, quotas, revocation, shutdown) and the JSON response mode.
 */
import assert from "node:assert/strict";
import { deriveBootstrapCredential } from "../../server/bootstrap/credential.ts";
import { createJsonLogger } from "../../server/log.ts";
import type { McpOptions } from "../../server/mcp/endpoint.ts";
import { createRuntimeServer, type RuntimeServer } from "../../server/server.ts";
import { openKvStore } from "../../server/store/kv/mod.ts";
import type { Store } from "../../server/store/types.ts";
import { sharedHeaders } from "../support/server.ts";
import { answerOf, initializeMessage, mcpFetch, openSession, readEvents, rpc } from "./_mcp.ts";

interface Runtime {
  server: RuntimeServer;
  store: Store;
  bearer: string;
  handler: (request: Request) => Promise<Response>;
  [Symbol.asyncDispose](): Promise<void>;
}

function randomBearer(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `art_${
    btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
      .replace(/=+$/, "")
  }`;
}

async function runtime(mcp: McpOptions = {}): Promise<Runtime> {
  const bearer = randomBearer();
  const bootstrap = deriveBootstrapCredential({
    token: bearer,
    principalId: crypto.randomUUID(),
    capabilities: ["session:read", "session:write", "authority:admin"],
    expiresAt: new Date(Date.now() + 30 * 86_400_000).toISOString(),
    source: "environment",
  });
  const store = await openKvStore({ namespace: bootstrap.namespace, path: ":memory:" });
  const server = createRuntimeServer({
    bootstrap,
    store,
    mcp,
    cleanupIntervalMs: 0,
    logger: createJsonLogger({ write: () => {}, batchMs: 0 }),
  });
  return {
    server,
    store,
    bearer,
    handler: (request) => server.handler(request),
    async [Symbol.asyncDispose]() {
      await server.close();
      await store.close();
    },
  };
}

async function issue(runtime: Runtime): Promise<{ principalId: string; bearer: string }> {
  const principalId = crypto.randomUUID();
  const headers = sharedHeaders(runtime.bearer, {
    "idempotency-key": crypto.randomUUID(),
    "content-type": "application/json",
  });
  const response = await runtime.handler(
    new Request("http://127.0.0.1:7777/v1/principals", {
      method: "POST",
      headers,
      body: JSON.stringify({
        principalId,
        capabilities: ["session:read"],
        expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
      }),
    }),
  );
  assert.equal(response.status, 201);
  return await response.json();
}

async function ping(runtime: Runtime, bearer: string, sessionId: string, id: number) {
  const response = await mcpFetch(runtime.handler, { bearer, sessionId, body: rpc(id, "ping") });
  if (response.status !== 200) {
    await response.body?.cancel();
    return response.status;
  }
  await answerOf(response, id);
  return 200;
}

/** Waits `ms`; a ref'd timer, so the process stays alive for the server's unref'd sweeps. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves with `promise`, keeping the event loop alive meanwhile; fails after `ms`. */
async function within<T>(promise: Promise<T>, ms = 3000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("not settled in time")), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("an idle session's state is freed after the timeout; an open stream keeps it", async () => {
  await using rt = await runtime({
    idleTimeoutMs: 300,
    sweepIntervalMs: 25,
    maxSessionsPerPrincipal: 2,
  });
  const idle = await openSession(rt.handler, rt.bearer);
  const watched = await openSession(rt.handler, rt.bearer);
  const stream = await mcpFetch(rt.handler, {
    method: "GET",
    bearer: rt.bearer,
    sessionId: watched,
  });
  assert.equal(stream.status, 200);
  const full = await mcpFetch(rt.handler, { bearer: rt.bearer, body: initializeMessage() });
  assert.equal(full.status, 429, "both sessions hold their room");
  await full.body?.cancel();
  await sleep(700);
  // The idle session's room was given back; the listening one still holds its own.
  const third = await openSession(rt.handler, rt.bearer);
  assert.equal(await ping(rt, rt.bearer, watched, 2), 200, "a listening session is not idle");
  assert.equal(await ping(rt, rt.bearer, idle, 1), 429, "re-adopting it needs room again");
  const ended = await mcpFetch(rt.handler, {
    method: "DELETE",
    bearer: rt.bearer,
    sessionId: third,
  });
  assert.equal(ended.status, 200);
  await ended.body?.cancel();
  // Its id is still the principal's: the next request rebuilds the session (as on a replica
  // that never held it), so a client never loses a session to an idle replica.
  assert.equal(await ping(rt, rt.bearer, idle, 3), 200);
  await stream.body!.cancel();
});

Deno.test("JSON responses when configured", async () => {
  await using rt = await runtime({ jsonResponse: true });
  const opened = await mcpFetch(rt.handler, { bearer: rt.bearer, body: initializeMessage() });
  assert.equal(opened.status, 200);
  assert.equal(opened.headers.get("content-type"), "application/json");
  const sessionId = opened.headers.get("mcp-session-id")!;
  assert.equal((await opened.json()).result.serverInfo.name, "automation-runtime");
  const listed = await mcpFetch(rt.handler, {
    bearer: rt.bearer,
    sessionId,
    body: rpc(1, "tools/call", { name: "runtime_info", arguments: {} }),
  });
  assert.equal(listed.headers.get("content-type"), "application/json");
  const answer = await listed.json();
  assert.equal(answer.id, 1);
  assert.equal(answer.result.structuredContent.interfaceVersion, "2026-07-23");
});

Deno.test("a principal over its session quota gets 429 until it ends one", async () => {
  await using rt = await runtime({ maxSessionsPerPrincipal: 2 });
  const first = await openSession(rt.handler, rt.bearer);
  await openSession(rt.handler, rt.bearer);
  const refused = await mcpFetch(rt.handler, { bearer: rt.bearer, body: initializeMessage() });
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get("retry-after"), "60");
  assert.equal((await refused.json()).error.code, "resourceExhausted");
  const other = await issue(rt);
  await openSession(rt.handler, other.bearer);
  const ended = await mcpFetch(rt.handler, {
    method: "DELETE",
    bearer: rt.bearer,
    sessionId: first,
  });
  assert.equal(ended.status, 200);
  await openSession(rt.handler, rt.bearer);
});

Deno.test("a revoked principal's open GET stream ends within a second, not at the next sweep", async () => {
  // The sweep is the default (up to 30 s): the stream must end long before it.
  await using rt = await runtime();
  const holder = await issue(rt);
  const sessionId = await openSession(rt.handler, holder.bearer);
  const stream = await mcpFetch(rt.handler, {
    method: "GET",
    bearer: holder.bearer,
    sessionId,
  });
  assert.equal(stream.status, 200);
  const ended = readEvents(stream, () => false);
  const revoked = await rt.handler(
    new Request(`http://127.0.0.1:7777/v1/principals/${holder.principalId}`, {
      method: "DELETE",
      headers: sharedHeaders(rt.bearer),
    }),
  );
  assert.equal(revoked.status, 204);
  await revoked.body?.cancel();
  const began = Date.now();
  assert.deepEqual(await within(ended, 3_000), [], "the stream ended without delivering anything");
  assert.ok(Date.now() - began < 1_500, `ended after ${Date.now() - began} ms`);
});

Deno.test("closing the server ends every session and stream and refuses new ones", async () => {
  const rt = await runtime();
  try {
    const sessionId = await openSession(rt.handler, rt.bearer);
    const stream = await mcpFetch(rt.handler, {
      method: "GET",
      bearer: rt.bearer,
      sessionId,
    });
    const ended = readEvents(stream, () => false);
    await rt.server.closeSessions();
    assert.deepEqual(await ended, []);
    // A replica shutting down sends its sessions elsewhere: 503 with Retry-After, not 404.
    assert.equal(await ping(rt, rt.bearer, sessionId, 1), 503);
    const refused = await mcpFetch(rt.handler, { bearer: rt.bearer, body: initializeMessage() });
    assert.equal(refused.status, 503);
    assert.equal((await refused.json()).error.code, "resourceExhausted");
  } finally {
    await rt.server.close();
    await rt.store.close();
  }
});
