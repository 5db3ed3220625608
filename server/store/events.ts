/**
 * The events part of the store (`store.events`): each run's append-only event log, the tail
 * leases that let one replica at a time tail a run, and the wake-ups that tell watchers a log
 * grew (what a log entry and a lease are: see `run_event_types.ts`).
 *
 * The events part reads nothing of the runs part but which runs ended before a time, for its
 * purge, through the accessor the runs part of its backend exports.
 *
 * @module
 */
import type {
  AppendedBatch,
  AppendOptions,
  EventBatch,
  LogHead,
  NativeEventEntry,
  NativeEventQuery,
  RunEventEntry,
  RunEventInput,
  RunLeaseParams,
} from "./run_event_types.ts";

/** The run event logs and tail leases of the store's namespace. */
export interface RunEventStore {
  /**
   * Appends the events whose `sourceId` the run's log does not hold yet, in order, numbering
   * them after the log's last `seq`; returns the entries appended (empty when all were known).
   * Wakes the run's watchers on every replica when anything was appended.
   */
  append(runId: string, events: readonly RunEventInput[]): Promise<RunEventEntry[]>;
  /**
   * Appends a batch to both of a run's logs in one store write (see {@linkcode EventBatch}):
   * the run events whose `sourceId` the log does not hold and the native events whose `id` the
   * native log does not hold, each numbered after its log's last `seq`. Returns what was appended.
   * Wakes the run's watchers on every replica when anything was appended.
   *
   * With `options.holder` the append is fenced: it is made only while that holder holds the
   * run's tail lease, checked in the same store write (no clock involved: a lease another
   * holder took refuses it, the holder's own renewals do not), and fails with
   * {@linkcode RunLeaseLostError}, appending nothing, otherwise.
   */
  appendBatch(runId: string, batch: EventBatch, options?: AppendOptions): Promise<AppendedBatch>;
  /**
   * Up to `limit` (a whole number) entries of a run's log with `seq > after`, in order; none for
   * a limit below 1.
   */
  list(runId: string, after: number, limit: number): Promise<RunEventEntry[]>;
  /** Up to `query.limit` (a whole number) entries of a run's native log, in the query's order; none below 1. */
  listNative(runId: string, query: NativeEventQuery): Promise<NativeEventEntry[]>;
  /**
   * Takes or renews the tail lease of a run: succeeds when no lease exists, the lease lapsed
   * (`leaseUntil <= now`) or `holder` holds it; the lease then holds until `now + ttlMs`.
   */
  acquireLease(params: RunLeaseParams): Promise<boolean>;
  /** Drops the lease of a run when `holder` holds it; a no-op otherwise. */
  releaseLease(runId: string, holder: string): Promise<void>;
  /**
   * Calls `listener` (soon, not necessarily at once) whenever either of the run's logs may have
   * grown, on any replica, with the log's last `seq` and the head of both logs when the backend
   * knows them (Deno KV does; PostgreSQL's notification does not say): a watcher holding that
   * entry already need not read. Returns the function that stops watching. Best effort: poll as
   * well.
   */
  watch(runId: string, listener: (last?: number, head?: LogHead) => void): () => void;
  /**
   * Deletes both logs (and the leases) of runs that ended before `endedBefore` (RFC 3339); returns
   * how many entries went.
   */
  purge(endedBefore: string): Promise<number>;
}

/**
 * Raised by `RunEventStore.appendBatch` with a `holder` that no longer holds the run's tail
 * lease (another replica took it, or it was released); nothing was appended.
 */
export class RunLeaseLostError extends Error {
  /** Stable error code. */
  readonly code = "runLeaseLost" as const;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RunLeaseLostError } from "./events.ts";
   * const error = new RunLeaseLostError("run_1");
   * assert.equal(error.name, "RunLeaseLostError");
   * assert.equal(error.runId, "run_1");
   * ```
   */
  constructor(readonly runId: string) {
    super("The run's tail lease is held by another holder: nothing was appended");
    this.name = "RunLeaseLostError";
  }
}
