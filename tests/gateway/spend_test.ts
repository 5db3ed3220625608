/**
 * Spend under control through `/v1` (one replica, Deno KV; the two-replica PostgreSQL case is
 * `spend_replicas_test.ts`): budgets and per-run limits on principals, holds with the provider's
 * own ceiling on every session, settlement of the provider's reported cost, `budget_reached`,
 * follow-ups that raise the ceiling, a message to a run whose record lags its turn's end, a
 * revoked principal's running turn, a day budget's reset at 00:00 UTC, `maxRunSeconds` (also when
 * its interrupt failed and the tail reconnects), usage sums, and models without a list price.
 */
import assert from "node:assert/strict";
import { RuntimeMetrics } from "../../server/metrics.ts";
import { agentMessage, pause } from "../../testing/mod.ts";
import { assertCode, type Gateway, startGateway } from "./_harness.ts";
import {
  budgetUpdates,
  endTurn,
  runWhen,
  script,
  sessionBudget,
  spend,
  spendAndHold,
  usd,
  waitFor,
} from "./_spend.ts";

const WRITER = ["session:read", "session:write"] as const;

async function start(gateway: Gateway, bearer: string, input = "go") {
  return await gateway.request("POST", "/v1/runs", { bearer, body: { input } });
}

/** A principal with a total budget of 1000 and a maxRunCost of 300. */
function issueBudgeted(gateway: Gateway): Promise<{ bearer: string; principalId: string }> {
  return gateway.issue([...WRITER], {
    budget: { amount: "1000", currency: "USD", period: "total" },
    maxRunCost: usd(300),
  });
}

/** Waits until the principal's total ledger holds nothing, then asserts what it spent. */
async function settledTotal(
  gateway: Gateway,
  principalId: string,
  spent: bigint,
  what: string,
): Promise<void> {
  const ledger = () => gateway.store.spend.ledger(principalId, "total");
  await waitFor(async () => (await ledger()).reserved === 0n, 10_000, what);
  assert.deepEqual(await ledger(), { spent, reserved: 0n });
}

Deno.test("spend: issuance answers the limits, the principal list and /v1/runtime what is spent and reserved", async () => {
  const gateway = await startGateway();
  try {
    const principalId = crypto.randomUUID();
    const body = {
      principalId,
      capabilities: [...WRITER],
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
      budget: { amount: "1000", currency: "USD", period: "day" },
      maxRunCost: usd(300),
      maxRunSeconds: 600,
    };
    const issued = await gateway.request("POST", "/v1/principals", { body });
    assert.equal(issued.status, 201, issued.text);
    assert.deepEqual(
      [issued.json.budget, issued.json.maxRunCost, issued.json.maxRunSeconds],
      [body.budget, body.maxRunCost, 600],
    );
    const today = new Date().toISOString().slice(0, 10);
    const expected = {
      periodStart: `${today}T00:00:00.000Z`,
      spent: usd(0),
      reserved: usd(0),
      left: usd(1000),
    };
    const me = await gateway.request("GET", "/v1/runtime", { bearer: issued.json.bearer });
    assert.equal(me.status, 200, me.text);
    assert.deepEqual({ ...me.json.spend, periodEnd: undefined }, {
      ...expected,
      periodEnd: undefined,
    });
    script(gateway, () => spendAndHold(100));
    const run = await start(gateway, issued.json.bearer);
    assert.equal(run.status, 201, run.text);
    const listed = await gateway.request("GET", "/v1/principals");
    const entry = listed.json.principals.find((p: { principalId: string }) =>
      p.principalId === principalId
    );
    assert.deepEqual(entry.spend.reserved, usd(300));
    assert.deepEqual(entry.spend.left, usd(700));
    const again = await gateway.request("GET", "/v1/runtime", { bearer: issued.json.bearer });
    assert.deepEqual(again.json.spend.reserved, usd(300), "read anew on every request");
    // The bootstrap has no budget and shows none.
    const admin = await gateway.request("GET", "/v1/runtime");
    assert.equal("spend" in admin.json || "budget" in admin.json, false);
    for (
      const [field, value] of [
        ["budget", { amount: "10.50", currency: "USD", period: "day" }],
        ["budget", { amount: "1000", currency: "EUR", period: "day" }],
        ["budget", { amount: "1000", currency: "USD", period: "week" }],
        ["maxRunCost", { amount: 300, currency: "USD" }],
        ["maxRunSeconds", 0],
      ] as const
    ) {
      const refused = await gateway.request("POST", "/v1/principals", {
        body: { ...body, principalId: crypto.randomUUID(), [field]: value },
      });
      assertCode(refused, 422, "invalidRequest");
      assert.match(refused.text, new RegExp(field));
    }
  } finally {
    await gateway.close();
  }
});

