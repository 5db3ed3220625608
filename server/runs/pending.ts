/**
 * Where pending tool requests come from: {@linkcode deriveToolRequests} reads a run's session
 * events in order and tells which tool requests exist, which are still open and which were
 * answered; {@linkcode readToolRequests} feeds it the provider's session history through the
 * client library. This is the one place that derivation lives: once runs have an event log in
 * the store, the same function can be fed from the log instead of the provider.
 *
 * The rules, in event order:
 *
 * 1. An `agent.tool_use` / `agent.mcp_tool_use` whose permission is `ask`, or an
 *    `agent.custom_tool_use`, opens a request (its id, tool name, input and processing time).
 * 2. A `user.tool_confirmation` or `user.custom_tool_result` answers it (and closes it).
 * 3. A `session.status_idle` closes the open requests it does not list as blocking: one whose stop
 *    reason is `requires_action` keeps exactly its `event_ids`; any other stop reason (an
 *    interrupt ends the turn) closes them all. A terminated or deleted session closes them all.
 *
 * The gateway's own answer records are applied on top (an answered record closes a request
 * even before the provider's history shows the answer).
 *
 * @module
 */
import type { ProviderManagedAgentClient } from "../../client/mod.ts";
import {
  parseSessionEvent,
  sessionEventNeedsConfirmation,
} from "../../client/managed_agents/events.ts";
import type { ToolAnswerRecord, ToolAnswerResult } from "../store/types.ts";
import type { PendingToolRequest } from "../../wire/mod.ts";

/** `requestedAt` of a request whose processing time the provider did not say: the epoch. */
const UNKNOWN_TIME = "1970-01-01T00:00:00.000Z";

/** What {@linkcode deriveToolRequests} found. */
export interface ToolRequests {
  /** Every tool request seen, by tool-use id. */
  requests: Map<string, PendingToolRequest>;
  /** Ids of the requests still waiting for an answer, in request order. */
  open: Set<string>;
  /** Answers the history shows, by tool-use id. */
  answered: Map<string, ToolAnswerResult>;
}

/**
 * Derives a run's tool requests from its session events (raw provider objects, oldest first),
 * by rules 1 to 3 of the module doc.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deriveToolRequests } from "./pending.ts";
 * const found = deriveToolRequests([
 *   { type: "agent.tool_use", id: "sevt_1", name: "bash", input: {}, evaluated_permission: "ask",
 *     processed_at: "2026-01-01T00:00:00Z" },
 *   { type: "agent.custom_tool_use", id: "sevt_2", name: "lookup", input: { q: 1 } },
 *   { type: "user.tool_confirmation", tool_use_id: "sevt_1", result: "deny" },
 * ]);
 * assert.deepEqual([...found.open], ["sevt_2"]);
 * assert.equal(found.answered.get("sevt_1"), "deny");
 * ```
 */
export function deriveToolRequests(events: readonly unknown[]): ToolRequests {
  const requests = new Map<string, PendingToolRequest>();
  const open = new Set<string>();
  const answered = new Map<string, ToolAnswerResult>();
  for (const raw of events) {
    const event = parseSessionEvent(raw);
    if (event === null) continue;
    if (sessionEventNeedsConfirmation(event) || event.kind === "custom_tool_use") {
      if (event.id === "" || requests.has(event.id)) continue;
      requests.set(event.id, {
        toolUseId: event.id,
        kind: event.kind === "custom_tool_use" ? "custom_tool" : "confirmation",
        name: event.name,
        input: event.input ?? {},
        requestedAt: event.processedAt ?? UNKNOWN_TIME,
      });
      if (!answered.has(event.id)) open.add(event.id);
    } else if (event.type === "user.tool_confirmation") {
      const id = event.raw.tool_use_id;
      if (typeof id !== "string") continue;
      answered.set(id, event.raw.result === "allow" ? "allow" : "deny");
      open.delete(id);
    } else if (event.type === "user.custom_tool_result") {
      const id = event.raw.custom_tool_use_id;
      if (typeof id !== "string") continue;
      answered.set(id, event.raw.is_error === true ? "error" : "ok");
      open.delete(id);
    } else if (event.kind === "status" && event.type !== "session.thread_status_idle") {
      if (event.status === "idle") {
        const reason = event.stopReason;
        const blocking = reason?.type === "requires_action" && Array.isArray(reason.event_ids)
          ? new Set(reason.event_ids as unknown[])
          : new Set<unknown>();
        for (const id of [...open]) if (!blocking.has(id)) open.delete(id);
      } else if (event.status === "terminated" || event.status === "deleted") {
        open.clear();
      }
    }
  }
  return { requests, open, answered };
}

/**
 * Lists a run's session history from the provider and derives its tool requests.
 *
 * @example
 * ```ts ignore
 * const found = await readToolRequests(client, runId, AbortSignal.timeout(10_000));
 * ```
 */
export async function readToolRequests(
  client: ProviderManagedAgentClient,
  runId: string,
  signal: AbortSignal,
): Promise<ToolRequests> {
  const events = await client.listEvents(runId, { limit: 1000, signal });
  return deriveToolRequests(events);
}

/**
 * The requests still pending: open in the history and not answered in the gateway's records.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deriveToolRequests, pendingOf } from "./pending.ts";
 * const found = deriveToolRequests([
 *   { type: "agent.custom_tool_use", id: "sevt_2", name: "lookup", input: {} },
 * ]);
 * assert.equal(pendingOf(found, []).length, 1);
 * ```
 */
export function pendingOf(
  found: ToolRequests,
  records: readonly ToolAnswerRecord[],
): PendingToolRequest[] {
  const answered = new Set(
    records.filter((record) => record.state === "answered").map((record) => record.toolUseId),
  );
  const pending: PendingToolRequest[] = [];
  for (const id of found.open) {
    if (!answered.has(id)) pending.push(found.requests.get(id)!);
  }
  return pending;
}
