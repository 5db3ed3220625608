/**
 * The run contract of `ProviderManagedAgentClient` against the fake provider: `startRun`,
 * `getRun`, `cancelRun`, `streamRun` (stream opened before the kickoff, abort, timeouts, drops,
 * unknown events) and `streamSession`; text deltas (`deltas: true` asks for
 * `event_deltas[]=agent.message`, and `message.delta` events spell each `message.completed`) and
 * cancellation (after an interrupt the turn's end is `run.cancelled`, on the stream and by
 * `getRun`).
 */
import assert from "node:assert/strict";
import {
  ProviderAbortError,
  ProviderConnectionError,
  ProviderManagedAgentClient,
  type ProviderManagedAgentClientOptions,
  ProviderTimeoutError,
  type ProviderTrace,
  ProviderUnsupportedError,
  type RunStreamEvent,
  type RunStreamOptions,
} from "../../client/mod.ts";
import type { FakeStep } from "../support/fake_managed_agents.ts";
import { FakeProvider } from "../support/fake_provider.ts";

interface Setup {
  fake: FakeProvider;
  client: ProviderManagedAgentClient;
  agentId: string;
  environmentId: string;
}

async function withFake(
  fn: (setup: Setup) => Promise<void>,
  options: Partial<ProviderManagedAgentClientOptions> = {},
): Promise<void> {
  const fake = await FakeProvider.start();
  try {
    const admin = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey: fake.apiKey });
    const agent = await admin.createAgent({ name: "worker", model: "model-a", system: "Be kind" });
    const env = await admin.createEnvironment({ name: "env" });
    const client = new ProviderManagedAgentClient({
      baseUrl: fake.baseUrl,
      apiKey: fake.apiKey,
      agentId: agent.id,
      environmentId: env.id,
      ...options,
    });
    await fn({ fake, client, agentId: agent.id, environmentId: env.id });
  } finally {
    await fake.close();
  }
}

function text(t: string) {
  return { type: "agent.message", content: [{ type: "text", text: t }] };
}

async function until(condition: () => boolean, what: string, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("streamRun opens the stream before the kickoff, so no event is lost", async () => {
  await withFake(async ({ fake, client }) => {
    // The fake emits the whole turn synchronously while handling the kickoff, before its answer.
    fake.managedAgents!.script = () => Array.from({ length: 200 }, (_, i) => text(`part ${i}`));
    const events: RunStreamEvent[] = [];
    const result = await client.streamRun({ input: "go" }, { onEvent: (e) => void events.push(e) });
    assert.equal(events[0].type, "run.started");
    const texts = events.filter((e) => e.type === "message.completed").map((e) =>
      e.type === "message.completed" ? e.text : ""
    );
    assert.deepEqual(texts, Array.from({ length: 200 }, (_, i) => `part ${i}`));
    assert.deepEqual(result.terminal, {
      type: "run.completed",
      runId: result.runId,
      stopReason: "end_turn",
    });
    assert.ok(events.every((e) => e.runId === result.runId));
    const order = fake.requests.map((r) => `${r.method} ${r.path.replace(/sesn_\w+/, "S")}`);
    assert.deepEqual(order.slice(-3), [
      "POST /v1/sessions",
      "GET /v1/sessions/S/events/stream",
      "POST /v1/sessions/S/events",
    ]);
    await until(() => fake.openStreams === 0, "the stream to be released after the terminal event");
  });
});

Deno.test("streamRun uses per-run metadata overrides and does not apply model or instructions", async () => {
  await withFake(async ({ fake, client, agentId }) => {
    const admin = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey: fake.apiKey });
    const other = await admin.createAgent({ name: "other", model: "model-b" });
    await admin.updateAgent(other.id, { system: "v2" });
    const env2 = await admin.createEnvironment({ name: "env2" });
    const vault = await admin.createVault({ displayName: "v" });
    const result = await client.streamRun({
      input: [{ role: "user", content: "first" }, {
        role: "user",
        content: [{ type: "text", text: "second" }],
      }],
      model: "ignored-model",
      instructions: "ignored instructions",
      metadata: {
        agent_id: other.id,
        environment_id: env2.id,
        agent_version: 1,
        resources: [{ type: "file", file_id: "file_1" }],
        vault_ids: [vault.id],
      },
    }, {});
    const create = fake.requests.find((r) => r.method === "POST" && r.path === "/v1/sessions");
    assert.deepEqual(create?.body, {
      agent: { type: "agent", id: other.id, version: 1 },
      environment_id: env2.id,
      resources: [{ type: "file", file_id: "file_1" }],
      vault_ids: [vault.id],
    });
    const kickoff = fake.requests.find((r) => r.method === "POST" && r.path.endsWith("/events"));
    assert.deepEqual(kickoff?.body, {
      events: [
        { type: "user.message", content: [{ type: "text", text: "first" }] },
        { type: "user.message", content: [{ type: "text", text: "second" }] },
      ],
    });
    const session = await client.getSession(result.runId!);
    assert.equal((session.agent as { version: number }).version, 1);
    assert.notEqual((session.agent as { id: string }).id, agentId);
    assert.equal(JSON.stringify(fake.requests).includes("ignored"), false);
  });
});

