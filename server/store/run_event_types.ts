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
 * Wake-ups: a backend tells watchers of a run when its log grew (PostgreSQL `LISTEN/NOTIFY`,
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

/** Parameters of {@linkcode RunEventStore.acquireRunLease}. */
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

/** The event-log and lease operations of a store. */
export interface RunEventStore {
  /**
   * Appends the events whose `sourceId` the run's log does not hold yet, in order, numbering
   * them after the log's last `seq`; returns the entries appended (empty when all were known).
   * Wakes the run's watchers on every replica when anything was appended.
   */
  appendRunEvents(runId: string, events: readonly RunEventInput[]): Promise<RunEventEntry[]>;
  /** Up to `limit` entries of a run's log with `seq > after`, in order. */
  listRunEvents(runId: string, after: number, limit: number): Promise<RunEventEntry[]>;
  /**
   * Takes or renews the tail lease of a run: succeeds when no lease exists, the lease lapsed
   * (`leaseUntil <= now`) or `holder` holds it; the lease then holds until `now + ttlMs`.
   */
  acquireRunLease(params: RunLeaseParams): Promise<boolean>;
  /** Drops the lease of a run when `holder` holds it; a no-op otherwise. */
  releaseRunLease(runId: string, holder: string): Promise<void>;
  /**
   * Calls `listener` (soon, not necessarily at once) whenever the run's log may have grown, on
   * any replica, with the log's last `seq` when the backend knows it (Deno KV does; PostgreSQL's
   * notification does not say): a watcher holding that entry already need not read. Returns the
   * function that stops watching. Best effort: poll as well.
   */
  watchRunEvents(runId: string, listener: (last?: number) => void): () => void;
  /**
   * Deletes the logs (and leases) of runs that ended before `endedBefore` (RFC 3339); returns
   * how many entries went.
   */
  purgeRunEvents(endedBefore: string): Promise<number>;
}

/** How long a run's event log is kept after the run ended: 7 days. */
export const RUN_EVENT_RETENTION_MS = 7 * 86_400_000;