Deno.test("spend: starts hold their caps with the provider's ceiling on each session; nothing left is 429; settled below the caps, the rest admits new runs", async () => {
  const gateway = await startGateway();
  try {
    script(gateway, () => spendAndHold(40));
    const { bearer, principalId } = await gateway.issue([...WRITER], {
      budget: { amount: "900", currency: "USD", period: "total" },
      maxRunCost: usd(300),
    });
    const runs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await start(gateway, bearer);
      assert.equal(answer.status, 201, answer.text);
      assert.deepEqual(answer.json.maxListCost, usd(300));
      runs.push(answer.json.runId);
      assert.equal(sessionBudget(gateway, answer.json.runId), "300", "the provider's ceiling");
    }
    const refused = await start(gateway, bearer);
    assertCode(refused, 429, "budgetExceeded");
    assert.deepEqual(refused.json.error.left, usd(0));
    assert.equal(refused.json.error.limit, "budget");
    assert.equal(refused.headers.get("retry-after"), null, "a total budget has no next period");
    assert.equal(gateway.fake.managedAgents!.sessions.size, 3, "nothing reached the provider");
    const audit = await gateway.request("GET", "/v1/audit?action=run.started&limit=10");
    assert.ok(
      audit.json.entries.some((entry: { outcome: string }) => entry.outcome === "budgetExceeded"),
    );
    // The turns end having spent 40 each: 120 spent, the rest of the holds given back.
    for (const runId of runs) {
      await runWhen(gateway, runId, (run) => run.listCost?.amount === "40");
      endTurn(gateway, runId);
    }
    for (const runId of runs) await runWhen(gateway, runId, (run) => run.state === "completed");
    await waitFor(
      async () => {
        const me = await gateway.request("GET", "/v1/runtime", { bearer });
        return me.json.spend.reserved.amount === "0";
      },
      10_000,
      "the settlements",
    );
    const me = await gateway.request("GET", "/v1/runtime", { bearer });
    assert.deepEqual(me.json.spend.spent, usd(120));
    assert.deepEqual(me.json.spend.left, usd(780));
    // 780 left: two more runs at their cap of 300, a third at what is left, 180.
    const holds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await start(gateway, bearer);
      assert.equal(answer.status, 201, answer.text);
      holds.push(answer.json.maxListCost.amount);
      assert.equal(sessionBudget(gateway, answer.json.runId), answer.json.maxListCost.amount);
    }
    assert.deepEqual(holds, ["300", "300", "180"]);
    assertCode(await start(gateway, bearer), 429, "budgetExceeded");
    const ledger = await gateway.store.spend.ledger(principalId, "total");
    assert.deepEqual(ledger, { spent: 120n, reserved: 780n });
  } finally {
    await gateway.close();
  }
});