Deno.test("a run without an agent or environment, or with assistant input, fails before any request", async () => {
  await withFake(async ({ fake }) => {
    const bare = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey: fake.apiKey });
    const before = fake.requests.length;
    await assert.rejects(bare.startRun({ input: "x" }), /No agent/);
    await assert.rejects(
      bare.startRun({ input: "x", metadata: { agent_id: "agent_1" } }),
      /No environment/,
    );
    await assert.rejects(
      bare.streamRun({
        input: [{ role: "assistant", content: "x" }],
        metadata: { agent_id: "a", environment_id: "e" },
      }, {}),
      TypeError,
    );
    await assert.rejects(
      bare.startRun({
        input: "x",
        metadata: { agent_id: "a", environment_id: "e", agent_version: 0 },
      }),
      TypeError,
    );
    assert.equal(fake.requests.length, before);
  });
});

Deno.test("startRun returns the session id as started; getRun follows the session", async () => {
  await withFake(async ({ fake, client }) => {
    fake.managedAgents!.script = () => [text("thinking"), { delayMs: 150 }, text("done")];
    const started = await client.startRun({ input: "go" });
    assert.equal(started.status, "started");
    assert.ok(started.runId.startsWith("sesn_"));
    assert.equal((await client.getRun(started.runId)).status, "running");
    await until(
      () => fake.managedAgents!.sessions.get(started.runId)!.record.status === "idle",
      "idle",
    );
    const done = await client.getRun(started.runId);
    assert.equal(done.status, "completed");
    assert.equal(done.stopReason, "end_turn");
    assert.deepEqual(done.usage, { input_tokens: 0, output_tokens: 0 });
  });
});

Deno.test("getRun maps a fresh session to queued, requires_action, and terminated to failed", async () => {
  await withFake(async ({ fake, client, agentId, environmentId }) => {
    const fresh = await client.createSession({ agentId, environmentId });
    assert.equal((await client.getRun(fresh.id)).status, "queued");

    fake.managedAgents!.script = () => [
      {
        type: "agent.tool_use",
        name: "bash",
        input: { command: "rm -rf /" },
        evaluated_permission: "ask",
      },
    ];
    const waiting = await client.startRun({ input: "clean up" });
    const status = await client.getRun(waiting.runId);
    assert.equal(status.status, "requires_action");
    assert.equal(status.stopReason, "requires_action");

    fake.managedAgents!.script = () => [{ type: "session.status_terminated" }];
    const broken = await client.startRun({ input: "crash" });
    assert.equal((await client.getRun(broken.runId)).status, "failed");
  });
});

Deno.test("cancelRun interrupts; the run reads cancelled and the session stays reusable", async () => {
  await withFake(async ({ fake, client }) => {
    fake.managedAgents!.script = () => [text("working"), { delayMs: 60_000 }, text("never")];
    const run = await client.startRun({ input: "long job" });
    assert.equal((await client.getRun(run.runId)).status, "running");
    assert.deepEqual(await client.cancelRun(run.runId), { runId: run.runId, status: "cancelled" });
    assert.equal((await client.getRun(run.runId)).status, "cancelled");
    const sent = fake.requests.filter((r) => r.method === "POST" && r.path.endsWith("/events")).at(
      -1,
    );
    assert.deepEqual(sent?.body, { events: [{ type: "user.interrupt" }] });

    fake.managedAgents!.script = ({ text }) => [
      { type: "agent.message", content: [{ type: "text", text: `again: ${text}` }] },
    ];
    // Reuse: a new message on the same session completes normally.
    await client.sendMessage(run.runId, "second turn");
    assert.equal((await client.getRun(run.runId)).status, "completed");
    const history = await client.listEvents(run.runId, { types: ["agent.message"] });
    assert.equal(
      (history.at(-1)?.content as { text: string }[])[0].text,
      "again: second turn",
    );
  });
});

