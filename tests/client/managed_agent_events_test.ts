/**
 * Parsed session events: every kind of the spec's table, unknown types kept as `other`, the
 * dotted and namespace-stripped lifecycle forms, and the helper predicates.
 */
import assert from "node:assert/strict";
import {
  isCustomToolUseEvent,
  isOutcomeEndEvent,
  isTerminalSessionEvent,
  isThreadEvent,
  type ManagedAgentSessionEvent,
  parseSessionEvent,
  parseSessionEventData,
  readSessionEvents,
  sessionEventNeedsConfirmation,
} from "../../client/mod.ts";
import { DEFERRABLE_TYPES } from "../../client/managed_agents/_deferred_event.ts";

const text = (t: string) => [{ type: "text", text: t }];

function parse(raw: Record<string, unknown>): ManagedAgentSessionEvent {
  const event = parseSessionEvent(raw);
  assert.ok(event, `parsed ${raw.type}`);
  return event;
}

/** Drops `raw` for comparison. */
function fields(event: ManagedAgentSessionEvent): Record<string, unknown> {
  const { raw: _raw, ...rest } = event;
  return rest;
}

Deno.test("every kind of the spec's table is parsed with its fields", () => {
  const cases: [Record<string, unknown>, Record<string, unknown>][] = [
    [
      {
        type: "agent.message",
        id: "sevt_1",
        processed_at: "2026-01-01T00:00:00Z",
        content: [...text("Hel"), { type: "redacted" }, ...text("lo")],
      },
      {
        kind: "message",
        type: "agent.message",
        id: "sevt_1",
        processedAt: "2026-01-01T00:00:00Z",
        text: "Hello",
      },
    ],
    [
      {
        type: "agent.tool_use",
        id: "sevt_2",
        name: "bash",
        input: { command: "ls" },
        evaluated_permission: "ask",
        session_thread_id: "sthr_2",
      },
      {
        kind: "tool_use",
        type: "agent.tool_use",
        id: "sevt_2",
        name: "bash",
        input: { command: "ls" },
        evaluatedPermission: "ask",
        source: "agent",
        sessionThreadId: "sthr_2",
      },
    ],
    [
      {
        type: "agent.mcp_tool_use",
        id: "sevt_3",
        name: "search",
        mcp_server_name: "docs",
        input: { q: "x" },
        evaluated_permission: "allow",
      },
      {
        kind: "tool_use",
        type: "agent.mcp_tool_use",
        id: "sevt_3",
        name: "search",
        input: { q: "x" },
        evaluatedPermission: "allow",
        source: "mcp",
        mcpServerName: "docs",
      },
    ],
    [
      { type: "agent.custom_tool_use", id: "sevt_4", name: "lookup", input: { k: 1 } },
      {
        kind: "custom_tool_use",
        type: "agent.custom_tool_use",
        id: "sevt_4",
        name: "lookup",
        input: { k: 1 },
      },
    ],
    [
      { type: "agent.tool_result", id: "sevt_5", tool_use_id: "sevt_2", is_error: true },
      {
        kind: "tool_result",
        type: "agent.tool_result",
        id: "sevt_5",
        isError: true,
        source: "agent",
        toolUseId: "sevt_2",
      },
    ],
    [
      { type: "agent.mcp_tool_result", mcp_tool_use_id: "sevt_3" },
      {
        kind: "tool_result",
        type: "agent.mcp_tool_result",
        isError: false,
        source: "mcp",
        toolUseId: "sevt_3",
      },
    ],
    [
      { type: "session.status_idle", stop_reason: { type: "end_turn" } },
      {
        kind: "status",
        type: "session.status_idle",
        status: "idle",
        stopReason: { type: "end_turn" },
      },
    ],
    [
      { type: "session.status_running" },
      { kind: "status", type: "session.status_running", status: "running" },
    ],
    [
      { type: "session.status_rescheduled" },
      { kind: "status", type: "session.status_rescheduled", status: "rescheduling" },
    ],
    [
      { type: "session.status_terminated" },
      { kind: "status", type: "session.status_terminated", status: "terminated" },
    ],
    [
      {
        type: "session.error",
        error: {
          type: "model_overloaded_error",
          message: "busy",
          retry_status: { type: "retrying" },
        },
      },
      {
        kind: "error",
        type: "session.error",
        message: "busy",
        errorType: "model_overloaded_error",
        retryStatus: "retrying",
      },
    ],
    [
      { type: "span.outcome_evaluation_start", outcome_id: "outc_1", iteration: 0 },
      {
        kind: "outcome_start",
        type: "span.outcome_evaluation_start",
        outcomeId: "outc_1",
        iteration: 0,
      },
    ],
    [
      { type: "span.outcome_evaluation_ongoing", outcome_id: "outc_1", iteration: 0 },
      { kind: "outcome_progress", type: "span.outcome_evaluation_ongoing", outcomeId: "outc_1" },
    ],
    [
      {
        type: "span.outcome_evaluation_end",
        outcome_id: "outc_1",
        iteration: 1,
        result: "needs_revision",
        explanation: "Tests fail",
      },
      {
        kind: "outcome_end",
        type: "span.outcome_evaluation_end",
        outcomeId: "outc_1",
        iteration: 1,
        result: "needs_revision",
        explanation: "Tests fail",
      },
    ],
    [
      { type: "session.thread_created", session_thread_id: "sthr_2", agent_name: "researcher" },
      {
        kind: "thread_created",
        type: "session.thread_created",
        threadId: "sthr_2",
        agentName: "researcher",
      },
    ],
    [
      {
        type: "session.thread_status_idle",
        session_thread_id: "sthr_2",
        agent_name: "researcher",
        stop_reason: { type: "end_turn" },
      },
      {
        kind: "thread_status",
        type: "session.thread_status_idle",
        threadId: "sthr_2",
        agentName: "researcher",
        status: "idle",
        stopReason: { type: "end_turn" },
      },
    ],
    [
      { type: "session.thread_status_terminated", session_thread_id: "sthr_2" },
      {
        kind: "thread_status",
        type: "session.thread_status_terminated",
        threadId: "sthr_2",
        status: "terminated",
      },
    ],
    [
      {
        type: "agent.thread_message_sent",
        to_session_thread_id: "sthr_3",
        to_agent_name: "writer",
        content: text("please draft"),
      },
      {
        kind: "thread_message",
        type: "agent.thread_message_sent",
        direction: "sent",
        threadId: "sthr_3",
        agentName: "writer",
        text: "please draft",
      },
    ],
    [
      {
        type: "agent.thread_message_received",
        from_session_thread_id: "sthr_3",
        from_agent_name: "writer",
        content: text("draft done"),
      },
      {
        kind: "thread_message",
        type: "agent.thread_message_received",
        direction: "received",
        threadId: "sthr_3",
        agentName: "writer",
        text: "draft done",
      },
    ],
  ];
  for (const [raw, expected] of cases) {
    const event = parse(raw);
    assert.deepEqual(fields(event), expected, String(raw.type));
    assert.equal(event.raw, raw, "raw is kept unchanged");
  }
});

