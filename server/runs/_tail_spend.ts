/**
 * What a run's tail does for spend (`tail.ts` holds the tail itself; the rules are `spend.ts`'s):
 *
 * - **Settlement**: every point where a turn waited for a tool answer or ended (the mapping's
 *   `TurnMark`s) is settled with the usage the provider reported by then
 *   (`store.spend.settle`); a turn of a run that holds money that ended without a reported cost
 *   is settled with the session's usage read from the provider, when it has one (a run that
 *   holds nothing and reported no usage has nothing to settle). A turn the provider stopped at the
 *   run's ceiling is audited (`budget.exhausted`), and settled cost is counted for the metrics.
 * - **Time limits**: the tail arms a timer for the run's `timeLimitAt`; when it fires while the run
 *   is active, the session is interrupted and the run marked `cancelled` with
 *   `stopReason: "timeLimit"` (audited as `run.cancelled` by the `runtime`). A tail that (re)connects
 *   to a run its time limit ended interrupts it again until an interrupt of its own reached the
 *   provider: a takeover or a reconnect never leaves a timed-out session spending.
 * - **Held runs**: the scan's sweep of holds given to runs: a finished run that still holds money
 *   for a turn it recorded is handed to a tail (its history settles it), and so is a run with a
 *   hold of a turn it never recorded once that hold's lease passed: its follow-up may have reached
 *   the provider before its replica died. The tail settles such a turn when the session's history
 *   has it, and gives the hold back when it does not (`dropUnsent`); a hold of a run that is gone
 *   goes at once.
 *
 * @module
 */
import type { ProviderManagedAgentClient } from "../../client/mod.ts";
import type { RuntimeLogger } from "../log.ts";
import type { Store, TokenCounts } from "../store/types.ts";
import { appendAudit } from "./audit.ts";
import { changeRun } from "./_change_run.ts";
import { isSessionGone } from "./provider_failure.ts";
import { afterTimeLimit, endedByTimeLimit, isTerminal, turnOf } from "./run_state.ts";
import { type UsageReport, usageReportOf } from "./spend.ts";
import type { TurnMark } from "./_tail_mapper.ts";

/** How soon a time limit's interrupt is tried again when the provider could not be reached. */
const TIME_LIMIT_RETRY_MS = 5_000;
/** The longest wait for the provider's answer to an interrupt or a read of a session's usage. */
const PROVIDER_CALL_MS = 10_000;
/** Holds looked at per sweep. */
const SWEEP_LIMIT = 1_000;

/** Where a turn's end is marked past every turn: the session is gone, every hold settles. */
export const EVERY_TURN = Number.MAX_SAFE_INTEGER;

const NO_TOKENS: TokenCounts = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadInputTokens: 0,
  cacheCreationInputTokens: 0,
});

/** What the spend work of a tail reads and keeps of it. */
export interface TailSpendState {
  /** Aborted when the tail stops. */
  readonly controller: AbortController;
  /** The run's owner and agent, once read. */
  owner: { principalId: string; agentId: string } | null;
  /** Fires when the run's time limit passes (or its interrupt is tried again). */
  timeLimit: ReturnType<typeof setTimeout> | undefined;
  /** Whether this tail's interrupt of the run's time limit reached the provider. */
  interrupted?: boolean;
}

/** Options of {@linkcode TailSpend}. */
export interface TailSpendOptions {
  /** The store. */
  store: Store;
  /** Log sink. */
  logger: RuntimeLogger;
  /** The provider client, loaded on first use. */
  client: () => Promise<ProviderManagedAgentClient>;
  /** The clock, ms since the epoch. */
  now: () => number;
  /** Told of list cost settled here, by agent (the metrics). */
  onListCost?: (agentId: string, amount: bigint) => void;
}

/** The spend work of one replica's tails (see the module doc). */
export class TailSpend {
  readonly #store: Store;
  readonly #logger: RuntimeLogger;
  readonly #client: () => Promise<ProviderManagedAgentClient>;
  readonly #now: () => number;
  readonly #onListCost: (agentId: string, amount: bigint) => void;

