/**
 * Notification webhooks on two replicas sharing PostgreSQL (in process): both dispatch the same
 * activity and both send, yet each event reaches the receiver once, under one `webhook-id`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import { startGateway } from "../gateway/_harness.ts";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";

Deno.test({
  name: `replicas: two replicas deliver each event once${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const received: { id: string; type: string; runId: string }[] = [];
    const hook = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
      const body = JSON.parse(await request.text());
      received.push({
        id: request.headers.get("webhook-id")!,
        type: body.type,
        runId: body.data.runId,
      });
      return new Response(null, { status: 204 });
    });
    const options = {
      store: (namespace: string) => openPostgresStore({ url: db.url, namespace }),
      answerTestHooks: { notifications: { retryDelaysMs: [50], pollMs: 50 } },
      serverOptions: { notifications: { allowPrivateTargets: true } },
    };
    const a = await startGateway(options);
    const b = await startGateway({ ...options, replicaOf: a });
    try {
      const writer = await a.issue(["session:read", "session:write"]);
      const subscribed = await b.request("POST", "/v1/webhook-subscriptions", {
        bearer: writer.bearer,
        body: {
          url: `http://127.0.0.1:${hook.addr.port}/hook`,
          events: ["run.completed", "run.requires_action"],
        },
      });
      assert.equal(subscribed.status, 201, subscribed.text);
      const runs: string[] = [];
      for (let i = 0; i < 4; i++) {
        const started = await (i % 2 === 0 ? a : b).request("POST", "/v1/runs", {
          bearer: writer.bearer,
          body: { input: `run ${i}` },
        });
        assert.equal(started.status, 201, started.text);
        runs.push(started.json.runId);
      }
      const until = Date.now() + 15_000;
      while (received.length < runs.length && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      // Both replicas keep passing for a while: nothing more arrives.
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.deepEqual(new Set(received.map((r) => r.runId)), new Set(runs));
      assert.equal(received.length, runs.length, JSON.stringify(received));
      assert.equal(new Set(received.map((r) => r.id)).size, runs.length);
      assert.ok(received.every((r) => r.type === "run.completed"));
    } finally {
      await b.close();
      await a.close();
      await hook.shutdown();
    }
  },
});
