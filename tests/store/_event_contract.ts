/**
 * The event-log and tail-lease part of the store contract: gap-free seqs, dedupe by provider
 * event id (also within one batch, under concurrent appends from two handles, as two replicas,
 * and in a burst larger than any one write holds), paging after a seq, wake-ups on append,
 * leases taken, refused, renewed, lapsed and released, appends fenced by the lease's holder
 * (refused, writing nothing, once another holder took it; not by the holder's own renewals, made
 * through another handle too), and the 7-day purge of ended runs; the
 * native log beside it (the provider's events as their JSON text, byte for byte, numbered and
 * deduplicated on their own, appended in the same write as the run events, read in both orders,
 * large events whole). Registered by `runStoreContract` in `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type NativeEventInput,
  type RunEventInput,
  RunLeaseLostError,
  type Store,
} from "../../server/store/types.ts";
import { type ContractCase, testRun, twinOf } from "./_fixtures.ts";

function input(sourceId: string, text = sourceId): RunEventInput {
  return {
    sourceId,
    at: new Date().toISOString(),
    event: { type: "message.completed", runId: "sesn_x", text },
  };
}

/** A native event whose JSON text keeps an order of fields no serializer would choose. */
function native(id: string, text = id): NativeEventInput {
  return {
    id,
    type: "agent.message",
    json: `{"type":"agent.message","id":"${id}","content":[{"type":"text","text":"${text}"}],` +
      `"processed_at":"2026-01-01T00:00:00Z","a":1}`,
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
    // A limit below 1 is an empty page, not a store failure.
    assert.deepEqual(await store.events.list(runId, 0, 0), []);
    assert.deepEqual(await store.events.list(runId, 0, -1), []);
    assert.deepEqual(await store.events.listNative(runId, { order: "asc", limit: 0 }), []);
    assert.deepEqual(await store.events.listNative(runId, { order: "desc", limit: -1 }), []);
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

  test(
    "leases: an append fenced by a holder whose lease another holder took is refused and writes nothing",
    async (store, openTwin) => {
      // A second handle even on KV: the taker's write is one this handle did not see.
      const twin = await openTwin();
      try {
        const runId = `sesn_${crypto.randomUUID()}`;
        const now = Date.now();
        const lease = (holder: string, at: number, on: Store) =>
          on.events.acquireLease({ runId, holder, now: at, ttlMs: 15_000 });
        const fenced = (on: Store, holder: string, ids: string[]) =>
          on.events.appendBatch(runId, {
            events: ids.map((id) => input(id)),
            native: ids.map((id) => native(`n${id}`)),
          }, { holder });
        assert.equal(await lease("a", now, store), true);
        assert.equal((await fenced(store, "a", ["1"])).events.length, 1);
        assert.equal((await fenced(store, "a", ["2"])).events.length, 1, "the fast path, warmed");
        assert.equal(await lease("b", now + 20_000, twin), true, "lapsed by b's clock: taken");
        await assert.rejects(fenced(store, "a", ["3", "4"]), RunLeaseLostError);
        await assert.rejects(fenced(store, "a", ["3"]), RunLeaseLostError, "again: still refused");
        await assert.rejects(fenced(store, "a", []), RunLeaseLostError, "even with nothing to add");
        assert.deepEqual(await all(store, runId), [
          { seq: 1, sourceId: "1" },
          { seq: 2, sourceId: "2" },
        ], "nothing of the refused appends");
        const nativeIds = async () =>
          (await store.events.listNative(runId, { order: "asc", limit: 50 })).map((e) => e.id);
        assert.deepEqual(await nativeIds(), ["n1", "n2"]);
        // The new holder appends; an append without a holder does not look at the lease.
        assert.deepEqual((await fenced(twin, "b", ["3"])).events.map((e) => e.seq), [3]);
        assert.deepEqual((await store.events.append(runId, [input("4")])).map((e) => e.seq), [4]);
        // Released: no holder's fenced append goes in.
        await twin.events.releaseLease(runId, "b");
        await assert.rejects(fenced(twin, "b", ["5"]), RunLeaseLostError);
        assert.deepEqual((await all(store, runId)).map((e) => e.sourceId), ["1", "2", "3", "4"]);
        assert.deepEqual(await nativeIds(), ["n1", "n2", "n3"]);
      } finally {
        await twin.close();
      }
    },
  );

  test(
    "leases: a holder's own renewals between its fenced appends do not refuse them",
    async (store, openTwin) => {
      const twin = await openTwin();
      try {
        const runId = `sesn_${crypto.randomUUID()}`;
        const now = Date.now();
        const renew = (at: number, on: Store = store) =>
          on.events.acquireLease({ runId, holder: "a", now: at, ttlMs: 15_000 });
        const append = (id: string) =>
          store.events.appendBatch(runId, { events: [input(id)] }, { holder: "a" });
        assert.equal(await renew(now), true);
        await append("1");
        assert.equal(await renew(now + 5_000), true);
        await append("2");
        // Renewed through another handle (the same holder's write this handle did not make).
        assert.equal(await renew(now + 10_000, twin), true);
        await append("3");
        // A renewal and appends at once.
        const [renewed] = await Promise.all([renew(now + 15_000), append("4"), append("5")]);
        assert.equal(renewed, true);
        await append("6");
        assert.deepEqual(
          (await all(store, runId)).map((e) => e.seq),
          [1, 2, 3, 4, 5, 6],
          "every append went in, without a gap",
        );
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
      await store.events.appendBatch(run.runId, {
        // A long reply among them: a store may keep it in pieces.
        events: [input("a"), input("b", "x".repeat(100_000)), input("c")],
        native: [native("n")],
      });
    }
    assert.ok(await store.events.purge("2026-02-01T00:00:00.000Z") >= 3);
    assert.deepEqual(await store.events.list(old.runId, 0, 10), []);
    assert.deepEqual(await store.events.listNative(old.runId, { order: "asc", limit: 10 }), []);
    assert.equal(
      (await store.events.listNative(recent.runId, { order: "asc", limit: 10 })).length,
      1,
    );
    assert.equal((await store.events.list(recent.runId, 0, 10)).length, 3);
    assert.equal((await store.events.list(active.runId, 0, 10)).length, 3);
  });

  test("native log: appended with the run events in one batch, numbered and deduplicated apart", async (store) => {
    const runId = `sesn_${crypto.randomUUID()}`;
    const first = await store.events.appendBatch(runId, {
      events: [input("a"), input("b")],
      native: [native("n1"), native("n2"), native("n1")],
    });
    assert.deepEqual(first.events.map((e) => [e.seq, e.sourceId]), [[1, "a"], [2, "b"]]);
    assert.deepEqual(first.native.map((e) => [e.seq, e.id, e.type]), [
      [1, "n1", "agent.message"],
      [2, "n2", "agent.message"],
    ]);
    assert.equal(first.native[0].json, native("n1").json);
    // Known ids of either log are skipped; a batch of only native events appends only those.
    const second = await store.events.appendBatch(runId, {
      events: [input("b")],
      native: [native("n2"), native("n3")],
    });
    assert.deepEqual(second.events, []);
    assert.deepEqual(second.native.map((e) => [e.seq, e.id]), [[3, "n3"]]);
    const third = await store.events.appendBatch(runId, { events: [input("c")] });
    assert.deepEqual(third.events.map((e) => e.seq), [3]);
    assert.deepEqual(third.native, []);
    // The text comes back byte for byte (field order included), in both orders.
    const asc = await store.events.listNative(runId, { order: "asc", limit: 10 });
    assert.deepEqual(asc.map((e) => e.json), ["n1", "n2", "n3"].map((id) => native(id).json));
    assert.deepEqual(asc.map((e) => e.seq), [1, 2, 3]);
    const after = await store.events.listNative(runId, { order: "asc", after: 1, limit: 1 });
    assert.deepEqual(after.map((e) => e.id), ["n2"]);
    const desc = await store.events.listNative(runId, { order: "desc", limit: 2 });
    assert.deepEqual(desc.map((e) => e.seq), [3, 2]);
    const before = await store.events.listNative(runId, { order: "desc", before: 2, limit: 5 });
    assert.deepEqual(before.map((e) => e.id), ["n1"]);
    assert.deepEqual(
      await store.events.listNative(runId, { order: "asc", after: 3, limit: 5 }),
      [],
    );
    assert.deepEqual(
      await store.events.listNative(`sesn_${crypto.randomUUID()}`, { order: "asc", limit: 5 }),
      [],
    );
    // The run log is as `append` alone would have left it.
    assert.deepEqual((await all(store, runId)).map((e) => e.sourceId), ["a", "b", "c"]);
  });

  test("native log: large events and large batches are kept whole and in order", async (store) => {
    const runId = `sesn_${crypto.randomUUID()}`;
    // Larger than one KV value (64 KiB), with characters of every width.
    const big = native("big", "x".repeat(70_000) + "é€😀".repeat(5_000) + "y".repeat(30_000));
    const many = Array.from({ length: 130 }, (_, i) => native(`m${i}`));
    const appended = await store.events.appendBatch(runId, {
      events: many.map((event) => input(event.id)),
      native: [native("first"), big, ...many],
    });
    assert.equal(appended.native.length, 132);
    assert.equal(appended.events.length, 130);
    const asc = await store.events.listNative(runId, { order: "asc", limit: 3 });
    assert.deepEqual(asc.map((e) => e.id), ["first", "big", "m0"]);
    assert.equal(asc[1].json, big.json);
    const desc = await store.events.listNative(runId, { order: "desc", before: 3, limit: 5 });
    assert.deepEqual(desc.map((e) => e.id), ["big", "first"]);
    assert.equal(desc[0].json, big.json);
    const whole = await store.events.listNative(runId, { order: "asc", limit: 500 });
    assert.deepEqual(whole.map((e) => e.seq), Array.from({ length: 132 }, (_, i) => i + 1));
  });

  test("events: tool inputs as parsed from the provider's JSON (decimals, fields left undefined) append in one batch and read back as JSON keeps them", async (store) => {
    const runId = `sesn_${crypto.randomUUID()}`;
    // A decimal makes every number of its array a double; undefined fields are not JSON's.
    const inputs: unknown[] = [
      ...Array.from({ length: 6 }, () => JSON.parse(`[0.5${",1".repeat(1_500)}]`)),
      ...Array.from({ length: 6 }, () => JSON.parse(`[${Array(1_500).fill("-0").join(",")}]`)),
      ...Array.from({ length: 20 }, () =>
        Object.fromEntries(
          Array.from({ length: 300 }, (_, i) => [`field_${i}_of_the_input`, undefined]),
        )),
    ];
    const events: RunEventInput[] = inputs.map((toolInput, i) => ({
      sourceId: `t${i}`,
      at: new Date().toISOString(),
      event: {
        type: "tool.call",
        runId,
        id: `toolu_${i}`,
        name: "lookup",
        input: toolInput,
        needsConfirmation: false,
      },
    }));
    const appended = await store.events.appendBatch(runId, { events });
    assert.equal(appended.events.length, inputs.length);
    const log = await store.events.list(runId, 0, 100);
    assert.deepEqual(
      log.map((entry) => entry.event),
      events.map((event) => JSON.parse(JSON.stringify(event.event))),
    );
  });

  test("events: a long reply (a message of 200,000 characters, or 100,000 of two bytes) is logged whole among short ones and read back by page", async (store) => {
    const runId = `sesn_${crypto.randomUUID()}`;
    const texts = ["a", "x".repeat(200_000), "b", "中😀".repeat(50_000), "c", "d"];
    await store.events.appendBatch(runId, {
      events: texts.map((text, i) => input(`m${i}`, text)),
    });
    const whole = await store.events.list(runId, 0, 100);
    assert.deepEqual(
      whole.map((entry) => (entry.event as { text: string }).text),
      texts,
    );
    for (const limit of [1, 2, 10]) {
      for (let after = 0; after <= texts.length; after++) {
        assert.deepEqual(
          await store.events.list(runId, after, limit),
          whole.slice(after, after + limit),
          `after ${after}, ${limit}`,
        );
      }
    }
  });

  test("events: an entry longer than one store write may hold (1.1 MB, or 520,000 two-byte characters) is appended to both logs in one batch and every page reads it whole", async (store) => {
    const runId = `sesn_${crypto.randomUUID()}`;
    const texts = ["a", "x".repeat(1_100_000), "b", "中".repeat(520_000), "c"];
    const appended = await store.events.appendBatch(runId, {
      events: texts.map((text, i) => input(`m${i}`, text)),
      native: texts.map((text, i) => native(`m${i}`, text)),
    });
    assert.deepEqual(appended.events.map((entry) => entry.seq), [1, 2, 3, 4, 5]);
    assert.deepEqual(appended.native.map((entry) => entry.seq), [1, 2, 3, 4, 5]);
    const events = await store.events.list(runId, 0, 10);
    assert.deepEqual(events.map((entry) => (entry.event as { text: string }).text), texts);
    const natives = await store.events.listNative(runId, { order: "asc", limit: 10 });
    assert.deepEqual(
      natives.map((entry) => entry.json),
      texts.map((text, i) => native(`m${i}`, text).json),
    );
    await assertEveryPage(store, runId, texts.length);
    // Appended again (a tail that reconnected), nothing is added.
    const again = await store.events.appendBatch(runId, {
      events: texts.map((text, i) => input(`m${i}`, text)),
      native: texts.map((text, i) => native(`m${i}`, text)),
    });
    assert.deepEqual([again.events.length, again.native.length], [0, 0]);
  });

  test("logs by page: every page of both logs, either way from anywhere, is the slice of the whole", async (store) => {
    const runId = `sesn_${crypto.randomUUID()}`;
    // Entries of many sizes and widths (a store may pack small ones into one value and part large
    // ones), appended in batches of several lengths.
    const texts = ["a", "€".repeat(3_000), "b".repeat(9_000), "😀".repeat(2_000), "c".repeat(40)];
    const sizes = [
      10,
      "é".repeat(5_000),
      "x".repeat(20_000),
      "d".repeat(30_000),
      "€".repeat(9_000),
    ];
    let n = 0;
    for (const count of [1, 17, 4, 30, 9]) {
      const ids = Array.from({ length: count }, () => `i${++n}`);
      await store.events.appendBatch(runId, {
        events: ids.map((id, i) => input(id, texts[(n + i) % texts.length])),
        native: ids.map((id, i) => {
          const size = sizes[(n + 2 * i) % sizes.length];
          return native(id, typeof size === "number" ? id : size);
        }),
      });
    }
    await assertEveryPage(store, runId, n);
  });

  test(
    "native log: concurrent batches from two handles leave both logs gap-free and duplicate-free",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const runId = `sesn_${crypto.randomUUID()}`;
        const ids = Array.from({ length: 30 }, (_, i) => `p${i}`);
        const batch = (slice: string[]) => ({
          events: slice.map((id) => input(id)),
          native: slice.map((id) => native(id)),
        });
        await Promise.all(
          [0, 10, 20].flatMap((start) => [
            store.events.appendBatch(runId, batch(ids.slice(start, start + 10))),
            twin.events.appendBatch(runId, batch(ids.slice(start, start + 10))),
          ]),
        );
        const log = await store.events.listNative(runId, { order: "asc", limit: 500 });
        assert.deepEqual(log.map((e) => e.seq), Array.from({ length: 30 }, (_, i) => i + 1));
        assert.equal(new Set(log.map((e) => e.id)).size, 30);
        assert.equal((await all(store, runId)).length, 30);
      } finally {
        await twin.close();
      }
    },
  );

  test(
    "events: a burst of 1,500 with ids already held and another handle appending meanwhile keeps both logs whole",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const runId = `sesn_${crypto.randomUUID()}`;
        // Source ids as long as a provider's, so the batch needs several commits on any limit.
        const id = (i: number) => `sevt_${String(i).padStart(4, "0")}_${"0".repeat(24)}`;
        const burst = Array.from({ length: 1_500 }, (_, i) => id(i));
        const batch = (ids: string[]) => ({
          events: ids.map((one) => input(one)),
          native: ids.map((one) => native(one)),
        });
        const held = [id(3), id(700), id(1_499)];
        await store.events.appendBatch(runId, batch(held));
        // The other handle appends ids of the burst (some early, some late) and ids of its own.
        const others = [id(5), id(800), "own-1", id(1_200), "own-2", "own-3"];
        const [appended, ...twins] = await Promise.all([
          store.events.appendBatch(runId, batch(burst)),
          ...[0, 2, 4].map((at) => twin.events.appendBatch(runId, batch(others.slice(at, at + 2)))),
        ]);
        const expected = new Set([...burst, "own-1", "own-2", "own-3"]);
        const events = await store.events.list(runId, 0, 2_000);
        const nativeLog = await store.events.listNative(runId, { order: "asc", limit: 2_000 });
        const logs: [number[], string[]][] = [
          [events.map((e) => e.seq), events.map((e) => e.sourceId)],
          [nativeLog.map((e) => e.seq), nativeLog.map((e) => e.id)],
        ];
        for (const [log, ids] of logs) {
          assert.deepEqual(log, Array.from({ length: expected.size }, (_, i) => i + 1), "no gap");
          assert.deepEqual(new Set(ids), expected, "no duplicate, nothing lost");
          // The burst's own entries keep its order.
          const mine = new Set(appended.events.map((e) => e.sourceId));
          const order = ids.filter((one) => mine.has(one));
          assert.deepEqual(order, burst.filter((one) => mine.has(one)));
        }
        // Each entry was appended by exactly one call, which says so.
        const told = [
          ...held,
          ...appended.events.map((e) => e.sourceId),
          ...twins.flatMap((t) => t.events.map((e) => e.sourceId)),
        ];
        assert.equal(told.length, expected.size);
        assert.deepEqual(appended.native.map((e) => e.id), appended.events.map((e) => e.sourceId));
        assert.ok(!appended.events.some((e) => held.includes(e.sourceId)));
        assert.equal(nativeLog[nativeLog.length - 1].json, native(nativeLog.at(-1)!.id).json);
      } finally {
        await twin.close();
      }
    },
  );

  test(
    "native log: a native-only append wakes a watcher on another handle",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      const runId = `sesn_${crypto.randomUUID()}`;
      const woken = Promise.withResolvers<void>();
      let appended = false;
      const stop = twin.events.watch(runId, (_last, head) => {
        if (!appended) return;
        // A backend that tells the head tells the right one.
        if (head !== undefined) assert.deepEqual(head, { seq: 0, native: 1 });
        woken.resolve();
      });
      try {
        await new Promise((resolve) => setTimeout(resolve, 200));
        appended = true;
        await store.events.appendBatch(runId, { events: [], native: [native("w")] });
        const timer = setTimeout(() => woken.reject(new Error("no wake-up within 3 s")), 3_000);
        await woken.promise.finally(() => clearTimeout(timer));
      } finally {
        stop();
        await twin.close();
      }
    },
  );
}

