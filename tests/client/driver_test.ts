import assert from "node:assert/strict";
import { ProviderManagedAgentClient } from "../../client/managed_agents/client.ts";
import {
  driveManagedAgentSession,
  type ManagedAgentDriverClient,
  ManagedAgentDriverError,
  type ManagedAgentDriverHandlers,
} from "../../client/managed_agents/driver.ts";
import { BoundedIdSet } from "../../client/managed_agents/_bounded_id_set.ts";
import type { Json } from "../support/fake_provider.ts";
import { FakeProvider } from "../support/fake_provider.ts";
import { type Faults, NO_FAULTS, RefusedError, ScriptedSession } from "./_scripted_session.ts";

const FAST = { minReconnectDelayMs: 1, maxReconnectDelayMs: 5 };

interface Fixture {
  fake: FakeProvider;
  client: ProviderManagedAgentClient;
  sessionId: string;
}

async function withFake(run: (fixture: Fixture) => Promise<void>): Promise<void> {
  const fake = await FakeProvider.start();
  try {
    const client = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey: fake.apiKey });
    const agent = await client.createAgent({ name: "worker", model: "model-small" });
    const environment = await client.createEnvironment({ name: "env" });
    const session = await client.createSession({
      agentId: agent.id,
      environmentId: environment.id,
    });
    await run({ fake, client, sessionId: session.id });
  } finally {
    await fake.close();
  }
}

/** Handlers that record what they see as short strings. */
function recorder(
  extra: Partial<ManagedAgentDriverHandlers> = {},
): { trace: string[]; ids: string[]; errors: ManagedAgentDriverError[] } & {
  handlers: ManagedAgentDriverHandlers;
} {
  const trace: string[] = [];
  const ids: string[] = [];
  const errors: ManagedAgentDriverError[] = [];
  const handlers: ManagedAgentDriverHandlers = {
    onEvent(event) {
      if (event.id) ids.push(event.id);
    },
    onMessage(text) {
      trace.push(`message ${text}`);
    },
    onToolConfirmation({ name }) {
      trace.push(`confirm ${name}`);
      return { result: "allow" };
    },
    onCustomTool({ name, input }) {
      trace.push(`custom ${name}`);
      return { content: [{ type: "text", text: `ran ${name} with ${JSON.stringify(input)}` }] };
    },
    onOutcomeEvaluation(event) {
      trace.push(`outcome ${event.result}`);
    },
    onThreadEvent(event) {
      trace.push(`thread ${event.kind}`);
    },
    onComplete() {
      trace.push("complete");
    },
    onError(error) {
      errors.push(error);
      trace.push(`error ${error.reason}`);
    },
    ...extra,
  };
  return { trace, ids, errors, handlers };
}

function answersIn(events: readonly Json[]): Json[] {
  return events.filter((e) =>
    e.type === "user.tool_confirmation" || e.type === "user.custom_tool_result"
  );
}

function history(fake: FakeProvider, sessionId: string): Json[] {
  return fake.managedAgents!.sessions.get(sessionId)!.events;
}

/** A turn with a paused tool call and a custom tool, then a closing message. */
function scriptTools(fake: FakeProvider, delayMs = 0): void {
  const state = fake.managedAgents!;
  state.script = () => [
    ...(delayMs > 0 ? [{ delayMs }] : []),
    { type: "agent.message", content: [{ type: "text", text: "Working" }] },
    { type: "agent.tool_use", name: "bash", input: { command: "ls" }, evaluated_permission: "ask" },
    { type: "agent.custom_tool_use", name: "lookup", input: { q: "x" } },
  ];
  state.continuation = () => [
    ...(delayMs > 0 ? [{ delayMs }] : []),
    { type: "agent.message", content: [{ type: "text", text: "Done ✓" }] },
  ];
}

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assert.ok(condition(), what);
}

function streamOpens(fake: FakeProvider, sessionId: string): number {
  return fake.requests.filter((r) => r.path === `/v1/sessions/${sessionId}/events/stream`).length;
}

// ------------------------------------------------------------------ against the fake provider

