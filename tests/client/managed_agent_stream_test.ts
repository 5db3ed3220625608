/**
 * `mapManagedAgentStreamEvent`: the spec's mapping rules, and the session status to run state
 * mapping documented in docs/library.md (run states).
 */
import assert from "node:assert/strict";
import {
  isTerminalRunStreamEvent,
  mapManagedAgentEventObject,
  mapManagedAgentStreamEvent,
  numericUsage,
  type RunStreamEvent,
  sessionStatusToRunState,
} from "../../client/mod.ts";

const RUN = "sesn_1";

function map(event: Record<string, unknown>, withEventLine = true): RunStreamEvent | null {
  return mapManagedAgentStreamEvent(
    { event: withEventLine ? String(event.type) : undefined, data: JSON.stringify(event) },
    RUN,
  );
}

Deno.test("rule 1: running, thinking, spans, thread events and echoes are skipped", () => {
  for (
    const type of [
      "session.status_running",
      "status_running",
      "session.status_rescheduled",
      "agent.thinking",
      "span.model_request_start",
      "span.model_request_end",
      "span.outcome_evaluation_start",
      "span.outcome_evaluation_end",
      "session.thread_created",
      "session.thread_status_idle",
      "session.thread_status_terminated",
      "agent.thread_message_sent",
      "agent.thread_message_received",
      "user.message",
      "user.interrupt",
      "user.tool_confirmation",
      "user.custom_tool_result",
      "user.define_outcome",
      "session.usage",
      "session.updated",
      "session.error",
      "workflow_run.created",
      "some.future_type",
    ]
  ) {
    assert.equal(map({ type, content: [{ type: "text", text: "x" }] }), null, type);
  }
});

Deno.test("rule 2: lifecycle and terminal events in dotted and stripped forms", () => {
  for (const prefix of ["session.", ""]) {
    assert.deepEqual(map({ type: `${prefix}status_idle`, stop_reason: { type: "end_turn" } }), {
      type: "run.completed",
      runId: RUN,
      stopReason: "end_turn",
    });
    assert.deepEqual(
      map({
        type: `${prefix}status_idle`,
        stop_reason: { type: "requires_action", event_ids: ["e"] },
      }),
      { type: "run.status", runId: RUN, state: "requires_action" },
    );
    assert.deepEqual(map({ type: `${prefix}status_terminated` }), {
      type: "run.failed",
      runId: RUN,
      error: { type: "session_terminated", message: "The session terminated" },
    });
    assert.deepEqual(map({ type: `${prefix}deleted` }), {
      type: "run.failed",
      runId: RUN,
      error: { type: "session_deleted", message: "The session was deleted" },
    });
  }
  // An idle without a stop reason still ends the run.
  assert.deepEqual(map({ type: "session.status_idle" }), { type: "run.completed", runId: RUN });
  // The stream's own error frame ends the run.
  assert.deepEqual(map({ type: "error", error: { type: "overloaded_error", message: "busy" } }), {
    type: "run.failed",
    runId: RUN,
    error: { type: "overloaded_error", message: "busy" },
  });
});

Deno.test("rule 3: text and tool cases match the dotted form only", () => {
  const content = [{ type: "text", text: "Hi " }, { type: "text", text: "there" }];
  assert.deepEqual(map({ type: "agent.message", content }), {
    type: "message.completed",
    runId: RUN,
    text: "Hi there",
  });
  assert.equal(map({ type: "message", content }), null, "a bare message could be an echo");
  assert.deepEqual(
    map({
      type: "agent.tool_use",
      id: "sevt_2",
      name: "bash",
      input: { c: 1 },
      evaluated_permission: "ask",
    }),
    {
      type: "tool.call",
      runId: RUN,
      id: "sevt_2",
      name: "bash",
      input: { c: 1 },
      needsConfirmation: true,
    },
  );
  assert.deepEqual(
    map({
      type: "agent.mcp_tool_use",
      id: "sevt_3",
      name: "q",
      input: {},
      evaluated_permission: "allow",
    }),
    { type: "tool.call", runId: RUN, id: "sevt_3", name: "q", input: {}, needsConfirmation: false },
  );
  assert.deepEqual(
    map({ type: "agent.custom_tool_use", id: "sevt_4", name: "lookup", input: {} }),
    {
      type: "tool.call",
      runId: RUN,
      id: "sevt_4",
      name: "lookup",
      input: {},
      needsConfirmation: false,
    },
  );
  assert.deepEqual(map({ type: "agent.tool_result", tool_use_id: "sevt_2", is_error: true }), {
    type: "tool.result",
    runId: RUN,
    id: "sevt_2",
    isError: true,
  });
  assert.deepEqual(map({ type: "agent.mcp_tool_result", mcp_tool_use_id: "sevt_3" }), {
    type: "tool.result",
    runId: RUN,
    id: "sevt_3",
    isError: false,
  });
  for (const type of ["tool_use", "custom_tool_use", "tool_result"]) {
    assert.equal(map({ type, id: "x", name: "n" }), null, type);
  }
});

Deno.test("rule 4: the run id is the session id; frames without an event line map the same", () => {
  const idle = { type: "session.status_idle", stop_reason: { type: "end_turn" } };
  assert.deepEqual(map(idle, false), map(idle, true));
  assert.equal(map(idle)?.runId, RUN);
  assert.equal(
    mapManagedAgentStreamEvent({ data: '{"type":"agent.message"}' }, "sesn_9")?.runId,
    "sesn_9",
  );
});

