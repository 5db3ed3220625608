/**
 * The activity feed as SSE: on two replicas sharing PostgreSQL, a change made on replica A shows
 * on a stream of replica B within a second, a stream resumed with `Last-Event-ID` continues
 * without a gap or a duplicate, a plain principal's stream shows only its own runs, and revoking
 * the principal ends its stream within a second. On one replica: the stream counts against the
 * event stream limits, and a stream opened without a resume point starts from now.
 *
 * @module
 */
import assert from "node:assert/strict";
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import { type Gateway, startGateway } from "../gateway/_harness.ts";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import { type EventReader, type Frame, openActivity, openEvents } from "./_sse.ts";

function scriptToolCall(gateway: Gateway): void {
  gateway.fake.managedAgents!.script = () => [
    { type: "agent.tool_use", name: "bash", input: { command: "ls" }, evaluated_permission: "ask" },
  ];
}

function activity(gateway: Gateway, bearer: string, lastEventId?: string): Promise<EventReader> {
  return openActivity(
    (request) => gateway.server.handler(request),
    "http://x",
    bearer,
    lastEventId !== undefined ? { lastEventId } : {},
  );
}

/** The next event frame, failing after `ms`. */
async function next(reader: EventReader, ms = 5_000): Promise<Frame> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const frame = await Promise.race([
      reader.nextEvent(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no activity frame within ${ms} ms`)), ms);
      }),
    ]);
    assert.ok(frame !== null, "the stream ended");
    return frame;
  } finally {
    clearTimeout(timer);
  }
}

Deno.test({
  name:
    `activity: replica B shows replica A's change within 1 s; Last-Event-ID resumes without gap or duplicate; revocation ends it${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const store = (namespace: string) => openPostgresStore({ url: db.url, namespace });
    const a = await startGateway({ store });
    const b = await startGateway({ store, replicaOf: a });
    try {
      scriptToolCall(a);
      const approver = await a.issue(["session:read", "session:approve"]);
      const writer = await a.issue(["session:read", "session:write"]);
      const other = await a.issue(["session:read", "session:write"]);
      const watching = await activity(b, approver.bearer);
      assert.equal(watching.response.status, 200);
      assert.equal(
        watching.response.headers.get("content-type"),
        "text/event-stream; charset=utf-8",
      );
      const own = await activity(b, writer.bearer);

      const started = await a.request("POST", "/v1/runs", {
        bearer: writer.bearer,
        body: { input: "go", title: "t" },
      });
      assert.equal(started.status, 201, started.text);
      const startedAt = performance.now();
      const runId = started.json.runId;
      const created = await next(watching);
      const delay = performance.now() - startedAt;
      assert.ok(delay < 1_000, `seen on replica B after ${delay.toFixed(0)} ms`);
      assert.equal(created.event, "run.created");
      assert.equal(created.data.runId, runId);
      assert.equal(created.data.title, "t");
      const seen: Frame[] = [created];
      // Until the request waits: the state change and the pending request.
      while (!seen.some((frame) => frame.event === "tool.pending")) seen.push(await next(watching));
      const pending = seen.find((frame) => frame.event === "tool.pending")!;
      assert.equal(pending.data.name, "bash");
      assert.equal(pending.data.kind, "confirmation");
      await watching.cancel();

      // Meanwhile (nobody watching): another principal's run, and the answer.
      const others = await a.request("POST", "/v1/runs", {
        bearer: other.bearer,
        body: { input: "go" },
      });
      assert.equal(others.status, 201, others.text);
      const answer = await a.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
        bearer: approver.bearer,
        body: { toolUseId: pending.data.toolUseId, result: "allow" },
      });
      assert.equal(answer.status, 200, answer.text);

      const resumed = await activity(b, approver.bearer, seen.at(-1)!.id);
      let frame = await next(resumed);
      seen.push(frame);
      while (frame.event !== "tool.answered") seen.push(frame = await next(resumed));
      assert.equal(frame.data.answeredBy, approver.principalId);
      const ids = seen.map((f) => Number(f.id));
      const log = await a.store.activity.list({ after: 0, limit: 1000 });
      const logged = log.entries.map((e) => e.seq).filter((seq) => seq <= ids.at(-1)!);
      assert.deepEqual(ids, logged, "every change once, in order");
      assert.deepEqual(ids, ids.map((_, i) => ids[0] + i));

      // The writer's own stream saw its run, never the other principal's.
      const mine: Frame[] = [];
      for (;;) {
        const frame = await next(own);
        mine.push(frame);
        if (frame.event === "tool.answered") break;
      }
      assert.ok(
        mine.every((f) => f.data.runId === runId && f.data.principalId === writer.principalId),
      );

      // Revoking the approver ends its stream on replica B within a second.
      const revoked = await a.request("DELETE", `/v1/principals/${approver.principalId}`);
      assert.equal(revoked.status, 204);
      const before = performance.now();
      const ended = await Promise.race([
        (async () => {
          while ((await resumed.next()) !== null);
          return true;
        })(),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), 2_000)),
      ]);
      assert.ok(ended, "the stream did not end");
      assert.ok(performance.now() - before < 1_500);
      await own.cancel();
    } finally {
      await b.close();
      await a.close();
    }
  },
});

Deno.test("activity: a stream counts against the event stream limits; without a resume point it starts from now", async () => {
  const gateway = await startGateway({ serverOptions: { maxEventStreamsPerPrincipal: 2 } });
  try {
    gateway.holdTurns(true);
    const writer = await gateway.issue(["session:read", "session:write"]);
    const first = await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "go" },
    });
    assert.equal(first.status, 201, first.text);
    const events = await openEvents(
      (request) => gateway.server.handler(request),
      "http://x",
      writer.bearer,
      first.json.runId,
    );
    const feed = await activity(gateway, writer.bearer);
    assert.equal(feed.response.status, 200);
    const refused = await activity(gateway, writer.bearer);
    assert.equal(refused.response.status, 429);
    assert.equal((await refused.response.json()).error.code, "resourceExhausted");
    // The first run's changes came before the stream: it shows only the second run's.
    const second = await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "again" },
    });
    const frame = await next(feed);
    assert.equal(frame.event, "run.created");
    assert.equal(frame.data.runId, second.json.runId);
    await events.cancel();
    await feed.cancel();
    const again = await activity(gateway, writer.bearer, "0");
    assert.equal(again.response.status, 200);
    assert.equal((await next(again)).data.runId, first.json.runId);
    await again.cancel();
  } finally {
    await gateway.close();
  }
});
