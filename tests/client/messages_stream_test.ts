import assert from "node:assert/strict";
import {
  ProviderAbortError,
  type ProviderApiClient,
  ProviderApiError,
  ProviderConnectionError,
  type RunStreamEvent,
} from "../../client/mod.ts";
import { textStreamFrames, withMessagesFake } from "../support/fake_messages.ts";

async function collect(
  client: ProviderApiClient,
  input = "hello",
): Promise<{ events: RunStreamEvent[]; runId: string | null; terminal: RunStreamEvent | null }> {
  const events: RunStreamEvent[] = [];
  const result = await client.streamRun({ input }, { onEvent: (event) => void events.push(event) });
  return { events, ...result };
}

Deno.test("streamRun sends one POST with stream true and maps text to run events", async () => {
  await withMessagesFake(async (fake, state, client) => {
    state.scriptStream({
      frames: textStreamFrames({ id: "msg_text_1", chunks: ["Hel", "lo, ", "world"] }),
    });
    const { events, runId, terminal } = await collect(client, "greet me");
    assert.equal(runId, "msg_text_1");
    assert.deepEqual(events, [
      { type: "run.started", runId: "msg_text_1" },
      { type: "message.delta", runId: "msg_text_1", text: "Hel" },
      { type: "message.delta", runId: "msg_text_1", text: "lo, " },
      { type: "message.delta", runId: "msg_text_1", text: "world" },
      { type: "message.completed", runId: "msg_text_1", text: "Hello, world" },
      {
        type: "run.completed",
        runId: "msg_text_1",
        stopReason: "end_turn",
        usage: { input_tokens: 12, output_tokens: 42 },
      },
    ]);
    assert.deepEqual(terminal, events.at(-1));
    assert.equal(fake.requests.length, 1);
    const [request] = fake.requests;
    assert.equal(request.method, "POST");
    assert.equal(request.path, "/v1/messages");
    assert.equal(request.auth, "x-api-key");
    assert.equal(request.headers["provider-version"], "2026-10-21");
    assert.equal(request.headers["provider-beta"], undefined, "the messages API takes no beta");
    assert.deepEqual(request.body, {
      model: "model-small",
      max_tokens: 256,
      messages: [{ role: "user", content: "greet me" }],
      stream: true,
    });
  });
});

Deno.test("streamRun takes the run id from message_start, not from a guess", async () => {
  await withMessagesFake(async (_fake, state, client) => {
    const frames = textStreamFrames({ id: "msg_from_start", chunks: ["a"] });
    // The run id is only in message_start: every later frame lacks it.
    state.scriptStream({ frames });
    const { events, runId } = await collect(client);
    assert.equal(runId, "msg_from_start");
    assert.ok(events.every((event) => event.runId === "msg_from_start"));
  });
});

Deno.test("streamRun assembles tool input split across many input_json_delta frames", async () => {
  await withMessagesFake(async (_fake, state, client) => {
    const input = {
      city: "Zürich \u{1F326}",
      days: [1, 2, 3],
      nested: { quote: 'say "hi"\n', empty: {}, flag: true, none: null },
      long: "x".repeat(2_000),
    };
    const json = JSON.stringify(input);
    // One character per frame: splits land inside strings, escapes and surrogate pairs.
    const parts = Array.from(json);
    state.scriptStream({
      frames: textStreamFrames({
        id: "msg_tool_1",
        chunks: ["Checking."],
        tool: { id: "toolu_01", name: "get_weather", parts },
      }),
    });
    const { events, terminal } = await collect(client);
    const calls = events.filter((event) => event.type === "tool.call");
    assert.equal(parts.length > 2_000, true);
    assert.deepEqual(calls, [{
      type: "tool.call",
      runId: "msg_tool_1",
      id: "toolu_01",
      name: "get_weather",
      input,
      needsConfirmation: false,
    }]);
    assert.deepEqual(
      terminal && terminal.type === "run.completed" && terminal.stopReason,
      "tool_use",
    );
  });
});

Deno.test("a tool call with no input deltas has an empty object as input", async () => {
  await withMessagesFake(async (_fake, state, client) => {
    state.scriptStream({
      frames: textStreamFrames({
        id: "msg_tool_2",
        tool: { id: "toolu_2", name: "now", parts: [] },
      }),
    });
    const { events } = await collect(client);
    const call = events.find((event) => event.type === "tool.call");
    assert.deepEqual(call && call.type === "tool.call" && call.input, {});
  });
});

