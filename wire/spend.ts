/**
 * Spend on the wire: money in the provider's shape, a principal's budget and per-run limits,
 * what it has spent and reserved in its current period, and the answer of `GET /v1/usage`.
 *
 * Money is always a {@linkcode MonetaryAmount}: an integer number of minor units of its
 * currency (cents for `USD`) written as a decimal string without leading zeros, as the
 * provider writes `list_cost` and `max_list_cost`; never a floating-point number.
 *
 * | route | answer |
 * |---|---|
 * | `POST /v1/principals`, `GET /v1/principals`, `GET /v1/runtime` | the principal's {@linkcode SpendPolicy} (and its {@linkcode PrincipalSpend}) |
 * | `GET /v1/usage` | query {@linkcode UsageParams}, 200 {@linkcode UsagePage} |
 *
 * @module
 */

/**
 * The currencies money may be in: `USD`, the only one the provider prices in.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CURRENCIES } from "./spend.ts";
 * assert.deepEqual(CURRENCIES, ["USD"]);
 * ```
 */
export const CURRENCIES = ["USD"] as const;

/** A currency: one of {@linkcode CURRENCIES}. */
export type Currency = typeof CURRENCIES[number];

/**
 * An amount of money: `amount` is the number of minor units (cents for `USD`) as an integer
 * decimal string without leading zeros (`"2500"` is $25.00), as the provider's
 * `BetaMonetaryAmount`.
 */
export interface MonetaryAmount {
  /** Minor units, an integer decimal string (`"0"`, `"50"`, `"2500"`). */
  amount: string;
  /** The currency. */
  currency: Currency;
}

/**
 * The periods a budget may cover, in canonical order: the principal's whole life, or each UTC
 * calendar day, or each UTC calendar month.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BUDGET_PERIODS } from "./spend.ts";
 * assert.ok(BUDGET_PERIODS.includes("day"));
 * ```
 */
export const BUDGET_PERIODS = ["total", "day", "month"] as const;

/** A budget period: one of {@linkcode BUDGET_PERIODS}. */
export type BudgetPeriod = typeof BUDGET_PERIODS[number];

/** A principal's budget: the most its runs may spend in each period (list cost). */
export interface PrincipalBudget extends MonetaryAmount {
  /** `total` (ever), `day` (each UTC day) or `month` (each UTC month). */
  period: BudgetPeriod;
}

/**
 * A principal's spend limits, each absent when it is not limited in that respect:
 *
 * - `budget`: the most its runs may spend together in each period;
 * - `maxRunCost`: the most one run may spend, over all its turns;
 * - `maxRunSeconds`: the longest a run may stay active, from its start or from the follow-up
 *   that woke it, before the service interrupts it (`stopReason: "timeLimit"`).
 *
 * In an issuance body each must lie within the issuer's own (see `POST /v1/principals`).
 */
export interface SpendPolicy {
  /** The most its runs may spend in each period. */
  budget?: PrincipalBudget;
  /** The most one run may spend. */
  maxRunCost?: MonetaryAmount;
  /** The longest a run may stay active at a stretch, in seconds (1 to 604800). */
  maxRunSeconds?: number;
}

/** What a principal with a budget has spent and holds reserved in the current period. */
export interface PrincipalSpend {
  /** RFC 3339 start of the current period (UTC); absent for a `total` budget. */
  periodStart?: string;
  /** RFC 3339 end of the current period, when the next one begins; absent for `total`. */
  periodEnd?: string;
  /** List cost the providers reported for its runs, settled in the period. */
  spent: MonetaryAmount;
  /** Held for its active runs' caps, not settled yet. */
  reserved: MonetaryAmount;
  /** What is left to reserve: the budget less spent and reserved (never below zero). */
  left: MonetaryAmount;
}

/**
 * How `GET /v1/usage` groups its sums, in canonical order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { USAGE_GROUPS } from "./spend.ts";
 * assert.deepEqual(USAGE_GROUPS, ["principal", "agent", "day"]);
 * ```
 */
export const USAGE_GROUPS = ["principal", "agent", "day"] as const;

/** A grouping of `GET /v1/usage`: one of {@linkcode USAGE_GROUPS}. */
export type UsageGroupBy = typeof USAGE_GROUPS[number];

/** The query of `GET /v1/usage`. */
export interface UsageParams {
  /** RFC 3339 start, inclusive (default: the start of the current UTC month). */
  from?: string;
  /** RFC 3339 end, exclusive (default: now). At most 366 days after `from`. */
  to?: string;
  /** How to group the sums (default `principal`). */
  groupBy?: UsageGroupBy;
  /** Only this principal's usage (admins; everyone else sees only their own). */
  principalId?: string;
}

/** Token counts and list cost summed over settled usage. */
export interface UsageTotals {
  /** Input tokens. */
  inputTokens: number;
  /** Output tokens. */
  outputTokens: number;
  /** Input tokens read from the prompt cache. */
  cacheReadInputTokens: number;
  /** Input tokens written to the prompt cache. */
  cacheCreationInputTokens: number;
  /** List cost as the provider reported it (zero for models it does not price). */
  listCost: MonetaryAmount;
}

/** One group of `GET /v1/usage`. */
export interface UsageGroup extends UsageTotals {
  /** The group: a principal id, an agent id, or a UTC day (`YYYY-MM-DD`). */
  key: string;
}

/** The answer of `GET /v1/usage`: sums by group, oldest day or lowest id first, and in all. */
export interface UsagePage {
  /** The start of the range, RFC 3339, inclusive. */
  from: string;
  /** The end of the range, RFC 3339, exclusive. */
  to: string;
  /** How the groups are formed. */
  groupBy: UsageGroupBy;
  /** The groups, ordered by key. */
  groups: UsageGroup[];
  /** The sums over every group. */
  total: UsageTotals;
}