Deno.test("unknown and non-agent types become kind other, never dropped", () => {
  for (
    const type of [
      "user.message",
      "user.interrupt",
      "agent.thinking",
      "span.model_request_start",
      "session.usage",
      "session.updated",
      "workflow_run.created",
      "brand_new.event_2030",
      "message",
      // Names of Object.prototype's members are types like any other, not lifecycle statuses.
      "session.constructor",
      "toString",
      "hasOwnProperty",
      "session.__proto__",
    ]
  ) {
    const event = parse({ type, id: "sevt_x", extra: 1 });
    assert.equal(event.kind, "other", type);
    assert.equal(event.type, type);
    assert.equal(event.id, "sevt_x");
  }
});

Deno.test("lifecycle events accept the namespace-stripped form", () => {
  const idle = parse({ type: "status_idle", stop_reason: { type: "end_turn" } });
  assert.equal(idle.kind, "status");
  assert.ok(idle.kind === "status" && idle.status === "idle");
  assert.equal(isTerminalSessionEvent(idle), true);
  assert.equal(isTerminalSessionEvent(parse({ type: "status_terminated" })), true);
  assert.equal(parse({ type: "error", error: { message: "x" } }).kind, "error");
  assert.equal(
    parse({ type: "thread_created", session_thread_id: "sthr_9" }).kind,
    "thread_created",
  );
  // Text and tools: dotted only.
  assert.equal(parse({ type: "message", content: text("echo") }).kind, "other");
  assert.equal(parse({ type: "tool_use", id: "s", name: "bash" }).kind, "other");
});

