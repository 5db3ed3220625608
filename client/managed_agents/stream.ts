/**
 * Maps session stream events onto the canonical {@linkcode RunStreamEvent}s of the run contract,
 * and session status onto {@linkcode RuntimeRunState}.
 *
 * Rules of {@linkcode mapManagedAgentStreamEvent}:
 * 1. Status running and rescheduling, `agent.thinking`, `span.*`, thread events and echoes of
 *    `user.*` events return null (the caller skips them).
 * 2. Lifecycle and terminal cases accept the dotted form (`session.status_idle`) and the
 *    namespace-stripped form (`status_idle`), so a terminal event is never missed.
 * 3. Text and tool cases match the dotted form only: a bare `message` is not agent output.
 * 4. `runId` is the session id.
 *
 * @module
 */
import type { RunStreamEvent, RuntimeRunState, RuntimeUsage } from "../contract.ts";
import type { SseMessage } from "../sse.ts";
import { skippableFrameType } from "./_peek.ts";

type Raw = Record<string, unknown>;

function isObject(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function joinText(content: unknown): string {
  if (!Array.isArray(content)) return typeof content === "string" ? content : "";
  let text = "";
  for (let i = 0; i < content.length; i++) {
    const block = content[i];
    if (isObject(block) && block.type === "text" && typeof block.text === "string") {
      text += block.text;
    }
  }
  return text;
}

function stopReasonType(raw: Raw): string | undefined {
  const reason = raw.stop_reason;
  if (typeof reason === "string") return reason;
  return isObject(reason) && typeof reason.type === "string" ? reason.type : undefined;
}

/**
 * Maps one already-parsed raw session event to a canonical event, or null to skip it. The same
 * rules as {@linkcode mapManagedAgentStreamEvent}, for callers that parsed the frame already.
 *
 * @example
 * ```ts
 * import { mapManagedAgentEventObject } from "@automation/runtime/client";
 * const event = mapManagedAgentEventObject({ type: "status_terminated" }, "sesn_1");
 * console.log(event?.type); // "run.failed"
 * ```
 */
export function mapManagedAgentEventObject(raw: unknown, runId: string): RunStreamEvent | null {
  if (!isObject(raw)) return null;
  const type = raw.type;
  if (typeof type !== "string") return null;
  switch (type) {
    case "agent.message":
      return { type: "message.completed", runId, text: joinText(raw.content) };
    case "agent.tool_use":
    case "agent.mcp_tool_use":
    case "agent.custom_tool_use":
      return {
        type: "tool.call",
        runId,
        id: typeof raw.id === "string" ? raw.id : "",
        name: typeof raw.name === "string" ? raw.name : "",
        input: raw.input ?? {},
        needsConfirmation: type !== "agent.custom_tool_use" && raw.evaluated_permission === "ask",
      };
    case "agent.tool_result":
    case "agent.mcp_tool_result": {
      const id = type === "agent.tool_result" ? raw.tool_use_id : raw.mcp_tool_use_id;
      const event: RunStreamEvent = { type: "tool.result", runId, isError: raw.is_error === true };
      if (typeof id === "string") event.id = id;
      return event;
    }
    case "event_delta": {
      const delta = raw.delta;
      const content = isObject(delta) && isObject(delta.content) ? delta.content : undefined;
      if (content?.type !== "text" || typeof content.text !== "string") return null;
      return { type: "message.delta", runId, text: content.text };
    }
  }
  // Lifecycle: dotted or namespace-stripped.
  const name = type.startsWith("session.") ? type.slice(8) : type.includes(".") ? "" : type;
  switch (name) {
    case "status_idle": {
      const reason = stopReasonType(raw);
      if (reason === "requires_action") {
        return { type: "run.status", runId, state: "requires_action" };
      }
      const event: RunStreamEvent = { type: "run.completed", runId };
      if (reason !== undefined) event.stopReason = reason;
      return event;
    }
    case "status_terminated":
      return {
        type: "run.failed",
        runId,
        error: { type: "session_terminated", message: "The session terminated" },
      };
    case "deleted":
      return {
        type: "run.failed",
        runId,
        error: { type: "session_deleted", message: "The session was deleted" },
      };
    case "error":
      // `error` (the stream's own error frame, never `session.error`) ends the stream.
      if (type !== "error") return null;
      return { type: "run.failed", runId, error: streamError(raw) };
  }
  return null;
}

function streamError(raw: Raw): { type?: string; message: string } {
  const error = isObject(raw.error) ? raw.error : raw;
  const out: { type?: string; message: string } = {
    message: typeof error.message === "string" ? error.message : "The event stream failed",
  };
  if (typeof error.type === "string" && error.type !== "error") out.type = error.type;
  return out;
}

/**
 * Maps one session SSE frame to a canonical run event, or null when the caller should skip it.
 * The kind is read from `data.type`, so frames without an `event:` line are read as well.
 *
 * @example
 * ```ts
 * import { mapManagedAgentStreamEvent } from "@automation/runtime/client";
 * const event = mapManagedAgentStreamEvent({
 *   event: "session.status_idle",
 *   data: '{"type":"session.status_idle","stop_reason":{"type":"end_turn"}}',
 * }, "sesn_1");
 * console.log(event); // { type: "run.completed", runId: "sesn_1", stopReason: "end_turn" }
 * ```
 */
export function mapManagedAgentStreamEvent(
  sse: Pick<SseMessage, "data"> & { event?: string },
  runId: string,
): RunStreamEvent | null {
  if (sse.data === "" || skippableFrameType(sse.data) !== undefined) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(sse.data);
  } catch {
    return null;
  }
  if (isObject(raw) && typeof raw.type !== "string" && sse.event) {
    raw = { ...raw, type: sse.event };
  }
  return mapManagedAgentEventObject(raw, runId);
}

