/**
 * The provider simulator as users drive it (`@automation/runtime/testing`): scripted turns per
 * agent through the provider client (messages, a tool that needs a confirmation, a custom tool,
 * usage with its list cost over several turns, a failure), its bounded request log that never
 * keeps a credential, its body limit, and answering without a socket.
 */
import assert from "node:assert/strict";
import { ProviderManagedAgentClient, type RunStreamEvent } from "../../client/mod.ts";
import {
  agentMessage,
  customToolUse,
  DEFAULT_LIST_PRICES,
  listCostOf,
  pause,
  ProviderSimulator,
  sessionFailure,
  toolNeedingConfirmation,
  usageReport,
} from "../../testing/mod.ts";

const BETA = { "provider-beta": "managed-agents-2026-04-01" };

async function withSimulator(
  fn: (simulator: ProviderSimulator, client: ProviderManagedAgentClient) => Promise<void>,
): Promise<void> {
  await using simulator = await ProviderSimulator.start({ apiKey: "sk-simulator-test-0001" });
  const client = new ProviderManagedAgentClient({
    baseUrl: simulator.baseUrl,
    apiKey: simulator.apiKey,
  });
  await fn(simulator, client);
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("timed out waiting");
}

Deno.test("each agent runs its own script; a custom tool's answer resumes the turn", async () => {
  await withSimulator(async (simulator, client) => {
    const state = simulator.managedAgents!;
    const looker = state.addAgent({
      name: "looker",
      turn: (
        { text },
      ) => [agentMessage(`Looking up ${text}`), customToolUse("lookup", { q: text })],
      continuation: ({ events }) => {
        const answer = events.findLast((event) => event.type === "user.custom_tool_result");
        const content = answer?.content as { text: string }[];
        return [agentMessage(`Found: ${content[0].text}`)];
      },
    });
    const echo = state.addAgent({ name: "plain" });
    const environment = state.addEnvironment({ name: "test" });

    const said: string[] = [];
    const plain = await client.streamRun(
      { input: "hi", metadata: { agent_id: echo.id, environment_id: environment.id } },
      { onEvent: (event) => void (event.type === "message.completed" && said.push(event.text)) },
    );
    assert.equal(plain.terminal?.type, "run.completed");
    assert.deepEqual(said, ["Echo: hi"]);

    const started = await client.startRun({
      input: "ada",
      metadata: { agent_id: looker.id, environment_id: environment.id },
    });
    assert.equal((await client.getRun(started.runId)).status, "requires_action");
    const session = state.sessions.get(started.runId)!;
    const call = session.events.find((event) => event.type === "agent.custom_tool_use")!;
    assert.deepEqual(call.input, { q: "ada" });
    await client.respondCustomTool(started.runId, {
      toolUseId: call.id as string,
      content: [{ type: "text", text: "Lovelace" }],
    });
    assert.equal((await client.getRun(started.runId)).status, "completed");
    const texts = session.events.filter((event) => event.type === "agent.message")
      .map((event) => (event.content as { text: string }[])[0].text);
    assert.deepEqual(texts, ["Looking up ada", "Found: Lovelace"]);
  });
});

Deno.test("a tool that needs a confirmation waits; allow runs it, deny reports an error result", async () => {
  await withSimulator(async (simulator, client) => {
    const state = simulator.managedAgents!;
    const agent = state.addAgent({
      name: "careful",
      turn: () => [toolNeedingConfirmation("bash", { command: "rm -rf build" })],
    });
    const environment = state.addEnvironment({ name: "test" });
    const target = { agent_id: agent.id, environment_id: environment.id };
    for (const result of ["allow", "deny"] as const) {
      const started = await client.startRun({ input: "clean", metadata: target });
      const events = state.sessions.get(started.runId)!.events;
      const idle = events.findLast((event) => event.type === "session.status_idle")!;
      const call = events.find((event) => event.type === "agent.tool_use")!;
      assert.deepEqual(idle.stop_reason, { type: "requires_action", event_ids: [call.id] });
      await client.confirmTool(started.runId, { toolUseId: call.id as string, result });
      const toolResult = events.find((event) => event.type === "agent.tool_result")!;
      assert.equal(toolResult.tool_use_id, call.id);
      assert.equal(toolResult.is_error, result === "deny");
      assert.equal((await client.getRun(started.runId)).status, "completed");
    }
  });
});

