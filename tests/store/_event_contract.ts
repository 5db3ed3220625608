/**
 * The event-log and tail-lease part of the store contract: gap-free seqs, dedupe by provider
 * event id (also within one batch and under concurrent appends from two handles, as two
 * replicas), paging after a seq, wake-ups on append, leases taken, refused, renewed, lapsed and
 * released, and the 7-day purge of ended runs. Registered by `runStoreContract` in `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { RunEventInput, Store } from "../../server/store/types.ts";
import { type ContractCase, testRun, twinOf } from "./_fixtures.ts";

function input(sourceId: string, text = sourceId): RunEventInput {
  return {
    sourceId,
    at: new Date().toISOString(),
    event: { type: "message.completed", runId: "sesn_x", text },
  };
}

async function all(store: Store, runId: string): Promise<{ seq: number; sourceId: string }[]> {
  return (await store.events.list(runId, 0, 500)).map(({ seq, sourceId }) => ({ seq, sourceId }));
}

/** Registers the event-log and lease cases. */
export function runEventContract(test: ContractCase): void {
  test("events: appends number from 1 without gaps and skip known provider event ids", async (store) => {
    const runId = `sesn_${crypto.randomUUID()}`;
    const first = await store.events.append(runId, [input("a"), input("b"), input("a")]);
    assert.deepEqual(first.map((e) => [e.seq, e.sourceId]), [[1, "a"], [2, "b"]]);
    assert.deepEqual(first[0].event, input("a").event);
    assert.deepEqual(await store.events.append(runId, [input("b"), input("a")]), []);
    const second = await store.events.append(runId, [input("b"), input("c"), input("d")]);
    assert.deepEqual(second.map((e) => [e.seq, e.sourceId]), [[3, "c"], [4, "d"]]);
    assert.deepEqual(await all(store, runId), [
      { seq: 1, sourceId: "a" },
      { seq: 2, sourceId: "b" },
      { seq: 3, sourceId: "c" },
      { seq: 4, sourceId: "d" },
    ]);
    // Another run's log is its own.
    assert.deepEqual(await store.events.list(`sesn_${crypto.randomUUID()}`, 0, 10), []);
  });

  test("events: pages after a seq, in order, at most limit", async (store) => {
    const runId = `sesn_${crypto.randomUUID()}`;
    await store.events.append(runId, Array.from({ length: 7 }, (_, i) => input(`e${i}`)));
    const page = await store.events.list(runId, 2, 3);
    assert.deepEqual(page.map((e) => e.seq), [3, 4, 5]);
    assert.deepEqual((await store.events.list(runId, 5, 100)).map((e) => e.seq), [6, 7]);
    assert.deepEqual(await store.events.list(runId, 7, 100), []);
  });

  test(
    "events: concurrent appends from two handles leave one gap-free, duplicate-free log",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const runId = `sesn_${crypto.randomUUID()}`;
        const ids = Array.from({ length: 40 }, (_, i) => `p${i}`);
        // Both "tails" append every id, in overlapping batches, at once.
        await Promise.all([
          ...[0, 10, 20, 30].map((start) =>
            store.events.append(runId, ids.slice(start, start + 10).map((id) => input(id)))
          ),
          ...[5, 15, 25, 35].map((start) =>
            twin.events.append(runId, ids.slice(start, start + 10).map((id) => input(id)))
          ),
        ]);
        const log = await all(store, runId);
        assert.deepEqual(log.map((e) => e.seq), Array.from({ length: 40 }, (_, i) => i + 1));
        assert.deepEqual(new Set(log.map((e) => e.sourceId)), new Set(ids));
      } finally {
        await twin.close();
      }
    },
  );

  test(
    "events: appends taking turns between two handles, and batches of hundreds, stay gap-free",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const runId = `sesn_${crypto.randomUUID()}`;
        // Each handle's next append follows one by the other handle (a head it did not write),
        // and repeats an id the other wrote.
        let n = 0;
        for (let round = 0; round < 4; round++) {
          for (const handle of [store, twin]) {
            const batch = [input(`t${n - 1}`), input(`t${n}`), input(`t${n + 1}`)];
            n += 2;
            await handle.events.append(runId, batch);
          }
        }
        const big = Array.from({ length: 300 }, (_, i) => input(`big${i}`));
        const appended = await store.events.append(runId, [...big, input("t0")]);
        assert.equal(appended.length, 300);
        const log = await all(store, runId);
        assert.deepEqual(
          log.map((e) => e.seq),
          Array.from({ length: log.length }, (_, i) => i + 1),
        );
        assert.equal(new Set(log.map((e) => e.sourceId)).size, log.length);
        assert.equal(log.length, 17 + 300);
      } finally {
        await twin.close();
      }
    },
  );

  test("events: a watcher on another handle is woken by an append", async (store, openTwin) => {
    const twin = await twinOf(store, openTwin);
    const runId = `sesn_${crypto.randomUUID()}`;
    const woken = Promise.withResolvers<number | undefined>();
    let appended = false;
    const stop = twin.events.watch(runId, (last) => {
      if (appended) woken.resolve(last);
    });
    try {
      // Give the watch (LISTEN, or KV's watch stream) a moment to be in place.
      await new Promise((resolve) => setTimeout(resolve, 200));
      appended = true;
      await store.events.append(runId, [input("w")]);
      const timer = setTimeout(() => woken.reject(new Error("no wake-up within 3 s")), 3_000);
      const last = await woken.promise.finally(() => clearTimeout(timer));
      // A backend that tells the log's last seq tells the right one.
      if (last !== undefined) assert.equal(last, 1);
    } finally {
      stop();
      await twin.close();
    }
  });

  test(
    "leases: one holder at a time; renewed by its holder; taken once lapsed; released",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const runId = `sesn_${crypto.randomUUID()}`;
        const now = Date.now();
        const lease = (holder: string, at: number, on: Store = store) =>
          on.events.acquireLease({ runId, holder, now: at, ttlMs: 15_000 });
        assert.equal(await lease("a", now), true);
        assert.equal(await lease("b", now + 1_000, twin), false);
        assert.equal(await lease("a", now + 5_000), true, "the holder renews");
        assert.equal(await lease("b", now + 19_000, twin), false, "renewed until now + 20 s");
        assert.equal(await lease("b", now + 20_000, twin), true, "lapsed: taken over");
        assert.equal(await lease("a", now + 21_000), false, "the old holder lost it");
        await store.events.releaseLease(runId, "a");
        assert.equal(await lease("a", now + 22_000), false, "another holder's release is a no-op");
        await twin.events.releaseLease(runId, "b");
        assert.equal(await lease("a", now + 22_000), true, "released: free");
        // Two replicas racing for a free lease: exactly one wins.
        const other = `sesn_${crypto.randomUUID()}`;
        const results = await Promise.all([
          store.events.acquireLease({ runId: other, holder: "x", now, ttlMs: 15_000 }),
          twin.events.acquireLease({ runId: other, holder: "y", now, ttlMs: 15_000 }),
        ]);
        assert.equal(results.filter(Boolean).length, 1);
      } finally {
        await twin.close();
      }
    },
  );

  test("events: logs of runs ended more than the cutoff ago are purged, others kept", async (store) => {
    const principalId = crypto.randomUUID();
    const old = testRun({ principalId, state: "completed", endedAt: "2026-01-01T00:00:00.000Z" });
    const recent = testRun({ principalId, state: "failed", endedAt: "2026-03-01T00:00:00.000Z" });
    const active = testRun({ principalId, state: "running" });
    for (const run of [old, recent, active]) {
      const slot = `reservation:${crypto.randomUUID()}`;
      assert.equal(
        await store.runs.reserveSlot({
          principalId,
          slotId: slot,
          principalLimit: 10,
          serviceLimit: 1000,
          now: Date.now(),
          leaseMs: 60_000,
        }),
        "reserved",
      );
      await store.runs.create(run, slot);
      await store.events.append(run.runId, [input("a"), input("b")]);
    }
    assert.ok(await store.events.purge("2026-02-01T00:00:00.000Z") >= 2);
    assert.deepEqual(await store.events.list(old.runId, 0, 10), []);
    assert.equal((await store.events.list(recent.runId, 0, 10)).length, 2);
    assert.equal((await store.events.list(active.runId, 0, 10)).length, 2);
  });
}
