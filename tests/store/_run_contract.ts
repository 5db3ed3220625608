/**
 * The runs part of the store contract: run records and their by-principal index, and the
 * active-run slots behind the quotas (also under concurrency and across two handles on one
 * store, as two replicas), and idempotent starts. Registered by `runStoreContract` in
 * `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { StoredRunRecord } from "../../server/store/types.ts";
import { type ContractCase, testRun, twinOf } from "./_fixtures.ts";

function reservation(principalId: string, overrides: Record<string, unknown> = {}) {
  return {
    principalId,
    slotId: `reservation:${crypto.randomUUID()}`,
    principalLimit: 2,
    serviceLimit: 1000,
    now: Date.now(),
    leaseMs: 60_000,
    ...overrides,
  };
}

/** Registers the run cases. */
export function runRunContract(test: ContractCase): void {
  test("runs: a recorded run reads back intact and updates replace it", async (store) => {
    const principalId = crypto.randomUUID();
    const slot = reservation(principalId);
    assert.equal(await store.runs.reserveSlot(slot), "reserved");
    const run = testRun({ principalId, agentVersion: 3, title: "t" });
    await store.runs.create(run, slot.slotId);
    assert.deepEqual(await store.runs.get(run.runId), run);
    assert.equal(await store.runs.get("sesn_missing"), null);
    const done: StoredRunRecord = {
      ...run,
      state: "completed",
      stopReason: "end_turn",
      usage: { input_tokens: 3, output_tokens: 4 },
      endedAt: run.createdAt,
    };
    await store.runs.update(done);
    assert.deepEqual(await store.runs.get(run.runId), done);
  });

  test("runs: an update with an expected record is a compare-and-set, slot included", async (store) => {
    const principalId = crypto.randomUUID();
    const slot = reservation(principalId);
    assert.equal(await store.runs.reserveSlot(slot), "reserved");
    const run = testRun({ principalId });
    await store.runs.create(run, slot.slotId);
    const read = (await store.runs.get(run.runId))!;
    // Two writers that read the same record: the first wins, the second writes nothing.
    const streamed: StoredRunRecord = {
      ...read,
      lastEventSeq: 7,
      updatedAt: "2026-01-01T00:00:01.000Z",
    };
    const cancelled: StoredRunRecord = { ...read, state: "cancelled", endedAt: read.createdAt };
    assert.equal(await store.runs.update(streamed, read), true);
    assert.equal(await store.runs.update(cancelled, read), false);
    assert.deepEqual(await store.runs.get(run.runId), streamed);
    // The refused terminal write did not free the slot either.
    assert.equal(await store.runs.countSlots(principalId, Date.now()), 1);
    // Read again and applied again, it goes through (and frees the slot).
    const again: StoredRunRecord = { ...streamed, state: "cancelled", endedAt: read.createdAt };
    assert.equal(await store.runs.update(again, streamed), true);
    assert.deepEqual(await store.runs.get(run.runId), again);
    assert.equal(await store.runs.countSlots(principalId, Date.now()), 0);
    // No record to compare with: refused.
    const missing = testRun({ principalId });
    assert.equal(await store.runs.update(missing, missing), false);
    assert.equal(await store.runs.get(missing.runId), null);
  });

  test("runs: lists are newest first in cursor pages, by principal or all, filtered by state", async (store) => {
    const alice = crypto.randomUUID();
    const bob = crypto.randomUUID();
    const runs: StoredRunRecord[] = [];
    for (let i = 0; i < 5; i++) {
      const run = testRun({
        principalId: i === 2 ? bob : alice,
        state: i === 4 ? "failed" : "running",
      }, i * 1000);
      const slot = reservation(run.principalId, { principalLimit: 10 });
      assert.equal(await store.runs.reserveSlot(slot), "reserved");
      await store.runs.create(run, slot.slotId);
      runs.push(run);
    }
    const aliceRuns = runs.filter((run) => run.principalId === alice).reverse();
    const first = await store.runs.list({ principalId: alice, limit: 3 });
    assert.deepEqual(first.runs, aliceRuns.slice(0, 3));
    assert.ok(first.nextCursor !== null);
    const second = await store.runs.list({
      principalId: alice,
      limit: 3,
      cursor: first.nextCursor!,
    });
    assert.deepEqual(second.runs, aliceRuns.slice(3));
    assert.equal(second.nextCursor, null);
    const all = await store.runs.list({ limit: 10 });
    assert.deepEqual(all.runs, [...runs].reverse());
    const failed = await store.runs.list({ principalId: alice, state: "failed", limit: 10 });
    assert.deepEqual(failed.runs.map((run) => run.runId), [runs[4].runId]);
    const bobs = await store.runs.list({ principalId: bob, limit: 10 });
    assert.deepEqual(bobs.runs, [runs[2]]);
    const page = await store.runs.list({ principalId: alice, limit: 4 });
    assert.equal(page.nextCursor, null);
  });

  test("runs: slots count reservations and active runs against both limits", async (store) => {
    const alice = crypto.randomUUID();
    const bob = crypto.randomUUID();
    const a1 = reservation(alice);
    const a2 = reservation(alice);
    assert.equal(await store.runs.reserveSlot(a1), "reserved");
    assert.equal(await store.runs.reserveSlot(a2), "reserved");
    assert.equal(await store.runs.reserveSlot(reservation(alice)), "principalQuota");
    // An existing slot is reserved again without counting twice.
    assert.equal(await store.runs.reserveSlot(a1), "reserved");
    assert.equal(await store.runs.countSlots(alice, Date.now()), 2);
    assert.equal(
      await store.runs.reserveSlot(reservation(bob, { serviceLimit: 2 })),
      "serviceQuota",
    );
    // A failed start releases; a recorded run keeps the slot; a terminal run frees it.
    await store.runs.releaseSlot(alice, a2.slotId);
    assert.equal(await store.runs.countSlots(alice, Date.now()), 1);
    const run = testRun({ principalId: alice });
    await store.runs.create(run, a1.slotId);
    assert.equal(await store.runs.countSlots(alice, Date.now()), 1);
    assert.equal(await store.runs.reserveSlot(reservation(alice)), "reserved");
    assert.equal(await store.runs.reserveSlot(reservation(alice)), "principalQuota");
    await store.runs.update({ ...run, state: "cancelled", endedAt: run.createdAt });
    assert.equal(await store.runs.countSlots(alice, Date.now()), 1);
    // A follow-up that wakes the run reserves the run's own slot, kept once it is active.
    assert.equal(
      await store.runs.reserveSlot(reservation(alice, { slotId: run.runId })),
      "reserved",
    );
    await store.runs.update({ ...run, state: "running" });
    assert.equal(await store.runs.countSlots(alice, Date.now()), 2);
    assert.equal(await store.runs.countSlots(null, Date.now()), 2);
  });

  test("runs: a lapsed reservation stops counting and is taken back", async (store) => {
    const alice = crypto.randomUUID();
    const now = Date.now();
    assert.equal(
      await store.runs.reserveSlot(reservation(alice, { principalLimit: 1, now: now - 120_000 })),
      "reserved",
    );
    assert.equal(await store.runs.countSlots(alice, now), 0);
    assert.equal(
      await store.runs.reserveSlot(reservation(alice, { principalLimit: 1, now })),
      "reserved",
    );
    assert.equal(
      await store.runs.reserveSlot(reservation(alice, { principalLimit: 1, now })),
      "principalQuota",
    );
  });

  test(
    "runs: 30 concurrent reservations on two handles admit exactly the limit",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const alice = crypto.randomUUID();
        const results = await Promise.all(
          Array.from(
            { length: 30 },
            (_, i) =>
              (i % 2 === 0 ? store : twin).runs.reserveSlot(
                reservation(alice, { principalLimit: 5 }),
              ),
          ),
        );
        assert.equal(
          results.filter((result) => result === "reserved").length,
          5,
        );
        assert.equal(await store.runs.countSlots(alice, Date.now()), 5);
        // The service limit holds across principals too.
        const others = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            (i % 2 === 0 ? store : twin).runs.reserveSlot(
              reservation(crypto.randomUUID(), { serviceLimit: 9 }),
            )),
        );
        assert.equal(
          others.filter((result) => result === "reserved").length,
          4,
        );
        assert.equal(await twin.runs.countSlots(null, Date.now()), 9);
      } finally {
        await twin.close();
      }
    },
  );

  test(
    "runs: two concurrent starts with one idempotency key: one claims, one waits",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const now = Date.now();
        const params = {
          scope: crypto.randomUUID(),
          requestDigest: "a".repeat(64),
          now,
          leaseMs: 60_000,
          expiresAt: now + 86_400_000,
        };
        const claims = await Promise.all([
          store.idempotency.claim(params),
          twin.idempotency.claim(params),
        ]);
        assert.deepEqual(claims.map((claim) => claim.state).sort(), ["claimed", "inFlight"]);
        const winner = claims.findIndex((claim) => claim.state === "claimed");
        const token = (claims[winner] as { token: string }).token;
        const body = JSON.stringify(testRun());
        await (winner === 0 ? store : twin).idempotency.complete({
          scope: params.scope,
          token,
          response: { status: 201, body },
          expiresAt: params.expiresAt,
        });
        const replay = await twin.idempotency.claim(params);
        assert.deepEqual(replay, { state: "completed", response: { status: 201, body } });
      } finally {
        await twin.close();
      }
    },
  );
}
