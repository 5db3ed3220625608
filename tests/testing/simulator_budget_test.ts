/**
 * Spend in the provider simulator: usage priced per model request, a session's budget that stops
 * it at its ceiling (`budget_reached`) even mid-turn, budget updates ruled as the provider rules
 * them, and a model scripted to have no price.
 */
import assert from "node:assert/strict";
import { ProviderApiError, ProviderManagedAgentClient } from "../../client/mod.ts";
import { agentMessage, ProviderSimulator, usageReport } from "../../testing/mod.ts";

const budget = (amount: string) => ({
  type: "limit" as const,
  max_list_cost: { amount, currency: "USD" },
});

async function withSimulator(
  fn: (simulator: ProviderSimulator, client: ProviderManagedAgentClient) => Promise<void>,
): Promise<void> {
  await using simulator = await ProviderSimulator.start({ apiKey: "sk-simulator-budget-0001" });
  const client = new ProviderManagedAgentClient({
    baseUrl: simulator.baseUrl,
    apiKey: simulator.apiKey,
  });
  await fn(simulator, client);
}

/** 200,000 input tokens: 60 cents at the default prices. */
const SIXTY_CENTS = { inputTokens: 200_000, outputTokens: 0 };

Deno.test("a budgeted session stops issuing model requests at its ceiling: budget_reached", async () => {
  await withSimulator(async (simulator, client) => {
    const state = simulator.managedAgents!;
    const agent = state.addAgent({
      name: "spender",
      turn: () => [
        usageReport(SIXTY_CENTS),
        usageReport(SIXTY_CENTS),
        agentMessage("never said"),
        usageReport(SIXTY_CENTS),
      ],
    });
    const environment = state.addEnvironment({ name: "env" });
    const session = await client.createSession({
      agentId: agent.id,
      environmentId: environment.id,
      budget: budget("100"),
    });
    assert.deepEqual(session.budget, budget("100"));
    await client.sendEvents(session.id, [{
      type: "user.message",
      content: [{ type: "text", text: "go" }],
    }]);
    const events = state.sessions.get(session.id)!.events;
    const types = events.map((event) => String(event.type));
    // Each usage report is one model request with its span and the session's totals.
    assert.deepEqual(types.filter((type) => type.startsWith("span.")), [
      "span.model_request_start",
      "span.model_request_end",
      "span.model_request_start",
      "span.model_request_end",
    ]);
    const end = events.findLast((event) => event.type === "span.model_request_end")!;
    assert.deepEqual(end.model_usage, {
      input_tokens: 200_000,
      output_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    });
    const usage = events.filter((event) => event.type === "session.usage");
    assert.deepEqual(
      usage.map((event) => (event.usage as { list_cost: { amount: string } }).list_cost.amount),
      ["60", "120"],
      "the request that crossed the ceiling counts; no third request",
    );
    assert.deepEqual(usage[1].budget, budget("100"));
    const idle = events.at(-1)!;
    assert.equal(idle.type, "session.status_idle");
    assert.deepEqual(idle.stop_reason, { type: "budget_reached" });
    assert.equal(types.includes("agent.message"), false);
    // The run contract reads it as completed with that stop reason.
    const run = await client.getRun(session.id);
    assert.equal(run.status, "completed");
    assert.equal(run.stopReason, "budget_reached");
    // A new turn at the ceiling ends at once.
    await client.sendEvents(session.id, [{
      type: "user.message",
      content: [{ type: "text", text: "more" }],
    }]);
    assert.deepEqual(events.slice(-3).map((event) => event.type), [
      "user.message",
      "session.status_running",
      "session.status_idle",
    ]);
    assert.deepEqual(events.at(-1)!.stop_reason, { type: "budget_reached" });
  });
});

Deno.test("a session's budget is raised by an update, never added, lowered below its cost or set on an unpriced model", async () => {
  await withSimulator(async (simulator, client) => {
    const state = simulator.managedAgents!;
    const agent = state.addAgent({ name: "one", turn: () => [usageReport(SIXTY_CENTS)] });
    const environment = state.addEnvironment({ name: "env" });
    const capped = await client.createSession({
      agentId: agent.id,
      environmentId: environment.id,
      budget: budget("100"),
    });
    await client.sendEvents(capped.id, [{ type: "user.message", content: [] }]);
    const refused = async (call: Promise<unknown>, reason: string) => {
      const error = await call.then(() => null, (error) => error);
      assert.ok(error instanceof ProviderApiError, String(error));
      assert.equal(error.status, 400);
      assert.match(error.message, new RegExp(reason));
    };
    await refused(client.updateSession(capped.id, { budget: budget("60") }), "budget_not_raised");
    const raised = await client.updateSession(capped.id, { budget: budget("500") });
    assert.deepEqual(raised.budget, budget("500"));
    const updated = state.sessions.get(capped.id)!.events.at(-1)!;
    assert.equal(updated.type, "session.updated");
    assert.deepEqual(updated.budget, budget("500"));
    const uncapped = await client.createSession({
      agentId: agent.id,
      environmentId: environment.id,
    });
    assert.equal(uncapped.budget, null);
    await refused(
      client.updateSession(uncapped.id, { budget: budget("500") }),
      "budget_create_only",
    );
    // A model without a list price reports no cost and takes no budget.
    const free = state.addAgent({
      name: "free",
      model: "model-unpriced",
      turn: () => [usageReport(SIXTY_CENTS)],
    });
    state.modelPrices.set("model-unpriced", null);
    await refused(
      client.createSession({
        agentId: free.id,
        environmentId: environment.id,
        budget: budget("9"),
      }),
      "model_not_budgetable",
    );
    const open = await client.createSession({ agentId: free.id, environmentId: environment.id });
    await client.sendEvents(open.id, [{ type: "user.message", content: [] }]);
    const session = await client.getSession(open.id);
    assert.deepEqual(session.usage, {
      input_tokens: 200_000,
      output_tokens: 0,
      cache_read_input_tokens: 0,
    });
  });
});
