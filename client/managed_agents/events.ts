/**
 * Session events in parsed form. {@linkcode parseSessionEvent} turns a raw event object (from the
 * SSE stream or the event list) into a {@linkcode ManagedAgentSessionEvent} discriminated by
 * `kind`; an unknown wire type becomes kind `other` and is never dropped. Lifecycle events accept
 * the dotted form (`session.status_idle`) and the namespace-stripped form (`status_idle`), so a
 * terminal event is never missed; text and tool events match the dotted form only, so an echoed
 * `user.message` is never taken for agent output.
 *
 * One file because it is one concept: the parsed session-event model and its one parser; every
 * kind's shape sits beside the rule that builds it.
 *
 * @module
 */
import { isObject, objectOr as obj, stringOr as str } from "../guards.ts";
import type { SseMessage } from "../sse.ts";

/** A raw event object as the provider sends it. */
export type RawSessionEvent = Record<string, unknown>;

/** Session and thread status values (`deleted` when the session was deleted under the stream). */
export type ManagedAgentStatusKind = "running" | "idle" | "rescheduling" | "terminated" | "deleted";

/** Grader verdicts of an outcome iteration (other strings possible). */
export type ManagedAgentOutcomeResult =
  | "satisfied"
  | "needs_revision"
  | "max_iterations_reached"
  | "failed"
  | "interrupted"
  | (string & Record<never, never>);

/** Why a session or thread went idle (`requires_action` lists the blocking event ids). */
export interface ManagedAgentStopReason {
  /** `end_turn`, `requires_action`, `retries_exhausted`, `budget_reached`, `refusal`, … */
  type?: string;
  /** Further fields (for `requires_action`: `event_ids`). */
  [key: string]: unknown;
}

/** Fields every parsed event carries. */
export interface ManagedAgentSessionEventBase {
  /** The wire `type` (for example `agent.message`). */
  type: string;
  /** Event id, when the provider assigned one. */
  id?: string;
  /** When the provider processed the event. */
  processedAt?: string;
  /** The raw event object, unchanged. */
  raw: RawSessionEvent;
}

/** Agent text output (`agent.message`). */
export interface ManagedAgentMessageEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "message";
  /** The text blocks of the message, joined. */
  text: string;
}

/** A built-in or MCP tool call (`agent.tool_use`, `agent.mcp_tool_use`). */
export interface ManagedAgentToolUseEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "tool_use";
  /** Event id, answered by `confirmTool` when the call waits for a confirmation. */
  id: string;
  /** Tool name. */
  name: string;
  /** Tool input. */
  input: unknown;
  /** `allow`, `ask` (paused until a `user.tool_confirmation`) or `deny`. */
  evaluatedPermission?: string;
  /** `agent` for toolset tools, `mcp` for MCP server tools. */
  source: "agent" | "mcp";
  /** The MCP server, for `mcp` calls. */
  mcpServerName?: string;
  /** Set when the call was cross-posted from a sub-agent thread. */
  sessionThreadId?: string;
}

/** A client-side custom tool call (`agent.custom_tool_use`), answered by `respondCustomTool`. */
export interface ManagedAgentCustomToolUseEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "custom_tool_use";
  /** Event id. */
  id: string;
  /** Tool name. */
  name: string;
  /** Tool input. */
  input: unknown;
  /** Set when the call was cross-posted from a sub-agent thread. */
  sessionThreadId?: string;
}

/** A tool result (`agent.tool_result`, `agent.mcp_tool_result`). */
export interface ManagedAgentToolResultEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "tool_result";
  /** Whether the tool failed. */
  isError: boolean;
  /** `agent` or `mcp`. */
  source: "agent" | "mcp";
  /** Id of the tool-use event this answers. */
  toolUseId?: string;
}

/** A session lifecycle change (`session.status_*`, `session.deleted`). */
export interface ManagedAgentStatusEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "status";
  /** The new status. */
  status: ManagedAgentStatusKind;
  /** Why the session went idle. */
  stopReason?: ManagedAgentStopReason;
}

/** A session error (`session.error`) or an error frame of the stream (`error`). */
export interface ManagedAgentErrorEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "error";
  /** What went wrong. */
  message: string;
  /** The error's type (for example `model_overloaded_error`). */
  errorType?: string;
  /** `retrying`, `exhausted` or `terminal`, when the provider says. */
  retryStatus?: string;
}

/** A grader iteration started (`span.outcome_evaluation_start`). */
export interface ManagedAgentOutcomeStartEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "outcome_start";
  /** Outcome id. */
  outcomeId: string;
  /** Iteration, 0-based. */
  iteration: number;
}