/** Inputs of {@linkcode sessionStatusToRunState}. */
export interface SessionRunStateInput {
  /** The session's live status (`running`, `rescheduling`, `idle`, `terminated`). */
  status: string | undefined;
  /** The stop reason type of the latest idle, when the session is idle. */
  stopReason?: string;
  /** Whether an interrupt asked for the stop (the run then reads as `cancelled`). */
  interrupted?: boolean;
  /** Whether the kickoff has not been processed yet (the run then reads as `queued`). */
  pending?: boolean;
}

/**
 * Maps a session's status to a run state: running or rescheduling → `running`; idle with stop
 * reason `requires_action` → `requires_action`; idle otherwise → `completed` (`cancelled` after an
 * interrupt); terminated → `failed` (`cancelled` after an interrupt).
 *
 * @example
 * ```ts
 * import { sessionStatusToRunState } from "@automation/runtime/client";
 * console.log(sessionStatusToRunState({ status: "idle", stopReason: "requires_action" }));
 * // "requires_action"
 * ```
 */
export function sessionStatusToRunState(input: SessionRunStateInput): RuntimeRunState {
  switch (input.status) {
    case "running":
    case "rescheduling":
      return "running";
    case "idle":
      if (input.pending) return "queued";
      if (input.stopReason === "requires_action") return "requires_action";
      return input.interrupted ? "cancelled" : "completed";
    case "terminated":
      return input.interrupted ? "cancelled" : "failed";
    default:
      return input.pending ? "queued" : "running";
  }
}

/**
 * Reads the numeric counters of a session usage object (nested objects are skipped), or
 * undefined when there are none.
 *
 * @example
 * ```ts
 * import { numericUsage } from "@automation/runtime/client";
 * console.log(numericUsage({ input_tokens: 10, cache_creation: { x: 1 } })); // { input_tokens: 10 }
 * ```
 */
export function numericUsage(usage: unknown): RuntimeUsage | undefined {
  if (!isObject(usage)) return undefined;
  const out: RuntimeUsage = {};
  let any = false;
  for (const key in usage) {
    const value = usage[key];
    if (typeof value === "number" && Number.isFinite(value) && Object.hasOwn(usage, key)) {
      out[key] = value;
      any = true;
    }
  }
  return any ? out : undefined;
}