Deno.test("usage reports add up across turns and carry their list cost", async () => {
  await withSimulator(async (simulator, client) => {
    const state = simulator.managedAgents!;
    const agent = state.addAgent({
      name: "counter",
      turn: () => [
        agentMessage("working"),
        usageReport({ inputTokens: 1_000_000, outputTokens: 10_000, cacheReadInputTokens: 5 }),
      ],
    });
    const environment = state.addEnvironment({ name: "test" });
    const first = await client.streamRun(
      { input: "one", metadata: { agent_id: agent.id, environment_id: environment.id } },
      {},
    );
    assert.equal(first.terminal?.type, "run.completed");
    const runId = first.terminal!.runId;
    await client.sendMessage(runId, "two");
    const session = await until(
      () => client.getSession(runId),
      (s) => (s.usage as { input_tokens: number }).input_tokens === 2_000_000,
    );
    // $3.00 per million input tokens, $15.00 per million output: 300 + 15 cents a turn, and
    // 10 cache reads at $0.30 per million round up to one more cent.
    assert.deepEqual(session.usage, {
      input_tokens: 2_000_000,
      output_tokens: 20_000,
      cache_read_input_tokens: 10,
      list_cost: { amount: "631", currency: "USD" },
    });
    const reports = state.sessions.get(runId)!.events.filter((e) => e.type === "session.usage");
    assert.deepEqual(reports.map((e) => (e.usage as { list_cost: unknown }).list_cost), [
      { amount: "316", currency: "USD" },
      { amount: "631", currency: "USD" },
    ]);
    assert.equal((await client.getRun(runId)).usage?.output_tokens, 20_000);
    assert.deepEqual(
      listCostOf({ inputTokens: 1, outputTokens: 0 }, DEFAULT_LIST_PRICES),
      { amount: "1", currency: "USD" },
    );
  });
});

Deno.test("a scripted failure ends the run failed with the session's error", async () => {
  await withSimulator(async (simulator, client) => {
    const state = simulator.managedAgents!;
    const agent = state.addAgent({
      name: "flaky",
      turn: () => [
        agentMessage("trying"),
        pause(20),
        ...sessionFailure("The model is overloaded", "model_overloaded_error"),
      ],
    });
    const environment = state.addEnvironment({ name: "test" });
    const events: RunStreamEvent[] = [];
    const result = await client.streamRun(
      { input: "go", metadata: { agent_id: agent.id, environment_id: environment.id } },
      { onEvent: (event) => void events.push(event) },
    );
    assert.deepEqual(result.terminal, {
      type: "run.failed",
      runId: result.terminal!.runId,
      error: { type: "model_overloaded_error", message: "The model is overloaded" },
    });
    assert.deepEqual(events.map((event) => event.type), [
      "run.started",
      "message.completed",
      "run.failed",
    ]);
    assert.equal((await client.getRun(result.terminal!.runId)).status, "failed");
  });
});

Deno.test("the request log is bounded and never holds a credential", async () => {
  await using simulator = await ProviderSimulator.start({
    apiKey: "sk-simulator-log-0001",
    maxLoggedRequests: 3,
  });
  for (let i = 0; i < 5; i++) {
    const response = await fetch(`${simulator.baseUrl}/v1/agents?i=${i}`, {
      headers: { ...BETA, authorization: `Bearer ${simulator.apiKey}` },
    });
    assert.equal(response.status, 200);
    await response.body?.cancel();
  }
  assert.deepEqual(simulator.requests.map((request) => request.query), ["i=2", "i=3", "i=4"]);
  assert.equal(simulator.requests[0].auth, "bearer");
  assert.equal(JSON.stringify(simulator.requests).includes(simulator.apiKey), false);
});

Deno.test("a body over the limit is refused with 413 before any route runs", async () => {
  await using simulator = await ProviderSimulator.start({ maxBodyBytes: 1024 });
  const response = await fetch(`${simulator.baseUrl}/v1/agents`, {
    method: "POST",
    headers: { ...BETA, "x-api-key": simulator.apiKey, "content-type": "application/json" },
    body: JSON.stringify({ name: "x".repeat(2048), model: "m" }),
  });
  assert.equal(response.status, 413);
  assert.equal((await response.json()).error.type, "request_too_large");
  assert.equal(simulator.managedAgents!.agents.size, 0);
});

Deno.test("fetch answers without a socket, with the same rules", async () => {
  await using simulator = await ProviderSimulator.start();
  const headers = { ...BETA, "x-api-key": simulator.apiKey, "content-type": "application/json" };
  const created = await simulator.fetch(
    new Request("http://in-process/v1/environments", {
      method: "POST",
      headers,
      body: JSON.stringify({ name: "in-process" }),
    }),
  );
  assert.equal(created.status, 200);
  assert.match(created.headers.get("request-id") ?? "", /^req_\d{6}$/);
  const { id } = await created.json();
  assert.equal(simulator.managedAgents!.environments.get(id)?.name, "in-process");
  const noBeta = await simulator.fetch(
    new Request("http://in-process/v1/environments", { headers: { "x-api-key": "test-key" } }),
  );
  assert.equal(noBeta.status, 400);
  await noBeta.body?.cancel();
});
