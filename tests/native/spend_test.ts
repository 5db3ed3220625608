/**
 * Budgets through the provider's own API, with the vendor's SDK as the client: every session a
 * budgeted principal creates carries a provider budget no larger than its hold, also when the
 * create body asks for more (a smaller ask lowers the hold with it); a session created without a
 * turn holds nothing until its first message raises its budget; nothing left is the SDK's 429
 * that it does not retry; and an unbudgeted principal's own budget goes to the provider as it is.
 */
import assert from "node:assert/strict";
import Vendor from "@anthropic-ai/sdk";
import { runWhen, script, sessionBudget, spend, usd } from "../gateway/_spend.ts";
import { isA, startNative, until, userMessage } from "./_native.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const limit = (amount: string) => ({
  type: "limit",
  max_list_cost: { amount, currency: "USD" },
});

Deno.test("provider API: a budgeted principal's sessions carry a provider budget no larger than their hold", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const { bearer, principalId } = await gateway.issue(["session:read", "session:write"], {
      budget: { amount: "1000", currency: "USD", period: "total" },
      maxRunCost: usd(300),
    });
    const sdk = native.sdk(bearer);
    const create = (fields: Record<string, unknown>) =>
      sdk.beta.sessions.create({
        agent: gateway.agentId,
        environment_id: gateway.environmentId,
        initial_events: [userMessage("go")],
        ...fields,
      } as never) as Promise<Json>;
    const reserved = async () => (await gateway.store.spend.ledger(principalId, "total")).reserved;

    // Asking for more than its cap: lowered to the hold.
    const greedy = await create({ budget: limit("5000") });
    assert.equal(sessionBudget(gateway, greedy.id), "300");
    assert.deepEqual(greedy.budget, limit("300"), "the provider's session, as it holds it");
    assert.equal(await reserved(), 300n);
    // Asking for less: the hold is lowered with it.
    const modest = await create({ budget: limit("120") });
    assert.equal(sessionBudget(gateway, modest.id), "120");
    assert.equal(await reserved(), 420n);
    // Asking for none: the hold all the same.
    const plain = await create({});
    assert.equal(sessionBudget(gateway, plain.id), "300");
    const run = await gateway.request("GET", `/v1/runs/${plain.id}`, { bearer });
    assert.deepEqual(run.json.maxListCost, usd(300));
  } finally {
    await native.close();
  }
});

Deno.test("provider API: nothing left to hold is a 429 the SDK does not retry, and reaches no provider", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    gateway.holdTurns(true);
    const { bearer } = await gateway.issue(["session:read", "session:write"], {
      budget: { amount: "300", currency: "USD", period: "day" },
    });
    const sdk = native.sdk(bearer);
    const create = () =>
      sdk.beta.sessions.create({
        agent: gateway.agentId,
        environment_id: gateway.environmentId,
        initial_events: [userMessage("go")],
      } as never);
    await create();
    const before = native.received.length;
    const sessions = gateway.fake.managedAgents!.sessions.size;
    const error: Json = await create().then(() => null, (error) => error);
    assert.ok(isA(error, Vendor.RateLimitError), String(error));
    assert.equal(error.error.error.type, "rate_limit_error");
    assert.equal(error.error.error.details.error_code, "budgetExceeded");
    assert.equal(error.headers.get("x-should-retry"), "false");
    assert.equal(native.received.length - before, 1, "the SDK sent it once");
    assert.equal(gateway.fake.managedAgents!.sessions.size, sessions);
  } finally {
    await native.close();
  }
});

Deno.test("provider API: a session created without a turn holds nothing, and its first message raises its budget", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const { bearer, principalId } = await gateway.issue(["session:read", "session:write"], {
      budget: { amount: "1000", currency: "USD", period: "total" },
      maxRunCost: usd(250),
    });
    const sdk = native.sdk(bearer);
    const session: Json = await sdk.beta.sessions.create({
      agent: gateway.agentId,
      environment_id: gateway.environmentId,
      budget: limit("900"),
    } as never);
    assert.equal(sessionBudget(gateway, session.id), "0", "a session that cannot spend yet");
    assert.equal((await gateway.store.spend.ledger(principalId, "total")).reserved, 0n);
    await sdk.beta.sessions.events.send(session.id, { events: [userMessage("now")] } as never);
    assert.equal(sessionBudget(gateway, session.id), "250");
    await runWhen(gateway, session.id, (run) => run.state === "completed");
    await until(
      async () => (await gateway.store.spend.ledger(principalId, "total")).reserved === 0n,
      "the turn's settlement",
    );
  } finally {
    await native.close();
  }
});

