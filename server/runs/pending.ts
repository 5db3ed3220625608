/**
 * Where pending tool requests come from: a {@linkcode ToolRequestTracker} is fed a run's session
 * events in order and tells which tool requests exist, which are still open and which were
 * answered; {@linkcode deriveToolRequests} feeds it a list of raw events, and
 * {@linkcode readToolRequests} the provider's session history through the client library. A
 * run's tail (`tail.ts`) feeds one the events it reads, to record the requests that wait in the
 * activity log (the inbox's source). This is the one place that derivation lives.
 *
 * The rules, in event order:
 *
 * 1. An `agent.tool_use` / `agent.mcp_tool_use` whose permission is `ask`, or an
 *    `agent.custom_tool_use`, opens a request (its id, tool name, input and processing time).
 * 2. A `user.tool_confirmation` or `user.custom_tool_result` answers it (and closes it).
 * 3. A `session.status_idle` closes the open requests it does not list as blocking: one whose stop
 *    reason is `requires_action` keeps exactly its `event_ids`; any other stop reason (an
 *    interrupt ends the turn) closes them all. A terminated or deleted session closes them all.
 * 4. Apart from the requests, tool executions: an `agent.tool_use` not denied waits for its result
 *    (`agent.tool_result` from the provider, or `user.tool_result` from a client that runs the
 *    tool itself, in a self-hosted environment); a denial, a result or the session's end closes
 *    it. Executions are never pending requests of `/v1`; the provider's own API answers them.
 *
 * The gateway's own answer records are applied on top (an answered record closes a request
 * even before the provider's history shows the answer).
 *
 * @module
 */
import type { ProviderManagedAgentClient } from "../../client/mod.ts";
import {
  type ManagedAgentSessionEvent,
  parseSessionEvent,
  sessionEventNeedsConfirmation,
} from "../../client/managed_agents/events.ts";
import {
  type ActivityInput,
  boundedInput,
  type ToolAnswerKind,
  type ToolAnswerRecord,
  type ToolAnswerResult,
} from "../store/types.ts";
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
  /** Tool executions (rule 4) by tool-use id: `open`, or closed with the client's result. */
  executions: Map<string, "open" | "closed" | ToolAnswerResult>;
}

/** Where one answerable thing stands in a run's history. */
export interface RequestState {
  /** `unknown`: no such request of that kind; `open`: waiting; `closed`: not answerable now. */
  state: "unknown" | "open" | "closed";
  /** The answer the history shows, when it shows one. */
  answered?: ToolAnswerResult;
}

/**
 * Where the request `toolUseId` of `kind` stands in what {@linkcode deriveToolRequests} found.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deriveToolRequests, requestState } from "./pending.ts";
 * const found = deriveToolRequests([
 *   { type: "agent.tool_use", id: "sevt_1", name: "bash", input: {} },
 *   { type: "agent.custom_tool_use", id: "sevt_2", name: "lookup", input: {} },
 * ]);
 * assert.deepEqual(requestState(found, "tool_result", "sevt_1"), { state: "open" });
 * assert.deepEqual(requestState(found, "custom_tool", "sevt_2"), { state: "open" });
 * assert.deepEqual(requestState(found, "confirmation", "sevt_2"), { state: "unknown" });
 * ```
 */
export function requestState(
  found: ToolRequests,
  kind: ToolAnswerKind,
  toolUseId: string,
): RequestState {
  if (kind === "tool_result") {
    const execution = found.executions.get(toolUseId);
    if (execution === undefined) return { state: "unknown" };
    if (execution === "open") return { state: "open" };
    return execution === "closed" ? { state: "closed" } : { state: "closed", answered: execution };
  }
  const request = found.requests.get(toolUseId);
  if (request === undefined || request.kind !== kind) return { state: "unknown" };
  const answered = found.answered.get(toolUseId);
  return {
    state: found.open.has(toolUseId) ? "open" : "closed",
    ...(answered !== undefined ? { answered } : {}),
  };
}

/**
 * A run's tool requests, derived from its session events as they are fed (rules 1 to 3 of the
 * module doc). With `keepClosed: false` a request that closed is forgotten (its id stays in
 * `answered` when it was answered), so a tracker fed a long history holds only what waits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseSessionEvent } from "../../client/managed_agents/events.ts";
 * import { ToolRequestTracker } from "./pending.ts";
 * const tracker = new ToolRequestTracker({ keepClosed: false });
 * for (const raw of [
 *   { type: "agent.custom_tool_use", id: "sevt_1", name: "lookup", input: {} },
 *   { type: "agent.custom_tool_use", id: "sevt_2", name: "lookup", input: {} },
 *   { type: "user.custom_tool_result", custom_tool_use_id: "sevt_1" },
 * ]) tracker.feed(parseSessionEvent(raw)!);
 * assert.deepEqual(tracker.pending().map((request) => request.toolUseId), ["sevt_2"]);
 * assert.equal(tracker.requests.has("sevt_1"), false);
 * ```
 */
export class ToolRequestTracker implements ToolRequests {
  /** Every tool request seen (only the open ones with `keepClosed: false`), by tool-use id. */
  readonly requests: Map<string, PendingToolRequest> = new Map();
  /** Ids of the requests still waiting for an answer, in request order. */
  readonly open: Set<string> = new Set();
  /** Answers the history shows, by tool-use id. */
  readonly answered: Map<string, ToolAnswerResult> = new Map();
  /** Tool executions (rule 4), kept only with `keepClosed` (the answer path reads them). */
  readonly executions: Map<string, "open" | "closed" | ToolAnswerResult> = new Map();
  readonly #keepClosed: boolean;

