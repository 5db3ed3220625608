/**
 * Run events across two replicas sharing PostgreSQL (in process): 100 subscribers split over
 * both see the identical sequence while the provider sees one stream for the run, and a revoked
 * principal's open streams end on both replicas within a second.
 *
 * @module
 */
import assert from "node:assert/strict";
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import { type Gateway, startGateway } from "../gateway/_harness.ts";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import { type EventReader, type Frame, openEvents } from "./_sse.ts";

function slowScript(gateway: Gateway, count: number, gapMs: number): void {
  gateway.fake.managedAgents!.script = ({ text }) =>
    Array.from({ length: count }, (_, i) => [
      { delayMs: gapMs },
      { type: "agent.message", content: [{ type: "text", text: `${text} ${i + 1}` }] },
    ]).flat();
}

async function twoReplicas(url: string): Promise<[Gateway, Gateway]> {
  const store = (namespace: string) => openPostgresStore({ url, namespace });
  // One principal opens 50 streams on each replica: its share of slots is raised to fit.
  const serverOptions = { maxEventStreamsPerPrincipal: 100 };
  const a = await startGateway({ store, serverOptions });
  const b = await startGateway({ store, replicaOf: a, serverOptions });
  return [a, b];
}

function open(gateway: Gateway, bearer: string, runId: string): Promise<EventReader> {
  return openEvents((request) => gateway.server.handler(request), "http://x", bearer, runId);
}

Deno.test({
  name:
    `replicas: 100 subscribers on two replicas get the identical sequence; one provider stream${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const [a, b] = await twoReplicas(db.url);
    try {
      slowScript(a, 10, 60);
      const { bearer } = await a.issue(["session:read", "session:write"]);
      const started = await a.request("POST", "/v1/runs", { bearer, body: { input: "fan" } });
      assert.equal(started.status, 201, started.text);
      const runId = started.json.runId;
      const readers = await Promise.all(
        Array.from({ length: 100 }, (_, i) => open(i % 2 === 0 ? a : b, bearer, runId)),
      );
      const sequences: Frame[][] = await Promise.all(readers.map((reader) => reader.rest()));
      const expected = sequences[0];
      assert.equal(expected.at(-1)!.event, "run.completed");
      assert.deepEqual(expected.map((f) => Number(f.id)), expected.map((_, i) => i + 1));
      assert.equal(expected.filter((f) => f.event === "message.completed").length, 10);
      for (const sequence of sequences) assert.deepEqual(sequence, expected);
      const streams = a.fake.requests.filter((request) =>
        request.method === "GET" && request.path === `/v1/sessions/${runId}/events/stream`
      );
      assert.equal(streams.length, 1, "one provider stream per run, not per subscriber");
    } finally {
      await b.close();
      await a.close();
    }
  },
});

Deno.test({
  name:
    `replicas: revoking a principal ends its open streams on both replicas within 1 s${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const [a, b] = await twoReplicas(db.url);
    try {
      a.holdTurns(true);
      const reader = await a.issue(["session:read", "session:write"]);
      const other = await a.issue(["session:read", "session:write"]);
      const run = await a.request("POST", "/v1/runs", {
        bearer: reader.bearer,
        body: { input: "x" },
      });
      assert.equal(run.status, 201, run.text);
      const otherRun = await a.request("POST", "/v1/runs", {
        bearer: other.bearer,
        body: { input: "y" },
      });
      const onA = await open(a, reader.bearer, run.json.runId);
      const onB = await open(b, reader.bearer, run.json.runId);
      const bystander = await open(b, other.bearer, otherRun.json.runId);
      // Both streams are open and delivering.
      assert.equal((await onA.nextEvent())?.event, "run.started");
      assert.equal((await onB.nextEvent())?.event, "run.started");
      assert.equal((await bystander.nextEvent())?.event, "run.started");
      const revoked = await a.request("DELETE", `/v1/principals/${reader.principalId}`);
      assert.equal(revoked.status, 204, revoked.text);
      const since = performance.now();
      const ended = await Promise.all([onA, onB].map(async (stream) => {
        await stream.rest();
        return performance.now() - since;
      }));
      for (const ms of ended) assert.ok(ms < 1_000, `a stream ended only after ${ms} ms`);
      // Another principal's stream stays open (it may still deliver its run's events).
      const until = Date.now() + 600;
      let pending = bystander.next();
      while (Date.now() < until) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const outcome = await Promise.race([
          pending.then((frame) => frame === null ? "ended" : "frame"),
          new Promise<string>((resolve) => {
            timer = setTimeout(() => resolve("quiet"), Math.max(until - Date.now(), 1));
          }),
        ]);
        clearTimeout(timer);
        assert.notEqual(outcome, "ended", "the bystander's stream ended");
        if (outcome === "quiet") break;
        pending = bystander.next();
      }
      assert.equal(bystander.ended, false);
      await bystander.cancel();
    } finally {
      await b.close();
      await a.close();
    }
  },
});
