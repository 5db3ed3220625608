/**
 * The spend part of the store (`store.spend`): what principals' runs may spend and did spend.
 *
 * - **Ledgers**, one per principal and budget period (`total`, `day:YYYY-MM-DD`,
 *   `month:YYYY-MM`): what was `spent` (list cost the provider reported, settled) and what is
 *   `reserved` (holds not settled yet), in minor units.
 * - **Holds**: the amount reserved for one turn of one run (its cap). A hold is taken with the
 *   run's active-run slot, in the same atomic step, by the runs part
 *   (`RunStore.reserveRun`), which checks the ledger's `spent + reserved + amount` against the
 *   budget there: replicas sharing the store never reserve beyond a budget. A start's hold is
 *   named after its slot and is given its run when the run is recorded (`RunStore.create`, the
 *   same step again); a follow-up's hold is named `runId#turn`. A start's hold lapses after its lease
 *   when its run was never recorded (the start failed, its replica died), and then counts as
 *   spent (its session may be running unrecorded); a lapsed hold of a run that is gone is given
 *   back. A lapsed hold of a run that exists (a follow-up whose turn the run never recorded) is
 *   left to the run's tails, which settle it when the session's history has the turn and give it
 *   back when not.
 * - **Settlements** ({@linkcode SpendStore.settle}): when a run's turn waits for a tool answer or
 *   ends, the run's cumulative list cost (and tokens) as the provider reported it is settled:
 *   the growth since the last settlement moves from the run's holds to `spent` (a partial
 *   settlement shrinks the holds by what was spent, so `spent + reserved` does not grow), and at
 *   the end of a turn its holds go, unless the run holds money for a later turn already (a
 *   follow-up was sent before the turn's end was settled: the session may be spending again under
 *   the same ceiling), when what is left of them stays held until that turn ends. One atomic step per settlement, checked against the run's
 *   settled totals, so settling the same report twice (two replicas, a tail that took over)
 *   changes nothing the second time.
 * - **Usage entries**: each settlement that found growth appends one (its time, principal,
 *   agent, run, token and cost growth), which `GET /v1/usage` sums; kept
 *   {@linkcode USAGE_RETENTION_MS}.
 *
 * Amounts are `bigint` minor units here, never floating point.
 *
 * @module
 */
import type { UsageGroupBy } from "../../wire/mod.ts";

/** How long usage entries (and the ledgers of past days and months) are kept: 400 days. */
export const USAGE_RETENTION_MS = 400 * 86_400_000;

/** Token counts, cumulative or a growth. */
export interface TokenCounts {
  /** Input tokens. */
  inputTokens: number;
  /** Output tokens. */
  outputTokens: number;
  /** Input tokens read from the prompt cache. */
  cacheReadInputTokens: number;
  /** Input tokens written to the prompt cache. */
  cacheCreationInputTokens: number;
}

/** A hold asked for with a run's slot (`RunStore.reserveRun`). */
export interface SpendHoldRequest {
  /** Unique among the principal's holds: the start's slot id, or `runId#turn`. */
  holdId: string;
  /** The run it is for: a follow-up's run; absent for a start (given at `RunStore.create`). */
  runId?: string;
  /** The turn of the run it covers (1 for a start). */
  turn: number;
  /** The ledger period it counts in; null when the principal has no budget. */
  period: string | null;
  /** The budget of that period; null when the principal has no budget. */
  limit: bigint | null;
  /**
   * The most the run may spend over all its turns (its `maxRunCost`): the hold takes at most
   * this less what the run already settled and holds; null when there is no such cap.
   */
  runCap: bigint | null;
  /**
   * A follow-up to a run that is still active (its record says so): while the run holds money
   * (any hold of it is open) it takes no new money, only a zero hold of its turn, which keeps the
   * earlier turn's end from giving the run's holds back (see {@linkcode SpendStore.settle}); a
   * run that holds nothing any more (its turn ended and settled) gets a hold as any follow-up.
   */
  fence?: boolean;
}

