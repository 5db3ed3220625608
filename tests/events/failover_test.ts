/**
 * Failover: two `serve` processes on one PostgreSQL database tail runs under short leases
 * (`--run-lease-ms 900`: renewed every 300 ms, taken over within 1.2 s). Twenty times, at a random
 * point of a run, the replica holding the run's lease is killed with SIGKILL (and now and then
 * the fake provider drops the tail's stream too); a fresh replica replaces it. Subscribers that
 * reconnect to any live replica with `Last-Event-ID` must see every run's log gap-free and
 * duplicate-free, holding every message of the run in order, up to its terminal event.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ProviderManagedAgentClient } from "../../client/mod.ts";
import { FakeProvider } from "../support/fake_provider.ts";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import {
  createTestBootstrap,
  sharedHeaders,
  startServer,
  type TestServer,
} from "../support/server.ts";
import { parseFrames } from "./_sse.ts";

const ROUNDS = 20;
const MESSAGES = 12;
const GAP_MS = 40;

// deno-lint-ignore no-explicit-any
type Json = any;

/** Follows a run across replicas until its terminal event; returns every event received. */
async function subscribe(
  replicas: () => TestServer[],
  bearer: string,
  runId: string,
  deadline: number,
): Promise<Json[]> {
  const events: Json[] = [];
  let attempt = 0;
  while (Date.now() < deadline) {
    const live = replicas();
    const replica = live[attempt++ % live.length];
    const last = events.at(-1)?.seq ?? 0;
    try {
      const response = await fetch(`${replica.url}/v1/runs/${runId}/events`, {
        headers: sharedHeaders(bearer, {
          accept: "text/event-stream",
          "last-event-id": String(last),
        }),
        signal: AbortSignal.timeout(Math.max(deadline - Date.now(), 1)),
      });
      if (response.status !== 200) {
        await response.body?.cancel();
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      const decoder = new TextDecoder();
      let buffer = "";
      for await (const chunk of response.body!) {
        buffer += decoder.decode(chunk, { stream: true });
        const { frames, rest } = parseFrames(buffer);
        buffer = rest;
        for (const frame of frames) {
          if (frame.id === undefined) continue;
          events.push(frame.data);
          if (/^run\.(completed|failed|cancelled)$/.test(frame.data.type)) return events;
        }
      }
    } catch {
      // The replica died under us: go on with another.
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`run ${runId}: no terminal event before the deadline (${events.length} events)`);
}

Deno.test({
  name:
    `failover: kill -9 the lease holder mid-run, 20 times; every log gap-free, every run ends${skipNote()}`,
  ignore: ignorePostgresTests(),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using db = await createTestDatabase();
    const providerKey = `sk-fake-${crypto.randomUUID()}`;
    const fake = await FakeProvider.start({ apiKey: providerKey });
    const setup = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey: providerKey });
    const agent = await setup.createAgent({ name: "a", model: "m" });
    const environment = await setup.createEnvironment({ name: "e" });
    fake.managedAgents!.script = ({ text }) =>
      Array.from({ length: MESSAGES }, (_, i) => [
        { delayMs: GAP_MS },
        { type: "agent.message", content: [{ type: "text", text: `${text}:${i + 1}` }] },
      ]).flat();
    const bootstrap = createTestBootstrap();
    const launch = () =>
      startServer({
        bootstrap,
        env: {
          AUTOMATION_RUNTIME_STORE: db.url,
          AUTOMATION_RUNTIME_PROVIDER_API_KEY: providerKey,
          AUTOMATION_RUNTIME_PROVIDER_BASE_URL: fake.baseUrl,
          AUTOMATION_RUNTIME_DEFAULT_AGENT_ID: agent.id as string,
          AUTOMATION_RUNTIME_DEFAULT_ENVIRONMENT_ID: environment.id as string,
        },
        args: ["--run-lease-ms", "900"],
      });
    let replicas: TestServer[] = await Promise.all([launch(), launch()]);
    const retired: TestServer[] = [];
    try {
      const subscriptions: Promise<Json[]>[] = [];
      const runIds: string[] = [];
      let replacement: Promise<void> = Promise.resolve();
      const takeovers: (() => boolean)[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        await replacement;
        const starter = replicas[round % 2];
        const started = await fetch(`${starter.url}/v1/runs`, {
          method: "POST",
          headers: sharedHeaders(bootstrap.token, {
            "content-type": "application/json",
            "idempotency-key": crypto.randomUUID(),
          }),
          body: JSON.stringify({ input: `r${round}` }),
        });
        const run = await started.json();
        assert.equal(started.status, 201, JSON.stringify(run));
        runIds.push(run.runId);
        const deadline = Date.now() + 60_000;
        for (let s = 0; s < 2; s++) {
          subscriptions.push(subscribe(() => replicas, bootstrap.token, run.runId, deadline));
        }
        if (round % 3 === 1) fake.dropNextStream({ afterFrames: 1 + (round % 5) });
        // A random point in the middle of the run (it lasts about MESSAGES * GAP_MS).
        await new Promise((resolve) =>
          setTimeout(resolve, 50 + Math.random() * (MESSAGES * GAP_MS - 150))
        );
        const tailed = (replica: TestServer) =>
          replica.logs().some((line) =>
            line.includes('"run tail started"') && line.includes(run.runId)
          );
        const holder = replicas.find(tailed);
        assert.ok(holder !== undefined, `run ${round}: no replica tails it`);
        holder.kill();
        takeovers.push(() =>
          [...replicas, ...retired].some((replica) => replica !== holder && tailed(replica))
        );
        retired.push(holder);
        const survivor = replicas.filter((replica) => replica !== holder);
        replicas = survivor;
        replacement = launch().then((fresh) => {
          replicas = [...replicas, fresh];
        });
      }
      await replacement;
      const results = await Promise.all(subscriptions);
      takeovers.forEach((tookOver, round) =>
        assert.ok(tookOver(), `run ${round}: no other replica took the lease over`)
      );
      for (let i = 0; i < results.length; i++) {
        const events = results[i];
        const runId = runIds[Math.floor(i / 2)];
        const round = Math.floor(i / 2);
        const seqs = events.map((event) => event.seq);
        assert.deepEqual(seqs, seqs.map((_, k) => k + 1), `run ${round}: gap or duplicate`);
        assert.equal(events[0].type, "run.started");
        assert.equal(events.at(-1).type, "run.completed", `run ${round} did not complete`);
        assert.ok(events.every((event) => event.runId === runId));
        const texts = events.filter((event) => event.type === "message.completed")
          .map((event) => event.text);
        assert.deepEqual(
          texts,
          Array.from({ length: MESSAGES }, (_, k) => `r${round}:${k + 1}`),
          `run ${round}: messages lost or repeated`,
        );
        // Both subscribers saw the same log.
        if (i % 2 === 1) assert.deepEqual(events, results[i - 1]);
      }
    } finally {
      await Promise.all([...replicas, ...retired].map((replica) => replica.stop()));
      await fake.close();
    }
  },
});