  /** Creates it. */
  constructor(options: TailSpendOptions) {
    this.#store = options.store;
    this.#logger = options.logger;
    this.#client = options.client;
    this.#now = options.now;
    this.#onListCost = options.onListCost ?? (() => {});
  }

  /**
   * Reads the run's owner and its time limit; arms the interrupt for when the limit passes.
   * Returns false when the run is gone.
   */
  async keepTime(runId: string, tail: TailSpendState): Promise<boolean> {
    const record = await this.#store.runs.get(runId);
    if (record === null) return false;
    tail.owner = { principalId: record.principalId, agentId: record.agentId };
    clearTimeout(tail.timeLimit);
    tail.timeLimit = undefined;
    const limit = record.timeLimitAt;
    if (limit !== undefined && !isTerminal(record.state)) {
      tail.timeLimit = setTimeout(
        () => this.#timeUp(runId, tail),
        Math.min(Math.max(limit - this.#now(), 0), 2 ** 31 - 1),
      );
    } else if (endedByTimeLimit(record) && tail.interrupted !== true) {
      // Its time ran out, and no interrupt of this tail reached the provider (a takeover, or a
      // reconnect that dropped the retry above): interrupt it (again), or it spends on.
      void this.#interrupt(runId, tail);
    }
    return true;
  }

  /**
   * The run's time ran out: marks it cancelled with `stopReason: "timeLimit"` (audited), then
   * interrupts its session (`#interrupt`); the tail follows it to the provider's end. Marking
   * first, the record says why it ended whatever a read of the provider's status says meanwhile.
   */
  async #timeUp(runId: string, tail: TailSpendState): Promise<void> {
    const signal = tail.controller.signal;
    if (signal.aborted) return;
    try {
      const record = await this.#store.runs.get(runId);
      if (record === null || isTerminal(record.state)) return;
      if (record.timeLimitAt !== undefined && record.timeLimitAt > this.#now()) {
        // A follow-up moved the limit on: arm it again.
        await this.keepTime(runId, tail);
        return;
      }
      const at = new Date(this.#now()).toISOString();
      const marked = await changeRun(
        this.#store,
        runId,
        (current) => afterTimeLimit(current, at),
        record,
      );
      // Ended otherwise first (its turn's end, a cancel): nothing to interrupt.
      if (marked?.stopReason !== "timeLimit" || marked.updatedAt !== at) return;
      this.#logger.info("run time limit reached", { runId });
      await appendAudit(this.#store, this.#logger, {
        at,
        action: "run.cancelled",
        actorId: "runtime",
        subjectId: record.principalId,
        runId,
        correlationId: crypto.randomUUID(),
        outcome: "timeLimit",
      });
    } catch (error) {
      if (signal.aborted) return;
      this.#logger.error("run time limit failed", { runId, errorName: (error as Error)?.name });
      tail.timeLimit = setTimeout(() => this.#timeUp(runId, tail), TIME_LIMIT_RETRY_MS);
      return;
    }
    await this.#interrupt(runId, tail);
  }

  /**
   * Interrupts the session of a run whose time ran out; a provider that cannot be reached is
   * asked again every 5 s while the tail follows the run.
   */
  async #interrupt(runId: string, tail: TailSpendState): Promise<void> {
    const signal = tail.controller.signal;
    if (signal.aborted) return;
    try {
      const client = await this.#client();
      await client.cancelRun(runId, {
        signal: AbortSignal.any([signal, AbortSignal.timeout(PROVIDER_CALL_MS)]),
      });
      tail.interrupted = true;
    } catch (error) {
      if (signal.aborted || isSessionGone(error)) return;
      this.#logger.error("run time limit interrupt failed", {
        runId,
        errorName: (error as Error)?.name,
      });
      tail.timeLimit = setTimeout(() => this.#interrupt(runId, tail), TIME_LIMIT_RETRY_MS);
    }
  }