/** A hold the store keeps. */
export interface SpendHold {
  /** The principal it counts against. */
  principalId: string;
  /** Its id (see {@linkcode SpendHoldRequest.holdId}). */
  holdId: string;
  /** Its run, once known. */
  runId: string | null;
  /** The turn it covers. */
  turn: number;
  /** The ledger period it counts in, or null. */
  period: string | null;
  /** What it holds. */
  amount: bigint;
  /** Until when it holds without its run recording its turn, ms since the epoch. */
  leaseUntil: number;
}

/** What a hold came to (`RunStore.reserveRun`'s answer for it). */
export interface GrantedHold {
  /** What it holds. */
  amount: bigint;
  /**
   * The run's ceiling with it: what the run settled and holds in all, this hold included (the
   * provider session's `max_list_cost`).
   */
  ceiling: bigint;
}

/** A principal's ledger of one period. */
export interface SpendLedger {
  /** Settled list cost. */
  spent: bigint;
  /** Held, not settled. */
  reserved: bigint;
}

/** What a run's turn reported, to settle (see the module doc). */
export interface RunSettlement {
  /** The run. */
  runId: string;
  /** Its principal (the owner the holds count against). */
  principalId: string;
  /** Its agent (for usage entries). */
  agentId: string;
  /** The turn whose wait or end was reported. */
  turn: number;
  /** Whether the turn ended (its holds go), not merely waits for an answer. */
  final: boolean;
  /**
   * The run's cumulative list cost as the provider reported it, or null when it did not: an
   * ended turn's holds then count as spent in full (the provider prices every model it allows
   * a budget for, so this happens only when a session's cost could not be read).
   */
  cost: bigint | null;
  /** The run's cumulative token counts as reported. */
  tokens: TokenCounts;
  /** When, RFC 3339 (the usage entry's time). */
  at: string;
}

/** What a settlement changed. */
export interface SettlementResult {
  /** List cost added to `spent` (and to usage) by this settlement. */
  costAdded: bigint;
  /** Hold amounts given back (not spent). */
  released: bigint;
  /** The run's settled cost after it. */
  cost: bigint;
}

/** The query of {@linkcode SpendStore.usage}. */
export interface UsageQuery {
  /** RFC 3339, inclusive. */
  from: string;
  /** RFC 3339, exclusive. */
  to: string;
  /** How to group. */
  groupBy: UsageGroupBy;
  /** Only this principal's entries. */
  principalId?: string;
  /** Most groups; one more makes the query fail with a `RangeError`. */
  maxGroups: number;
}

/** One group's sums. */
export interface UsageSum extends TokenCounts {
  /** The group's key: a principal id, an agent id or a day (`YYYY-MM-DD`). */
  key: string;
  /** Summed list cost. */
  cost: bigint;
}

/** The spend ledgers, holds, settlements and usage entries of the store's namespace. */
export interface SpendStore {
  /** A principal's ledger of one period (zeros when it has none). */
  ledger(principalId: string, period: string): Promise<SpendLedger>;
  /** Several ledgers at once, in the order asked. */
  ledgers(keys: readonly { principalId: string; period: string }[]): Promise<SpendLedger[]>;
  /**
   * Drops a hold and gives its amount back to its ledger (a start or follow-up that failed
   * after `RunStore.reserveRun`); a no-op when it is gone.
   */
  release(principalId: string, holdId: string): Promise<void>;
  /** Settles a run's report (see the module doc); exactly once per growth. */
  settle(settlement: RunSettlement): Promise<SettlementResult>;
  /** The holds of one run. */
  runHolds(runId: string): Promise<SpendHold[]>;
  /** Up to `limit` holds given to runs, for the sweep that settles runs nobody follows. */
  openHolds(limit: number): Promise<SpendHold[]>;
  /**
   * Sums usage entries with `from <= at < to` by group, ordered by key; throws `RangeError`
   * when there are more than `maxGroups` groups.
   */
  usage(query: UsageQuery): Promise<UsageSum[]>;
  /**
   * Deletes usage entries (and ledgers of periods) older than `before` (RFC 3339), and the
   * settled totals of runs that are gone; returns how many entries went.
   */
  purge(before: string): Promise<number>;
}