/**
 * Asserts that a run's logs hold `count` entries each, numbered from 1, and that every page of
 * them (run events after any seq; native events after any seq, before any seq, or from the end),
 * of 1, 7 or 40 entries, is the matching slice of the whole log.
 */
export async function assertEveryPage(store: Store, runId: string, count: number): Promise<void> {
  const events = await store.events.list(runId, 0, 10_000);
  const natives = await store.events.listNative(runId, { order: "asc", limit: 10_000 });
  const seqs = Array.from({ length: count }, (_, i) => i + 1);
  assert.deepEqual(events.map((entry) => entry.seq), seqs);
  assert.deepEqual(natives.map((entry) => entry.seq), seqs);
  for (const limit of [1, 7, 40]) {
    for (let after = 0; after <= count; after++) {
      assert.deepEqual(
        await store.events.list(runId, after, limit),
        events.slice(after, after + limit),
        `run events after ${after}, ${limit}`,
      );
      assert.deepEqual(
        await store.events.listNative(runId, { order: "asc", after, limit }),
        natives.slice(after, after + limit),
        `native events after ${after}, ${limit}`,
      );
    }
    for (let before = 1; before <= count + 1; before++) {
      assert.deepEqual(
        await store.events.listNative(runId, { order: "desc", before, limit }),
        natives.slice(Math.max(0, before - 1 - limit), before - 1).reverse(),
        `native events before ${before}, ${limit}`,
      );
    }
    assert.deepEqual(
      await store.events.listNative(runId, { order: "desc", limit }),
      natives.slice(-limit).reverse(),
    );
  }
}