Deno.test("spend: a session stopped by its ceiling ends as budget_reached, with the provider's reported cost as its spend", async () => {
  const metrics = new RuntimeMetrics();
  const gateway = await startGateway({ metrics });
  try {
    // Each request costs 60; the second crosses the 100 ceiling and the provider stops there.
    script(gateway, () => [spend(60), spend(60), spend(60), agentMessage("never said")]);
    const { bearer, principalId } = await gateway.issue([...WRITER], {
      budget: { amount: "5000", currency: "USD", period: "month" },
      maxRunCost: usd(100),
    });
    const started = await start(gateway, bearer);
    assert.equal(started.status, 201, started.text);
    const runId = started.json.runId;
    // Its state may come from a read's refresh first; its cost comes with the tail's record.
    const run = await runWhen(
      gateway,
      runId,
      (run) => run.state === "completed" && run.listCost !== undefined,
    );
    assert.equal(run.stopReason, "budget_reached");
    const reported = gateway.fake.managedAgents!.sessions.get(runId)!.record.usage as {
      list_cost: { amount: string };
    };
    assert.equal(reported.list_cost.amount, "120");
    assert.deepEqual(run.listCost, usd(120));
    await waitFor(
      async () => {
        const me = await gateway.request("GET", "/v1/runtime", { bearer });
        return me.json.spend.spent.amount === "120";
      },
      10_000,
      "the settlement",
    );
    const me = await gateway.request("GET", "/v1/runtime", { bearer });
    assert.deepEqual(me.json.spend.reserved, usd(0));
    const usage = await gateway.request("GET", `/v1/usage?principalId=${principalId}`);
    assert.deepEqual(usage.json.total.listCost, usd(120));
    const audit = await gateway.request("GET", "/v1/audit?action=budget.exhausted&limit=10");
    assert.deepEqual(
      audit.json.entries.map((entry: Record<string, string>) => [
        entry.subjectId,
        entry.runId,
        entry.outcome,
      ]),
      [[principalId, runId, "budget_reached"]],
    );
    assert.match(
      await metrics.render(),
      new RegExp(
        `automation_runtime_run_list_cost_total\\{agent_id="${gateway.agentId}",currency="USD"\\} 120`,
      ),
    );
  } finally {
    await gateway.close();
  }
});

Deno.test("spend: a follow-up raises the provider's ceiling to what the run settled plus its new hold; a spent maxRunCost is 429", async () => {
  const gateway = await startGateway();
  try {
    script(gateway, () => [spend(100)]);
    const { bearer, principalId } = await gateway.issue([...WRITER], {
      budget: { amount: "1000", currency: "USD", period: "total" },
      maxRunCost: usd(250),
    });
    const started = await start(gateway, bearer);
    const runId = started.json.runId;
    await runWhen(gateway, runId, (run) => run.state === "completed");
    await waitFor(
      async () => (await gateway.store.spend.ledger(principalId, "total")).spent === 100n,
    );
    const woken = await gateway.request("POST", `/v1/runs/${runId}/messages`, {
      bearer,
      body: { input: "again" },
    });
    assert.equal(woken.status, 202, woken.text);
    // 150 of its 250 left: the session's ceiling goes to 100 settled + 150 held.
    assert.deepEqual(budgetUpdates(gateway, runId), ["250"]);
    assert.deepEqual(woken.json.maxListCost, usd(250));
    const updated = gateway.fake.managedAgents!.sessions.get(runId)!.events.find((event) =>
      event.type === "session.updated"
    );
    assert.ok(updated, "the update reached the provider before the message");
    await runWhen(
      gateway,
      runId,
      (run) => run.state === "completed" && run.listCost?.amount === "200",
    );
    await waitFor(
      async () => (await gateway.store.spend.ledger(principalId, "total")).reserved === 0n,
    );
    const third = await gateway.request("POST", `/v1/runs/${runId}/messages`, {
      bearer,
      body: { input: "once more" },
    });
    assert.equal(third.status, 202, third.text);
    // 50 left of its cap: the ceiling stays 250, and the provider stops the turn there. The
    // request that crossed it still counts (the provider's own rule): the run spent 300.
    assert.deepEqual(budgetUpdates(gateway, runId), ["250", "250"]);
    const stopped = await runWhen(
      gateway,
      runId,
      (run) => run.state === "completed" && run.listCost?.amount === "300",
    );
    assert.equal(stopped.stopReason, "budget_reached");
    await waitFor(
      async () => (await gateway.store.spend.ledger(principalId, "total")).reserved === 0n,
    );
    assert.deepEqual(await gateway.store.spend.ledger(principalId, "total"), {
      spent: 300n,
      reserved: 0n,
    });
    const spent = await gateway.request("POST", `/v1/runs/${runId}/messages`, {
      bearer,
      body: { input: "and more" },
    });
    assertCode(spent, 429, "budgetExceeded");
    assert.equal(spent.json.error.limit, "maxRunCost");
  } finally {
    await gateway.close();
  }
});

