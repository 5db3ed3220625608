/**
 * The runs part of the store (`store.runs`): run records with their by-principal and by-time
 * order, and the active-run slots behind the quotas (what a slot is: see `run_types.ts`).
 *
 * One write crosses from a slot to a run: {@linkcode RunStore.create} turns the reservation the
 * start took ({@linkcode RunStore.reserveSlot}) into the run's own slot in the same atomic step as
 * the run's record, so a run is never recorded without its slot nor a slot left behind by a
 * recorded run. Likewise {@linkcode RunStore.update} frees or keeps the run's slot in the step
 * that writes its state.
 *
 * @module
 */
import type { IdempotencyCompletion } from "./idempotency.ts";
import type { ActivityInput } from "./activity.ts";
import type {
  RunListQuery,
  RunReservation,
  RunReservationResult,
  RunSlotReservation,
  RunSlotResult,
  StoredRunPage,
  StoredRunRecord,
} from "./run_types.ts";

/** The run records and active-run slots of the store's namespace. */
export interface RunStore {
  /**
   * Takes an active-run slot atomically against both limits, counting live reservations and the
   * slots of active runs. A slot that already exists is `reserved` without counting again.
   * Lapsed reservations are dropped before a refusal.
   */
  reserveSlot(params: RunSlotReservation): Promise<RunSlotResult>;
  /**
   * {@linkcode RunStore.reserveSlot} with a spend hold taken in the same atomic step: after both
   * quotas, the hold takes the least of what the budget has left (its ledger's limit less spent
   * and reserved) and what the run's cap has left (less what the run settled and holds), and the
   * slot is refused (`budgetExceeded`, nothing written) when that is nothing. A slot or hold
   * that already exists is answered as it is. Lapsed holds of the principal are dropped (and
   * given back) before a refusal, like lapsed reservations.
   */
  reserveRun(params: RunReservation): Promise<RunReservationResult>;
  /** Drops a reservation (a start that failed); a no-op when it is gone. */
  releaseSlot(principalId: string, slotId: string): Promise<void>;
  /** How many active-run slots (with live reservations) a principal, or the service, holds. */
  countSlots(principalId: string | null, now: number): Promise<number>;
  /**
   * The sessions of a principal (or of every principal) that wait for their first turn and so
   * hold a slot (`awaitingFirstTurn`), at most `limit` of them, in no particular order. Found
   * through the slots, not the runs: it reads no more records than slots are held. Ending a
   * wait is an {@linkcode RunStore.update} of the record (compare-and-set with the record read
   * here), which frees the slot in the same atomic step.
   */
  idleRuns(principalId: string | null, limit: number): Promise<StoredRunRecord[]>;
  /**
   * Records a new run and, in the same atomic step, turns the reservation `slotId` into the run's
   * own slot (or drops it when the run is already terminal), gives the hold of the same id (if
   * any) its run, and, with `completion`, completes the
   * start's idempotency claim with its answer, so a start is never recorded without its answer
   * (a retry with the key finds the run, whatever happens after this write). When `completion`'s
   * token no longer owns the claim nothing is written and it throws `IdempotencyLeaseLostError`.
   * `activity` is appended to the activity log in the same step.
   */
  create(
    record: StoredRunRecord,
    slotId: string,
    completion?: IdempotencyCompletion,
    activity?: readonly ActivityInput[],
  ): Promise<void>;
  /** Reads one run. */
  get(runId: string): Promise<StoredRunRecord | null>;
  /**
   * Replaces a run's record; in the same atomic step a terminal state frees the run's slot and
   * an active one keeps (or takes) it. With `expected` (the record as the caller read it) it is a
   * compare-and-set: it writes only while the stored record still equals `expected`, and returns
   * false, having written nothing, when another writer changed it (or it is gone). Without
   * `expected` the last writer wins, and it returns true. `activity` is appended to the activity
   * log in the same step (skipping inputs whose key the run's log holds), only when it writes.
   */
  update(
    record: StoredRunRecord,
    expected?: StoredRunRecord,
    activity?: readonly ActivityInput[],
  ): Promise<boolean>;
  /**
   * Lists runs newest first (by `createdAt`, then run id). A state-filtered list reads only the
   * runs in that state (each backend indexes runs by state). A cursor that is not a `nextCursor`
   * of this list is refused (`RangeError`), never read as the first page.
   */
  list(params: RunListQuery): Promise<StoredRunPage>;
  /**
   * Deletes the runs that ended before `endedBefore` (RFC 3339): their records and indexes. The
   * events part purges their logs first, at the same cutoff (it finds them through the records).
   * A run woken by a follow-up meanwhile stays. Returns how many runs went.
   */
  purgeEnded(endedBefore: string): Promise<number>;
}
