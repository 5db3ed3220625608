/**
 * What a start or a follow-up reserves before it reaches the provider, for the run gateway
 * (`_start_run.ts`, `_run_messages.ts`): an active-run slot against the principal's and the
 * service's quotas and, for a principal with a budget or a `maxRunCost`, the run's spend hold, in
 * one atomic store step (`store.runs.reserveRun`); its release when the call leads nowhere; the 429 of a refusal; the
 * hold a follow-up asks for; and what the run's record says of its limits (its provider ceiling,
 * when its time is up). The rules are `spend.ts`'s. A reservation refused for the service-wide
 * limit first frees the slots of abandoned idle sessions (`idle_slots.ts`).
 *
 * @module
 */
import { InterfaceError } from "../errors.ts";
import type {
  GrantedHold,
  RunReservationResult,
  SpendHoldRequest,
  Store,
  StoredRunRecord,
} from "../store/types.ts";
import { budgetExceeded, holdRequest, holdsMoney, money, type SpendLimits } from "./spend.ts";
import { turnOf } from "./run_state.ts";
import { releaseIdleSlots } from "./idle_slots.ts";

/** Default service-wide active-run limit (`--max-active-runs`). */
export const DEFAULT_SERVICE_MAX_ACTIVE_RUNS = 1000;
/** How long a slot reservation holds while a start talks to the provider, in ms. */
export const RESERVATION_LEASE_MS = 5 * 60_000;
/** `Retry-After` of a quota refusal, in seconds. */
const QUOTA_RETRY_AFTER = "5";

/** Options of {@linkcode Reservations}. */
export interface ReservationsOptions {
  /** The store. */
  store: Store;
  /** The clock, ms since the epoch. */
  now: () => number;
  /** Service-wide active-run limit (default {@linkcode DEFAULT_SERVICE_MAX_ACTIVE_RUNS}). */
  serviceLimit?: number;
}

/** The reservations of one gateway (see the module doc). */
export class Reservations {
  readonly #store: Store;
  readonly #now: () => number;
  readonly #serviceLimit: number;
  /** The release of idle slots under way (concurrent refusals share it). */
  #releasing: Promise<number> | null = null;

  /** Creates them. */
  constructor(options: ReservationsOptions) {
    this.#store = options.store;
    this.#now = options.now;
    this.#serviceLimit = options.serviceLimit ?? DEFAULT_SERVICE_MAX_ACTIVE_RUNS;
  }

  /**
   * Reserves the slot `slotId` of `principalId`, with `hold` when there is one. When the
   * service-wide limit is full, the idle sessions of revoked or expired principals give their
   * slots back first (`idle_slots.ts`), and the reservation is tried once more if any did.
   */
  async reserve(
    principalId: string,
    slotId: string,
    principalLimit: number,
    hold: SpendHoldRequest | null,
  ): Promise<RunReservationResult> {
    const reserve = () =>
      this.#store.runs.reserveRun({
        principalId,
        slotId,
        principalLimit,
        serviceLimit: this.#serviceLimit,
        now: this.#now(),
        leaseMs: RESERVATION_LEASE_MS,
        ...(hold !== null ? { hold } : {}),
      });
    const reserved = await reserve();
    if (reserved.result !== "serviceQuota" || await this.#releaseIdle() === 0) return reserved;
    return await reserve();
  }

  /**
   * {@linkcode releaseIdleSlots} for every principal, one call at a time in this process; a
   * failure releases nothing (the refusal stands).
   */
  #releaseIdle(): Promise<number> {
    return this.#releasing ??= releaseIdleSlots(this.#store, { now: this.#now() })
      .catch(() => 0)
      .finally(() => this.#releasing = null);
  }

  /** Gives back a reservation that led nowhere: its slot and its hold (failures ignored). */
  async release(principalId: string, slotId: string, hold: SpendHoldRequest | null) {
    await this.#store.runs.releaseSlot(principalId, slotId).catch(() => {});
    await this.releaseHold(principalId, hold);
  }

  /** Gives back a hold that led nowhere, keeping the slot (failures ignored). */
  async releaseHold(principalId: string, hold: SpendHoldRequest | null) {
    if (hold !== null) await this.#store.spend.release(principalId, hold.holdId).catch(() => {});
  }

  /**
   * The 429 of a refused reservation: `runQuotaExceeded` (with `Retry-After: 5`) for a quota,
   * `budgetExceeded` for the budget or the run's cap.
   */
  refusal(
    reserved: Exclude<RunReservationResult, { result: "reserved" }>,
    limits: SpendLimits,
  ): InterfaceError {
    if (reserved.result !== "budgetExceeded") {
      return new InterfaceError(
        "runQuotaExceeded",
        reserved.result === "principalQuota"
          ? "The principal has as many active runs as its maxActiveRuns allows"
          : "The runtime has as many active runs as it allows",
        { headers: { "retry-after": QUOTA_RETRY_AFTER } },
      );
    }
    return budgetExceeded({
      limit: reserved.limit,
      left: reserved.left,
      now: this.#now(),
      ...(limits.budget !== null ? { period: limits.budget.period } : {}),
    });
  }

  /**
   * The hold of a follow-up to `record` (its next turn), in the period of a hold of the run
   * still open (so both count in one ledger), else the current one; null without limits. With
   * `fence` (the run is still active) it takes no new money while the run holds some
   * (`SpendHoldRequest.fence`).
   */
  async wakeHold(
    record: StoredRunRecord,
    limits: SpendLimits,
    options: { fence?: boolean } = {},
  ): Promise<SpendHoldRequest | null> {
    if (!holdsMoney(limits)) return null;
    const turn = turnOf(record) + 1;
    const open = limits.budget === null ? [] : await this.#store.spend.runHolds(record.runId);
    const request = holdRequest(limits, this.#now(), {
      holdId: `${record.runId}#${turn}`,
      turn,
      runId: record.runId,
      ...(open.length > 0 ? { openPeriod: open[0].period } : {}),
    });
    return request !== null && options.fence === true ? { ...request, fence: true } : request;
  }

  /** What a run's record says of its limits: its provider ceiling and when its time is up. */
  runLimits(
    limits: SpendLimits,
    granted: GrantedHold | undefined,
  ): Pick<StoredRunRecord, "maxListCost" | "timeLimitAt"> {
    return {
      ...(granted !== undefined ? { maxListCost: money(granted.ceiling) } : {}),
      ...(limits.maxRunSeconds !== null
        ? { timeLimitAt: this.#now() + limits.maxRunSeconds * 1000 }
        : {}),
    };
  }
}