Deno.test("aborting streamRun stops the stream, releases the connection and rejects with ProviderAbortError", async () => {
  await withFake(async ({ fake, client }) => {
    fake.managedAgents!.script = () => [text("first"), { delayMs: 60_000 }, text("never")];
    const controller = new AbortController();
    const seen: string[] = [];
    const error = await client.streamRun({ input: "go" }, {
      onEvent(event) {
        seen.push(event.type);
        if (event.type === "message.completed") controller.abort("enough");
      },
    }, { signal: controller.signal }).catch((e) => e);
    assert.ok(error instanceof ProviderAbortError, String(error));
    assert.equal(error.cause, "enough");
    assert.deepEqual(seen, ["run.started", "message.completed"]);
    await until(() => fake.openStreams === 0, "the server to see the stream closed");
  });
});

Deno.test("a stream slower than defaultTimeoutMs with a prompt first byte is not cut", async () => {
  await withFake(async ({ fake, client }) => {
    fake.managedAgents!.script =
      () => [text("a"), { delayMs: 200 }, text("b"), { delayMs: 200 }, text("c")];
    const texts: string[] = [];
    const result = await client.streamRun({ input: "slow" }, {
      onEvent: (e) => void (e.type === "message.completed" && texts.push(e.text)),
    });
    assert.deepEqual(texts, ["a", "b", "c"]);
    assert.equal(result.terminal?.type, "run.completed");
  }, { defaultTimeoutMs: 80 });
});

Deno.test("a first byte later than streamTimeoutMs is a ProviderTimeoutError, retried like a request", async () => {
  await withFake(async ({ fake, client, agentId, environmentId }) => {
    const session = await client.createSession({ agentId, environmentId });
    fake.delayNextStream({ ms: 1_000 });
    const traces: ProviderTrace[] = [];
    const traced = new ProviderManagedAgentClient({
      baseUrl: fake.baseUrl,
      apiKey: fake.apiKey,
      streamTimeoutMs: 60,
      onTrace: (t) => traces.push(t),
    });
    const stream = await traced.openEventStream(session.id);
    await stream.cancel();
    assert.deepEqual(traces.map((t) => [t.attempt, t.status, t.error]), [
      [0, undefined, "providerTimeout"],
      [1, 200, undefined],
    ]);

    fake.delayNextStream({ ms: 1_000, times: 3 });
    const error = await traced.streamSession(session.id, {}).catch((e) => e);
    assert.ok(error instanceof ProviderTimeoutError, String(error));
    assert.equal(error.timeoutMs, 60);
  });
});

Deno.test("a stream dropped mid-frame is a ProviderConnectionError after the whole frames, never retried", async () => {
  await withFake(async ({ fake, client, agentId, environmentId }) => {
    const session = await client.createSession({ agentId, environmentId });
    fake.managedAgents!.script = () => [text("one"), text("two"), { delayMs: 60_000 }];
    // Frames: the echoed user.message, status_running, "one", then half of "two".
    fake.dropNextStream({ afterFrames: 3 });
    const events: RunStreamEvent[] = [];
    const pending = client.streamSession(session.id, { onEvent: (e) => void events.push(e) });
    await until(() => fake.openStreams === 1, "the stream to open");
    await client.sendMessage(session.id, "go");
    const error = await pending.catch((e) => e);
    assert.ok(error instanceof ProviderConnectionError, String(error));
    assert.deepEqual(events.map((e) => e.type === "message.completed" ? e.text : e.type), ["one"]);
    assert.equal(fake.requests.filter((r) => r.path.endsWith("/stream")).length, 1, "no retry");
  });
});

Deno.test("unknown event types on the stream are skipped without breaking the run", async () => {
  await withFake(async ({ fake, client }) => {
    fake.injectUnknownEvents = true;
    fake.managedAgents!.script = () => [
      { type: "brand_new.event", payload: { x: 1 } },
      text("still fine"),
    ];
    const events: RunStreamEvent[] = [];
    const result = await client.streamRun({ input: "go" }, { onEvent: (e) => void events.push(e) });
    assert.deepEqual(events.map((e) => e.type), [
      "run.started",
      "message.completed",
      "run.completed",
    ]);
    assert.equal(result.terminal?.type, "run.completed");
    const history = await client.listEvents(result.runId!);
    assert.ok(history.some((e) => e.type === "unknown.future_event"));
  });
});

