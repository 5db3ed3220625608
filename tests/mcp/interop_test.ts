/**
 * Interoperability with what the official MCP SDK's own server accepts: any supported
 * `MCP-Protocol-Version` after initialize, several POSTs of one session at once, `ping` and
 * `logging/setLevel` (with the `logging` capability declared); the Origin and Host checks
 * stay.
 */
import assert from "node:assert/strict";
import { deriveBootstrapCredential } from "../../server/bootstrap/credential.ts";
import { createJsonLogger } from "../../server/log.ts";
import { createRuntimeServer } from "../../server/server.ts";
import { openKvStore } from "../../server/store/kv/mod.ts";
import { answerOf, initializeMessage, mcpFetch, openSession, rpc } from "./_mcp.ts";
import { connect, listen } from "./_sdk.ts";

async function runtime() {
  const bearer = `art_${crypto.randomUUID().replaceAll("-", "")}${"C".repeat(11)}`;
  const bootstrap = deriveBootstrapCredential({
    token: bearer,
    principalId: crypto.randomUUID(),
    capabilities: ["session:read", "authority:admin"],
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    source: "environment",
  });
  const store = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
  const server = createRuntimeServer({
    bootstrap,
    store,
    cleanupIntervalMs: 0,
    logger: createJsonLogger({ write() {}, batchMs: 0 }),
  });
  return {
    bearer,
    server,
    handler: (request: Request) => server.handler(request),
    async [Symbol.asyncDispose]() {
      await server.close();
      await store.close();
    },
  };
}

Deno.test("mcp interop: a 2025-11-25 session accepts 2025-06-18; an unknown version is 400", async () => {
  await using rt = await runtime();
  const sessionId = await openSession(rt.handler, rt.bearer);
  const older = await mcpFetch(rt.handler, {
    bearer: rt.bearer,
    sessionId,
    body: rpc(1, "tools/list"),
    headers: { "mcp-protocol-version": "2025-06-18" },
  });
  assert.equal(older.status, 200);
  const listed = await answerOf(older, 1);
  assert.ok(listed.result.tools.some((tool: { name: string }) => tool.name === "runtime_info"));
  const unknown = await mcpFetch(rt.handler, {
    bearer: rt.bearer,
    sessionId,
    body: rpc(2, "tools/list"),
    headers: { "mcp-protocol-version": "2031-01-01" },
  });
  assert.equal(unknown.status, 400);
  const body = await unknown.json();
  assert.equal(body.error.code, -32000);
  assert.match(body.error.message, /Unsupported protocol version/);
});

Deno.test("mcp interop: three concurrent tools/list POSTs of one session all get 200", async () => {
  await using rt = await runtime();
  const sessionId = await openSession(rt.handler, rt.bearer);
  const ids = [11, 12, 13];
  // Every response is open (its stream not yet read) before any answer is read.
  const responses = await Promise.all(
    ids.map((id) =>
      mcpFetch(rt.handler, { bearer: rt.bearer, sessionId, body: rpc(id, "tools/list") })
    ),
  );
  assert.deepEqual(responses.map((response) => response.status), [200, 200, 200]);
  const answers = await Promise.all(
    responses.map((response, index) => answerOf(response, ids[index])),
  );
  for (const [index, answer] of answers.entries()) {
    assert.equal(answer.id, ids[index]);
    assert.ok(Array.isArray(answer.result.tools));
  }
});

Deno.test("mcp interop: ping and logging/setLevel over raw HTTP and the official client", async () => {
  await using rt = await runtime();
  const opened = await mcpFetch(rt.handler, { bearer: rt.bearer, body: initializeMessage() });
  const init = await answerOf(opened, 0);
  assert.deepEqual(init.result.capabilities.logging, {});
  const sessionId = opened.headers.get("mcp-session-id")!;
  const ping = await mcpFetch(rt.handler, { bearer: rt.bearer, sessionId, body: rpc(1, "ping") });
  assert.deepEqual((await answerOf(ping, 1)).result, {});
  const level = await mcpFetch(rt.handler, {
    bearer: rt.bearer,
    sessionId,
    body: rpc(2, "logging/setLevel", { level: "warning" }),
  });
  assert.deepEqual((await answerOf(level, 2)).result, {});
  const badLevel = await mcpFetch(rt.handler, {
    bearer: rt.bearer,
    sessionId,
    body: rpc(3, "logging/setLevel", { level: "loud" }),
  });
  const refused = await answerOf(badLevel, 3);
  // Refused as the SDK's own server refuses it (its handler throws: an internal error).
  assert.equal(refused.result, undefined);
  assert.equal(refused.error.code, -32603);

  const listener = listen(rt.handler);
  const client = await connect(listener.url, rt.bearer);
  try {
    assert.deepEqual(await client.client.ping(), {});
    assert.deepEqual(await client.client.setLoggingLevel("debug"), {});
  } finally {
    await client.close();
    await listener.close();
  }
});

Deno.test("mcp interop: the Origin and Host checks stay", async () => {
  await using rt = await runtime();
  const foreign = await mcpFetch(rt.handler, {
    bearer: rt.bearer,
    body: initializeMessage(),
    headers: { origin: "https://evil.example" },
  });
  assert.equal(foreign.status, 403);
  assert.equal((await foreign.json()).error.code, "originNotAllowed");
  const rebound = await rt.handler(
    new Request("http://attacker.example/v1/mcp", {
      method: "POST",
      headers: {
        authorization: `Bearer ${rt.bearer}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify(initializeMessage()),
    }),
  );
  assert.equal(rebound.status, 403);
  assert.equal((await rebound.json()).error.code, "originNotAllowed");
});
