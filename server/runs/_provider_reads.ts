/**
 * The provider reads that callers' reads of an active run may cause, budgeted: the run's status
 * (`GET /v1/runs/{runId}`, and the refresh of a principal's runs when a start finds its quota
 * full) and its event history (`GET /v1/runs/{runId}/pending`). Both go out on the service's one
 * provider key, so without a budget one principal reading in a loop could spend the provider's
 * rate limit for everyone.
 *
 * The budget: the provider is asked for each kind at most once a second per run, across callers
 * and replicas.
 *
 * - **One read in flight per run and kind on a replica.** Callers arriving while it runs wait for
 *   it (each within its own deadline) rather than asking again.
 * - **A stored "read at" per run and kind** (`statusReadAt`, `historyReadAt` on the run record):
 *   a read first claims the budget with a compare-and-set of that time; while it is younger than
 *   a second, another replica's reader does not ask the provider. A status reader then answers
 *   the record as it stands (the claiming replica writes what it learns to the same record, and
 *   the run's tail keeps it current meanwhile); a history reader answers this replica's last
 *   history of the run when it has one, else waits for the budget (at most a second).
 * - **History kept for a second on a replica** (at most {@linkcode MAX_KEPT_HISTORIES} runs), so
 *   readers within the second share one listing.
 *
 * A read in flight runs under its own timeout ({@linkcode PROVIDER_READ_TIMEOUT_MS}), not under
 * the first caller's deadline: a caller that gives up does not fail the others.
 *
 * @module
 */
import { ProviderAbortError } from "../../client/errors.ts";
import type { Store, StoredRunRecord } from "../store/types.ts";
import { changeRun } from "./_change_run.ts";

/** The budget: at most one provider read of each kind per run in this many ms. */
export const PROVIDER_READ_INTERVAL_MS = 1_000;
/** How long one budgeted provider read may take, in ms. */
export const PROVIDER_READ_TIMEOUT_MS = 30_000;
/** Runs whose last history this replica keeps (for a second each). */
export const MAX_KEPT_HISTORIES = 32;

/** The stored times of the budget, on the run record. */
type ReadAtField = "statusReadAt" | "historyReadAt";

/** Options of {@linkcode ProviderReads}. */
export interface ProviderReadsOptions {
  /** The store holding the run records. */
  store: Store;
  /** The clock, ms since the epoch. */
  now: () => number;
  /** The budget's interval in ms (default {@linkcode PROVIDER_READ_INTERVAL_MS}). */
  intervalMs?: number;
}

/** A history read of a run, kept for the interval. */
interface KeptHistory {
  readonly at: number;
  readonly value: unknown;
}

/** Budgeted provider reads of active runs (see the module doc). */
export class ProviderReads {
  readonly #store: Store;
  readonly #now: () => number;
  readonly #intervalMs: number;
  readonly #statusReads = new Map<string, Promise<StoredRunRecord>>();
  readonly #historyReads = new Map<string, Promise<unknown>>();
  readonly #histories = new Map<string, KeptHistory>();

  /** Creates the budget over the store's run records. */
  constructor(options: ProviderReadsOptions) {
    this.#store = options.store;
    this.#now = options.now;
    this.#intervalMs = options.intervalMs ?? PROVIDER_READ_INTERVAL_MS;
  }

  /**
   * The run's record, brought up to date by `refresh` (which reads the provider and writes what
   * it learnt) when the budget allows: the record as it stands when its status was read less than
   * a second ago on any replica, else the read in flight on this replica, else a new one.
   */
  status(
    record: StoredRunRecord,
    signal: AbortSignal,
    refresh: (claimed: StoredRunRecord, signal: AbortSignal) => Promise<StoredRunRecord>,
  ): Promise<StoredRunRecord> {
    if (this.#fresh(record.statusReadAt)) return Promise.resolve(record);
    const runId = record.runId;
    let read = this.#statusReads.get(runId);
    if (read === undefined) {
      read = (async () => {
        const claimed = await this.#claim(runId, "statusReadAt", record);
        // Another replica asked within the second: its answer is (or will be) in the record.
        if (claimed === null) return await this.#store.runs.get(runId) ?? record;
        return await refresh(claimed, AbortSignal.timeout(PROVIDER_READ_TIMEOUT_MS));
      })().finally(() => this.#statusReads.delete(runId));
      this.#statusReads.set(runId, read);
    }
    return within(read, signal);
  }

  /**
   * The run's provider history as `read` returns it, read at most once a second per run across
   * callers and replicas (see the module doc).
   */
  history<T>(
    record: StoredRunRecord,
    signal: AbortSignal,
    read: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const runId = record.runId;
    const kept = this.#histories.get(runId);
    if (kept !== undefined && this.#fresh(kept.at)) return Promise.resolve(kept.value as T);
    let reading = this.#historyReads.get(runId) as Promise<T> | undefined;
    if (reading === undefined) {
      reading = this.#readHistory(record, read).finally(() => this.#historyReads.delete(runId));
      this.#historyReads.set(runId, reading);
    }
    return within(reading, signal);
  }

  async #readHistory<T>(
    record: StoredRunRecord,
    read: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const runId = record.runId;
    const timeout = AbortSignal.timeout(PROVIDER_READ_TIMEOUT_MS);
    let current: StoredRunRecord = record;
    for (;;) {
      const claimed = await this.#claim(runId, "historyReadAt", current);
      if (claimed !== null) break;
      // Another replica listed the history within the second: this replica's last listing, when
      // it has one, else wait for the budget.
      const kept = this.#histories.get(runId);
      if (kept !== undefined) return kept.value as T;
      current = await this.#store.runs.get(runId) ?? current;
      const wait = (current.historyReadAt ?? 0) + this.#intervalMs - this.#now();
      await sleep(Math.min(Math.max(wait, 1), this.#intervalMs), timeout);
      if (timeout.aborted) throw new ProviderAbortError({ cause: timeout.reason });
    }
    const value = await read(timeout);
    this.#keep(runId, value);
    return value;
  }

  #keep(runId: string, value: unknown): void {
    const now = this.#now();
    this.#histories.delete(runId);
    for (const [id, kept] of this.#histories) {
      if (this.#histories.size < MAX_KEPT_HISTORIES && this.#fresh(kept.at)) break;
      this.#histories.delete(id);
    }
    this.#histories.set(runId, { at: now, value });
  }

  /** Whether a read at `at` (ms) is within the budget's interval. */
  #fresh(at: number | undefined): boolean {
    return at !== undefined && this.#now() - at < this.#intervalMs;
  }

  /**
   * Claims the budget of one kind for a run: sets its stored read time to now when it is older
   * than the interval, as a compare-and-set. The record claimed, or null when another reader
   * (here or on another replica) holds the budget (or the run is gone).
   */
  async #claim(
    runId: string,
    field: ReadAtField,
    read: StoredRunRecord,
  ): Promise<StoredRunRecord | null> {
    let claimed: StoredRunRecord | null = null;
    await changeRun(this.#store, runId, (current) => {
      claimed = null;
      if (this.#fresh(current[field])) return null;
      claimed = { ...current, [field]: this.#now() };
      return claimed;
    }, read);
    return claimed;
  }
}

/** `promise`, or a rejection with `ProviderAbortError` once `signal` fires (the caller's deadline). */
function within<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new ProviderAbortError({ cause: signal.reason }));
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(new ProviderAbortError({ cause: signal.reason }));
    signal.addEventListener("abort", abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
