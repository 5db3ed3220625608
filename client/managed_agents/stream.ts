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
 * 5. `run.cancelled` is not decided here: it needs the turn's history (was there a
 *    `user.interrupt`?), which `streamRun` / `streamSession` and `getRun` read.
 *
 * @module
 */
import type { RunStreamEvent, RuntimeRunState, RuntimeUsage } from "../contract.ts";
import { isObject } from "../guards.ts";
import type { SseMessage } from "../sse.ts";
import { skippableFrameType } from "./_peek.ts";
import {
  type ManagedAgentSessionEvent,
  parseSessionEvent,
  parseSessionEventData,
} from "./events.ts";

/**
 * Maps one parsed session event to a canonical run event, or null to skip it. The rules of the
 * module doc; the one mapping `streamRun`, `streamSession` and the two helpers below share.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mapManagedAgentSessionEvent, parseSessionEvent } from "@automation/runtime/client";
 * const idle = parseSessionEvent({ type: "session.status_idle", stop_reason: { type: "end_turn" } });
 * assert.deepEqual(mapManagedAgentSessionEvent(idle!, "sesn_1"), {
 *   type: "run.completed",
 *   runId: "sesn_1",
 *   stopReason: "end_turn",
 * });
 * ```
 */
export function mapManagedAgentSessionEvent(
  event: ManagedAgentSessionEvent,
  runId: string,
): RunStreamEvent | null {
  switch (event.kind) {
    case "message":
      return { type: "message.completed", runId, text: event.text };
    case "tool_use":
      return {
        type: "tool.call",
        runId,
        id: event.id,
        name: event.name,
        input: event.input,
        needsConfirmation: event.raw.evaluated_permission === "ask",
      };
    case "custom_tool_use":
      return {
        type: "tool.call",
        runId,
        id: event.id,
        name: event.name,
        input: event.input,
        needsConfirmation: false,
      };
    case "tool_result": {
      const out: RunStreamEvent = { type: "tool.result", runId, isError: event.isError };
      const id = event.source === "agent" ? event.raw.tool_use_id : event.raw.mcp_tool_use_id;
      if (typeof id === "string") out.id = id;
      return out;
    }
    case "delta":
      return { type: "message.delta", runId, text: event.text };
    case "status":
      switch (event.status) {
        case "idle": {
          const reason = event.stopReason?.type;
          if (reason === "requires_action") {
            return { type: "run.status", runId, state: "requires_action" };
          }
          const out: RunStreamEvent = { type: "run.completed", runId };
          if (typeof reason === "string") out.stopReason = reason;
          return out;
        }
        case "terminated":
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
      }
      return null;
    case "error":
      // `error` (the stream's own error frame, never `session.error`) ends the stream.
      return event.type === "error"
        ? { type: "run.failed", runId, error: streamError(event.raw) }
        : null;
  }
  return null;
}

function streamError(raw: Record<string, unknown>): { type?: string; message: string } {
  const error = isObject(raw.error) ? raw.error : raw;
  const out: { type?: string; message: string } = {
    message: typeof error.message === "string" ? error.message : "The event stream failed",
  };
  if (typeof error.type === "string" && error.type !== "error") out.type = error.type;
  return out;
}

/**
 * Maps one raw session event object (from the event list, say) to a canonical event, or null to
 * skip it: {@linkcode parseSessionEvent}, then {@linkcode mapManagedAgentSessionEvent}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mapManagedAgentEventObject } from "@automation/runtime/client";
 * const event = mapManagedAgentEventObject({ type: "status_terminated" }, "sesn_1");
 * assert.equal(event?.type, "run.failed");
 * ```
 */
export function mapManagedAgentEventObject(raw: unknown, runId: string): RunStreamEvent | null {
  const event = parseSessionEvent(raw);
  return event === null ? null : mapManagedAgentSessionEvent(event, runId);
}

/**
 * Maps one session SSE frame to a canonical run event, or null when the caller should skip it:
 * {@linkcode parseSessionEventData}, then {@linkcode mapManagedAgentSessionEvent}. The kind is
 * read from `data.type`, so frames without an `event:` line are read as well.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mapManagedAgentStreamEvent } from "@automation/runtime/client";
 * const event = mapManagedAgentStreamEvent({
 *   event: "session.status_idle",
 *   data: '{"type":"session.status_idle","stop_reason":{"type":"end_turn"}}',
 * }, "sesn_1");
 * assert.deepEqual(event, { type: "run.completed", runId: "sesn_1", stopReason: "end_turn" });
 * ```
 */
export function mapManagedAgentStreamEvent(
  sse: Pick<SseMessage, "data"> & { event?: string },
  runId: string,
): RunStreamEvent | null {
  if (skippableFrameType(sse.data) !== undefined) return null;
  const event = parseSessionEventData(sse);
  return event === null ? null : mapManagedAgentSessionEvent(event, runId);
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
 * import assert from "node:assert/strict";
 * import { sessionStatusToRunState } from "@automation/runtime/client";
 * assert.equal(
 *   sessionStatusToRunState({ status: "idle", stopReason: "requires_action" }),
 *   "requires_action",
 * );
 * assert.equal(sessionStatusToRunState({ status: "terminated", interrupted: true }), "cancelled");
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
 * import assert from "node:assert/strict";
 * import { numericUsage } from "@automation/runtime/client";
 * assert.deepEqual(numericUsage({ input_tokens: 10, cache_creation: { x: 1 } }), { input_tokens: 10 });
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