Deno.test("a termination after a session error fails the run with that error; usage rides on completion", async () => {
  await withFake(async ({ fake, client }) => {
    fake.managedAgents!.script = () => [
      {
        type: "session.error",
        error: {
          type: "model_overloaded_error",
          message: "Model overloaded",
          retry_status: { type: "terminal" },
        },
      },
      { type: "session.status_terminated" },
    ];
    const failed = await client.streamRun({ input: "go" }, {});
    assert.deepEqual(failed.terminal, {
      type: "run.failed",
      runId: failed.runId,
      error: { type: "model_overloaded_error", message: "Model overloaded" },
    });

    fake.managedAgents!.script = () => [
      text("ok"),
      { type: "session.usage", usage: { input_tokens: 12, output_tokens: 34, cache_creation: {} } },
    ];
    const done = await client.streamRun({ input: "go" }, {});
    assert.deepEqual(done.terminal, {
      type: "run.completed",
      runId: done.runId,
      stopReason: "end_turn",
      usage: { input_tokens: 12, output_tokens: 34 },
    });
  });
});

Deno.test("a turn's end carries the counters of the latest usage event that has any", async () => {
  await withFake(async ({ fake, client }) => {
    // More usage events than a mapper keeps unread, then one without counters: the run loop
    // defers their parse and must still find the newest that has counters.
    const usage = (n: number) => ({
      type: "session.usage",
      usage: { input_tokens: n, output_tokens: 2 * n },
    });
    /** The usage a run's end carries after `count` numbered usage events and then `tail`. */
    const endUsage = async (count: number, tail: FakeStep[] = []) => {
      fake.managedAgents!.script = () =>
        [
          ...Array.from({ length: count }, (_, i) => usage(i + 1)),
          ...tail,
        ] as never;
      const { terminal } = await client.streamRun({ input: "go" }, {});
      assert.equal(terminal?.type, "run.completed");
      return terminal?.type === "run.completed" ? terminal.usage : undefined;
    };
    assert.deepEqual(
      await endUsage(40, [text("ok"), { type: "session.usage", usage: { cache_creation: {} } }]),
      { input_tokens: 40, output_tokens: 80 },
    );
    assert.deepEqual(await endUsage(17), { input_tokens: 17, output_tokens: 34 });
  });
});

Deno.test("a confirmation answered from the handler lets the run go on to completion", async () => {
  await withFake(async ({ fake, client }) => {
    fake.managedAgents!.script = () => [
      {
        type: "agent.tool_use",
        name: "bash",
        input: { command: "ls" },
        evaluated_permission: "ask",
      },
    ];
    const events: RunStreamEvent[] = [];
    const result = await client.streamRun({ input: "list files" }, {
      async onEvent(event) {
        events.push(event);
        if (event.type === "tool.call" && event.needsConfirmation) {
          await client.confirmTool(event.runId, { toolUseId: event.id, result: "allow" });
        }
      },
    });
    assert.deepEqual(events.map((e) => e.type), [
      "run.started",
      "tool.call",
      "run.status",
      "tool.result",
      "message.completed",
      "run.completed",
    ]);
    assert.equal(result.terminal?.type, "run.completed");
  });
});

Deno.test("a 429 on session creation is retried after retry-after-ms", async () => {
  await withFake(async ({ fake, client }) => {
    fake.failNext({
      method: "POST",
      path: "/v1/sessions",
      status: 429,
      headers: { "retry-after-ms": "20" },
    });
    const result = await client.streamRun({ input: "go" }, {});
    assert.equal(result.terminal?.type, "run.completed");
    assert.equal(
      fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/sessions").length,
      2,
    );
  });
});

Deno.test("a failed kickoff releases the open stream and surfaces the error", async () => {
  await withFake(async ({ fake, client }) => {
    fake.failNext({ method: "POST", path: /\/events$/, status: 400, message: "Bad kickoff" });
    const error = await client.streamRun({ input: "go" }, {}).catch((e) => e);
    assert.equal(error.message, "Bad kickoff");
    assert.equal(error.status, 400);
    await until(() => fake.openStreams === 0, "the stream to close");
  });
});

Deno.test("streamSession follows an existing session to its terminal event", async () => {
  await withFake(async ({ fake, client }) => {
    fake.managedAgents!.script = () => [{ delayMs: 100 }, text("late answer")];
    const run = await client.startRun({ input: "go" });
    const events: RunStreamEvent[] = [];
    const result = await client.streamSession(run.runId, { onEvent: (e) => void events.push(e) });
    assert.deepEqual(events.map((e) => e.type), ["message.completed", "run.completed"]);
    assert.equal(result.runId, run.runId);
  });
});

