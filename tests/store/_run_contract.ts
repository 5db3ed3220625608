/**
 * The run gateway's part of the store contract: run records and their by-principal index, the
 * active-run slots behind the quotas (also under concurrency and across two handles on one
 * store, as two replicas), idempotent starts, and the audit log. Registered by
 * `runStoreContract` in `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { AuditEntryInput, Store, StoredRunRecord } from "../../server/store/types.ts";

/** Registers one contract case (the suite's own `test`). */
export type ContractCase = (
  title: string,
  body: (store: Store, openTwin: () => Promise<Store>) => Promise<void>,
) => void;

/** A run record with fresh ids, created `offsetMs` after a fixed instant. */
export function testRun(overrides: Partial<StoredRunRecord> = {}, offsetMs = 0): StoredRunRecord {
  const at = new Date(Date.UTC(2026, 0, 1) + offsetMs).toISOString();
  return {
    runId: `sesn_${crypto.randomUUID().replaceAll("-", "")}`,
    principalId: crypto.randomUUID(),
    agentId: "agent_1",
    environmentId: "env_1",
    state: "running",
    lastEventSeq: 0,
    createdAt: at,
    updatedAt: at,
    ...overrides,
  };
}

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

export function auditInput(overrides: Partial<AuditEntryInput> = {}): AuditEntryInput {
  return {
    at: new Date().toISOString(),
    action: "run.started",
    actorId: crypto.randomUUID(),
    correlationId: crypto.randomUUID(),
    outcome: "ok",
    ...overrides,
  };
}

/**
 * A second handle on the store's namespace, as another replica. A Deno KV file belongs to one
 * process (replicas share PostgreSQL, or the host's own KV), so on `kv` the concurrent calls run
 * on the one handle instead.
 */