Deno.test("parseSessionEvent returns null only for values that are not typed objects", () => {
  for (const value of [null, undefined, 42, "agent.message", [], {}, { type: 3 }]) {
    assert.equal(parseSessionEvent(value), null);
  }
});

Deno.test("parseSessionEventData reads the kind from data.type, with or without an event line", () => {
  const data = JSON.stringify({ type: "agent.message", content: text("hi") });
  assert.equal(parseSessionEventData({ data })?.kind, "message");
  assert.equal(parseSessionEventData({ event: "misleading", data })?.kind, "message");
  assert.equal(
    parseSessionEventData({ event: "session.status_idle", data: '{"stop_reason":"end_turn"}' })
      ?.kind,
    "status",
    "a data object without type falls back to the event name",
  );
  assert.equal(parseSessionEventData({ data: "" }), null);
  assert.equal(parseSessionEventData({ data: "{broken" }), null);
  assert.equal(parseSessionEventData({ data: "[1,2]" }), null);
});

Deno.test("isTerminalSessionEvent: terminated, deleted, or idle not waiting on an action", () => {
  const idle = (reason: unknown) => parse({ type: "session.status_idle", stop_reason: reason });
  assert.equal(isTerminalSessionEvent(idle({ type: "end_turn" })), true);
  assert.equal(isTerminalSessionEvent(idle({ type: "retries_exhausted" })), true);
  assert.equal(isTerminalSessionEvent(idle(undefined)), true);
  assert.equal(isTerminalSessionEvent(idle({ type: "requires_action", event_ids: ["a"] })), false);
  assert.equal(isTerminalSessionEvent(parse({ type: "session.status_terminated" })), true);
  assert.equal(isTerminalSessionEvent(parse({ type: "session.deleted" })), true);
  assert.equal(isTerminalSessionEvent(parse({ type: "session.status_running" })), false);
  assert.equal(isTerminalSessionEvent(parse({ type: "session.thread_status_terminated" })), false);
  assert.equal(isTerminalSessionEvent(null), false);
});

Deno.test("sessionEventNeedsConfirmation: tool calls held on an ask verdict", () => {
  const call = (extra: Record<string, unknown>) =>
    parse({ type: "agent.tool_use", id: "sevt_1", name: "bash", input: {}, ...extra });
  assert.equal(sessionEventNeedsConfirmation(call({ evaluated_permission: "ask" })), true);
  assert.equal(
    sessionEventNeedsConfirmation(
      call({
        evaluation: {
          type: "auto",
          evaluated_permission: { type: "ask", reason_code: "high_risk" },
        },
      }),
    ),
    true,
    "the automatic policy's ask verdict counts too",
  );
  assert.equal(sessionEventNeedsConfirmation(call({ evaluated_permission: "allow" })), false);
  assert.equal(sessionEventNeedsConfirmation(call({})), false);
  assert.equal(
    sessionEventNeedsConfirmation(
      parse({ type: "agent.mcp_tool_use", id: "s", name: "n", evaluated_permission: "ask" }),
    ),
    true,
  );
  assert.equal(
    sessionEventNeedsConfirmation(parse({ type: "agent.custom_tool_use", id: "s", name: "n" })),
    false,
  );
});