Deno.test("drives a session to its end: confirmations, custom tools, every event once", async () => {
  await withFake(async ({ fake, client, sessionId }) => {
    scriptTools(fake);
    await client.sendMessage(sessionId, "go");
    const { trace, ids, errors, handlers } = recorder();
    const seen: string[] = [];
    const result = await driveManagedAgentSession(client, sessionId, {
      ...handlers,
      onEvent(event) {
        handlers.onEvent?.(event);
        if (event.kind === "status") seen.push(`${event.status}:${event.stopReason?.type ?? ""}`);
      },
    }, FAST);
    assert.equal(result.outcome, "terminal");
    assert.equal(result.terminalEvent?.status, "idle");
    assert.deepEqual(errors, []);
    assert.deepEqual(trace, [
      "message Working",
      "confirm bash",
      "custom lookup",
      "message Done ✓",
      "complete",
    ]);
    // Idle with requires_action did not end the drive; the final end_turn idle did.
    assert.ok(seen.includes("idle:requires_action"));
    assert.equal(seen.at(-1), "idle:end_turn");
    const events = history(fake, sessionId);
    assert.deepEqual(ids, events.map((e) => e.id), "every event once, in order");
    const answers = answersIn(events);
    assert.equal(answers.length, 2);
    assert.equal(answers[0].result, "allow");
    assert.deepEqual(answers[1].content, [{ type: "text", text: 'ran lookup with {"q":"x"}' }]);
    await waitFor(() => fake.openStreams === 0, "the stream was released");
  });
});

Deno.test("a terminated status ends the drive", async () => {
  await withFake(async ({ fake, client, sessionId }) => {
    fake.managedAgents!.script = () => [
      { type: "agent.message", content: [{ type: "text", text: "bye" }] },
      { type: "session.status_terminated" },
    ];
    await client.sendMessage(sessionId, "go");
    const { trace, handlers } = recorder();
    const result = await driveManagedAgentSession(client, sessionId, handlers, FAST);
    assert.equal(result.outcome, "terminal");
    assert.equal(result.terminalEvent?.status, "terminated");
    assert.deepEqual(trace, ["message bye", "complete"]);
  });
});

Deno.test("a stream dropped mid-frame is reopened; nothing is handled twice or missed", async () => {
  await withFake(async ({ fake, client, sessionId }) => {
    scriptTools(fake, 30);
    await client.sendMessage(sessionId, "go");
    // The first stream dies inside the first frame the turn emits after the driver attached.
    fake.dropNextStream({ afterBytes: 40 });
    const { trace, ids, errors, handlers } = recorder();
    const result = await driveManagedAgentSession(client, sessionId, handlers, FAST);
    assert.equal(result.outcome, "terminal");
    assert.deepEqual(errors, []);
    assert.ok(streamOpens(fake, sessionId) >= 2, "the stream was reopened");
    assert.deepEqual(trace, [
      "message Working",
      "confirm bash",
      "custom lookup",
      "message Done ✓",
      "complete",
    ]);
    assert.deepEqual(ids, history(fake, sessionId).map((e) => e.id));
    assert.equal(answersIn(history(fake, sessionId)).length, 2);
  });
});

Deno.test("duplicate deliveries are handled once", async () => {
  await withFake(async ({ fake, client, sessionId }) => {
    scriptTools(fake, 20);
    fake.duplicateDeliveries = true;
    await client.sendMessage(sessionId, "go");
    const { trace, ids, errors, handlers } = recorder();
    await driveManagedAgentSession(client, sessionId, handlers, FAST);
    assert.deepEqual(errors, []);
    assert.deepEqual(ids, history(fake, sessionId).map((e) => e.id));
    assert.equal(trace.filter((t) => t === "confirm bash").length, 1);
    assert.equal(answersIn(history(fake, sessionId)).length, 2);
  });
});

Deno.test("a failed answer is sent again on the next pass, and only once", async () => {
  await withFake(async ({ fake, client, sessionId }) => {
    scriptTools(fake, 20);
    await client.sendMessage(sessionId, "go");
    // Every attempt of the client's own retries fails, so the driver sees the failure.
    fake.failNext({
      method: "POST",
      path: `/v1/sessions/${sessionId}/events`,
      status: 503,
      headers: { "retry-after-ms": "1" },
      times: 3,
    });
    const { trace, errors, handlers } = recorder();
    const result = await driveManagedAgentSession(client, sessionId, handlers, FAST);
    assert.equal(result.outcome, "terminal");
    assert.deepEqual(errors, []);
    assert.equal(trace.filter((t) => t === "confirm bash").length, 1, "the handler ran once");
    const answers = answersIn(history(fake, sessionId));
    assert.deepEqual(answers.map((a) => a.type), [
      "user.tool_confirmation",
      "user.custom_tool_result",
    ]);
    assert.ok(streamOpens(fake, sessionId) >= 2, "the failed send ended the pass");
  });
});

Deno.test("reconnects exhausted: onError once, then onComplete once", async () => {
  await withFake(async ({ fake, client, sessionId }) => {
    fake.failNext({
      method: "GET",
      path: `/v1/sessions/${sessionId}/events/stream`,
      status: 500,
      headers: { "x-should-retry": "false" },
      times: 100,
    });
    const { trace, errors, handlers } = recorder();
    const result = await driveManagedAgentSession(client, sessionId, handlers, {
      ...FAST,
      maxReconnects: 2,
    });
    assert.equal(result.outcome, "error");
    assert.deepEqual(trace, ["error reconnectsExhausted", "complete"]);
    assert.equal(errors[0].code, "managedAgentDriverError");
    assert.equal((errors[0].cause as { status?: number }).status, 500);
    assert.equal(streamOpens(fake, sessionId), 3, "the first attempt and two reconnects");
  });
});

