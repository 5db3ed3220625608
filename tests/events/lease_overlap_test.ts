/**
 * One tail appends to a run at a time. Two replicas on one store, one run: the replica tailing it
 * cannot renew its lease (its store calls for the lease fail), so the lease lapses and the other
 * replica takes the run over. The first must stop appending before that can happen: were both to
 * append, a message streamed while an append of the first was in flight would be logged by it as
 * one joined delta and by the other as the provider's slices, under ids that overlap only at the
 * first slice, and the log's deltas would spell the text once and a half. A tail told its lease is
 * gone (a renewal refused) starts no append, not even of what it read while its last append was
 * in flight. And a run woken while its ended tail is still releasing the lease gets its next tail
 * under a lease of its own, not one the late release then frees for any replica to take.
 *
 * That first check is the tail's own, by its clock. The store fences too: when the first
 * replica's clock stands still (so by its clock its lease never nears its end and it goes on
 * appending after the takeover), the store refuses each of its appends, writing nothing, the
 * tail stops at the first refusal, and the message is logged once all the same.
 *
 * @module
 */
import assert from "node:assert/strict";
import { openKvStore, wrapStore } from "../../server/store/mod.ts";
import { RunLeaseLostError, type Store, StoreUnavailableError } from "../../server/store/types.ts";
import { type Gateway, startGateway } from "../gateway/_harness.ts";

const LEASE_MS = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(predicate: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await predicate()) return;
    await sleep(10);
  }
  assert.fail(`${what}: not within 3 s`);
}

/** Starts a run whose turn stays open (events come as the test emits them); its id. */
async function heldRun(gateway: Gateway): Promise<string> {
  gateway.holdTurns(true);
  const { bearer } = await gateway.issue(["session:read", "session:write"]);
  const started = await gateway.request("POST", "/v1/runs", { bearer, body: { input: "go" } });
  assert.equal(started.status, 201, started.text);
  return started.json.runId;
}

/** How many streams of the run's session the provider was asked for (one per tail connection). */
function providerStreams(gateway: Gateway, runId: string): number {
  return gateway.fake.requests.filter((request) =>
    request.method === "GET" && request.path === `/v1/sessions/${runId}/events/stream`
  ).length;
}

/**
 * Replica B of `first`, on the same store `raw`: its appends of the long message's deltas take
 * 250 ms (so it joins them differently from a replica whose appends take 100 ms).
 */
function slowReplica(first: Gateway, raw: Store): Promise<Gateway> {
  return startGateway({
    replicaOf: first,
    store: () =>
      Promise.resolve({
        ...wrapStore(raw, (part, method, call) => {
          if (part !== "events" || method !== "appendBatch") return call;
          return async (...args: Parameters<Store["events"]["appendBatch"]>) => {
            const long = args[1].events.some((entry) =>
              entry.event.type === "message.delta" && entry.event.text.includes("L")
            );
            if (long) await sleep(250);
            return raw.events.appendBatch(...args);
          };
        }),
        close: () => Promise.resolve(), // the first replica closes the store
      }),
    serverOptions: { runLeaseMs: LEASE_MS },
  });
}

/**
 * Streams a short message, then a long one in slices of 4 characters while an append of the
 * first may be in flight; waits until every tail's appends of it landed and asserts the log
 * holds each message's text once, without gap or repeated id.
 */
async function assertMessagesLoggedOnce(gateway: Gateway, raw: Store, runId: string) {
  const long = Array.from({ length: 15 }, (_, i) => `L${String(i).padStart(3, "0")}`).join("");
  gateway.fake.managedAgents!.emit(runId, {
    type: "agent.message",
    content: [{ type: "text", text: "x" }],
  });
  await sleep(30);
  gateway.fake.managedAgents!.emit(runId, {
    type: "agent.message",
    content: [{ type: "text", text: long }],
  });
  const logged = async () => {
    const entries = await raw.events.list(runId, 0, 1_000);
    return entries.some((entry) =>
      entry.event.type === "message.completed" && entry.event.text === long
    );
  };
  await until(logged, "the long message is logged");
  await sleep(400); // every tail's appends of it have landed
  const entries = await raw.events.list(runId, 0, 1_000);
  // Each message's deltas, all before it, spell its text once.
  for (const [at, entry] of entries.entries()) {
    if (entry.event.type !== "message.completed") continue;
    const deltas = entries.filter((other) => other.sourceId.startsWith(`${entry.sourceId}#d`));
    assert.equal(
      deltas.map((delta) => (delta.event as { text: string }).text).join(""),
      entry.event.text,
    );
    assert.ok(deltas.every((delta) => entries.indexOf(delta) < at), "deltas come before");
  }
  assert.deepEqual(
    entries.map((entry) => entry.seq),
    entries.map((_, i) => i + 1),
    "no gap",
  );
  assert.equal(new Set(entries.map((entry) => entry.sourceId)).size, entries.length);
}

