/**
 * The run event log and the tail leases, as every store backend keeps them.
 *
 * Event log: each run has one append-only log, `seq` 1, 2, 3 … without gaps, never rewritten.
 * Each entry is a run event (`RunStreamEvent`) with its `seq`, the time it was appended (`at`)
 * and `sourceId`, the id of the provider event it came from, unique within the run: appending an
 * entry whose `sourceId` the log already holds is a no-op, so a tail that re-reads the provider's
 * history after a reconnect or a takeover never repeats an event. An append is atomic against
 * other appends to the same run (two tails racing over a lease hand-over still leave no gap and
 * no duplicate). Entries of runs that ended more than 7 days ago are purged.
 *
 * Tail leases: one record per tailed run naming the replica that tails it and until when. A
 * replica takes a lease that is free, lapsed or its own (renewing it); anything else is refused.
 *
 * Native log: beside the run events, each run keeps the provider's own session events as the
 * provider wrote them (the JSON text, unchanged: same id, same fields, same field order), each
 * with its own `seq` 1, 2, 3 … without gaps, and unique by the provider event id. The `/provider`
 * interface serves its event pages and streams from it. A batch of run events and the native
 * events they came from is appended in one store write ({@linkcode EventBatch}).
 *
 * Wake-ups: a backend tells watchers of a run when either log grew (PostgreSQL `LISTEN/NOTIFY`,
 * Deno KV `watch`). Watchers must not rely on it alone: they poll at least once a second.
 *
 * @module
 */
import type { RunStreamEvent } from "../../client/contract.ts";

/** An event to append: the run event, its provider event id and the time. */
export interface RunEventInput {
  /** The provider event it came from (unique within the run; see `docs/runs.md`). */
  sourceId: string;
  /** RFC 3339 time of the append. */
  at: string;
  /** The run event. */
  event: RunStreamEvent;
}

/** An entry of a run's event log. */
export interface RunEventEntry extends RunEventInput {
  /** Position in the run's log, from 1, without gaps. */
  seq: number;
}

/** A provider session event to keep as the provider sent it (the native log). */
export interface NativeEventInput {
  /** The provider event's id (unique within the run: a known id is not appended again). */
  id: string;
  /** The event's `type`, such as `agent.message`. */
  type: string;
  /** The event as the provider sent it: its JSON text, kept byte for byte. */
  json: string;
}

/** An entry of a run's native log. */
export interface NativeEventEntry extends NativeEventInput {
  /** Position in the run's native log, from 1, without gaps. */
  seq: number;
}

/** What one store write appends to a run's logs: run events and the provider events behind them. */
export interface EventBatch {
  /** Run events, appended unless their `sourceId` is known. */
  events: readonly RunEventInput[];
  /** Provider events, appended to the native log unless their `id` is known. */
  native?: readonly NativeEventInput[];
}

/** What {@linkcode EventBatch} appended, in order. */
export interface AppendedBatch {
  /** The run events appended. */
  events: RunEventEntry[];
  /** The native entries appended. */
  native: NativeEventEntry[];
}

/** A read of a run's native log: entries after a seq (ascending) or before one (descending). */
export interface NativeEventQuery {
  /** `asc`: entries with `seq > after`, oldest first; `desc`: `seq < before`, newest first. */
  order: "asc" | "desc";
  /** Ascending reads start after this seq (default 0). */
  after?: number;
  /** Descending reads start before this seq (default: from the newest). */
  before?: number;
  /** Most entries. */
  limit: number;
}

/**
 * The head of a run's logs, as a watch reports it when the backend knows it: the last seq of the
 * run events and of the native log.
 */
export interface LogHead {
  /** The last run event seq. */
  seq: number;
  /** The last native seq. */
  native: number;
}

/** Options of `RunEventStore.appendBatch`. */
export interface AppendOptions {
  /**
   * The lease holder the append is made for (a fencing token): the store appends only while
   * this holder holds the run's tail lease, and otherwise fails with `RunLeaseLostError`,
   * writing nothing. Without it the append does not look at the lease.
   */
  holder?: string;
}

/** Parameters of `RunEventStore.acquireLease`. */
export interface RunLeaseParams {
  /** The run. */
  runId: string;
  /** The replica asking (a random id per process). */
  holder: string;
  /** Current time, ms since the epoch. */
  now: number;
  /** How long the lease holds from `now`, in ms. */
  ttlMs: number;
}

/** How long a finished run (its record and its event log) is kept after it ended: 7 days. */
export const RUN_EVENT_RETENTION_MS = 7 * 86_400_000;
