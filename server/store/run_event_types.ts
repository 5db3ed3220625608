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