/** A grader iteration is under way (`span.outcome_evaluation_ongoing`). */
export interface ManagedAgentOutcomeProgressEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "outcome_progress";
  /** Outcome id. */
  outcomeId: string;
}

/** A grader iteration finished (`span.outcome_evaluation_end`). */
export interface ManagedAgentOutcomeEndEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "outcome_end";
  /** Outcome id. */
  outcomeId: string;
  /** Iteration, 0-based. */
  iteration: number;
  /** The verdict. */
  result: ManagedAgentOutcomeResult;
  /** The grader's explanation. */
  explanation?: string;
}

/** A sub-agent thread was created (`session.thread_created`). */
export interface ManagedAgentThreadCreatedEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "thread_created";
  /** The new thread. */
  threadId?: string;
  /** The agent running in it. */
  agentName?: string;
}

/** A thread changed status (`session.thread_status_*`). */
export interface ManagedAgentThreadStatusEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "thread_status";
  /** The thread. */
  threadId?: string;
  /** The agent running in it. */
  agentName?: string;
  /** The new status. */
  status: ManagedAgentStatusKind;
  /** Why the thread went idle. */
  stopReason?: ManagedAgentStopReason;
}

/** A message between threads (`agent.thread_message_sent`, `agent.thread_message_received`). */
export interface ManagedAgentThreadMessageEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "thread_message";
  /** `sent` to or `received` from the other thread. */
  direction: "sent" | "received";
  /** The other thread. */
  threadId?: string;
  /** The other thread's agent. */
  agentName?: string;
  /** The text blocks, joined. */
  text: string;
}

/**
 * A preview opened (`event_start`, stream only, when deltas were asked for): deltas of the event
 * `eventId` follow, then the final buffered event with that id replaces the preview.
 */
export interface ManagedAgentPreviewStartEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "preview_start";
  /** The id the final event will carry. */
  eventId: string;
  /** The previewed event's type (`agent.message` or `agent.thinking`). */
  previewType: string;
}

/** A text delta of a preview (`event_delta`, stream only, when deltas were asked for). */
export interface ManagedAgentDeltaEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "delta";
  /** The id of the previewed event (the final event carries it). */
  eventId?: string;
  /** The text appended. */
  text: string;
  /** The content block the text belongs to, when the provider says. */
  index?: number;
}

/** Any other event (echoes, thinking, spans, usage, workflow runs and unknown types). */
export interface ManagedAgentOtherEvent extends ManagedAgentSessionEventBase {
  /** Discriminator. */
  kind: "other";
}

/** A parsed session event, discriminated by `kind`. */
export type ManagedAgentSessionEvent =
  | ManagedAgentMessageEvent
  | ManagedAgentToolUseEvent
  | ManagedAgentCustomToolUseEvent
  | ManagedAgentToolResultEvent
  | ManagedAgentStatusEvent
  | ManagedAgentErrorEvent
  | ManagedAgentOutcomeStartEvent
  | ManagedAgentOutcomeProgressEvent
  | ManagedAgentOutcomeEndEvent
  | ManagedAgentThreadCreatedEvent
  | ManagedAgentThreadStatusEvent
  | ManagedAgentThreadMessageEvent
  | ManagedAgentPreviewStartEvent
  | ManagedAgentDeltaEvent
  | ManagedAgentOtherEvent;

/** The `kind` values of {@linkcode ManagedAgentSessionEvent}. */
export type ManagedAgentSessionEventKind = ManagedAgentSessionEvent["kind"];

/** What a lifecycle wire type is (session and thread status, the session error, a new thread). */
type Lifecycle =
  | { kind: "status"; status: ManagedAgentStatusKind }
  | { kind: "thread_status"; status: ManagedAgentStatusKind }
  | { kind: "error" }
  | { kind: "thread_created" };

/**
 * Lifecycle wire types under both their names: dotted (`session.status_idle`) and
 * namespace-stripped (`status_idle`). A `Map`, so a type such as `session.constructor` finds
 * nothing (a plain object found `Object.prototype.constructor` there). Speed: one lookup of the
 * whole type, no slice of it per event; with `id` read once, the model's own cost per parsed frame
 * of `bench/session_stream_bench.ts` (JSON parse aside) went from 178 to 118 ns (medians).
 */