Deno.test("an error frame mid-stream fails the run and releases the stream", async () => {
  await withMessagesFake(async (fake, state, client) => {
    const frames = textStreamFrames({ id: "msg_err_1", chunks: ["one", "two", "three"] });
    // Cut after the second delta: error frame, then frames the client must not read.
    const cut = frames.findIndex((frame) =>
      frame.type === "content_block_delta" && (frame.delta as { text?: string }).text === "two"
    );
    state.scriptStream({
      frames: [
        ...frames.slice(0, cut + 1),
        {
          type: "error",
          error: { type: "overloaded_error", message: "Overloaded" },
        },
        ...frames.slice(cut + 1),
      ],
      hold: true,
    });
    const { events, terminal } = await collect(client);
    assert.deepEqual(events.map((event) => event.type), [
      "run.started",
      "message.delta",
      "message.delta",
      "run.failed",
    ]);
    assert.deepEqual(terminal, {
      type: "run.failed",
      runId: "msg_err_1",
      error: { type: "overloaded_error", message: "Overloaded" },
    });
    // The held stream was cancelled by the client once the run failed.
    for (let i = 0; i < 50 && fake.openStreams > 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(fake.openStreams, 0);
  });
});

Deno.test("a ping storm changes nothing in the mapped events", async () => {
  await withMessagesFake(async (_fake, state, client) => {
    const chunks = Array.from({ length: 200 }, (_, i) => `t${i} `);
    state.scriptStream({ frames: textStreamFrames({ id: "msg_calm", chunks }) });
    const calm = await collect(client);
    const stormy = textStreamFrames({ id: "msg_calm", chunks, pingEvery: 1 });
    // Ten thousand extra pings, before, between and inside the message.
    const storm = Array.from({ length: 10_000 }, () => ({ type: "ping" }));
    state.scriptStream({ frames: [...storm.slice(0, 5_000), ...stormy, ...storm.slice(5_000)] });
    const noisy = await collect(client);
    assert.deepEqual(noisy.events, calm.events);
    assert.equal(noisy.events.length, 200 + 3);
  });
});

Deno.test("aborting mid-stream rejects with ProviderAbortError and closes the stream", async () => {
  await withMessagesFake(async (fake, state, client) => {
    state.scriptStream({
      frames: textStreamFrames({ id: "msg_long", chunks: ["first"] }).slice(0, 3),
      hold: true,
    });
    const controller = new AbortController();
    const seen: string[] = [];
    await assert.rejects(
      client.streamRun({ input: "long" }, {
        onEvent(event) {
          seen.push(event.type);
          if (event.type === "message.delta") controller.abort(new Error("user left"));
        },
      }, { signal: controller.signal }),
      (error: unknown) => error instanceof ProviderAbortError,
    );
    assert.deepEqual(seen, ["run.started", "message.delta"]);
    for (let i = 0; i < 50 && fake.openStreams > 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(fake.openStreams, 0);
  });
});

Deno.test("an abort while waiting for the next frame stops the stream", async () => {
  await withMessagesFake(async (fake, state, client) => {
    state.scriptStream({
      frames: textStreamFrames({ id: "msg_wait", chunks: ["a"] }).slice(0, 2),
      hold: true,
    });
    const controller = new AbortController();
    const run = client.streamRun({ input: "wait" }, {
      onEvent(event) {
        if (event.type === "run.started") setTimeout(() => controller.abort(), 20);
      },
    }, { signal: controller.signal });
    await assert.rejects(run, ProviderAbortError);
    for (let i = 0; i < 50 && fake.openStreams > 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(fake.openStreams, 0);
  });
});

Deno.test("a stream cut mid-frame is a ProviderConnectionError", async () => {
  await withMessagesFake(async (fake, state, client) => {
    state.scriptStream({ frames: textStreamFrames({ id: "msg_cut", chunks: ["a", "b", "c"] }) });
    fake.dropNextStream({ afterBytes: 400 });
    const events: RunStreamEvent[] = [];
    await assert.rejects(
      client.streamRun({ input: "x" }, { onEvent: (event) => void events.push(event) }),
      ProviderConnectionError,
    );
    assert.ok(!events.some((event) => event.type === "run.completed"));
  });
});

Deno.test("an error status before the stream is a ProviderApiError", async () => {
  await withMessagesFake(async (fake, _state, client) => {
    fake.failNext({ path: "/v1/messages", status: 429, message: "Slow down" });
    await assert.rejects(
      client.streamRun({ input: "x" }, {}),
      (error: unknown) =>
        error instanceof ProviderApiError && error.status === 429 &&
        error.type === "rate_limit_error" && error.message === "Slow down",
    );
  });
});

Deno.test("streamRun awaits an async handler before the next event", async () => {
  await withMessagesFake(async (_fake, state, client) => {
    state.scriptStream({ frames: textStreamFrames({ id: "msg_slow", chunks: ["a", "b"] }) });
    const log: string[] = [];
    await client.streamRun({ input: "x" }, {
      async onEvent(event) {
        log.push(`start ${event.type}`);
        await new Promise((resolve) => setTimeout(resolve, 2));
        log.push(`end ${event.type}`);
      },
    });
    for (let i = 0; i < log.length; i += 2) {
      assert.equal(log[i].replace("start", "end"), log[i + 1]);
    }
  });
});

Deno.test("a handler error stops the stream and reaches the caller", async () => {
  await withMessagesFake(async (fake, state, client) => {
    state.scriptStream({ frames: textStreamFrames({ id: "msg_h", chunks: ["a"] }), hold: true });
    await assert.rejects(
      client.streamRun({ input: "x" }, {
        onEvent(event) {
          if (event.type === "message.delta") throw new RangeError("handler broke");
        },
      }),
      RangeError,
    );
    for (let i = 0; i < 50 && fake.openStreams > 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(fake.openStreams, 0);
  });
});

Deno.test("frames typed message (no event line, or event: message) are skipped in a whole stream", async () => {
  await withMessagesFake(async (_fake, state, client) => {
    const frames: (Record<string, unknown> | string)[] = textStreamFrames({
      id: "msg_untyped",
      chunks: ["a", "b"],
    });
    const stray = JSON.stringify({
      type: "content_block_delta",
      index: 0,
      delta: { type: "text_delta", text: "STRAY" },
    });
    // After content_block_start: a data-only frame and an explicit `event: message` frame.
    frames.splice(2, 0, `data: ${stray}\n\n`, `event: message\ndata: ${stray}\n\n`);
    state.scriptStream({ frames });
    const { events, terminal } = await collect(client);
    assert.deepEqual(
      events.filter((e) => e.type === "message.delta").map((e) =>
        e.type === "message.delta" && e.text
      ),
      ["a", "b"],
    );
    assert.deepEqual(events.find((e) => e.type === "message.completed"), {
      type: "message.completed",
      runId: "msg_untyped",
      text: "ab",
    });
    assert.equal(terminal?.type, "run.completed");
  });
});