Deno.test("opt-in text deltas become message.delta", () => {
  assert.deepEqual(
    map({
      type: "event_delta",
      event_id: "e",
      delta: { type: "content_delta", content: { type: "text", text: "He" } },
    }),
    { type: "message.delta", runId: RUN, text: "He" },
  );
  assert.equal(map({ type: "event_delta", delta: {} }), null);
  assert.equal(map({ type: "event_start", event: { type: "agent.message", id: "e" } }), null);
});

Deno.test("empty, broken and untyped frames map to null", () => {
  assert.equal(mapManagedAgentStreamEvent({ data: "" }, RUN), null);
  assert.equal(mapManagedAgentStreamEvent({ data: "{oops" }, RUN), null);
  assert.equal(mapManagedAgentStreamEvent({ data: "{}" }, RUN), null);
  assert.equal(mapManagedAgentEventObject("agent.message", RUN), null);
  assert.equal(mapManagedAgentEventObject({ type: 1 }, RUN), null);
});

Deno.test("terminal run events are exactly completed, failed and cancelled", () => {
  const terminal = [
    map({ type: "session.status_idle" }),
    map({ type: "status_terminated" }),
  ];
  for (const event of terminal) assert.equal(isTerminalRunStreamEvent(event!), true);
  const open = [
    map({ type: "agent.message", content: [] }),
    map({ type: "session.status_idle", stop_reason: { type: "requires_action" } }),
    map({ type: "agent.tool_use", id: "x", name: "y" }),
  ];
  for (const event of open) assert.equal(isTerminalRunStreamEvent(event!), false);
});

Deno.test("session status maps to a run state as docs/library.md says", () => {
  assert.equal(sessionStatusToRunState({ status: "running" }), "running");
  assert.equal(sessionStatusToRunState({ status: "rescheduling" }), "running");
  assert.equal(
    sessionStatusToRunState({ status: "idle", stopReason: "requires_action" }),
    "requires_action",
  );
  assert.equal(sessionStatusToRunState({ status: "idle", stopReason: "end_turn" }), "completed");
  assert.equal(sessionStatusToRunState({ status: "idle", interrupted: true }), "cancelled");
  assert.equal(sessionStatusToRunState({ status: "idle", pending: true }), "queued");
  assert.equal(sessionStatusToRunState({ status: "terminated" }), "failed");
  assert.equal(sessionStatusToRunState({ status: "terminated", interrupted: true }), "cancelled");
});

Deno.test("numericUsage keeps only the numeric counters", () => {
  assert.deepEqual(
    numericUsage({ input_tokens: 5, output_tokens: 7, cache_creation: { a: 1 }, list_cost: null }),
    { input_tokens: 5, output_tokens: 7 },
  );
  assert.equal(numericUsage({ nested: {} }), undefined);
  assert.equal(numericUsage(null), undefined);
});

Deno.test("the parse shortcut only skips frames that certainly map to nothing", async () => {
  const { isMappedEventType, skippableFrameType } = await import(
    "../../client/managed_agents/_peek.ts"
  );
  const rich = {
    id: "sevt_1",
    name: "bash",
    input: {},
    content: [{ type: "text", text: "x" }],
    stop_reason: { type: "end_turn" },
    error: { message: "m" },
    delta: { type: "content_delta", content: { type: "text", text: "d" } },
    tool_use_id: "t",
  };
  const types = [
    "agent.message",
    "agent.tool_use",
    "agent.mcp_tool_use",
    "agent.custom_tool_use",
    "agent.tool_result",
    "agent.mcp_tool_result",
    "event_delta",
    "error",
    "session.error",
    "session.status_idle",
    "status_idle",
    "session.status_terminated",
    "status_terminated",
    "session.deleted",
    "deleted",
    "session.status_running",
    "status_running",
    "agent.thinking",
    "span.model_request_end",
    "user.message",
    "session.usage",
    "message",
    "tool_use",
    "workflow_run.error",
    "x.future",
  ];
  for (const type of types) {
    assert.equal(
      isMappedEventType(type),
      mapManagedAgentEventObject({ type, ...rich }, RUN) !== null,
      type,
    );
  }
  assert.equal(skippableFrameType('{"type":"agent.thinking","id":"s"}'), "agent.thinking");
  assert.equal(skippableFrameType('{"type":"agent.message","id":"s"}'), undefined);
  assert.equal(skippableFrameType('{"type":"session.usage","usage":{}}'), undefined);
  assert.equal(skippableFrameType('{"type":"session.error","error":{}}'), undefined);
  // A later "type" key (JSON.parse keeps the last one) or any escape forces a full parse.
  const sneaky = '{"type":"agent.thinking","type":"agent.message","content":[]}';
  assert.equal(skippableFrameType(sneaky), undefined);
  assert.equal(mapManagedAgentStreamEvent({ data: sneaky }, RUN)?.type, "message.completed");
  const escaped = '{"type":"agent.thinking","\\u0074ype":"agent.message","content":[]}';
  assert.equal(skippableFrameType(escaped), undefined);
  assert.equal(mapManagedAgentStreamEvent({ data: escaped }, RUN)?.type, "message.completed");
  assert.equal(skippableFrameType('{ "type": "agent.thinking" }'), undefined);
});