const LIFECYCLE: ReadonlyMap<string, Lifecycle> = ((): Map<string, Lifecycle> => {
  const names: [string, Lifecycle][] = [
    ["status_running", { kind: "status", status: "running" }],
    ["status_idle", { kind: "status", status: "idle" }],
    ["status_rescheduled", { kind: "status", status: "rescheduling" }],
    ["status_rescheduling", { kind: "status", status: "rescheduling" }],
    ["status_terminated", { kind: "status", status: "terminated" }],
    ["deleted", { kind: "status", status: "deleted" }],
    ["error", { kind: "error" }],
    ["thread_created", { kind: "thread_created" }],
    ["thread_status_running", { kind: "thread_status", status: "running" }],
    ["thread_status_idle", { kind: "thread_status", status: "idle" }],
    ["thread_status_rescheduled", { kind: "thread_status", status: "rescheduling" }],
    ["thread_status_terminated", { kind: "thread_status", status: "terminated" }],
  ];
  const types = new Map<string, Lifecycle>();
  for (const [name, lifecycle] of names) {
    types.set(name, lifecycle);
    types.set(`session.${name}`, lifecycle);
  }
  return types;
})();

/** Joins the `text` of the text blocks of a content array (or returns a string content). */
function joinText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let text = "";
  for (const block of content) {
    const b = obj(block);
    if (b && b.type === "text" && typeof b.text === "string") text += b.text;
  }
  return text;
}

function stopReasonOf(raw: RawSessionEvent): ManagedAgentStopReason | undefined {
  const reason = raw.stop_reason;
  if (typeof reason === "string") return { type: reason };
  return obj(reason) as ManagedAgentStopReason | undefined;
}

/**
 * Parses a raw event object (from the stream or the event list) into a typed event. Returns null
 * only when the value is not an object with a string `type`; unknown types become kind `other`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseSessionEvent } from "@automation/runtime/client";
 * const event = parseSessionEvent({
 *   type: "agent.message",
 *   id: "sevt_1",
 *   content: [{ type: "text", text: "Hello" }],
 * });
 * assert.equal(event?.kind, "message");
 * assert.equal(event?.kind === "message" && event.text, "Hello");
 * ```
 */
export function parseSessionEvent(raw: unknown): ManagedAgentSessionEvent | null {
  const event = obj(raw);
  if (!event || typeof event.type !== "string") return null;
  const id = str(event.id);
  const parsed = parseKind(event, event.type, id);
  // Speed: id and time are set after the kind's fields, not spread in from a base object, so
  // each event is one allocation (the 60,000 events bench/session_stream_bench.ts keeps:
  // 22 ms → 15 ms median, measured on a loaded machine).
  if (id !== undefined) parsed.id = id;
  const processedAt = str(event.processed_at);
  if (processedAt !== undefined) parsed.processedAt = processedAt;
  return parsed;
}

