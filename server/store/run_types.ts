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

export { ACTIVE_RUN_STATES } from "../../wire/mod.ts";
export type { AuditAction, AuditEntry, AuditPage, RuntimeRunState } from "../../wire/mod.ts";

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
