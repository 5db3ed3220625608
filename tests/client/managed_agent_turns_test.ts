/**
 * Managed-agents runs beyond the basics: text deltas (`deltas: true` asks for
 * `event_deltas[]=agent.message`; `message.delta` events spell each `message.completed`) and
 * cancellation (after an interrupt the turn's end is `run.cancelled`, on the stream and by
 * `getRun`).
 */
import assert from "node:assert/strict";
import {
  ProviderManagedAgentClient,
  type RunStreamEvent,
  type RunStreamOptions,
} from "../../client/mod.ts";
import { FakeProvider } from "../support/fake_provider.ts";

interface Setup {
  fake: FakeProvider;
  client: ProviderManagedAgentClient;
}

async function withFake(fn: (setup: Setup) => Promise<void>): Promise<void> {
  const fake = await FakeProvider.start();
  try {
    const admin = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey: fake.apiKey });
    const agent = await admin.createAgent({ name: "worker", model: "model-a" });
    const env = await admin.createEnvironment({ name: "env" });
    const client = new ProviderManagedAgentClient({
      baseUrl: fake.baseUrl,
      apiKey: fake.apiKey,
      agentId: agent.id,
      environmentId: env.id,
    });
    await fn({ fake, client });
  } finally {
    await fake.close();
  }
}

function text(t: string) {
  return { type: "agent.message", content: [{ type: "text", text: t }] };
}

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
