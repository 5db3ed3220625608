/**
 * The budget's hard invariant across replicas: two gateways on one PostgreSQL store, a principal
 * whose budget fits three run caps, twenty starts at once through both start exactly three (each
 * session carrying the provider ceiling of its hold); once their turns settle below their caps,
 * the released amount admits new runs, and spent plus reserved never exceeds the budget.
 */
import assert from "node:assert/strict";
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import { type Answer, type Gateway, startGateway } from "./_harness.ts";
import { endTurn, runWhen, script, sessionBudget, spendAndHold, usd, waitFor } from "./_spend.ts";

/** Twenty starts at once, alternating replicas. */
function twenty(a: Gateway, b: Gateway, bearer: string): Promise<Answer[]> {
  return Promise.all(
    Array.from(
      { length: 20 },
      (_, i) =>
        (i % 2 === 0 ? a : b).request("POST", "/v1/runs", {
          bearer,
          body: { input: `start ${i}` },
        }),
    ),
  );
}

Deno.test({
  name:
    `spend: 20 concurrent starts through two PostgreSQL replicas start exactly the three caps ` +
    `the budget fits; settled below them, the rest admits new runs${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const open = (namespace: string) => openPostgresStore({ url: db.url, namespace });
    const a = await startGateway({ store: open });
    const b = await startGateway({ store: open, replicaOf: a });
    try {
      script(a, () => spendAndHold(40));
      const { bearer, principalId } = await a.issue(["session:read", "session:write"], {
        budget: { amount: "900", currency: "USD", period: "month" },
        maxRunCost: usd(300),
      });
      const period = `month:${new Date().toISOString().slice(0, 7)}`;
      const within = async () => {
        const ledger = await a.store.spend.ledger(principalId, period);
        assert.ok(ledger.spent + ledger.reserved <= 900n, `${ledger.spent} + ${ledger.reserved}`);
        return ledger;
      };
      const first = await twenty(a, b, bearer);
      const started = first.filter((answer) => answer.status === 201);
      assert.equal(started.length, 3, first.map((answer) => answer.text).join("\n"));
      for (const answer of first.filter((answer) => answer.status !== 201)) {
        assert.equal(answer.status, 429, answer.text);
        assert.equal(answer.json.error.code, "budgetExceeded");
      }
      assert.equal(a.fake.managedAgents!.sessions.size, 3, "refused starts reached no provider");
      for (const answer of started) {
        assert.deepEqual(answer.json.maxListCost, usd(300));
        assert.equal(sessionBudget(a, answer.json.runId), "300");
      }
      assert.deepEqual(await within(), { spent: 0n, reserved: 900n });
      // Each turn spends 40 of its 300 and ends: 120 spent, 780 given back.
      for (const answer of started) {
        const runId = answer.json.runId;
        await runWhen(a, runId, (run) => run.listCost?.amount === "40");
        endTurn(a, runId);
      }
      await waitFor(async () => (await within()).reserved === 0n, 15_000, "the settlements");
      assert.deepEqual(await within(), { spent: 120n, reserved: 0n });
      const second = await twenty(a, b, bearer);
      const admitted = second.filter((answer) => answer.status === 201);
      assert.deepEqual(
        admitted.map((answer) => answer.json.maxListCost.amount).sort(),
        ["180", "300", "300"],
        second.map((answer) => answer.text).join("\n"),
      );
      for (const answer of admitted) {
        assert.equal(sessionBudget(a, answer.json.runId), answer.json.maxListCost.amount);
      }
      assert.deepEqual(await within(), { spent: 120n, reserved: 780n });
    } finally {
      await b.close();
      await a.close();
    }
  },
});