Deno.test("spend: a message sent while the run's record still says running (its turn ended at the provider) keeps the run's hold until the turn it starts ends", async () => {
  const gateway = await startGateway();
  try {
    // The first turn spends 100 and ends at once; the second spends 100 and keeps running.
    let turns = 0;
    script(gateway, () => ++turns === 1 ? [spend(100)] : spendAndHold(100));
    const { bearer, principalId } = await issueBudgeted(gateway);
    // The run's tail opens its stream late: its record says running after the turn ended.
    gateway.fake.delayNextStream({ ms: 1_500 });
    const started = await start(gateway, bearer);
    assert.equal(started.status, 201, started.text);
    const runId = started.json.runId;
    const sent = await gateway.request("POST", `/v1/runs/${runId}/messages`, {
      bearer,
      body: { input: "again" },
    });
    assert.equal(sent.status, 202, sent.text);
    assert.equal(sessionBudget(gateway, runId), "300", "no new money: the ceiling stays");
    // The first turn's end is settled while the second runs: what the session may still spend
    // (its ceiling less its cost) must stay held.
    await waitFor(
      async () => (await gateway.store.spend.ledger(principalId, "total")).spent >= 100n,
      10_000,
      "the first turn's settlement",
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const ledger = await gateway.store.spend.ledger(principalId, "total");
    assert.ok(
      ledger.spent + ledger.reserved >= 300n,
      `the running session's ceiling (300) is covered: ${
        JSON.stringify(ledger, (_, v) => typeof v === "bigint" ? String(v) : v)
      }`,
    );
    endTurn(gateway, runId);
    await settledTotal(gateway, principalId, 200n, "the second turn's settlement");
  } finally {
    await gateway.close();
  }
});

Deno.test("spend: a revoked principal's running turn still settles, and its hold is given back", async () => {
  const gateway = await startGateway();
  try {
    script(gateway, () => spendAndHold(50));
    const { bearer, principalId } = await issueBudgeted(gateway);
    const started = await start(gateway, bearer);
    assert.equal(started.status, 201, started.text);
    const runId = started.json.runId;
    await runWhen(gateway, runId, (run) => run.listCost?.amount === "50");
    const revoked = await gateway.request("DELETE", `/v1/principals/${principalId}`);
    assert.equal(revoked.status, 204, revoked.text);
    endTurn(gateway, runId);
    await settledTotal(gateway, principalId, 50n, "the settlement");
  } finally {
    await gateway.close();
  }
});

Deno.test("spend: a message the provider took from a replica that died before recording it is settled from the session's history, not given back", async () => {
  // Scans every 0.5 s: a lapsed hold is looked at soon.
  const gateway = await startGateway({ serverOptions: { runLeaseMs: 1_500 } });
  try {
    let turns = 0;
    script(gateway, () => [spend(++turns === 1 ? 10 : 40)]);
    const { bearer, principalId } = await issueBudgeted(gateway);
    const started = await start(gateway, bearer);
    const runId = started.json.runId;
    const ledger = () => gateway.store.spend.ledger(principalId, "total");
    await waitFor(async () => (await ledger()).spent === 10n && (await ledger()).reserved === 0n);
    // A follow-up's hold for `turn` as a replica takes it (its lease short here).
    const followUpHold = (turn: number) =>
      gateway.store.runs.reserveRun({
        principalId,
        slotId: runId,
        principalLimit: 100,
        serviceLimit: 1000,
        now: Date.now(),
        leaseMs: 300,
        hold: {
          holdId: `${runId}#${turn}`,
          runId,
          turn,
          period: "total",
          limit: 1000n,
          runCap: 300n,
        },
      });
    // Its steps up to the provider before its replica dies: the hold, then the message; the run
    // never records its turn.
    const reserved = await followUpHold(2);
    assert.equal(reserved.result, "reserved");
    const sent = await gateway.fake.fetch(
      new Request(`http://fake/v1/sessions/${runId}/events`, {
        method: "POST",
        headers: {
          "x-api-key": gateway.providerKey,
          "provider-beta": "managed-agents-2026-04-01",
          "content-type": "application/json",
        },
        body: JSON.stringify({
          events: [{ type: "user.message", content: [{ type: "text", text: "again" }] }],
        }),
      }),
    );
    assert.equal(sent.status, 200, await sent.text());
    // The turn the provider ran spent 40: it counts, whatever the run record says.
    await waitFor(
      async () => (await ledger()).spent === 50n && (await ledger()).reserved === 0n,
      10_000,
      "the unrecorded turn's settlement",
    );
    // A follow-up that died before its message went: the history has no such turn, the hold
    // goes back once its lease passed.
    const unsent = await followUpHold(3);
    assert.deepEqual(unsent, { result: "reserved", hold: { amount: 250n, ceiling: 300n } });
    await settledTotal(gateway, principalId, 50n, "the unsent follow-up's hold given back");
  } finally {
    await gateway.close();
  }
});

Deno.test("spend: a day budget resets at 00:00 UTC", async () => {
  const realNow = Date.now();
  // One minute before the next UTC midnight on the server's clock.
  let clock = Math.floor(realNow / 86_400_000) * 86_400_000 + 86_400_000 - 60_000;
  const gateway = await startGateway({ serverOptions: { now: () => clock } });
  const onClock = () => ({ "x-deadline": new Date(clock + 60_000).toISOString() });
  try {
    script(gateway, () => [spend(300)]);
    const principalId = crypto.randomUUID();
    const issued = await gateway.request("POST", "/v1/principals", {
      headers: onClock(),
      body: {
        principalId,
        capabilities: [...WRITER],
        expiresAt: new Date(clock + 3 * 86_400_000).toISOString(),
        budget: { amount: "300", currency: "USD", period: "day" },
      },
    });
    assert.equal(issued.status, 201, issued.text);
    const bearer = issued.json.bearer;
    const run = (input: string) =>
      gateway.request("POST", "/v1/runs", { bearer, headers: onClock(), body: { input } });
    const first = await run("today");
    assert.equal(first.status, 201, first.text);
    assert.deepEqual(first.json.maxListCost, usd(300), "the whole day's budget");
    const day = new Date(clock).toISOString().slice(0, 10);
    await waitFor(
      async () => (await gateway.store.spend.ledger(principalId, `day:${day}`)).spent === 300n,
    );
    const refused = await run("still today");
    assertCode(refused, 429, "budgetExceeded");
    assert.equal(refused.headers.get("retry-after"), "60", "until the next UTC day");
    assert.equal(refused.json.error.periodEnd, new Date(clock + 60_000).toISOString());
    clock += 60_000;
    const next = await run("tomorrow");
    assert.equal(next.status, 201, next.text);
    assert.deepEqual(next.json.maxListCost, usd(300));
    const me = await gateway.request("GET", "/v1/runtime", { bearer, headers: onClock() });
    assert.equal(me.json.spend.periodStart, new Date(clock).toISOString());
  } finally {
    await gateway.close();
  }
});

Deno.test("spend: maxRunSeconds interrupts a long run, marked timeLimit", async () => {
  const gateway = await startGateway();
  try {
    script(gateway, () => [agentMessage("working"), pause(600_000)]);
    const { bearer } = await gateway.issue([...WRITER], { maxRunSeconds: 1 });
    const started = await start(gateway, bearer);
    assert.equal(started.status, 201, started.text);
    assert.equal(started.json.state, "running");
    const runId = started.json.runId;
    const run = await runWhen(gateway, runId, (run) => run.state !== "running", 8_000);
    assert.equal(run.state, "cancelled");
    assert.equal(run.stopReason, "timeLimit");
    const elapsed = Date.parse(run.endedAt) - Date.parse(run.createdAt);
    assert.ok(elapsed >= 1_000, `ended ${elapsed} ms after its start`);
    const events = gateway.fake.managedAgents!.sessions.get(runId)!.events;
    // Marked first, then interrupted upstream.
    await waitFor(() => events.some((event) => event.type === "user.interrupt"));
    await waitFor(() => events.at(-1)?.type === "session.status_idle");
    const audit = await gateway.request("GET", "/v1/audit?action=run.cancelled&limit=10");
    assert.deepEqual(
      audit.json.entries.map((entry: Record<string, string>) => [entry.actorId, entry.outcome]),
      [["runtime", "timeLimit"]],
    );
    // The provider's end of the interrupted turn keeps the reason.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = await gateway.request("GET", `/v1/runs/${runId}`);
    assert.equal(after.json.stopReason, "timeLimit");
  } finally {
    await gateway.close();
  }
});

Deno.test("spend: a time limit's interrupt that failed is sent again when the run's tail reconnects", async () => {
  const gateway = await startGateway();
  try {
    // A message 2.5 s in, on a stream cut at its first frame: the tail reconnects then.
    script(gateway, () => [pause(2_500), agentMessage("working"), pause(600_000)]);
    const { bearer } = await gateway.issue([...WRITER], { maxRunSeconds: 1 });
    gateway.fake.dropNextStream({ afterFrames: 0 });
    const started = await start(gateway, bearer);
    assert.equal(started.status, 201, started.text);
    const runId = started.json.runId;
    const path = `/v1/sessions/${runId}/events`;
    // The time limit's interrupt is refused (not a retryable answer: tried again in 5 s).
    gateway.fake.failNext({ method: "POST", path, status: 400 });
    const run = await runWhen(gateway, runId, (run) => run.state !== "running", 8_000);
    assert.equal(run.stopReason, "timeLimit");
    await waitFor(
      () =>
        gateway.fake.requests.some((request) =>
          request.method === "POST" && request.path === path &&
          (request.body as { events?: { type: string }[] })?.events?.[0]?.type === "user.interrupt"
        ),
      5_000,
      "the interrupt's first try",
    );
    const refusedAt = Date.now();
    const events = gateway.fake.managedAgents!.sessions.get(runId)!.events;
    // Sent again by the reconnected tail, well before the 5 s retry (which the reconnect drops).
    await waitFor(
      () => events.some((event) => event.type === "user.interrupt"),
      4_000,
      "the interrupt",
    );
    assert.ok(Date.now() - refusedAt < 4_500);
    await waitFor(() => events.at(-1)?.type === "session.status_idle");
  } finally {
    await gateway.close();
  }
});

Deno.test("spend: GET /v1/usage sums the runs' reported costs by principal, agent and day; a principal sees only its own", async () => {
  const gateway = await startGateway();
  try {
    const costs: Record<string, number> = { [gateway.agentId]: 30, [gateway.otherAgentId]: 70 };
    for (const [agentId, cents] of Object.entries(costs)) {
      script(gateway, () => [spend(cents), agentMessage("done")], agentId);
    }
    const alice = await gateway.issue([...WRITER]);
    const bob = await gateway.issue([...WRITER]);
    const runs: { runId: string; principalId: string; agentId: string }[] = [];
    for (
      const [who, agentId] of [[alice, gateway.agentId], [alice, gateway.otherAgentId], [
        bob,
        gateway.otherAgentId,
      ]] as const
    ) {
      const answer = await gateway.request("POST", "/v1/runs", {
        bearer: who.bearer,
        body: { input: "go", metadata: { agent_id: agentId } },
      });
      assert.equal(answer.status, 201, answer.text);
      runs.push({ runId: answer.json.runId, principalId: who.principalId, agentId });
    }
    const listCosts = new Map<string, number>();
    for (const run of runs) {
      const record = await runWhen(
        gateway,
        run.runId,
        (r) => r.state === "completed" && r.listCost !== undefined,
      );
      listCosts.set(run.runId, Number(record.listCost.amount));
    }
    const sum = (select: (run: typeof runs[number]) => string) => {
      const sums = new Map<string, number>();
      for (const run of runs) {
        sums.set(select(run), (sums.get(select(run)) ?? 0) + listCosts.get(run.runId)!);
      }
      return [...sums].sort(([a], [b]) => a < b ? -1 : 1).map((
        [key, cents],
      ) => [key, String(cents)]);
    };
    const today = new Date().toISOString().slice(0, 10);
    const usage = async (query: string, bearer?: string) => {
      let answer;
      await waitFor(async () => {
        answer = await gateway.request("GET", `/v1/usage?${query}`, bearer ? { bearer } : {});
        return answer.status !== 200 || answer.json.total.listCost.amount !== "0";
      });
      return answer!;
    };
    // Settlements land just after the runs' ends: wait for the whole sum.
    await waitFor(
      async () => {
        const all = await gateway.request("GET", "/v1/usage");
        return all.json.total.listCost.amount === "170";
      },
      10_000,
      "every settlement",
    );
    const groups = async (query: string, bearer?: string) =>
      (await usage(query, bearer)).json.groups.map((
        group: { key: string; listCost: { amount: string } },
      ) => [group.key, group.listCost.amount]);
    assert.deepEqual(await groups("groupBy=principal"), sum((run) => run.principalId));
    assert.deepEqual(await groups("groupBy=agent"), sum((run) => run.agentId));
    assert.deepEqual(await groups("groupBy=day"), [[today, "170"]]);
    // Tokens too: 30 cents is 100,000 input tokens at $3 a million.
    const byAgent = (await usage("groupBy=agent")).json.groups;
    assert.equal(
      byAgent.find((g: { key: string }) => g.key === gateway.agentId).inputTokens,
      100_000,
    );
    // Alice sees only her own, even unasked; naming Bob is refused.
    assert.deepEqual(await groups("groupBy=principal", alice.bearer), [[alice.principalId, "100"]]);
    assert.deepEqual((await usage("groupBy=agent", alice.bearer)).json.total.listCost, usd(100));
    assertCode(
      await gateway.request("GET", `/v1/usage?principalId=${bob.principalId}`, {
        bearer: alice.bearer,
      }),
      403,
      "missingCapability",
    );
    for (
      const query of [
        "groupBy=week",
        "from=yesterday",
        "from=2026-01-01T00:00:00Z&to=2025-01-01T00:00:00Z",
        "limit=3",
      ]
    ) {
      assertCode(await gateway.request("GET", `/v1/usage?${query}`), 422, "invalidRequest");
    }
  } finally {
    await gateway.close();
  }
});

Deno.test("spend: a model without a list price is refused for a principal with a budget, counted in tokens for one without", async () => {
  const gateway = await startGateway();
  try {
    const state = gateway.fake.managedAgents!;
    const free = state.addAgent({ name: "free", model: "model-free", turn: () => [spend(50)] });
    state.modelPrices.set("model-free", null);
    const budgeted = await gateway.issue([...WRITER], {
      budget: { amount: "1000", currency: "USD", period: "total" },
    });
    const body = { input: "go", metadata: { agent_id: free.id } };
    const refused = await gateway.request("POST", "/v1/runs", { bearer: budgeted.bearer, body });
    assertCode(refused, 422, "modelNotBudgetable");
    assert.deepEqual(
      await gateway.store.spend.ledger(budgeted.principalId, "total"),
      { spent: 0n, reserved: 0n },
      "its hold was given back",
    );
    const open = await gateway.issue([...WRITER]);
    const started = await gateway.request("POST", "/v1/runs", { bearer: open.bearer, body });
    assert.equal(started.status, 201, started.text);
    const run = await runWhen(gateway, started.json.runId, (run) => run.state === "completed");
    assert.equal(run.listCost, undefined);
    await waitFor(async () => {
      const usage = await gateway.request("GET", "/v1/usage", { bearer: open.bearer });
      return usage.json.total.inputTokens > 0;
    });
    const usage = await gateway.request("GET", "/v1/usage", { bearer: open.bearer });
    assert.deepEqual(usage.json.total.listCost, usd(0));
  } finally {
    await gateway.close();
  }
});

Deno.test("spend: a cancelled run settles what its interrupted turn spent and gives the rest back", async () => {
  const gateway = await startGateway();
  try {
    script(gateway, () => spendAndHold(70));
    const { bearer, principalId } = await gateway.issue([...WRITER], {
      budget: { amount: "1000", currency: "USD", period: "total" },
      maxRunCost: usd(400),
    });
    const started = await start(gateway, bearer);
    const runId = started.json.runId;
    await runWhen(gateway, runId, (run) => run.listCost?.amount === "70");
    assert.deepEqual(
      await gateway.store.spend.ledger(principalId, "total"),
      { spent: 0n, reserved: 400n },
      "a turn that has not waited or ended holds its whole cap",
    );
    const cancelled = await gateway.request("POST", `/v1/runs/${runId}/cancel`, { bearer });
    assert.equal(cancelled.status, 202, cancelled.text);
    await waitFor(
      async () => (await gateway.store.spend.ledger(principalId, "total")).reserved === 0n,
      10_000,
      "the interrupted turn's settlement",
    );
    assert.deepEqual(await gateway.store.spend.ledger(principalId, "total"), {
      spent: 70n,
      reserved: 0n,
    });
    assert.deepEqual(await gateway.store.spend.runHolds(runId), []);
  } finally {
    await gateway.close();
  }
});