Deno.test("an unknown session ends the drive at once with a fatal error", async () => {
  await withFake(async ({ fake, client }) => {
    const { trace, errors, handlers } = recorder();
    const result = await driveManagedAgentSession(client, "sesn_missing", handlers, FAST);
    assert.equal(result.outcome, "error");
    assert.deepEqual(trace, ["error fatal", "complete"]);
    assert.equal((errors[0].cause as { status?: number }).status, 404);
    assert.equal(streamOpens(fake, "sesn_missing"), 1);
  });
});

Deno.test("abort stops the drive and releases the stream, without onComplete", async () => {
  await withFake(async ({ fake, client, sessionId }) => {
    fake.managedAgents!.script = () => [
      { type: "agent.message", content: [{ type: "text", text: "first" }] },
      { delayMs: 60_000 },
      { type: "agent.message", content: [{ type: "text", text: "never" }] },
    ];
    await client.sendMessage(sessionId, "go");
    const controller = new AbortController();
    const { trace, handlers } = recorder({
      onMessage(text) {
        trace.push(`message ${text}`);
        setTimeout(() => controller.abort(new Error("user left")), 20);
      },
    });
    const started = performance.now();
    const result = await driveManagedAgentSession(client, sessionId, handlers, {
      ...FAST,
      signal: controller.signal,
    });
    assert.equal(result.outcome, "aborted");
    assert.deepEqual(trace, ["message first"]);
    assert.ok(performance.now() - started < 5_000);
    await waitFor(() => fake.openStreams === 0, "the server saw the connection go away");
  });
});

// ------------------------------------------------------------------ handler rules (in memory)

function scripted(
  steps: ConstructorParameters<typeof ScriptedSession>[0],
  faults: Faults = NO_FAULTS,
  prefix?: Json[],
): ScriptedSession {
  return new ScriptedSession(steps, { faults, prefix });
}

Deno.test("without handlers, paused tools are denied and custom tools get an error result", async () => {
  const session = scripted([
    { kind: "confirm", name: "bash", input: {} },
    { kind: "custom", name: "lookup", input: {} },
  ]);
  const result = await driveManagedAgentSession(session, "sesn_1", {}, FAST);
  assert.equal(result.outcome, "terminal");
  assert.deepEqual(session.answers.get("sevt_s0_0"), [{ toolUseId: "sevt_s0_0", result: "deny" }]);
  assert.deepEqual(session.answers.get("sevt_s1_0"), [{
    toolUseId: "sevt_s1_0",
    content: [{ type: "text", text: "This client has no handler for custom tools" }],
    isError: true,
  }]);
});

Deno.test("a throwing handler is reported and its request still answered", async () => {
  const session = scripted([
    { kind: "message", text: "hi" },
    { kind: "confirm", name: "bash", input: {} },
    { kind: "custom", name: "lookup", input: {} },
    { kind: "message", text: "after" },
  ]);
  const { trace, errors, handlers } = recorder({
    onMessage(text) {
      trace.push(`message ${text}`);
      throw new Error("ui bug");
    },
    onToolConfirmation() {
      throw new Error("policy bug");
    },
    onCustomTool() {
      return Promise.reject(new Error("tool bug"));
    },
  });
  const result = await driveManagedAgentSession(session, "sesn_1", handlers, FAST);
  assert.equal(result.outcome, "terminal");
  assert.deepEqual(trace, [
    "message hi",
    "error handlerFailed",
    "error handlerFailed",
    "error handlerFailed",
    "message after",
    "error handlerFailed",
    "complete",
  ]);
  assert.deepEqual(errors.map((e) => (e.cause as Error).message), [
    "ui bug",
    "policy bug",
    "tool bug",
    "ui bug",
  ]);
  assert.match(errors[1].message, /onToolConfirmation/);
  assert.deepEqual(session.answers.get("sevt_s1_0"), [{
    toolUseId: "sevt_s1_0",
    result: "deny",
    denyMessage: "The client's tool confirmation handler failed",
  }]);
  assert.deepEqual(session.answers.get("sevt_s2_0"), [{
    toolUseId: "sevt_s2_0",
    content: [{ type: "text", text: "The client's custom tool handler failed" }],
    isError: true,
  }]);
});