Deno.test("batches are unsupported with a clear error; capabilities are runs and streaming", async () => {
  await withFake(async ({ client }) => {
    await assert.rejects(client.submitBatch([]), ProviderUnsupportedError);
    await assert.rejects(client.getBatch("b"), ProviderUnsupportedError);
    await assert.rejects(
      client.cancelBatch("b"),
      /cancelBatch is not supported: managed-agent sessions have no batch API/,
    );
    assert.throws(() => client.getBatchResults("b"), ProviderUnsupportedError);
    const capabilities = client.getRuntimeCapabilities();
    assert.equal(capabilities.runs, true);
    assert.equal(capabilities.streaming, true);
    assert.equal(capabilities.batch, false);
    assert.equal(capabilities.teams, false);
    assert.equal(Object.keys(capabilities).length, 11);
    assert.ok(Object.isFrozen(capabilities));
  });
});

async function streamRun(
  client: ProviderManagedAgentClient,
  options: RunStreamOptions = {},
  onEvent?: (event: RunStreamEvent) => void | Promise<void>,
): Promise<{ events: RunStreamEvent[]; terminal: RunStreamEvent | null; runId: string | null }> {
  const events: RunStreamEvent[] = [];
  const result = await client.streamRun({ input: "go" }, {
    async onEvent(event) {
      events.push(event);
      await onEvent?.(event);
    },
  }, options);
  return { events, ...result };
}

/** A client whose fetch serves one recorded session stream and one history page. */
function recordedClient(frames: object[], history: object[]): {
  client: ProviderManagedAgentClient;
  paths: string[];
} {
  const paths: string[] = [];
  const body = frames.map((f) =>
    `event: ${(f as { type: string }).type}\ndata: ${JSON.stringify(f)}\n\n`
  )
    .join("");
  const client = new ProviderManagedAgentClient({
    baseUrl: "https://provider.test",
    apiKey: "k",
    fetchImpl: (input) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      paths.push(url.pathname + url.search);
      if (url.pathname.endsWith("/events/stream")) {
        return Promise.resolve(
          new Response(body, { headers: { "content-type": "text/event-stream" } }),
        );
      }
      return Promise.resolve(Response.json({ data: history, next_page: null }));
    },
  });
  return { client, paths };
}

function deltasBefore(events: RunStreamEvent[]): { deltas: string; completed: string }[] {
  const out: { deltas: string; completed: string }[] = [];
  let deltas = "";
  for (const event of events) {
    if (event.type === "message.delta") deltas += event.text;
    if (event.type === "message.completed") {
      out.push({ deltas, completed: event.text });
      deltas = "";
    }
  }
  return out;
}

Deno.test("deltas: true asks for agent.message deltas; message.delta events spell each message", async () => {
  await withFake(async ({ fake, client }) => {
    fake.managedAgents!.script = () => [text("Hello, world"), text("second message")];
    const { events, terminal } = await streamRun(client, { deltas: true });
    const stream = fake.requests.find((r) => r.path.endsWith("/events/stream"));
    assert.equal(decodeURIComponent(stream!.query), "event_deltas[]=agent.message");
    assert.deepEqual(deltasBefore(events), [
      { deltas: "Hello, world", completed: "Hello, world" },
      { deltas: "second message", completed: "second message" },
    ]);
    // The fake previews in 4-character deltas: they arrive one by one, before the completion.
    const first = events.findIndex((e) => e.type === "message.completed");
    assert.deepEqual(
      events.slice(1, first).map((e) => e.type === "message.delta" && e.text),
      ["Hell", "o, w", "orld"],
    );
    assert.equal(terminal?.type, "run.completed");
  });
});

Deno.test("without deltas the stream asks for none and emits no message.delta", async () => {
  await withFake(async ({ fake, client }) => {
    fake.managedAgents!.script = () => [text("Hello")];
    const { events } = await streamRun(client);
    const stream = fake.requests.find((r) => r.path.endsWith("/events/stream"));
    assert.equal(stream!.query, "");
    assert.deepEqual(events.map((e) => e.type), [
      "run.started",
      "message.completed",
      "run.completed",
    ]);
  });
});