/** Replica A: its lease calls can be made to fail, its appends slow; counted. */
interface ReplicaA {
  gateway: Gateway;
  /** The store, unwrapped. */
  raw: Store;
  /** The lease calls of replica A fail (its renewals, and its scan's takes). */
  leaseFails: boolean;
  /** A's appends take 100 ms (an append in flight while the next message streams). */
  slow: boolean;
  /** Set once B took the run over. */
  takenOver: boolean;
  /** Appends A started after B took the run over. */
  appendsAfterTakeover: number;
  /** A's appends the store refused (`RunLeaseLostError`). */
  refused: number;
  /** Appends A started after its first refusal. */
  appendsAfterRefusal: number;
}

/** Starts replica A on a fresh in-memory store, with `now` as its clock. */
async function replicaA(now?: () => number): Promise<ReplicaA> {
  let raw: Store | undefined;
  const a = {
    leaseFails: false,
    slow: false,
    takenOver: false,
    appendsAfterTakeover: 0,
    refused: 0,
    appendsAfterRefusal: 0,
  };
  const gateway = await startGateway({
    store: async (namespace) => {
      raw = await openKvStore({ path: ":memory:", namespace });
      return wrapStore(raw, (part, method, call) => {
        if (part !== "events") return call;
        const forward = call as (...args: unknown[]) => Promise<unknown>;
        if (method === "acquireLease") {
          return (...args: unknown[]) =>
            a.leaseFails
              ? Promise.reject(new StoreUnavailableError("the test: no lease calls"))
              : forward(...args);
        }
        if (method === "appendBatch") {
          return async (...args: unknown[]) => {
            if (a.refused > 0) a.appendsAfterRefusal++;
            if (a.takenOver) a.appendsAfterTakeover++;
            if (a.slow) await sleep(100);
            return await forward(...args).catch((error) => {
              if (error instanceof RunLeaseLostError) a.refused++;
              throw error;
            });
          };
        }
        return call;
      });
    },
    serverOptions: { runLeaseMs: LEASE_MS, ...(now === undefined ? {} : { now }) },
  });
  return Object.assign(a, { gateway, raw: raw! });
}

Deno.test("lease: a tail that cannot renew stops appending before another replica can take its run; a message is logged once", async () => {
  const a = await replicaA();
  let second: Gateway | undefined;
  try {
    const runId = await heldRun(a.gateway);
    const streams = () => providerStreams(a.gateway, runId);
    await until(() => streams() === 1, "replica A tails the run");
    // Replica B: the same store; its appends of the long message's deltas take 250 ms.
    second = await slowReplica(a.gateway, a.raw);
    a.leaseFails = true;
    await until(() => streams() === 2, "replica B takes the run over once the lease lapsed");
    a.takenOver = true;
    // A's appends take 100 ms: one is in flight while the long message streams.
    a.slow = true;
    await assertMessagesLoggedOnce(a.gateway, a.raw, runId);
    assert.equal(a.appendsAfterTakeover, 0, "A appended nothing once B held the run");
  } finally {
    a.slow = false;
    await second?.close();
    await a.gateway.close();
  }
});

Deno.test("lease: a tail whose clock says its lease holds is refused by the store once another replica took its run; a message is logged once", async () => {
  /** Replica A's clock: the wall clock until it stops. */
  let frozenAt: number | undefined;
  const a = await replicaA(() => frozenAt ?? Date.now());
  let second: Gateway | undefined;
  try {
    const runId = await heldRun(a.gateway);
    const streams = () => providerStreams(a.gateway, runId);
    await until(() => streams() === 1, "replica A tails the run");
    second = await slowReplica(a.gateway, a.raw);
    // A's clock stops and its lease calls fail: by its clock its lease holds for ever.
    frozenAt = Date.now();
    a.leaseFails = true;
    await until(() => streams() === 2, "replica B takes the run over once the lease lapsed");
    a.takenOver = true;
    a.slow = true;
    await assertMessagesLoggedOnce(a.gateway, a.raw, runId);
    // A's own check did not stop it: it tried to append, and the store refused the try.
    assert.ok(a.appendsAfterTakeover > 0, "A still appended after the takeover (its clock)");
    assert.equal(a.refused, a.appendsAfterTakeover, "the store refused each of them");
    assert.equal(a.appendsAfterRefusal, 0, "A's tail stopped at its first refusal");
  } finally {
    a.slow = false;
    await second?.close();
    await a.gateway.close();
  }
});