Deno.test("tool confirmation fails closed: only an explicit allow runs the tool", async () => {
  const verdicts: unknown[] = [{ result: "allow" }, { result: "ALLOW" }, undefined, {
    result: "deny",
    denyMessage: "not today",
  }];
  const session = scripted(verdicts.map(() => ({ kind: "confirm", name: "bash", input: {} })));
  let call = 0;
  await driveManagedAgentSession(session, "sesn_1", {
    onToolConfirmation: () => verdicts[call++] as never,
  }, FAST);
  assert.deepEqual(
    [0, 1, 2, 3].map((i) => session.answers.get(`sevt_s${i}_0`)?.[0]),
    [
      { toolUseId: "sevt_s0_0", result: "allow" },
      {
        toolUseId: "sevt_s1_0",
        result: "deny",
        denyMessage: "The client's tool confirmation handler failed",
      },
      {
        toolUseId: "sevt_s2_0",
        result: "deny",
        denyMessage: "The client's tool confirmation handler failed",
      },
      { toolUseId: "sevt_s3_0", result: "deny", denyMessage: "not today" },
    ],
  );
});

Deno.test("requests already answered in the history are not answered again", async () => {
  // A request answered by another client before this driver attached, then an open one.
  const prefix: Json[] = [
    { type: "agent.custom_tool_use", id: "sevt_old", name: "lookup", input: {} },
    {
      type: "user.custom_tool_result",
      id: "sevt_oldans",
      custom_tool_use_id: "sevt_old",
      content: [],
    },
  ];
  const session = scripted([{ kind: "custom", name: "lookup", input: {} }], NO_FAULTS, prefix);
  const { trace, handlers } = recorder();
  await driveManagedAgentSession(session, "sesn_1", handlers, FAST);
  assert.deepEqual(trace, ["custom lookup", "complete"]);
  assert.equal(session.answers.has("sevt_old"), false);
  assert.equal(session.answers.get("sevt_s0_0")?.length, 1);
});

Deno.test("an answer the provider refuses is reported once and not retried", async () => {
  const session = scripted([{ kind: "confirm", name: "bash", input: {} }]);
  const client: ManagedAgentDriverClient = {
    openEventStream: (id, signal) => session.openEventStream(id, signal),
    listEvents: (id, params) => session.listEvents(id, params),
    respondCustomTool: (id, params) => session.respondCustomTool(id, params),
    confirmTool: () => Promise.reject(new RefusedError(400, "nope")),
  };
  const controller = new AbortController();
  const { trace, handlers } = recorder({
    onError(error) {
      trace.push(`error ${error.reason}`);
      // The session now waits forever for an answer; stop tailing it.
      setTimeout(() => controller.abort(), 20);
    },
  });
  const result = await driveManagedAgentSession(client, "sesn_1", handlers, {
    ...FAST,
    signal: controller.signal,
  });
  assert.equal(result.outcome, "aborted");
  assert.deepEqual(trace, ["confirm bash", "error answerFailed"]);
  assert.equal(session.openStreams, 0);
});

Deno.test("dedupe state stays within its window over a long session with drops", async () => {
  // 3,000 steps, a window of 16 ids, streams cut every few hundred bytes: correctness then rests
  // on skipping the listed history up to the last handled id, not on remembering every id.
  const steps = Array.from(
    { length: 3000 },
    (_, i) =>
      i % 100 === 50
        ? { kind: "custom" as const, name: "lookup", input: { i } }
        : { kind: "message" as const, text: `m${i}` },
  );
  const session = scripted(steps, {
    ...NO_FAULTS,
    cut: 1,
    cutMaxBytes: 3000,
    duplicate: 0.3,
    maxChunk: 512,
  });
  const ids: string[] = [];
  const result = await driveManagedAgentSession(session, "sesn_1", {
    onEvent(event) {
      if (event.id) ids.push(event.id);
    },
  }, { ...FAST, maxReconnects: 1000, dedupeWindow: 16 });
  assert.equal(result.outcome, "terminal");
  assert.ok(session.streamsOpened > 30, `only ${session.streamsOpened} streams`);
  assert.deepEqual(ids, session.log.map((e) => e.id));
  for (const [, answers] of session.answers) assert.equal(answers.length, 1);
});

Deno.test("BoundedIdSet forgets the oldest ids beyond its capacity", () => {
  const set = new BoundedIdSet(3);
  for (const id of ["a", "b", "c", "a", "d"]) set.add(id);
  assert.equal(set.size, 3);
  assert.deepEqual(["a", "b", "c", "d"].map((id) => set.has(id)), [false, true, true, true]);
  assert.throws(() => new BoundedIdSet(0), RangeError);
});

Deno.test("invalid arguments reject with a TypeError", async () => {
  const session = scripted([]);
  await assert.rejects(driveManagedAgentSession(session, ""), TypeError);
  await assert.rejects(driveManagedAgentSession({} as never, "sesn_1"), TypeError);
  await assert.rejects(
    driveManagedAgentSession(session, "sesn_1", {}, { maxReconnects: -1 }),
    TypeError,
  );
  assert.ok(new ManagedAgentDriverError("fatal", "x") instanceof Error);
});