export async function twinOf(store: Store, openTwin: () => Promise<Store>): Promise<Store> {
  if (store.kind === "kv") {
    return new Proxy(store, {
      get(target, key) {
        if (key === "close") return () => Promise.resolve();
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }
  return await openTwin();
}

/** Registers the run cases. */
export function runRunContract(test: ContractCase): void {
  test("runs: a recorded run reads back intact and updates replace it", async (store) => {
    const principalId = crypto.randomUUID();
    const slot = reservation(principalId);
    assert.equal(await store.reserveRunSlot(slot), "reserved");
    const run = testRun({ principalId, agentVersion: 3, title: "t" });
    await store.createRun(run, slot.slotId);
    assert.deepEqual(await store.getRun(run.runId), run);
    assert.equal(await store.getRun("sesn_missing"), null);
    const done: StoredRunRecord = {
      ...run,
      state: "completed",
      stopReason: "end_turn",
      usage: { input_tokens: 3, output_tokens: 4 },
      endedAt: run.createdAt,
    };
    await store.updateRun(done);
    assert.deepEqual(await store.getRun(run.runId), done);
  });

  test("runs: an update with an expected record is a compare-and-set, slot included", async (store) => {
    const principalId = crypto.randomUUID();
    const slot = reservation(principalId);
    assert.equal(await store.reserveRunSlot(slot), "reserved");
    const run = testRun({ principalId });
    await store.createRun(run, slot.slotId);
    const read = (await store.getRun(run.runId))!;
    // Two writers that read the same record: the first wins, the second writes nothing.
    const streamed: StoredRunRecord = {
      ...read,
      lastEventSeq: 7,
      updatedAt: "2026-01-01T00:00:01.000Z",
    };
    const cancelled: StoredRunRecord = { ...read, state: "cancelled", endedAt: read.createdAt };
    assert.equal(await store.updateRun(streamed, read), true);
    assert.equal(await store.updateRun(cancelled, read), false);
    assert.deepEqual(await store.getRun(run.runId), streamed);
    // The refused terminal write did not free the slot either.
    assert.equal(await store.countRunSlots(principalId, Date.now()), 1);
    // Read again and applied again, it goes through (and frees the slot).
    const again: StoredRunRecord = { ...streamed, state: "cancelled", endedAt: read.createdAt };
    assert.equal(await store.updateRun(again, streamed), true);
    assert.deepEqual(await store.getRun(run.runId), again);
    assert.equal(await store.countRunSlots(principalId, Date.now()), 0);
    // No record to compare with: refused.
    const missing = testRun({ principalId });
    assert.equal(await store.updateRun(missing, missing), false);
    assert.equal(await store.getRun(missing.runId), null);
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
      assert.equal(await store.reserveRunSlot(slot), "reserved");
      await store.createRun(run, slot.slotId);
      runs.push(run);
    }
    const aliceRuns = runs.filter((run) => run.principalId === alice).reverse();
    const first = await store.listRuns({ principalId: alice, limit: 3 });
    assert.deepEqual(first.runs, aliceRuns.slice(0, 3));
    assert.ok(first.nextCursor !== null);
    const second = await store.listRuns({
      principalId: alice,
      limit: 3,
      cursor: first.nextCursor!,
    });
    assert.deepEqual(second.runs, aliceRuns.slice(3));
    assert.equal(second.nextCursor, null);
    const all = await store.listRuns({ limit: 10 });
    assert.deepEqual(all.runs, [...runs].reverse());
    const failed = await store.listRuns({ principalId: alice, state: "failed", limit: 10 });
    assert.deepEqual(failed.runs.map((run) => run.runId), [runs[4].runId]);
    const bobs = await store.listRuns({ principalId: bob, limit: 10 });
    assert.deepEqual(bobs.runs, [runs[2]]);
    const page = await store.listRuns({ principalId: alice, limit: 4 });
    assert.equal(page.nextCursor, null);
  });

  test("runs: slots count reservations and active runs against both limits", async (store) => {
    const alice = crypto.randomUUID();
    const bob = crypto.randomUUID();
    const a1 = reservation(alice);
    const a2 = reservation(alice);
    assert.equal(await store.reserveRunSlot(a1), "reserved");
    assert.equal(await store.reserveRunSlot(a2), "reserved");
    assert.equal(await store.reserveRunSlot(reservation(alice)), "principalQuota");
    // An existing slot is reserved again without counting twice.
    assert.equal(await store.reserveRunSlot(a1), "reserved");
    assert.equal(await store.countRunSlots(alice, Date.now()), 2);
    assert.equal(await store.reserveRunSlot(reservation(bob, { serviceLimit: 2 })), "serviceQuota");
    // A failed start releases; a recorded run keeps the slot; a terminal run frees it.
    await store.releaseRunSlot(alice, a2.slotId);
    assert.equal(await store.countRunSlots(alice, Date.now()), 1);
    const run = testRun({ principalId: alice });
    await store.createRun(run, a1.slotId);
    assert.equal(await store.countRunSlots(alice, Date.now()), 1);
    assert.equal(await store.reserveRunSlot(reservation(alice)), "reserved");
    assert.equal(await store.reserveRunSlot(reservation(alice)), "principalQuota");
    await store.updateRun({ ...run, state: "cancelled", endedAt: run.createdAt });
    assert.equal(await store.countRunSlots(alice, Date.now()), 1);
    // A follow-up that wakes the run reserves the run's own slot, kept once it is active.
    assert.equal(await store.reserveRunSlot(reservation(alice, { slotId: run.runId })), "reserved");
    await store.updateRun({ ...run, state: "running" });
    assert.equal(await store.countRunSlots(alice, Date.now()), 2);
    assert.equal(await store.countRunSlots(null, Date.now()), 2);
  });

  test("runs: a lapsed reservation stops counting and is taken back", async (store) => {
    const alice = crypto.randomUUID();
    const now = Date.now();
    assert.equal(
      await store.reserveRunSlot(reservation(alice, { principalLimit: 1, now: now - 120_000 })),
      "reserved",
    );
    assert.equal(await store.countRunSlots(alice, now), 0);
    assert.equal(
      await store.reserveRunSlot(reservation(alice, { principalLimit: 1, now })),
      "reserved",
    );
    assert.equal(
      await store.reserveRunSlot(reservation(alice, { principalLimit: 1, now })),
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
              (i % 2 === 0 ? store : twin).reserveRunSlot(
                reservation(alice, { principalLimit: 5 }),
              ),
          ),
        );
        assert.equal(
          results.filter((result) => result === "reserved").length,
          5,
        );
        assert.equal(await store.countRunSlots(alice, Date.now()), 5);
        // The service limit holds across principals too.
        const others = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            (i % 2 === 0 ? store : twin).reserveRunSlot(
              reservation(crypto.randomUUID(), { serviceLimit: 9 }),
            )),
        );
        assert.equal(
          others.filter((result) => result === "reserved").length,
          4,
        );
        assert.equal(await twin.countRunSlots(null, Date.now()), 9);
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
          store.claimIdempotency(params),
          twin.claimIdempotency(params),
        ]);
        assert.deepEqual(claims.map((claim) => claim.state).sort(), ["claimed", "inFlight"]);
        const winner = claims.findIndex((claim) => claim.state === "claimed");
        const token = (claims[winner] as { token: string }).token;
        const body = JSON.stringify(testRun());
        await (winner === 0 ? store : twin).completeIdempotency({
          scope: params.scope,
          token,
          response: { status: 201, body },
          expiresAt: params.expiresAt,
        });
        const replay = await twin.claimIdempotency(params);
        assert.deepEqual(replay, { state: "completed", response: { status: 201, body } });
      } finally {
        await twin.close();
      }
    },
  );

  test("audit: entries get increasing seqs and list newest first, filtered, in pages", async (store) => {
    const alice = crypto.randomUUID();
    const bob = crypto.randomUUID();
    const appended = [];
    appended.push(
      await store.appendAudit(
        auditInput({ action: "principal.issued", actorId: alice, subjectId: bob }),
      ),
    );
    appended.push(await store.appendAudit(auditInput({ actorId: bob, runId: "sesn_1" })));
    appended.push(
      await store.appendAudit(
        auditInput({
          action: "run.cancelled",
          actorId: alice,
          runId: "sesn_1",
          outcome: "providerError",
        }),
      ),
    );
    assert.ok(appended[0].seq < appended[1].seq && appended[1].seq < appended[2].seq);
    const all = await store.listAudit({ limit: 10 });
    assert.deepEqual(all.entries, [...appended].reverse());
    assert.equal(all.nextCursor, null);
    const first = await store.listAudit({ limit: 2 });
    assert.deepEqual(first.entries, [appended[2], appended[1]]);
    const second = await store.listAudit({ limit: 2, cursor: first.nextCursor! });
    assert.deepEqual(second.entries, [appended[0]]);
    const byBob = await store.listAudit({ limit: 10, principalId: bob });
    assert.deepEqual(byBob.entries, [appended[1], appended[0]]);
    const cancels = await store.listAudit({ limit: 10, action: "run.cancelled" });
    assert.deepEqual(cancels.entries, [appended[2]]);
  });

  test("audit: concurrent appends get distinct seqs", async (store, openTwin) => {
    const twin = await twinOf(store, openTwin);
    try {
      const entries = await Promise.all(
        Array.from(
          { length: 20 },
          (_, i) => (i % 2 === 0 ? store : twin).appendAudit(auditInput()),
        ),
      );
      assert.equal(new Set(entries.map((entry) => entry.seq)).size, 20);
      assert.equal((await store.listAudit({ limit: 100 })).entries.length, 20);
    } finally {
      await twin.close();
    }
  });
}