Deno.test("the final event replaces its preview: deltas add only what the preview missed", async () => {
  const preview = (id: string, ...parts: string[]) => [
    { type: "event_start", event: { type: "agent.message", id } },
    ...parts.map((t) => ({
      type: "event_delta",
      event_id: id,
      delta: { type: "content_delta", content: { type: "text", text: t } },
    })),
  ];
  const final = (id: string, t: string) => ({ ...text(t), id });
  const { client, paths } = recordedClient([
    // The preview streamed part of the text; the final event carries all of it.
    ...preview("sevt_a", "The ans"),
    final("sevt_a", "The answer."),
    // No preview at all: the whole text comes as one delta.
    final("sevt_b", "Plain."),
    // A preview that a model request ended early: no final event, and nothing leaks later.
    ...preview("sevt_c", "abandoned"),
    { type: "span.model_request_end", id: "sevt_d", is_error: true },
    ...preview("sevt_e", "Fin", "al"),
    final("sevt_e", "Final"),
    { type: "session.status_idle", id: "sevt_f", stop_reason: { type: "end_turn" } },
  ], []);
  const events: RunStreamEvent[] = [];
  const result = await client.streamSession("sesn_1", { onEvent: (e) => void events.push(e) }, {
    deltas: true,
  });
  assert.deepEqual(deltasBefore(events), [
    { deltas: "The answer.", completed: "The answer." },
    { deltas: "Plain.", completed: "Plain." },
    { deltas: "abandonedFinal", completed: "Final" },
  ]);
  assert.equal(result.terminal?.type, "run.completed");
  assert.ok(paths[0].includes("event_deltas"));
});

Deno.test("after cancelRun the run's end is run.cancelled on the stream and by getRun", async () => {
  await withFake(async ({ fake, client }) => {
    fake.managedAgents!.script = () => [text("working"), { delayMs: 60_000 }, text("never")];
    let cancelled = false;
    const { events, terminal, runId } = await streamRun(client, {}, async (event) => {
      if (event.type === "message.completed" && !cancelled) {
        cancelled = true;
        await client.cancelRun(event.runId);
      }
    });
    assert.deepEqual(terminal, { type: "run.cancelled", runId });
    assert.equal(events.filter((e) => e.type === "run.completed").length, 0);
    assert.equal((await client.getRun(runId!)).status, "cancelled");
  });
});

Deno.test("the next turn after a cancelled one completes normally", async () => {
  await withFake(async ({ fake, client }) => {
    fake.managedAgents!.script = () => [text("working"), { delayMs: 60_000 }, text("never")];
    const run = await client.startRun({ input: "long job" });
    await client.cancelRun(run.runId);
    fake.managedAgents!.script = () => [text("done")];
    const events: RunStreamEvent[] = [];
    const streamed = client.streamSession(run.runId, { onEvent: (e) => void events.push(e) });
    // Let the stream open before the next turn starts.
    while (fake.openStreams === 0) await new Promise((r) => setTimeout(r, 5));
    await client.sendMessage(run.runId, "again");
    const result = await streamed;
    assert.equal(result.terminal?.type, "run.completed");
    assert.equal((await client.getRun(run.runId)).status, "completed");
  });
});

Deno.test("streamSession reads an interrupt it did not see from the session's history", async () => {
  const idle = { type: "session.status_idle", id: "sevt_9", stop_reason: { type: "end_turn" } };
  const interrupted = recordedClient([idle], [
    idle,
    { type: "user.interrupt", id: "sevt_8" },
    { type: "user.message", id: "sevt_7" },
  ]);
  const a = await interrupted.client.streamSession("sesn_1", {});
  assert.deepEqual(a.terminal, { type: "run.cancelled", runId: "sesn_1" });
  assert.ok(interrupted.paths[1].includes("user.interrupt"), "the history was asked");

  const plain = recordedClient([idle], [idle, { type: "user.message", id: "sevt_7" }]);
  const b = await plain.client.streamSession("sesn_1", {});
  assert.deepEqual(b.terminal, { type: "run.completed", runId: "sesn_1", stopReason: "end_turn" });
});

Deno.test("a termination after an interrupt seen on the stream is run.cancelled, not run.failed", async () => {
  const { client } = recordedClient([
    { type: "user.message", id: "sevt_1", content: [] },
    { type: "user.interrupt", id: "sevt_2" },
    { type: "session.status_terminated", id: "sevt_3" },
  ], []);
  const result = await client.streamSession("sesn_1", {});
  assert.deepEqual(result.terminal, { type: "run.cancelled", runId: "sesn_1" });
});