Deno.test("provider API: an unbudgeted principal's own session budget reaches the provider as it is", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const session: Json = await native.sdk(bearer).beta.sessions.create({
      agent: gateway.agentId,
      environment_id: gateway.environmentId,
      budget: limit("777"),
      initial_events: [userMessage("go")],
    } as never);
    assert.equal(sessionBudget(gateway, session.id), "777");
  } finally {
    await native.close();
  }
});

Deno.test("provider API: a session update cannot raise or remove the budget of a budgeted principal's session, not even the admin's", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    gateway.holdTurns(true);
    const { bearer, principalId } = await gateway.issue(["session:read", "session:write"], {
      budget: { amount: "1000", currency: "USD", period: "total" },
      maxRunCost: usd(300),
    });
    const session: Json = await native.sdk(bearer).beta.sessions.create({
      agent: gateway.agentId,
      environment_id: gateway.environmentId,
      initial_events: [userMessage("go")],
    } as never);
    assert.equal(sessionBudget(gateway, session.id), "300");
    // The admin may change any field of a session, but not the ceiling its owner's hold sets.
    const admin = native.sdk(gateway.admin);
    for (const budget of [limit("5000"), null]) {
      const error: Json = await admin.beta.sessions.update(session.id, { budget } as never)
        .then(() => null, (error) => error);
      assert.ok(isA(error, Vendor.BadRequestError), String(error));
      assert.match(error.message, /budget/);
      assert.equal(sessionBudget(gateway, session.id), "300", "the provider's ceiling stays");
    }
    // Other fields still pass on.
    const renamed: Json = await admin.beta.sessions.update(session.id, { title: "t2" } as never);
    assert.equal(renamed.title, "t2");
    assert.equal((await gateway.store.spend.ledger(principalId, "total")).reserved, 300n);
    // The admin's own (unbudgeted) sessions still take a budget change as it is.
    const own: Json = await admin.beta.sessions.create({
      agent: gateway.agentId,
      environment_id: gateway.environmentId,
      budget: limit("100"),
      initial_events: [userMessage("go")],
    } as never);
    await admin.beta.sessions.update(own.id, { budget: limit("200") } as never);
    assert.equal(sessionBudget(gateway, own.id), "200");
  } finally {
    await native.close();
  }
});

Deno.test("provider API: an outcome that wakes a budgeted session takes a hold, and its turn's end settles and gives back the rest", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    script(gateway, () => [spend(10)]);
    const { bearer, principalId } = await gateway.issue(["session:read", "session:write"], {
      budget: { amount: "1000", currency: "USD", period: "total" },
      maxRunCost: usd(300),
    });
    const sdk = native.sdk(bearer);
    const ledger = () => gateway.store.spend.ledger(principalId, "total");
    const session: Json = await sdk.beta.sessions.create({
      agent: gateway.agentId,
      environment_id: gateway.environmentId,
      initial_events: [userMessage("go")],
    } as never);
    await until(async () => (await ledger()).reserved === 0n, "the first turn's settlement");
    assert.deepEqual(await ledger(), { spent: 10n, reserved: 0n });
    await sdk.beta.sessions.events.send(session.id, {
      events: [{
        type: "user.define_outcome",
        description: "done",
        rubric: { type: "text", content: "it is done" },
      }],
    } as never);
    assert.equal(sessionBudget(gateway, session.id), "300", "10 settled and 290 held");
    await until(
      async () => (await ledger()).reserved === 0n,
      "the outcome turn's settlement",
    );
    assert.deepEqual(await ledger(), { spent: 10n, reserved: 0n });
    assert.deepEqual(await gateway.store.spend.runHolds(session.id), []);
  } finally {
    await native.close();
  }
});
