import assert from "node:assert/strict";
import {
  mapProviderStreamEvent,
  ProviderStreamState,
  readProviderRunId,
  type SseMessage,
} from "../../client/mod.ts";

const frame = (data: Record<string, unknown>, event = String(data.type)): SseMessage => ({
  event,
  data: JSON.stringify(data),
});

const START = frame({
  type: "message_start",
  message: { id: "msg_01", content: [], usage: { input_tokens: 7, output_tokens: 1 } },
});

Deno.test("frames the spec names map to null, with or without a state", () => {
  const nulls = [
    START,
    frame({ type: "ping" }),
    frame({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    frame({ type: "content_block_stop", index: 0 }),
    frame({ type: "message_delta", delta: { stop_reason: "end_turn" }, usage: {} }),
  ];
  for (const sse of nulls) assert.equal(mapProviderStreamEvent(sse, "msg_01"), null, sse.data);
  const state = new ProviderStreamState();
  for (const sse of nulls.filter((s) => !s.data.includes("content_block_stop"))) {
    assert.equal(mapProviderStreamEvent(sse, "msg_01", state), null, sse.data);
  }
});

Deno.test("text deltas, the end and errors map to run events", () => {
  assert.deepEqual(
    mapProviderStreamEvent(
      frame({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi" } }),
      "msg_01",
    ),
    { type: "message.delta", runId: "msg_01", text: "Hi" },
  );
  assert.deepEqual(mapProviderStreamEvent(frame({ type: "message_stop" }), "msg_01"), {
    type: "run.completed",
    runId: "msg_01",
  });
  assert.deepEqual(
    mapProviderStreamEvent(
      frame({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }),
      "msg_01",
    ),
    {
      type: "run.failed",
      runId: "msg_01",
      error: { type: "overloaded_error", message: "Overloaded" },
    },
  );
});

Deno.test("frames the vendor SDK drops are dropped: data-only, ping, thinking deltas", () => {
  const dataOnly: SseMessage = {
    data: JSON.stringify({ type: "message_stop" }),
  };
  assert.equal(mapProviderStreamEvent(dataOnly, "r"), null);
  assert.equal(mapProviderStreamEvent({ event: "ping", data: "not json" }, "r"), null);
  assert.equal(
    mapProviderStreamEvent(
      frame({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta" } }),
      "r",
    ),
    null,
  );
  assert.equal(mapProviderStreamEvent(frame({ type: "future_event" }), "r"), null);
});

Deno.test("a non-JSON frame fails the run instead of being skipped silently", () => {
  const event = mapProviderStreamEvent({ event: "content_block_delta", data: "{oops" }, "r");
  assert.equal(event?.type, "run.failed");
});

Deno.test("with a state: tool input is assembled at block stop, usage and stop reason kept", () => {
  const state = new ProviderStreamState();
  const events = [
    START,
    frame({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    frame({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "A" } }),
    frame({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "B" } }),
    frame({ type: "content_block_stop", index: 0 }),
    frame({
      type: "content_block_start",
      index: 1,
      content_block: { type: "tool_use", id: "toolu_9", name: "sum", input: {} },
    }),
    ...['{"a', '":[1,', "2]", "}"].map((partial_json) =>
      frame({
        type: "content_block_delta",
        index: 1,
        delta: { type: "input_json_delta", partial_json },
      })
    ),
    frame({ type: "content_block_stop", index: 1 }),
    frame({
      type: "message_delta",
      delta: { stop_reason: "tool_use" },
      usage: { output_tokens: 30, input_tokens: 7 },
    }),
    frame({ type: "message_stop" }),
  ].map((sse) => mapProviderStreamEvent(sse, "msg_01", state)).filter((e) => e !== null);
  assert.equal(state.runId, "msg_01");
  assert.deepEqual(events, [
    { type: "message.delta", runId: "msg_01", text: "A" },
    { type: "message.delta", runId: "msg_01", text: "B" },
    { type: "message.completed", runId: "msg_01", text: "AB" },
    {
      type: "tool.call",
      runId: "msg_01",
      id: "toolu_9",
      name: "sum",
      input: { a: [1, 2] },
      needsConfirmation: false,
    },
    {
      type: "run.completed",
      runId: "msg_01",
      stopReason: "tool_use",
      usage: { input_tokens: 7, output_tokens: 30 },
    },
  ]);
});

Deno.test("with a state: broken tool input JSON fails the run", () => {
  const state = new ProviderStreamState();
  mapProviderStreamEvent(
    frame({
      type: "content_block_start",
      index: 0,
      content_block: { type: "tool_use", id: "toolu_x", name: "t", input: {} },
    }),
    "r",
    state,
  );
  mapProviderStreamEvent(
    frame({
      type: "content_block_delta",
      index: 0,
      delta: { type: "input_json_delta", partial_json: '{"a":' },
    }),
    "r",
    state,
  );
  const event = mapProviderStreamEvent(frame({ type: "content_block_stop", index: 0 }), "r", state);
  assert.equal(event?.type, "run.failed");
  assert.equal(event?.type === "run.failed" && event.error.type, "invalid_tool_input");
});

Deno.test("readProviderRunId reads message_start only", () => {
  assert.equal(readProviderRunId(START), "msg_01");
  assert.equal(readProviderRunId(frame({ type: "ping" })), null);
  assert.equal(readProviderRunId(frame({ type: "message_stop" })), null);
  assert.equal(readProviderRunId({ data: START.data }), null, "data-only frames are skipped");
  assert.equal(readProviderRunId(frame({ type: "message_start", message: {} })), null);
  assert.equal(readProviderRunId({ event: "message_start", data: "{" }), null);
});
