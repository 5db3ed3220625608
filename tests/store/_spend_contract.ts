/**
 * The spend part of the store contract: holds taken with run slots against budgets and per-run
 * caps (also concurrently through two handles, as two replicas), settlements that move cost from
 * holds to spent exactly once, releases and lapses, and usage sums. Registered by
 * `runStoreContract` in `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import type {
  RunReservation,
  RunSettlement,
  SpendHoldRequest,
  Store,
  TokenCounts,
} from "../../server/store/types.ts";
import { type ContractCase, testRun } from "./_fixtures.ts";

const TOKENS: TokenCounts = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadInputTokens: 0,
  cacheCreationInputTokens: 0,
};

function start(
  principalId: string,
  hold: Omit<SpendHoldRequest, "holdId" | "turn">,
  overrides: Partial<RunReservation> = {},
): RunReservation {
  const slotId = `reservation:${crypto.randomUUID()}`;
  return {
    principalId,
    slotId,
    principalLimit: 100,
    serviceLimit: 1000,
    now: Date.now(),
    leaseMs: 60_000,
    hold: { holdId: slotId, turn: 1, ...hold },
    ...overrides,
  };
}

/** Reserves and records a run with its hold; returns the run id and what the hold got. */
async function startRun(
  store: Store,
  principalId: string,
  hold: Omit<SpendHoldRequest, "holdId" | "turn">,
  agentId = "agent_1",
): Promise<{ runId: string; amount: bigint }> {
  const reservation = start(principalId, hold);
  const result = await store.runs.reserveRun(reservation);
  assert.equal(result.result, "reserved");
  const run = testRun({ principalId, agentId, turns: 1 });
  await store.runs.create(run, reservation.slotId);
  return { runId: run.runId, amount: result.result === "reserved" ? result.hold!.amount : 0n };
}

/** The reservation of a follow-up to `runId` (its slot is the run's) holding for `turn`. */
function followUp(
  principalId: string,
  runId: string,
  turn: number,
  hold: Omit<SpendHoldRequest, "holdId" | "turn" | "runId">,
): RunReservation {
  return {
    principalId,
    slotId: runId,
    principalLimit: 100,
    serviceLimit: 1000,
    now: Date.now(),
    leaseMs: 60_000,
    hold: { holdId: `${runId}#${turn}`, runId, turn, ...hold },
  };
}

function settlement(
  runId: string,
  principalId: string,
  fields: Partial<RunSettlement>,
): RunSettlement {
  return {
    runId,
    principalId,
    agentId: "agent_1",
    turn: 1,
    final: true,
    cost: 0n,
    tokens: TOKENS,
    at: "2026-03-04T05:06:07.000Z",
    ...fields,
  };
}