  /**
   * Settles the turns that waited or ended (see the module doc). A failure is logged: the next
   * settlement of the run (or the sweep of held runs) catches up.
   */
  async settle(runId: string, tail: TailSpendState, marks: readonly TurnMark[]): Promise<void> {
    const owner = tail.owner;
    if (owner === null) return;
    for (const mark of marks) {
      try {
        let usage = mark.usage;
        if (mark.final && usage?.cost == null) {
          // No cost reported: only a run that holds money needs one, read from the session.
          const held = (await this.#store.spend.runHolds(runId)).length > 0;
          if (held) usage = await this.#readUsage(runId) ?? usage;
          else if (usage === null) continue;
        }
        const at = new Date(this.#now()).toISOString();
        const result = await this.#store.spend.settle({
          runId,
          principalId: owner.principalId,
          agentId: owner.agentId,
          turn: mark.turn,
          final: mark.final,
          cost: usage?.cost ?? null,
          tokens: usage?.tokens ?? NO_TOKENS,
          at,
        });
        if (result.costAdded > 0n) this.#onListCost(owner.agentId, result.costAdded);
        if (mark.budgetReached && (result.costAdded > 0n || result.released > 0n)) {
          await appendAudit(this.#store, this.#logger, {
            at,
            action: "budget.exhausted",
            actorId: "provider",
            subjectId: owner.principalId,
            runId,
            correlationId: crypto.randomUUID(),
            outcome: "budget_reached",
          });
        }
      } catch (error) {
        this.#logger.error("run settlement failed", { runId, errorName: (error as Error)?.name });
      }
    }
  }

  /** The session's usage as the provider reports it now, or null when it cannot be read. */
  async #readUsage(runId: string): Promise<UsageReport | null> {
    try {
      const client = await this.#client();
      const session = await client.getSession(runId, {
        signal: AbortSignal.timeout(PROVIDER_CALL_MS),
      });
      return usageReportOf(session.usage);
    } catch {
      return null;
    }
  }

  /**
   * The holds of runs: a finished run that still holds money for a turn it recorded goes to
   * `take` (a tail, whose history settles it); a hold of a turn its run never recorded goes once
   * its lease passed. Runs `tailed` says are followed here already are left alone.
   */
  async sweepHolds(
    tailed: (runId: string) => boolean,
    take: (runId: string) => Promise<void>,
    closed: () => boolean,
  ): Promise<void> {
    const byRun = new Map<
      string,
      { principalId: string; holdId: string; turn: number; leaseUntil: number }[]
    >();
    for (const hold of await this.#store.spend.openHolds(SWEEP_LIMIT)) {
      if (hold.runId === null || tailed(hold.runId)) continue;
      const list = byRun.get(hold.runId) ?? [];
      list.push(hold);
      byRun.set(hold.runId, list);
    }
    for (const [runId, holds] of byRun) {
      if (closed()) return;
      const record = await this.#store.runs.get(runId);
      const turns = record === null ? 0 : turnOf(record);
      let settle = false;
      for (const hold of holds) {
        if (hold.turn <= turns) settle = true;
        else if (hold.leaseUntil <= this.#now()) {
          // A turn the run never recorded: its follow-up may still have reached the provider
          // (its replica died after sending): the session's history tells (`dropUnsent`).
          if (record === null) await this.#store.spend.release(hold.principalId, hold.holdId);
          else settle = true;
        }
      }
      if (
        settle && record !== null &&
        (isTerminal(record.state) || holds.some((hold) => hold.turn > turns))
      ) {
        await take(runId).catch(() => {});
      }
    }
  }

  /**
   * Gives back the run's lapsed holds of turns its session's history does not have (`turns`
   * starting events in all): their follow-ups never reached the provider. A hold of a turn the
   * history has stays, for that turn's settlement. Never throws: a failure is logged.
   */
  async dropUnsent(runId: string, turns: number): Promise<void> {
    try {
      for (const hold of await this.#store.spend.runHolds(runId)) {
        if (hold.turn > turns && hold.leaseUntil <= this.#now()) {
          await this.#store.spend.release(hold.principalId, hold.holdId);
        }
      }
    } catch (error) {
      // The next sweep of held runs hands the run to a tail again.
      this.#logger.error("run hold release failed", { runId, errorName: (error as Error)?.name });
    }
  }
}
