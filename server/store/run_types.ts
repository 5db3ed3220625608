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
 * after its lease when its replica died. A run's slot is freed when its state becomes terminal,
 * except a session's that waits for its first turn ({@linkcode holdsRunSlot}).
 *
 * The shapes that also cross the wire (the public run record, audit entries and pages, the list
 * queries) are the wire contract's (`wire/`); the records here extend them with what the store
 * alone keeps.
 *
 * @module
 */
import type {
  AuditAction,
  AuditEntry,
  ListAuditParams,
  ListRunsParams,
  RunPage,
  RunRecord,
} from "../../wire/mod.ts";

import { ACTIVE_RUN_STATES } from "../../wire/mod.ts";
import type { GrantedHold, SpendHoldRequest } from "./spend.ts";

export { ACTIVE_RUN_STATES };
export type {
  AuditAction,
  AuditEntry,
  AuditPage,
  ExchangedToken,
  RuntimeRunState,
} from "../../wire/mod.ts";

/**
 * A run as the gateway records it: the public record (what the run routes answer with, see
 * `wire/runs.ts`) and the gateway's own bookkeeping, which never leaves the server.
 */
export interface StoredRunRecord extends RunRecord {
  /** Set by a cancel: the next idle (or termination) is reported as `cancelled`. */
  cancelRequested?: boolean;
  /**
   * How many user messages the gateway sent (the start's, then one per follow-up), so the run's
   * tail can tell a late end of an earlier turn from the end of the current one.
   */
  turns?: number;
  /**
   * When a reader last claimed the provider read of the run's status, ms since the epoch: the
   * budget every replica shares (at most one such read a second per run, `_provider_reads.ts`).
   */
  statusReadAt?: number;
  /** When a reader last claimed the provider read of the run's event history, ms (the same). */
  historyReadAt?: number;
  /**
   * When the run's current active stretch must end, ms since the epoch: its start or the
   * follow-up that woke it plus the principal's `maxRunSeconds` (its tail interrupts it then).
   */
  timeLimitAt?: number;
  /**
   * Set on a session started without a turn while it waits for its first: its state reads
   * `completed`, yet it holds an active-run slot (see {@linkcode holdsRunSlot}).
   */
  awaitingFirstTurn?: true;
}

/**
 * Whether a run holds an active-run slot: while its state is active, and while it waits for its
 * first turn (a session started without one), so idle sessions count against the quotas. The
 * store keeps or frees the slot by this in the write that records the run, and never purges a run
 * that holds one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { holdsRunSlot } from "./run_types.ts";
 * const run = {
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e",
 *   state: "completed" as const, lastEventSeq: 0, createdAt: "t", updatedAt: "t",
 * };
 * assert.equal(holdsRunSlot(run), false);
 * assert.equal(holdsRunSlot({ ...run, awaitingFirstTurn: true }), true);
 * assert.equal(holdsRunSlot({ ...run, state: "running" }), true);
 * ```
 */
export function holdsRunSlot(record: StoredRunRecord): boolean {
  return ACTIVE_RUN_STATES.has(record.state) || record.awaitingFirstTurn === true;
}

/** Parameters of {@linkcode RunStore.reserveRunSlot}. */
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
 * Result of {@linkcode RunStore.reserveRunSlot}: `reserved` (or the slot already existed), or
 * which limit was reached.
 */
export type RunSlotResult = "reserved" | "principalQuota" | "serviceQuota";

/** Parameters of `RunStore.reserveRun`: a slot and, for a principal with spend limits, a hold. */
export interface RunReservation extends RunSlotReservation {
  /** The hold to take with the slot (see `spend.ts`); absent: the run holds no money. */
  hold?: SpendHoldRequest;
}

/**
 * Result of `RunStore.reserveRun`: the slot was taken (with what its hold came to), a quota was
 * full, or nothing was left to hold: `left` is what the budget (`limit: "budget"`) or the run's
 * `maxRunCost` (`limit: "maxRunCost"`) still allows, zero or less than a minor unit's worth.
 */
export type RunReservationResult =
  | { result: "reserved"; hold?: GrantedHold }
  | { result: "principalQuota" | "serviceQuota" }
  | { result: "budgetExceeded"; limit: "budget" | "maxRunCost"; left: bigint };