/** The kind and the kind's fields of an event with a string `type` (and `id`, when a string). */
function parseKind(
  event: RawSessionEvent,
  type: string,
  id: string | undefined,
): ManagedAgentSessionEvent {
  switch (type) {
    case "agent.message":
      return { type, raw: event, kind: "message", text: joinText(event.content) };
    case "agent.tool_use":
    case "agent.mcp_tool_use": {
      const parsed: ManagedAgentToolUseEvent = {
        type,
        raw: event,
        kind: "tool_use",
        id: id ?? "",
        name: str(event.name) ?? "",
        input: event.input ?? {},
        source: type === "agent.tool_use" ? "agent" : "mcp",
      };
      const permission = str(event.evaluated_permission) ??
        str(obj(obj(event.evaluation)?.evaluated_permission)?.type);
      if (permission !== undefined) parsed.evaluatedPermission = permission;
      const server = str(event.mcp_server_name);
      if (server !== undefined) parsed.mcpServerName = server;
      const threadId = str(event.session_thread_id);
      if (threadId !== undefined) parsed.sessionThreadId = threadId;
      return parsed;
    }
    case "agent.custom_tool_use": {
      const parsed: ManagedAgentCustomToolUseEvent = {
        type,
        raw: event,
        kind: "custom_tool_use",
        id: id ?? "",
        name: str(event.name) ?? "",
        input: event.input ?? {},
      };
      const threadId = str(event.session_thread_id);
      if (threadId !== undefined) parsed.sessionThreadId = threadId;
      return parsed;
    }
    case "agent.tool_result":
    case "agent.mcp_tool_result": {
      const parsed: ManagedAgentToolResultEvent = {
        type,
        raw: event,
        kind: "tool_result",
        isError: event.is_error === true,
        source: type === "agent.tool_result" ? "agent" : "mcp",
      };
      const toolUseId = str(event.tool_use_id) ?? str(event.mcp_tool_use_id);
      if (toolUseId !== undefined) parsed.toolUseId = toolUseId;
      return parsed;
    }
    case "agent.thread_message_sent":
    case "agent.thread_message_received": {
      const sent = type === "agent.thread_message_sent";
      const parsed: ManagedAgentThreadMessageEvent = {
        type,
        raw: event,
        kind: "thread_message",
        direction: sent ? "sent" : "received",
        text: joinText(event.content),
      };
      const other = str(sent ? event.to_session_thread_id : event.from_session_thread_id);
      if (other !== undefined) parsed.threadId = other;
      const agentName = str(sent ? event.to_agent_name : event.from_agent_name);
      if (agentName !== undefined) parsed.agentName = agentName;
      return parsed;
    }
    case "event_start": {
      const previewed = obj(event.event);
      const eventId = str(previewed?.id);
      const previewType = str(previewed?.type);
      if (eventId === undefined || previewType === undefined) break;
      return { type, raw: event, kind: "preview_start", eventId, previewType };
    }
    case "event_delta": {
      const eventId = str(event.event_id);
      const content = obj(obj(event.delta)?.content);
      if (content?.type !== "text" || typeof content.text !== "string") break;
      const parsed: ManagedAgentDeltaEvent = {
        type,
        raw: event,
        kind: "delta",
        text: content.text,
      };
      if (eventId !== undefined) parsed.eventId = eventId;
      const index = obj(event.delta)?.index;
      if (typeof index === "number") parsed.index = index;
      return parsed;
    }
    case "span.outcome_evaluation_start":
      return {
        type,
        raw: event,
        kind: "outcome_start",
        outcomeId: str(event.outcome_id) ?? "",
        iteration: typeof event.iteration === "number" ? event.iteration : 0,
      };
    case "span.outcome_evaluation_ongoing":
      return { type, raw: event, kind: "outcome_progress", outcomeId: str(event.outcome_id) ?? "" };
    case "span.outcome_evaluation_end": {
      const parsed: ManagedAgentOutcomeEndEvent = {
        type,
        raw: event,
        kind: "outcome_end",
        outcomeId: str(event.outcome_id) ?? "",
        iteration: typeof event.iteration === "number" ? event.iteration : 0,
        result: str(event.result) ?? "failed",
      };
      const explanation = str(event.explanation);
      if (explanation !== undefined) parsed.explanation = explanation;
      return parsed;
    }
  }

  const lifecycle = LIFECYCLE.get(type);
  switch (lifecycle?.kind) {
    case "status": {
      const parsed: ManagedAgentStatusEvent = {
        type,
        raw: event,
        kind: "status",
        status: lifecycle.status,
      };
      const stopReason = stopReasonOf(event);
      if (stopReason !== undefined) parsed.stopReason = stopReason;
      return parsed;
    }
    case "error": {
      const error = obj(event.error);
      const parsed: ManagedAgentErrorEvent = {
        type,
        raw: event,
        kind: "error",
        message: str(error?.message) ?? str(event.message) ?? "The session reported an error",
      };
      const errorType = str(error?.type);
      if (errorType !== undefined) parsed.errorType = errorType;
      const retryStatus = str(obj(error?.retry_status)?.type) ?? str(error?.retry_status);
      if (retryStatus !== undefined) parsed.retryStatus = retryStatus;
      return parsed;
    }
    case "thread_created": {
      const parsed: ManagedAgentThreadCreatedEvent = { type, raw: event, kind: "thread_created" };
      const threadId = str(event.session_thread_id);
      if (threadId !== undefined) parsed.threadId = threadId;
      const agentName = str(event.agent_name);
      if (agentName !== undefined) parsed.agentName = agentName;
      return parsed;
    }
    case "thread_status": {
      const parsed: ManagedAgentThreadStatusEvent = {
        type,
        raw: event,
        kind: "thread_status",
        status: lifecycle.status,
      };
      const threadId = str(event.session_thread_id);
      if (threadId !== undefined) parsed.threadId = threadId;
      const agentName = str(event.agent_name);
      if (agentName !== undefined) parsed.agentName = agentName;
      const stopReason = stopReasonOf(event);
      if (stopReason !== undefined) parsed.stopReason = stopReason;
      return parsed;
    }
  }
  return { type, raw: event, kind: "other" };
}

