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

  test("runs: state-filtered lists follow every change of state, by principal or all", async (store) => {
    const alice = crypto.randomUUID();
    const bob = crypto.randomUUID();
    const runs: StoredRunRecord[] = [];
    for (let i = 0; i < 6; i++) {
      const run = testRun({ principalId: i % 3 === 2 ? bob : alice }, i * 1000);
      const slot = reservation(run.principalId, { principalLimit: 10 });
      assert.equal(await store.runs.reserveSlot(slot), "reserved");
      await store.runs.create(run, slot.slotId);
      runs.push(run);
    }
    const ids = async (query: { principalId?: string; state?: StoredRunRecord["state"] }) =>
      (await store.runs.list({ ...query, limit: 100 })).runs.map((run) => run.runId);
    const newestFirst = (...indexes: number[]) =>
      indexes.sort((x, y) => y - x).map((index) => runs[index].runId);
    assert.deepEqual(await ids({ state: "running" }), newestFirst(0, 1, 2, 3, 4, 5));
    // Two end, one of them (alice's) is woken again by a follow-up, one asks for an answer.
    const ended = (run: StoredRunRecord): StoredRunRecord => ({
      ...run,
      state: "completed",
      endedAt: "2026-01-02T00:00:00.000Z",
    });
    assert.equal(await store.runs.update(ended(runs[1]), runs[1]), true);
    assert.equal(await store.runs.update(ended(runs[2]), runs[2]), true);
    assert.equal(await store.runs.update({ ...runs[1], turns: 2 }, ended(runs[1])), true);
    const waiting: StoredRunRecord = { ...runs[4], state: "requires_action" };
    assert.equal(await store.runs.update(waiting, runs[4]), true);
    assert.deepEqual(await ids({ state: "running" }), newestFirst(0, 1, 3, 5));
    assert.deepEqual(await ids({ state: "completed" }), newestFirst(2));
    assert.deepEqual(await ids({ state: "requires_action" }), newestFirst(4));
    assert.deepEqual(await ids({ principalId: alice, state: "running" }), newestFirst(0, 1, 3));
    assert.deepEqual(await ids({ principalId: bob, state: "running" }), newestFirst(5));
    assert.deepEqual(await ids({ principalId: bob, state: "completed" }), newestFirst(2));
    assert.deepEqual(await ids({ principalId: alice, state: "completed" }), []);
    // Pages of a state-filtered list.
    const first = await store.runs.list({ state: "running", limit: 3 });
    assert.deepEqual(first.runs.map((run) => run.runId), newestFirst(1, 3, 5));
    const second = await store.runs.list({ state: "running", limit: 3, cursor: first.nextCursor! });
    assert.deepEqual(second.runs.map((run) => run.runId), newestFirst(0));
    assert.equal(second.nextCursor, null);
  });

  test("runs: a cursor that is not one of the list's is refused, never read as the first page", async (store) => {
    const principalId = crypto.randomUUID();
    const slot = reservation(principalId);
    assert.equal(await store.runs.reserveSlot(slot), "reserved");
    await store.runs.create(testRun({ principalId }), slot.slotId);
    for (const cursor of ["W10", "garbage!", "", "eyJhIjoxfQ", "WzFd", "WyJhIl0"]) {
      await assert.rejects(store.runs.list({ limit: 10, cursor }), RangeError, cursor);
      await assert.rejects(
        store.runs.list({ limit: 10, cursor, principalId, state: "running" }),
        RangeError,
        cursor,
      );
    }
    // `WzFd` ([1]) is an audit cursor, not a run list's; `WzBd` ([0]) and `WzEuNV0` ([1.5])
    // are neither.
    for (const cursor of ["W10", "garbage!", "", "WzBd", "WzEuNV0", "WyJhIl0"]) {
      await assert.rejects(store.audit.list({ limit: 10, cursor }), RangeError, cursor);
    }
  });

  test("runs: a start records its run and its idempotency answer in one write", async (store) => {
    const principalId = crypto.randomUUID();
    const now = Date.now();
    const params = {
      scope: crypto.randomUUID(),
      requestDigest: "b".repeat(64),
      now,
      leaseMs: 1_000,
      expiresAt: now + 86_400_000,
    };
    const claim = await store.idempotency.claim(params);
    assert.ok(claim.state === "claimed");
    const slot = reservation(principalId);
    assert.equal(await store.runs.reserveSlot(slot), "reserved");
    const run = testRun({ principalId });
    const response = { status: 201, body: JSON.stringify(run) };
    await store.runs.create(run, slot.slotId, {
      scope: params.scope,
      token: claim.token,
      response,
      expiresAt: params.expiresAt,
    });
    assert.deepEqual(await store.runs.get(run.runId), run);
    // Long after the claim's lease: the key answers the run, it is not taken over.
    assert.deepEqual(await store.idempotency.claim({ ...params, now: now + 60_000 }), {
      state: "completed",
      response,
    });
    // A completion whose token lost the claim writes nothing: no run, the reservation kept.
    const lost = await store.idempotency.claim({ ...params, scope: crypto.randomUUID() });
    assert.ok(lost.state === "claimed");
    const other = reservation(principalId);
    assert.equal(await store.runs.reserveSlot(other), "reserved");
    const orphan = testRun({ principalId });
    await assert.rejects(
      store.runs.create(orphan, other.slotId, {
        scope: crypto.randomUUID(),
        token: lost.token,
        response,
        expiresAt: params.expiresAt,
      }),
      (error: Error) => error.name === "IdempotencyLeaseLostError",
    );
    assert.equal(await store.runs.get(orphan.runId), null);
    assert.equal(await store.runs.countSlots(principalId, Date.now()), 2);
  });

  test("runs: the retention purge deletes the runs that ended before the cutoff, logs first", async (store) => {
    const principalId = crypto.randomUUID();
    const cutoff = "2026-02-01T00:00:00.000Z";
    const make = async (overrides: Partial<StoredRunRecord>, offset: number) => {
      const slot = reservation(principalId, { principalLimit: 10 });
      assert.equal(await store.runs.reserveSlot(slot), "reserved");
      const run = testRun({ principalId, ...overrides }, offset);
      await store.runs.create(run, slot.slotId);
      await store.events.append(run.runId, [{
        sourceId: "run.started",
        at: run.createdAt,
        event: { type: "run.started", runId: run.runId },
      }]);
      return run;
    };
    const old = await make({ state: "completed", endedAt: "2026-01-10T00:00:00.000Z" }, 0);
    const oldFailed = await make({ state: "failed", endedAt: "2026-01-20T00:00:00.000Z" }, 1);
    const recent = await make({ state: "cancelled", endedAt: "2026-02-10T00:00:00.000Z" }, 2);
    const active = await make({ state: "running" }, 3);
    // Ended long ago, then woken by a follow-up: active again, kept.
    const woken = await make({ state: "completed", endedAt: "2026-01-05T00:00:00.000Z" }, 4);
    const { endedAt: _, ...again } = woken;
    assert.equal(await store.runs.update({ ...again, state: "running", turns: 2 }, woken), true);

    await store.events.purge(cutoff);
    assert.equal(await store.runs.purgeEnded(cutoff), 2);
    assert.equal(await store.runs.purgeEnded(cutoff), 0);
    for (const run of [old, oldFailed]) {
      assert.equal(await store.runs.get(run.runId), null);
      assert.deepEqual(await store.events.list(run.runId, 0, 10), []);
    }
    for (const run of [recent, active, woken]) {
      assert.notEqual(await store.runs.get(run.runId), null);
      assert.equal((await store.events.list(run.runId, 0, 10)).length, 1);
    }
    const listed = async (query: { principalId?: string; state?: StoredRunRecord["state"] }) =>
      (await store.runs.list({ ...query, limit: 100 })).runs.map((run) => run.runId).sort();
    const kept = [recent, active, woken].map((run) => run.runId).sort();
    assert.deepEqual(await listed({ principalId }), kept);
    assert.deepEqual(
      (await listed({})).filter((runId) => [old, oldFailed].some((run) => run.runId === runId)),
      [],
    );
    assert.deepEqual(await listed({ principalId, state: "completed" }), []);
    assert.deepEqual(await listed({ state: "failed" }), []);
    assert.deepEqual(await listed({ principalId, state: "cancelled" }), [recent.runId]);
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

  test("runs: a session waiting for its first turn holds its slot, is never purged, and frees the slot once it runs and ends or fails", async (store) => {
    const alice = crypto.randomUUID();
    const cutoff = "2026-02-01T00:00:00.000Z";
    const idle = async (offset: number) => {
      const slot = reservation(alice, { principalLimit: 2 });
      assert.equal(await store.runs.reserveSlot(slot), "reserved");
      // Recorded completed (it has not run), ended long before the cutoff, waiting.
      const run = testRun({
        principalId: alice,
        state: "completed",
        endedAt: "2026-01-02T00:00:00.000Z",
        turns: 0,
        awaitingFirstTurn: true,
      }, offset);
      await store.runs.create(run, slot.slotId);
      return run;
    };
    const first = await idle(0);
    const second = await idle(1);
    assert.equal(await store.runs.countSlots(alice, Date.now()), 2);
    assert.equal(
      await store.runs.reserveSlot(reservation(alice, { principalLimit: 2 })),
      "principalQuota",
    );
    assert.equal(await store.runs.purgeEnded(cutoff), 0, "a waiting session is kept");
    assert.notEqual(await store.runs.get(first.runId), null);
    // Its first turn: running on the slot it holds (a wake's reservation counts nothing more).
    assert.equal(
      await store.runs.reserveSlot(reservation(alice, { principalLimit: 2, slotId: first.runId })),
      "reserved",
    );
    const { awaitingFirstTurn: _, endedAt: _ended, ...running } = first;
    assert.equal(await store.runs.update({ ...running, state: "running", turns: 1 }, first), true);
    assert.equal(await store.runs.countSlots(alice, Date.now()), 2);
    // The turn ends: the slot goes. A session that fails (deleted) frees its slot too.
    await store.runs.update({ ...running, state: "completed", turns: 1, endedAt: cutoff });
    assert.equal(await store.runs.countSlots(alice, Date.now()), 1);
    const { awaitingFirstTurn: _wait, ...gone } = second;
    await store.runs.update({ ...gone, state: "failed" });
    assert.equal(await store.runs.countSlots(alice, Date.now()), 0);
    assert.equal(await store.runs.purgeEnded(cutoff), 1, "the failed one ended long ago");
  });

  test(
    "runs: idle sessions are found through their slots, and ending a wait frees the slot once, on every handle",
    async (store, openTwin) => {
      const [alice, bob] = [crypto.randomUUID(), crypto.randomUUID()];
      const record = async (overrides: Partial<StoredRunRecord>) => {
        const slot = reservation(overrides.principalId!, { principalLimit: 5 });
        assert.equal(await store.runs.reserveSlot(slot), "reserved");
        const run = testRun(overrides);
        await store.runs.create(run, slot.slotId);
        return run;
      };
      const waiting = {
        state: "completed",
        endedAt: "2026-01-01T00:00:00.000Z",
        turns: 0,
      } as const;
      const idle = await record({ principalId: alice, ...waiting, awaitingFirstTurn: true });
      await record({ principalId: alice });
      await record({ principalId: bob, ...waiting, awaitingFirstTurn: true });
      await record({ principalId: bob, ...waiting });
      const ids = (runs: StoredRunRecord[]) => runs.map((run) => run.principalId).sort();
      assert.deepEqual(await store.runs.idleRuns(alice, 10), [idle]);
      assert.deepEqual(ids(await store.runs.idleRuns(null, 10)), [alice, bob].sort());
      assert.equal((await store.runs.idleRuns(null, 1)).length, 1);
      const twin = await twinOf(store, openTwin);
      try {
        // The service holds three slots of three: full on the other handle too.
        const full = reservation(bob, { principalLimit: 5, serviceLimit: 3 });
        assert.equal(await twin.runs.reserveSlot(full), "serviceQuota");
        // Ending the wait (the record compared) frees the slot; a writer of the same read loses.
        const { awaitingFirstTurn: _, ...released } = {
          ...idle,
          endedAt: "2026-01-02T00:00:00.000Z",
        };
        assert.equal(await store.runs.update(released, idle), true);
        assert.equal(await twin.runs.update(released, idle), false);
        assert.equal(await store.runs.countSlots(alice, Date.now()), 1);
        assert.deepEqual(await twin.runs.idleRuns(alice, 10), []);
        assert.equal(await twin.runs.reserveSlot(full), "reserved");
      } finally {
        await twin.close();
      }
    },
  );

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