Deno.test("lease: a tail told its lease is gone appends nothing more, not even what it read before", async () => {
  let refuse = false;
  let holdAppends = false;
  const held: (() => void)[] = [];
  let appends = 0;
  let refusedAt = -1;
  const gateway = await startGateway({
    store: async (namespace) => {
      const raw = await openKvStore({ path: ":memory:", namespace });
      return wrapStore(raw, (part, method, call) => {
        if (part !== "events") return call;
        const forward = call as (...args: unknown[]) => Promise<unknown>;
        if (method === "acquireLease") {
          return (...args: unknown[]) => refuse ? Promise.resolve(false) : forward(...args);
        }
        if (method === "appendBatch") {
          return async (...args: unknown[]) => {
            appends++;
            if (holdAppends) await new Promise<void>((resolve) => held.push(resolve));
            return forward(...args);
          };
        }
        return call;
      });
    },
    serverOptions: { runLeaseMs: LEASE_MS },
  });
  try {
    const runId = await heldRun(gateway);
    const logged = async (text: string) =>
      (await gateway.store.events.list(runId, 0, 1_000)).some((entry) =>
        entry.event.type === "message.completed" && entry.event.text === text
      );
    const emit = (event: Record<string, unknown>) => gateway.fake.managedAgents!.emit(runId, event);
    emit({ type: "agent.message", content: [{ type: "text", text: "first" }] });
    await until(() => logged("first"), "the tail appends");
    // The next append is held; the turn's end is read meanwhile (the tail waits for its append).
    holdAppends = true;
    emit({ type: "agent.message", content: [{ type: "text", text: "second" }] });
    await until(() => held.length === 1, "an append in flight");
    emit({ type: "agent.message", content: [{ type: "text", text: "third" }] });
    emit({ type: "session.status_idle", stop_reason: { type: "end_turn" } });
    await sleep(50);
    // Another replica holds the run now: the next renewal is refused.
    refuse = true;
    await sleep(LEASE_MS / 3 + 50);
    refusedAt = appends;
    holdAppends = false;
    for (const release of held.splice(0)) release();
    await sleep(200);
    assert.equal(appends, refusedAt, "no append starts once the lease is gone");
    assert.equal(await logged("third"), false);
    // The lease free again, the run's next tail appends what was missed, once.
    refuse = false;
    await until(() => logged("third"), "the next tail appends the rest");
    const entries = await gateway.store.events.list(runId, 0, 1_000);
    assert.equal(new Set(entries.map((entry) => entry.sourceId)).size, entries.length);
    assert.equal(entries.at(-1)!.event.type, "run.completed");
  } finally {
    holdAppends = false;
    for (const release of held.splice(0)) release();
    await gateway.close();
  }
});

Deno.test("lease: a run woken while its ended tail still releases the lease keeps the lease for its next tail", async () => {
  let raw: Store | undefined;
  const releases: (() => void)[] = [];
  let holdReleases = true;
  let released = 0;
  const gateway = await startGateway({
    store: async (namespace) => {
      raw = await openKvStore({ path: ":memory:", namespace });
      return wrapStore(raw, (part, method, call) => {
        if (part !== "events" || method !== "releaseLease") return call;
        return async (...args: Parameters<Store["events"]["releaseLease"]>) => {
          if (holdReleases) await new Promise<void>((resolve) => releases.push(resolve));
          await raw!.events.releaseLease(...args);
          released++;
        };
      });
    },
    serverOptions: { runLeaseMs: LEASE_MS },
  });
  try {
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const started = await gateway.request("POST", "/v1/runs", { bearer, body: { input: "one" } });
    assert.equal(started.status, 201, started.text);
    const runId: string = started.json.runId;
    // The echo turn ends; its tail ends and releases the run's lease (held here).
    await until(() => releases.length > 0, "the ended tail releases its lease");
    gateway.holdTurns(true);
    const sent = await gateway.request("POST", `/v1/runs/${runId}/messages`, {
      bearer,
      body: { input: "two" },
    });
    assert.equal(sent.status, 202, sent.text);
    const streams = () => providerStreams(gateway, runId);
    // The follow-up's tail starts (it took the lease, or waits for the release to take it).
    await Promise.race([until(() => streams() === 2, "the next tail streams"), sleep(300)]);
    holdReleases = false;
    for (const release of releases.splice(0)) release();
    await until(() => released > 0, "the release is done");
    await until(() => streams() === 2, "the next tail streams");
    const taken = await raw!.events.acquireLease({
      runId,
      holder: "another replica",
      now: Date.now(),
      ttlMs: 10_000,
    });
    assert.equal(taken, false, "the running tail holds the lease: no other replica can take it");
  } finally {
    holdReleases = false;
    for (const release of releases.splice(0)) release();
    await gateway.close();
  }
});