  /** An empty tracker; `keepClosed` (default true) keeps closed requests in `requests`. */
  constructor(options: { keepClosed?: boolean } = {}) {
    this.#keepClosed = options.keepClosed ?? true;
  }

  /** The requests still open, in request order. */
  pending(): PendingToolRequest[] {
    return [...this.open].map((id) => this.requests.get(id)!);
  }

  /** Takes one session event into account. */
  feed(event: ManagedAgentSessionEvent): void {
    const { requests, open, answered } = this;
    if (this.#keepClosed) executionRule(event, this.executions);
    if (sessionEventNeedsConfirmation(event) || event.kind === "custom_tool_use") {
      if (event.id === undefined || event.id === "" || requests.has(event.id)) return;
      if (answered.has(event.id)) {
        if (this.#keepClosed) requests.set(event.id, requestOf(event));
        return;
      }
      requests.set(event.id, requestOf(event));
      open.add(event.id);
    } else if (event.type === "user.tool_confirmation") {
      const id = event.raw.tool_use_id;
      if (typeof id !== "string") return;
      answered.set(id, event.raw.result === "allow" ? "allow" : "deny");
      this.#close(id);
    } else if (event.type === "user.custom_tool_result") {
      const id = event.raw.custom_tool_use_id;
      if (typeof id !== "string") return;
      answered.set(id, event.raw.is_error === true ? "error" : "ok");
      this.#close(id);
    } else if (event.kind === "status" && event.type !== "session.thread_status_idle") {
      if (event.status === "idle") {
        const reason = event.stopReason;
        const blocking = reason?.type === "requires_action" && Array.isArray(reason.event_ids)
          ? new Set(reason.event_ids as unknown[])
          : new Set<unknown>();
        for (const id of [...open]) if (!blocking.has(id)) this.#close(id);
      } else if (event.status === "terminated" || event.status === "deleted") {
        for (const id of [...open]) this.#close(id);
      }
    }
  }

  #close(id: string): void {
    this.open.delete(id);
    if (!this.#keepClosed) this.requests.delete(id);
  }
}

function requestOf(
  event: ManagedAgentSessionEvent & { id?: string; name: string; input?: unknown },
): PendingToolRequest {
  return {
    toolUseId: event.id!,
    kind: event.kind === "custom_tool_use" ? "custom_tool" : "confirmation",
    name: event.name,
    input: event.input ?? {},
    requestedAt: event.processedAt ?? UNKNOWN_TIME,
  };
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
  const tracker = new ToolRequestTracker();
  for (const raw of events) {
    const event = parseSessionEvent(raw);
    if (event !== null) tracker.feed(event);
  }
  return tracker;
}

/** Rule 4: how one event moves the tool executions. */
function executionRule(
  event: NonNullable<ReturnType<typeof parseSessionEvent>>,
  executions: Map<string, "open" | "closed" | ToolAnswerResult>,
): void {
  const raw = event.raw;
  if (event.kind === "tool_use" && event.source === "agent") {
    if (event.id !== "" && !executions.has(event.id)) {
      executions.set(event.id, event.evaluatedPermission === "deny" ? "closed" : "open");
    }
  } else if (event.type === "agent.tool_result" || event.type === "user.tool_result") {
    const id = raw.tool_use_id;
    if (typeof id !== "string" || executions.get(id) !== "open") return;
    executions.set(
      id,
      event.type === "agent.tool_result" ? "closed" : raw.is_error === true ? "error" : "ok",
    );
  } else if (event.type === "user.tool_confirmation" && raw.result !== "allow") {
    const id = raw.tool_use_id;
    if (typeof id === "string" && executions.get(id) === "open") executions.set(id, "closed");
  } else if (
    event.kind === "status" && (event.status === "terminated" || event.status === "deleted") &&
    event.type !== "session.thread_status_terminated"
  ) {
    for (const [id, state] of executions) if (state === "open") executions.set(id, "closed");
  }
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

/**
 * When the runtime answers a request by itself (the fail-closed default): `pendingTimeoutMs`
 * after it was made.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deniedAtOf } from "./pending.ts";
 * assert.equal(deniedAtOf("2026-01-01T00:00:00.000Z", 600_000), "2026-01-01T00:10:00.000Z");
 * ```
 */
export function deniedAtOf(requestedAt: string, pendingTimeoutMs: number): string {
  const at = Date.parse(requestedAt);
  return new Date((Number.isNaN(at) ? 0 : at) + pendingTimeoutMs).toISOString();
}

/**
 * The `tool.pending` activity entries of a run's open requests (their key dedupes them, so
 * announcing a request twice records it once). Each keeps its input up to 16 KiB of JSON.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pendingActivity } from "./pending.ts";
 * const [entry] = pendingActivity({ runId: "sesn_1", principalId: "p" }, [{
 *   toolUseId: "sevt_1", kind: "confirmation", name: "bash", input: { command: "ls" },
 *   requestedAt: "2026-01-01T00:00:00.000Z",
 * }], { pendingTimeoutMs: 60_000, at: "2026-01-01T00:00:01.000Z" });
 * assert.equal(entry.type, "tool.pending");
 * assert.equal(entry.key, "pending:sevt_1");
 * ```
 */
export function pendingActivity(
  run: { runId: string; principalId: string },
  requests: readonly PendingToolRequest[],
  options: { pendingTimeoutMs: number; at: string },
): ActivityInput[] {
  return requests.map((request) => ({
    type: "tool.pending",
    at: options.at,
    runId: run.runId,
    principalId: run.principalId,
    toolUseId: request.toolUseId,
    kind: request.kind,
    name: request.name,
    requestedAt: request.requestedAt,
    deniedAt: deniedAtOf(request.requestedAt, options.pendingTimeoutMs),
    ...boundedInput(request.input),
    key: `pending:${request.toolUseId}`,
  }));
}