Deno.test("isCustomToolUseEvent, isOutcomeEndEvent and isThreadEvent pick their kinds", () => {
  assert.equal(
    isCustomToolUseEvent(parse({ type: "agent.custom_tool_use", id: "s", name: "n" })),
    true,
  );
  assert.equal(isCustomToolUseEvent(parse({ type: "agent.tool_use", id: "s", name: "n" })), false);
  assert.equal(
    isOutcomeEndEvent(
      parse({ type: "span.outcome_evaluation_end", outcome_id: "o", result: "failed" }),
    ),
    true,
  );
  assert.equal(
    isOutcomeEndEvent(parse({ type: "span.outcome_evaluation_start", outcome_id: "o" })),
    false,
  );
  assert.equal(isThreadEvent(parse({ type: "session.thread_created" })), true);
  assert.equal(isThreadEvent(parse({ type: "session.thread_status_running" })), true);
  assert.equal(isThreadEvent(parse({ type: "agent.thread_message_sent", content: [] })), true);
  assert.equal(isThreadEvent(parse({ type: "agent.message", content: [] })), false);
  assert.equal(isThreadEvent(undefined), false);
});

Deno.test("readSessionEvents yields parsed events from a stream body, skipping non-events", async () => {
  const frames = [
    'event: agent.message\ndata: {"type":"agent.message","id":"a","content":[{"type":"text","text":"x"}]}\n\n',
    ": keep-alive\n\n",
    "data: not json\n\n",
    'data: {"type":"future.kind","id":"b"}\n\n',
    'event: session.status_idle\ndata: {"type":"session.status_idle","id":"c"}\n\n',
  ].join("");
  const kinds: string[] = [];
  for await (const event of readSessionEvents(new Response(frames).body!)) {
    kinds.push(`${event.kind}:${event.id}`);
  }
  assert.deepEqual(kinds, ["message:a", "other:b", "status:c"]);
});

Deno.test("every type the reader may defer parses to kind other whatever its fields", () => {
  // Fields that make other types a message, a tool call, a status, a preview or a delta.
  const fields = {
    id: "sevt_x",
    content: text("x"),
    name: "bash",
    input: {},
    status: "idle",
    stop_reason: { type: "end_turn" },
    error: { type: "e", message: "m" },
    event: { id: "sevt_y", type: "agent.message" },
    event_id: "sevt_y",
    delta: { content: { type: "text", text: "x" } },
  };
  for (const type of DEFERRABLE_TYPES) assert.equal(parse({ ...fields, type }).kind, "other", type);
});

Deno.test("readSessionEvents: skip passes over, defers or parses each frame by its proven type", async () => {
  const usage = '{"type":"session.usage","id":"u1","processed_at":"t1","usage":{"input_tokens":3}}';
  const frames = [
    'event: agent.thinking\ndata: {"type":"agent.thinking","id":"skipped"}\n\n',
    `event: session.usage\ndata: ${usage}\n\n`,
    // A second "type" key wins in JSON.parse: the text does not prove the type, so it is parsed.
    'data: {"type":"session.usage","type":"agent.message","id":"m1","content":[]}\n\n',
    // Deferred only when the parser always reads the type as kind other.
    'data: {"type":"agent.message","id":"m2","content":[{"type":"text","text":"hi"}]}\n\n',
    // Its start proved the type; the rest is not JSON.
    'data: {"type":"user.message", oops\n\n',
  ].join("");
  const events: ManagedAgentSessionEvent[] = [];
  const skip = (type: string) =>
    type === "agent.thinking" ? true : type === "agent.message" || type.includes("usage") ||
        type === "user.message"
      ? "defer" as const
      : false;
  for await (const event of readSessionEvents(new Response(frames).body!, { skip })) {
    events.push(event);
  }
  assert.deepEqual(events.map((event) => `${event.kind}:${event.type}`), [
    "other:session.usage",
    "message:agent.message",
    "message:agent.message",
    "other:user.message",
  ]);
  const [deferred, , message, broken] = events;
  // A deferred event reads what a parsed one does, once asked.
  assert.deepEqual(
    { raw: deferred.raw, id: deferred.id, processedAt: deferred.processedAt },
    { raw: JSON.parse(usage), id: "u1", processedAt: "t1" },
  );
  assert.equal(message.kind === "message" && message.text, "hi");
  assert.deepEqual(broken.raw, { type: "user.message" });
  assert.equal(broken.id, undefined);
});