/**
 * Parses one SSE frame into a typed event. The kind is read from `data.type`, so a frame without
 * an `event:` line is read too. Returns null for an empty or non-JSON `data`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseSessionEventData } from "@automation/runtime/client";
 * const event = parseSessionEventData({
 *   data: '{"type":"session.status_idle","stop_reason":{"type":"end_turn"}}',
 * });
 * assert.deepEqual(event?.kind, "status");
 * ```
 */
export function parseSessionEventData(
  message: Pick<SseMessage, "data"> & { event?: string },
): ManagedAgentSessionEvent | null {
  if (message.data === "") return null;
  let value: unknown;
  try {
    value = JSON.parse(message.data);
  } catch {
    return null;
  }
  if (isObject(value) && typeof value.type !== "string" && message.event) {
    // A frame whose data carries no type is read by its event name.
    return parseSessionEvent({ ...value, type: message.event });
  }
  return parseSessionEvent(value);
}

/**
 * Whether an event ends the session's run: a `terminated` (or `deleted`) status, or an `idle`
 * status whose stop reason is not `requires_action`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isTerminalSessionEvent, parseSessionEvent } from "@automation/runtime/client";
 * const idle = parseSessionEvent({
 *   type: "session.status_idle",
 *   stop_reason: { type: "requires_action", event_ids: ["sevt_1"] },
 * });
 * assert.deepEqual(isTerminalSessionEvent(idle), false);
 * ```
 */
export function isTerminalSessionEvent(
  event: ManagedAgentSessionEvent | null | undefined,
): boolean {
  if (!event || event.kind !== "status") return false;
  if (event.status === "terminated" || event.status === "deleted") return true;
  return event.status === "idle" && event.stopReason?.type !== "requires_action";
}

/**
 * Whether a tool call is paused awaiting a `user.tool_confirmation` (an `always_ask` policy or an
 * `ask` verdict of the automatic policy).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseSessionEvent, sessionEventNeedsConfirmation } from "@automation/runtime/client";
 * const call = parseSessionEvent({
 *   type: "agent.tool_use",
 *   id: "sevt_1",
 *   name: "bash",
 *   input: { command: "ls" },
 *   evaluated_permission: "ask",
 * });
 * assert.deepEqual(sessionEventNeedsConfirmation(call), true);
 * ```
 */
export function sessionEventNeedsConfirmation(
  event: ManagedAgentSessionEvent | null | undefined,
): event is ManagedAgentToolUseEvent {
  return !!event && event.kind === "tool_use" && event.evaluatedPermission === "ask";
}

/**
 * Whether an event is a client-side custom tool call, to be answered with `respondCustomTool`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isCustomToolUseEvent, parseSessionEvent } from "@automation/runtime/client";
 * const call = parseSessionEvent({ type: "agent.custom_tool_use", id: "sevt_2", name: "lookup", input: {} });
 * assert.deepEqual(isCustomToolUseEvent(call), true);
 * ```
 */
export function isCustomToolUseEvent(
  event: ManagedAgentSessionEvent | null | undefined,
): event is ManagedAgentCustomToolUseEvent {
  return !!event && event.kind === "custom_tool_use";
}

/**
 * Whether an event is a finished grader iteration of an outcome.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isOutcomeEndEvent, parseSessionEvent } from "@automation/runtime/client";
 * const end = parseSessionEvent({
 *   type: "span.outcome_evaluation_end",
 *   outcome_id: "outc_1",
 *   iteration: 0,
 *   result: "satisfied",
 * });
 * assert.deepEqual(isOutcomeEndEvent(end), true);
 * ```
 */
export function isOutcomeEndEvent(
  event: ManagedAgentSessionEvent | null | undefined,
): event is ManagedAgentOutcomeEndEvent {
  return !!event && event.kind === "outcome_end";
}

/**
 * Whether an event is a thread created, thread status or thread message event.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isThreadEvent, parseSessionEvent } from "@automation/runtime/client";
 * const created = parseSessionEvent({
 *   type: "session.thread_created",
 *   session_thread_id: "sthr_2",
 *   agent_name: "researcher",
 * });
 * assert.deepEqual(isThreadEvent(created), true);
 * ```
 */
export function isThreadEvent(
  event: ManagedAgentSessionEvent | null | undefined,
): event is
  | ManagedAgentThreadCreatedEvent
  | ManagedAgentThreadStatusEvent
  | ManagedAgentThreadMessageEvent {
  return !!event &&
    (event.kind === "thread_created" || event.kind === "thread_status" ||
      event.kind === "thread_message");
}
