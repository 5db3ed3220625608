/**
 * The run gateway's records in the store: run records with a by-principal index, the active-run
 * slots behind the quotas, and the append-only audit log. The parts that keep them are
 * `RunStore` (`runs.ts`) and `AuditStore` (`audit.ts`).
 *
 * Active-run slots: a principal holds one slot per active run, plus short-lived reservations
 * while a start (or a follow-up message that wakes a finished run) talks to the provider. A
 * reservation is taken atomically against both limits (the principal's `maxActiveRuns` and the
 * service's `--max-active-runs`), so replicas sharing the store never admit more than allowed; it
 * becomes the run's slot when the run is recorded, is released when the start fails, and lapses
 * after its lease when its replica died. A run's slot is freed when its state becomes terminal.
 *
 * @module
 */

/** Where a run is in its life (the run contract's states). */
export type RunState =
  | "queued"
  | "running"
  | "requires_action"
  | "completed"
  | "failed"
  | "cancelled";

/** The states in which a run holds an active-run slot. */
export const ACTIVE_RUN_STATES: ReadonlySet<RunState> = new Set<RunState>([
  "queued",
  "running",
  "requires_action",
]);

/** A run as the gateway records it. `runId` is the provider's session id. */
export interface RunRecord {
  /** The provider's session id. */
  runId: string;
  /** The principal that started it. */
  principalId: string;
  /** The agent it runs. */
  agentId: string;
  /** The agent version, when pinned. */
  agentVersion?: number;
  /** The environment it runs in. */
  environmentId: string;
  /** Optional title. */
  title?: string;
  /** Current state. */
  state: RunState;
  /** Why it stopped, when the provider said. */
  stopReason?: string;
  /** Token usage, when the provider reported it. */
  usage?: Record<string, number>;
  /** Seq of the last event in its log (0 until the event log exists). */
  lastEventSeq: number;
  /** RFC 3339 creation time. */
  createdAt: string;
  /** RFC 3339 time of the last change. */
  updatedAt: string;
  /** RFC 3339 time it reached a terminal state. */
  endedAt?: string;
  /** Set by a cancel: the next idle (or termination) is reported as `cancelled`. */
  cancelRequested?: boolean;
  /**
   * Internal: how many user messages the gateway sent (the start's, then one per follow-up), so
   * the run's tail can tell a late end of an earlier turn from the end of the current one.
   */
  turns?: number;
}

/** Parameters of `RunStore.reserveSlot`. */
export interface RunSlotReservation {
  /** The principal the slot counts against. */
  principalId: string;
  /** The slot: a fresh id for a start, the run id for a follow-up that wakes a finished run. */
  slotId: string;
  /** The principal's `maxActiveRuns`. */
  principalLimit: number;
  /** The service's limit over every principal. */
  serviceLimit: number;
  /** Current time, ms since the epoch. */
  now: number;
  /** How long the reservation holds before it lapses, in ms. */
  leaseMs: number;
}

/**
 * Result of `RunStore.reserveSlot`: `reserved` (or the slot already existed), or
 * which limit was reached.
 */
export type RunSlotResult = "reserved" | "principalQuota" | "serviceQuota";

/** Parameters of `RunStore.list`. */
export interface ListRunsParams {
  /** Only this principal's runs; absent: every principal's. */
  principalId?: string;
  /** Only runs in this state. */
  state?: RunState;
  /** Page size, 1 to 100. */
  limit: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

/** A page of runs, newest first. */
export interface RunPage {
  /** The runs. */
  runs: RunRecord[];
  /** The cursor of the next page, or null at the end. */
  nextCursor: string | null;
}

/** Actions the audit log records. */
export type AuditAction =
  | "principal.issued"
  | "principal.revoked"
  | "run.started"
  | "run.message"
  | "run.cancelled"
  | "tool.confirmed"
  | "tool.responded"
  | "webhook.accepted";

/** Every audit action, in canonical order. */
export const AUDIT_ACTIONS: readonly AuditAction[] = Object.freeze(
  [
    "principal.issued",
    "principal.revoked",
    "run.started",
    "run.message",
    "run.cancelled",
    "tool.confirmed",
    "tool.responded",
    "webhook.accepted",
  ] as const,
);

/** An audit entry before the store gives it its `seq`. Never a bearer, key or message content. */
export interface AuditEntryInput {
  /** RFC 3339 time. */
  at: string;
  /** What happened. */
  action: AuditAction;
  /** The principal that did it. */
  actorId: string;
  /** The principal it was done to, when any. */
  subjectId?: string;
  /** The run it concerned, when any. */
  runId?: string;
  /** The request's correlation id. */
  correlationId: string;
  /** How it ended: `ok`, or a stable error code. */
  outcome: string;
}

/** An audit entry as stored: with its `seq`, increasing in the order entries were appended. */
export interface AuditEntry extends AuditEntryInput {
  /** Position in the log, starting at 1. */
  seq: number;
}

/** Parameters of `AuditStore.list`. */
export interface ListAuditParams {
  /** Page size, 1 to 100. */
  limit: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
  /** Only entries whose actor or subject is this principal. */
  principalId?: string;
  /** Only entries of this action. */
  action?: AuditAction;
}

/** A page of audit entries, newest first. */
export interface AuditPage {
  /** The entries. */
  entries: AuditEntry[];
  /** The cursor of the next page, or null at the end. */
  nextCursor: string | null;
}

/**
 * Encodes a keyset cursor (opaque to callers).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeCursor, encodeCursor } from "./run_types.ts";
 * assert.deepEqual(decodeCursor(encodeCursor(["a", 1])), ["a", 1]);
 * ```
 */
export function encodeCursor(parts: readonly (string | number)[]): string {
  const bytes = new TextEncoder().encode(JSON.stringify(parts));
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/**
 * Decodes a cursor from {@linkcode encodeCursor}, or returns null for anything else.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeCursor } from "./run_types.ts";
 * assert.equal(decodeCursor("not a cursor"), null);
 * ```
 */
export function decodeCursor(cursor: string): (string | number)[] | null {
  if (cursor.length > 512 || !/^[A-Za-z0-9_-]*$/.test(cursor)) return null;
  try {
    const binary = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    const parts = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    if (
      !Array.isArray(parts) ||
      !parts.every((p) => typeof p === "string" || (typeof p === "number" && Number.isFinite(p)))
    ) {
      return null;
    }
    return parts;
  } catch {
    return null;
  }
}