/** Parameters of {@linkcode RunStore.listRuns}: the query of `GET /v1/runs`, its limit resolved. */
export interface RunListQuery extends ListRunsParams {
  /** Page size, 1 to 100. */
  limit: number;
}

/** A page of {@linkcode RunStore.listRuns}, newest first: stored records. */
export interface StoredRunPage extends RunPage {
  /** The runs. */
  runs: StoredRunRecord[];
}

/** An audit entry before the store gives it its `seq`. Never a bearer, key or message content. */
export interface AuditEntryInput extends Omit<AuditEntry, "seq" | "action"> {
  /** What happened. */
  action: AuditAction;
}

/** Parameters of {@linkcode RunStore.listAudit}: the query of `GET /v1/audit`, checked. */
export interface AuditListQuery extends ListAuditParams {
  /** Page size, 1 to 100. */
  limit: number;
  /** Only entries of this action. */
  action?: AuditAction;
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
  if (cursor.length === 0 || cursor.length > 512 || !/^[A-Za-z0-9_-]*$/.test(cursor)) return null;
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

/** Where a run list's page ends: its last run, by creation time then run id. */
export interface RunCursor {
  /** The run's `createdAt`. */
  createdAt: string;
  /** The run's id. */
  runId: string;
}

/**
 * The `nextCursor` of a run list whose page ended at `position`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeRunCursor, encodeRunCursor } from "./run_types.ts";
 * const position = { createdAt: "2026-01-01T00:00:00.000Z", runId: "sesn_1" };
 * assert.deepEqual(decodeRunCursor(encodeRunCursor(position)), position);
 * ```
 */
export function encodeRunCursor(position: RunCursor): string {
  return encodeCursor([position.createdAt, position.runId]);
}

/**
 * The position a run list's cursor names, or null when it is not a cursor of a run list: exactly
 * a creation time and a run id, each a non-empty string of at most 256 characters. Forged
 * shapes (`[]`, numbers, extra parts) are null like undecodable text, never "the first page".
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeRunCursor } from "./run_types.ts";
 * assert.equal(decodeRunCursor("W10"), null); // base64url of []
 * assert.equal(decodeRunCursor("garbage!"), null);
 * ```
 */
export function decodeRunCursor(cursor: string): RunCursor | null {
  const parts = decodeCursor(cursor);
  if (parts === null || parts.length !== 2) return null;
  const [createdAt, runId] = parts;
  if (
    typeof createdAt !== "string" || typeof runId !== "string" || createdAt.length === 0 ||
    runId.length === 0 || createdAt.length > 256 || runId.length > 256
  ) {
    return null;
  }
  return { createdAt, runId };
}

/**
 * The `nextCursor` of an audit list whose page ended at the entry `seq`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeAuditCursor, encodeAuditCursor } from "./run_types.ts";
 * assert.equal(decodeAuditCursor(encodeAuditCursor(42)), 42);
 * ```
 */
export function encodeAuditCursor(seq: number): string {
  return encodeCursor([seq]);
}

/**
 * The seq an audit list's cursor names, or null when it is not a cursor of the audit list:
 * exactly one whole number of at least 1.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeAuditCursor, encodeCursor } from "./run_types.ts";
 * assert.equal(decodeAuditCursor(encodeCursor([0])), null);
 * assert.equal(decodeAuditCursor(encodeCursor(["7"])), null);
 * ```
 */
export function decodeAuditCursor(cursor: string): number | null {
  const parts = decodeCursor(cursor);
  if (parts === null || parts.length !== 1) return null;
  const seq = parts[0];
  return typeof seq === "number" && Number.isSafeInteger(seq) && seq >= 1 ? seq : null;
}

/**
 * The error a store's list throws for a cursor that is not one of its own (the routes refuse
 * such a cursor with 422 before the store sees it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { invalidCursor } from "./run_types.ts";
 * assert.equal(invalidCursor().name, "RangeError");
 * ```
 */
export function invalidCursor(): RangeError {
  return new RangeError("Not a cursor of this list");
}