/** Registers the spend cases. */
export function runSpendContract(test: ContractCase): void {
  test("spend: a hold takes the least of the budget's and the cap's leftovers; nothing left refuses and writes nothing", async (store) => {
    const principalId = crypto.randomUUID();
    const hold = { period: "total", limit: 1000n, runCap: 300n };
    const amounts: bigint[] = [];
    for (let i = 0; i < 4; i++) {
      const result = await store.runs.reserveRun(start(principalId, hold));
      assert.equal(result.result, "reserved");
      if (result.result === "reserved") amounts.push(result.hold!.amount);
    }
    assert.deepEqual(amounts, [300n, 300n, 300n, 100n]);
    assert.deepEqual(await store.spend.ledger(principalId, "total"), {
      spent: 0n,
      reserved: 1000n,
    });
    const slots = await store.runs.countSlots(principalId, Date.now());
    const refused = await store.runs.reserveRun(start(principalId, hold));
    assert.deepEqual(refused, { result: "budgetExceeded", limit: "budget", left: 0n });
    assert.equal(await store.runs.countSlots(principalId, Date.now()), slots, "no slot taken");
    // A cap alone (no budget) holds the cap and keeps no ledger.
    const capped = await store.runs.reserveRun(
      start(principalId, { period: null, limit: null, runCap: 40n }),
    );
    assert.deepEqual(capped, { result: "reserved", hold: { amount: 40n, ceiling: 40n } });
  });

  test(
    "spend: twenty reservations at once through two handles hold exactly the budget",
    async (store, openTwin) => {
      const twin = await openTwin();
      try {
        const principalId = crypto.randomUUID();
        const hold = { period: "day:2026-03-04", limit: 900n, runCap: 300n };
        const results = await Promise.all(
          Array.from(
            { length: 20 },
            (_, i) => (i % 2 === 0 ? store : twin).runs.reserveRun(start(principalId, hold)),
          ),
        );
        assert.equal(results.filter((result) => result.result === "reserved").length, 3);
        assert.equal(results.filter((result) => result.result === "budgetExceeded").length, 17);
        assert.deepEqual(await twin.spend.ledger(principalId, "day:2026-03-04"), {
          spent: 0n,
          reserved: 900n,
        });
      } finally {
        await twin.close();
      }
    },
  );

  test(
    "spend: a settlement moves cost from the holds to spent, releases the rest at the turn's end, once",
    async (store, openTwin) => {
      const principalId = crypto.randomUUID();
      const hold = { period: "total", limit: 1000n, runCap: 300n };
      const { runId } = await startRun(store, principalId, hold);
      assert.equal((await store.spend.runHolds(runId)).length, 1, "the start's hold has its run");
      const waiting = await store.spend.settle(settlement(runId, principalId, {
        final: false,
        cost: 120n,
        tokens: { ...TOKENS, inputTokens: 1000, outputTokens: 50 },
      }));
      assert.deepEqual(waiting, { costAdded: 120n, released: 0n, cost: 120n });
      assert.deepEqual(await store.spend.ledger(principalId, "total"), {
        spent: 120n,
        reserved: 180n,
      });
      const twin = await openTwin();
      try {
        const ended = settlement(runId, principalId, {
          cost: 200n,
          tokens: { ...TOKENS, inputTokens: 1500, outputTokens: 90 },
        });
        // Two replicas settle the same end: it counts once.
        const [a, b] = await Promise.all([store.spend.settle(ended), twin.spend.settle(ended)]);
        assert.equal(a.costAdded + b.costAdded, 80n);
        assert.equal(a.released + b.released, 100n);
        assert.deepEqual(await twin.spend.ledger(principalId, "total"), {
          spent: 200n,
          reserved: 0n,
        });
        assert.deepEqual(await store.spend.runHolds(runId), []);
        assert.deepEqual(await store.spend.settle(ended), {
          costAdded: 0n,
          released: 0n,
          cost: 200n,
        });
      } finally {
        await twin.close();
      }
      const [sum] = await store.spend.usage({
        from: "2026-03-01T00:00:00.000Z",
        to: "2026-04-01T00:00:00.000Z",
        groupBy: "principal",
        principalId,
        maxGroups: 10,
      });
      assert.deepEqual(sum, {
        key: principalId,
        cost: 200n,
        inputTokens: 1500,
        outputTokens: 90,
        cacheReadInputTokens: 0,
        cacheCreationInputTokens: 0,
      });
    },
  );

  test("spend: a turn's end without a reported cost counts its hold as spent", async (store) => {
    const principalId = crypto.randomUUID();
    const { runId } = await startRun(store, principalId, {
      period: "total",
      limit: 1000n,
      runCap: 250n,
    });
    const result = await store.spend.settle(settlement(runId, principalId, { cost: null }));
    assert.deepEqual(result, { costAdded: 250n, released: 0n, cost: 250n });
    assert.deepEqual(await store.spend.ledger(principalId, "total"), {
      spent: 250n,
      reserved: 0n,
    });
  });

  test("spend: a follow-up's hold is what the run's cap has left after what it settled and holds", async (store) => {
    const principalId = crypto.randomUUID();
    const hold = { period: "total", limit: 10_000n, runCap: 300n };
    const { runId } = await startRun(store, principalId, hold);
    await store.spend.settle(settlement(runId, principalId, { cost: 250n }));
    const wake = (turn: number): RunReservation => followUp(principalId, runId, turn, hold);
    const woken = await store.runs.reserveRun(wake(2));
    assert.deepEqual(woken, { result: "reserved", hold: { amount: 50n, ceiling: 300n } });
    // The same request again (a follow-up racing another) is answered as it is.
    assert.deepEqual(await store.runs.reserveRun(wake(2)), woken);
    await store.runs.releaseSlot(principalId, runId);
    await store.spend.release(principalId, `${runId}#2`);
    assert.deepEqual(await store.spend.ledger(principalId, "total"), {
      spent: 250n,
      reserved: 0n,
    });
    await store.spend.settle(settlement(runId, principalId, { cost: 300n }));
    assert.deepEqual(await store.runs.reserveRun(wake(2)), {
      result: "budgetExceeded",
      limit: "maxRunCost",
      left: 0n,
    });
  });

  test(
    "spend: a follow-up to a run still active holds no new money, and the earlier turn's end keeps the rest held until the later turn ends",
    async (store, openTwin) => {
      const principalId = crypto.randomUUID();
      const hold = { period: "total", limit: 1000n, runCap: null };
      const { runId, amount } = await startRun(store, principalId, hold);
      assert.equal(amount, 1000n, "the whole budget: nothing is left for a new hold");
      const fenced = (turn: number) => followUp(principalId, runId, turn, { ...hold, fence: true });
      // The run holds money: a zero hold, its ceiling as it was.
      assert.deepEqual(await store.runs.reserveRun(fenced(2)), {
        result: "reserved",
        hold: { amount: 0n, ceiling: 1000n },
      });
      // The first turn's end (settled after the message was sent) gives nothing back.
      const first = await store.spend.settle(settlement(runId, principalId, { cost: 100n }));
      assert.deepEqual(first, { costAdded: 100n, released: 0n, cost: 100n });
      assert.deepEqual(await store.spend.ledger(principalId, "total"), {
        spent: 100n,
        reserved: 900n,
      });
      // The second turn's end settles and gives back the rest.
      const second = await store.spend.settle(
        settlement(runId, principalId, { turn: 2, cost: 250n }),
      );
      assert.deepEqual(second, { costAdded: 150n, released: 750n, cost: 250n });
      assert.deepEqual(await store.spend.ledger(principalId, "total"), {
        spent: 250n,
        reserved: 0n,
      });
      assert.deepEqual(await store.spend.runHolds(runId), []);
      // A run that holds nothing any more (its turn ended and settled) takes a hold as usual.
      assert.deepEqual(await store.runs.reserveRun(fenced(3)), {
        result: "reserved",
        hold: { amount: 750n, ceiling: 1000n },
      });

      // Racing through two handles: whichever goes first, the run's ceiling stays covered.
      const twin = await openTwin();
      try {
        for (let i = 0; i < 4; i++) {
          const other = crypto.randomUUID();
          const run = await startRun(store, other, { period: "total", limit: 300n, runCap: null });
          const [reserved] = await Promise.all([
            (i % 2 === 0 ? store : twin).runs.reserveRun(
              followUp(other, run.runId, 2, {
                period: "total",
                limit: 300n,
                runCap: null,
                fence: true,
              }),
            ),
            (i % 2 === 0 ? twin : store).spend.settle(
              settlement(run.runId, other, { cost: 100n }),
            ),
          ]);
          assert.equal(reserved.result, "reserved");
          const ceiling = reserved.result === "reserved" ? reserved.hold!.ceiling : 0n;
          const ledger = await store.spend.ledger(other, "total");
          // Fenced first: the rest stays held (ceiling 300); settled first: a new hold of the
          // 200 given back (ceiling 100 + 200). Either way spent plus reserved covers it.
          assert.equal(ceiling, 300n);
          assert.deepEqual(ledger, { spent: 100n, reserved: 200n });
        }
      } finally {
        await twin.close();
      }
    },
  );

  test("spend: a hold whose start was never recorded lapses at the next refusal, counted as spent (its session may run unrecorded)", async (store) => {
    const principalId = crypto.randomUUID();
    const hold = { period: "total", limit: 100n, runCap: null };
    const now = Date.now();
    const orphan = await store.runs.reserveRun(start(principalId, hold, { now, leaseMs: 1_000 }));
    assert.equal(orphan.result, "reserved");
    assert.equal((await store.spend.ledger(principalId, "total")).reserved, 100n);
    // Before its lease passes it holds the whole budget; after, it goes, and counts as spent:
    // its replica may have died with its session running (fail closed).
    const early = await store.runs.reserveRun(start(principalId, hold, { now: now + 500 }));
    assert.equal(early.result, "budgetExceeded");
    const late = await store.runs.reserveRun(start(principalId, hold, { now: now + 2_000 }));
    assert.deepEqual(late, { result: "budgetExceeded", limit: "budget", left: 0n });
    assert.deepEqual(await store.spend.ledger(principalId, "total"), {
      spent: 100n,
      reserved: 0n,
    });
    assert.equal(await store.runs.countSlots(principalId, now + 2_000), 0, "its slot lapsed too");
  });

  test("spend: a lapsed hold of a run that exists stays for its tail (its follow-up may have reached the provider)", async (store) => {
    const principalId = crypto.randomUUID();
    const hold = { period: "total", limit: 100n, runCap: null };
    const { runId } = await startRun(store, principalId, hold);
    await store.spend.settle(settlement(runId, principalId, { cost: 0n }));
    const now = Date.now();
    const reservation = followUp(principalId, runId, 2, hold);
    const woken = await store.runs.reserveRun({ ...reservation, now, leaseMs: 1_000 });
    assert.deepEqual(woken, { result: "reserved", hold: { amount: 100n, ceiling: 100n } });
    // Its lease passed and the run never recorded its turn: a reservation does not drop it.
    const later = await store.runs.reserveRun(start(principalId, hold, { now: now + 2_000 }));
    assert.deepEqual(later, { result: "budgetExceeded", limit: "budget", left: 0n });
    assert.deepEqual((await store.spend.runHolds(runId)).map((held) => held.holdId), [
      `${runId}#2`,
    ]);
    assert.equal((await store.spend.ledger(principalId, "total")).reserved, 100n);
  });

  test("spend: usage sums by principal, agent and day, one principal's alone, and purges", async (store) => {
    const alice = crypto.randomUUID();
    const bob = crypto.randomUUID();
    const runs: { principalId: string; agentId: string; cost: bigint; at: string }[] = [
      { principalId: alice, agentId: "agent_a", cost: 10n, at: "2026-05-01T10:00:00.000Z" },
      { principalId: alice, agentId: "agent_b", cost: 20n, at: "2026-05-02T10:00:00.000Z" },
      { principalId: bob, agentId: "agent_a", cost: 40n, at: "2026-05-02T11:00:00.000Z" },
      { principalId: bob, agentId: "agent_a", cost: 80n, at: "2026-06-01T00:00:00.000Z" },
    ];
    for (const run of runs) {
      const record = testRun({ principalId: run.principalId, agentId: run.agentId });
      await store.spend.settle({
        runId: record.runId,
        principalId: run.principalId,
        agentId: run.agentId,
        turn: 1,
        final: true,
        cost: run.cost,
        tokens: { ...TOKENS, outputTokens: Number(run.cost) },
        at: run.at,
      });
    }
    const may = { from: "2026-05-01T00:00:00.000Z", to: "2026-06-01T00:00:00.000Z" };
    const sums = async (groupBy: "principal" | "agent" | "day", principalId?: string) =>
      (await store.spend.usage({
        ...may,
        groupBy,
        maxGroups: 10,
        ...(principalId !== undefined ? { principalId } : {}),
      })).map((sum) => [sum.key, sum.cost, sum.outputTokens]);
    assert.deepEqual(
      await sums("principal"),
      [[alice, 30n, 30], [bob, 40n, 40]].sort((a, b) => a[0] < b[0] ? -1 : 1),
    );
    assert.deepEqual(await sums("agent"), [["agent_a", 50n, 50], ["agent_b", 20n, 20]]);
    assert.deepEqual(await sums("day"), [["2026-05-01", 10n, 10], ["2026-05-02", 60n, 60]]);
    assert.deepEqual(await sums("agent", alice), [["agent_a", 10n, 10], ["agent_b", 20n, 20]]);
    await assert.rejects(
      store.spend.usage({ ...may, groupBy: "day", maxGroups: 1 }),
      RangeError,
    );
    assert.equal(await store.spend.purge("2026-05-02T00:00:00.000Z"), 1);
    assert.deepEqual(await sums("day"), [["2026-05-02", 60n, 60]]);
  });
}
