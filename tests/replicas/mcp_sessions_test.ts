/**
 * MCP across two real `serve` replicas on one PostgreSQL database, behind a small round-robin
 * proxy with no session affinity: the official SDK client keeps one session while its requests
 * alternate between the replicas; another principal gets 404 for that session on both; and a
 * bearer revoked on one replica is refused on its next MCP message on the other.
 */
import assert from "node:assert/strict";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { answerOf, mcpFetch, rpc } from "../mcp/_mcp.ts";
import { callOk, connect, type Connected, toolNames } from "../mcp/_sdk.ts";
import { toolsFor } from "../mcp/_tools.ts";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import {
  issue,
  issueBody,
  recentTrouble,
  type Replica,
  revoke,
  startReplicas,
} from "./_replicas.ts";

/** A round-robin proxy: each request goes to the next replica, streams passed through. */
function roundRobin(replicas: readonly Replica[]) {
  let next = 0;
  const served: { method: string; upstream: number }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const upstream = next;
    next = (next + 1) % replicas.length;
    served.push({ method: request.method, upstream });
    const url = new URL(request.url);
    const target = `${replicas[upstream].url}${url.pathname}${url.search}`;
    const headers = new Headers(request.headers);
    headers.delete("host");
    return fetch(target, {
      method: request.method,
      headers,
      body: request.body,
      client: replicas[upstream].client,
      signal: request.signal,
    });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    served,
    close: () => server.shutdown(),
  };
}

async function ping(target: string, bearer: string, sessionId: string, id: number) {
  const response = await mcpFetch(target, { bearer, sessionId, body: rpc(id, "ping") });
  if (response.status !== 200) {
    const text = await response.text();
    return { status: response.status, text };
  }
  return { status: 200, text: JSON.stringify(await answerOf(response, id)) };
}

Deno.test({
  name: `replicas: one MCP session across replicas behind round-robin; revocation${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    await using replicas = await startReplicas(db.url);
    const [a, b] = replicas.servers;
    const proxy = roundRobin(replicas.servers);
    const open: Connected[] = [];
    try {
      const body = issueBody({ capabilities: ["session:read"] });
      const issued = await issue(a, replicas.admin, body);
      assert.equal(issued.status, 201);
      const bearer: string = issued.body.bearer;
      const other = await issue(b, replicas.admin, issueBody());
      assert.equal(other.status, 201);

      // initialize, list, call, call: the official client through the proxy.
      const client = await connect(proxy.url, bearer);
      open.push(client);
      const sessionId = client.transport.sessionId!;
      assert.ok(sessionId !== undefined);
      assert.deepEqual(await toolNames(client), toolsFor(["session:read"]));
      for (let round = 0; round < 3; round++) {
        const info = await callOk(client, "runtime_info");
        assert.equal(info.principalId, body.principalId);
      }
      const posts = proxy.served.filter((entry) => entry.method === "POST");
      assert.ok(posts.length >= 5, JSON.stringify(proxy.served));
      assert.deepEqual(
        [...new Set(posts.map((entry) => entry.upstream))].sort(),
        [0, 1],
        "the session's POSTs reached both replicas",
      );
      assert.equal(client.transport.sessionId, sessionId, "one session throughout");

      // Bound to its principal on every replica: another principal gets 404 on both.
      for (const replica of [a, b]) {
        const foreign = await ping(replica.url, other.body.bearer, sessionId, 7);
        assert.equal(foreign.status, 404, foreign.text);
        const owner = await ping(replica.url, bearer, sessionId, 8);
        assert.equal(owner.status, 200, owner.text);
      }
      // A forged id is 404 too.
      const flipped = sessionId.at(-5) === "A" ? "B" : "A";
      const forgedId = `${sessionId.slice(0, -5)}${flipped}${sessionId.slice(-4)}`;
      const forged = await ping(b.url, bearer, forgedId, 9);
      assert.equal(forged.status, 404, forged.text);

      // Revoked on A: the next message on B (and on A) is refused, session still open.
      assert.equal((await revoke(a, replicas.admin, body.principalId)).status, 204);
      const onB = await ping(b.url, bearer, sessionId, 10);
      assert.equal(onB.status, 401, onB.text);
      assert.equal(JSON.parse(onB.text).error.code, "authenticationFailed");
      const onA = await ping(a.url, bearer, sessionId, 11);
      assert.equal(onA.status, 401, onA.text);
      await assert.rejects(
        client.client.callTool({ name: "runtime_info", arguments: {} }),
        (error: unknown) => error instanceof StreamableHTTPError && error.code === 401,
      );
    } catch (error) {
      throw new Error(`${error}\n${recentTrouble(replicas.servers)}`, { cause: error });
    } finally {
      for (const connected of open) await connected.client.close();
      await proxy.close();
    }
  },
});
