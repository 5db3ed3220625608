/**
 * The spend rules of the run gateway: money, budget periods, the spend limits of principals
 * (issued never wider than the issuer's), the hold a start or a follow-up asks for, the budget
 * the provider's session enforces, the refusal when nothing is left, and the usage a provider
 * reports. The store keeps the ledgers and holds (`server/store/spend.ts`); the gateway asks
 * for holds with its slots (`_reservations.ts`); the run tails settle what the provider reports
 * (`tail.ts`).
 *
 * - **Money** is `bigint` minor units here, an integer decimal string on the wire (at most 15
 *   digits: under ten trillion dollars), never floating point.
 * - **Periods** are UTC: a `day` budget's period is the UTC calendar day, a `month` budget's the
 *   UTC calendar month, a `total` budget's the principal's life. A hold counts in the period in
 *   which it was taken (a run's start, or the follow-up that woke it), and so does what it
 *   settles.
 * - **A hold** takes the least of what the budget has left and what the run's `maxRunCost` has
 *   left (less what the run settled and holds); a principal with neither holds nothing.
 * - **The provider's ceiling**: every session of a principal with a budget or a `maxRunCost`
 *   carries `budget: {type: "limit", max_list_cost}` set to what its run settled and holds, so the
 *   provider stops issuing model requests at the ceiling even while the gateway is down.
 *
 * @module
 */
import { InterfaceError, type ValidationDetail } from "../errors.ts";
import { providerFailureOf } from "./provider_failure.ts";
import type { SpendHoldRequest, SpendStore, TokenCounts } from "../store/spend.ts";
import type { BudgetPeriod, MonetaryAmount, PrincipalSpend, SpendPolicy } from "../../wire/mod.ts";

/** The currency of every amount: the only one the provider prices in. */
export const CURRENCY = "USD";
/** Most digits of an amount: at most 999,999,999,999,999 minor units. */
export const MAX_AMOUNT_DIGITS = 15;
/** The longest `maxRunSeconds`: 7 days. */
export const MAX_RUN_SECONDS_LIMIT = 7 * 86_400;

const AMOUNT = new RegExp(`^(0|[1-9][0-9]{0,${MAX_AMOUNT_DIGITS - 1}})$`);

/**
 * Reads a minor-unit amount string (`"2500"`), or null when it is not one: an integer without
 * sign or leading zeros, of at most {@linkcode MAX_AMOUNT_DIGITS} digits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseAmount } from "./spend.ts";
 * assert.equal(parseAmount("2500"), 2500n);
 * assert.equal(parseAmount("0"), 0n);
 * assert.equal(parseAmount("1.5"), null);
 * assert.equal(parseAmount("007"), null);
 * ```
 */
export function parseAmount(text: unknown): bigint | null {
  return typeof text === "string" && AMOUNT.test(text) ? BigInt(text) : null;
}

/**
 * An amount on the wire: minor units as an integer string, in {@linkcode CURRENCY}. Negative
 * amounts are written as zero.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { money } from "./spend.ts";
 * assert.deepEqual(money(250n), { amount: "250", currency: "USD" });
 * assert.deepEqual(money(-3n), { amount: "0", currency: "USD" });
 * ```
 */
export function money(amount: bigint): MonetaryAmount {
  return { amount: String(amount > 0n ? amount : 0n), currency: CURRENCY };
}

/** The spend limits of a principal, each null when it has none. */
export interface SpendLimits {
  /** Its budget: the amount and its period. */
  readonly budget: { readonly amount: bigint; readonly period: BudgetPeriod } | null;
  /** The most one run may spend. */
  readonly maxRunCost: bigint | null;
  /** The longest active stretch of a run, in seconds. */
  readonly maxRunSeconds: number | null;
}

/** What a principal (a record, an authenticated caller) holds of its spend limits. */
export interface SpendHolder {
  /** Its budget. */
  readonly budget?: { readonly amount: string; readonly period: BudgetPeriod } | null;
  /** Its per-run cap. */
  readonly maxRunCost?: { readonly amount: string } | null;
  /** Its per-run time limit in seconds. */
  readonly maxRunSeconds?: number | null;
}

/** Limits of a principal without any (the bootstrap, and principals issued without them). */
export const NO_SPEND_LIMITS: SpendLimits = Object.freeze({
  budget: null,
  maxRunCost: null,
  maxRunSeconds: null,
});

/**
 * The spend limits a principal holds.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { spendLimitsOf } from "./spend.ts";
 * const limits = spendLimitsOf({ budget: { amount: "500", period: "day" } });
 * assert.deepEqual(limits.budget, { amount: 500n, period: "day" });
 * assert.equal(limits.maxRunCost, null);
 * ```
 */
export function spendLimitsOf(holder: SpendHolder): SpendLimits {
  const budgetAmount = parseAmount(holder.budget?.amount);
  const maxRunCost = parseAmount(holder.maxRunCost?.amount);
  const seconds = holder.maxRunSeconds;
  if (budgetAmount === null && maxRunCost === null && typeof seconds !== "number") {
    return NO_SPEND_LIMITS;
  }
  return {
    budget: budgetAmount === null || holder.budget == null
      ? null
      : { amount: budgetAmount, period: holder.budget.period },
    maxRunCost,
    maxRunSeconds: typeof seconds === "number" ? seconds : null,
  };
}

/** Whether runs under `limits` hold money (a budget or a per-run cap). */
export function holdsMoney(limits: SpendLimits): boolean {
  return limits.budget !== null || limits.maxRunCost !== null;
}

/** How long each period is, narrowest spender last: a `total` budget allows least over time. */
const PERIOD_SPAN: Readonly<Record<BudgetPeriod, number>> = { day: 0, month: 1, total: 2 };

/**
 * Applies the issuance rules to requested spend limits: each must lie within the issuer's. A
 * budget at most the issuer's amount over a period at least as long (`total` within `month`
 * within `day`: a `day` budget of 10 allows far more a month than a `month` budget of 10); a
 * `maxRunCost` and a `maxRunSeconds` at most the issuer's. Left out, each is the issuer's.
 * Returns the granted limits or the violations.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { grantSpendLimits, spendLimitsOf } from "./spend.ts";
 * const issuer = spendLimitsOf({ budget: { amount: "1000", period: "month" } });
 * const granted = grantSpendLimits({}, issuer);
 * assert.ok(!Array.isArray(granted));
 * assert.deepEqual(granted.budget, { amount: 1000n, period: "month" });
 * const wider = grantSpendLimits({
 *   budget: { amount: "1000", currency: "USD", period: "day" },
 * }, issuer);
 * assert.ok(Array.isArray(wider));
 * ```
 */
export function grantSpendLimits(
  fields: SpendPolicy,
  issuer: SpendLimits,
): SpendLimits | ValidationDetail[] {
  const details: ValidationDetail[] = [];
  let budget = issuer.budget;
  if (fields.budget !== undefined) {
    const amount = parseAmount(fields.budget.amount)!;
    budget = { amount, period: fields.budget.period };
    if (issuer.budget !== null) {
      if (amount > issuer.budget.amount) {
        details.push({
          path: "budget.amount",
          message: `Must be at most the caller's own budget (${issuer.budget.amount})`,
        });
      }
      if (PERIOD_SPAN[fields.budget.period] < PERIOD_SPAN[issuer.budget.period]) {
        details.push({
          path: "budget.period",
          message: `Must not be shorter than the caller's own budget period ` +
            `(${issuer.budget.period}): it would allow more per ${issuer.budget.period}`,
        });
      }
    }
  }
  let maxRunCost = issuer.maxRunCost;
  if (fields.maxRunCost !== undefined) {
    maxRunCost = parseAmount(fields.maxRunCost.amount)!;
    if (issuer.maxRunCost !== null && maxRunCost > issuer.maxRunCost) {
      details.push({
        path: "maxRunCost.amount",
        message: `Must be at most the caller's own maxRunCost (${issuer.maxRunCost})`,
      });
    }
  }
  let maxRunSeconds = issuer.maxRunSeconds;
  if (fields.maxRunSeconds !== undefined) {
    maxRunSeconds = fields.maxRunSeconds;
    if (issuer.maxRunSeconds !== null && maxRunSeconds > issuer.maxRunSeconds) {
      details.push({
        path: "maxRunSeconds",
        message: `Must be at most the caller's own maxRunSeconds (${issuer.maxRunSeconds})`,
      });
    }
  }
  return details.length > 0 ? details : { budget, maxRunCost, maxRunSeconds };
}

/**
 * The spend limits as the API answers them (and the principals part stores them): each present
 * when the principal is limited by it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { spendAnswer, spendLimitsOf } from "./spend.ts";
 * assert.deepEqual(spendAnswer(spendLimitsOf({ maxRunSeconds: 60 })), { maxRunSeconds: 60 });
 * ```
 */
export function spendAnswer(limits: SpendLimits): SpendPolicy {
  const answer: SpendPolicy = {};
  if (limits.budget !== null) {
    answer.budget = { ...money(limits.budget.amount), period: limits.budget.period };
  }
  if (limits.maxRunCost !== null) answer.maxRunCost = money(limits.maxRunCost);
  if (limits.maxRunSeconds !== null) answer.maxRunSeconds = limits.maxRunSeconds;
  return answer;
}

/** The ledger period of a budget at a time: its key, and its bounds (absent for `total`). */
export interface BudgetWindow {
  /** `total`, `day:YYYY-MM-DD` or `month:YYYY-MM`. */
  readonly key: string;
  /** When it began, ms since the epoch. */
  readonly start?: number;
  /** When the next one begins, ms since the epoch. */
  readonly end?: number;
}

/**
 * The UTC period of a budget that `now` falls in.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { budgetWindow } from "./spend.ts";
 * const at = Date.parse("2026-11-27T23:59:59.999Z");
 * assert.equal(budgetWindow("day", at).key, "day:2026-11-27");
 * assert.equal(budgetWindow("day", at + 1).key, "day:2026-11-28");
 * assert.equal(budgetWindow("month", at).end, Date.parse("2026-12-01T00:00:00Z"));
 * assert.deepEqual(budgetWindow("total", at), { key: "total" });
 * ```
 */
export function budgetWindow(period: BudgetPeriod, now: number): BudgetWindow {
  if (period === "total") return { key: "total" };
  const date = new Date(now);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  if (period === "month") {
    const start = Date.UTC(year, month, 1);
    return { key: `month:${isoDate(start).slice(0, 7)}`, start, end: Date.UTC(year, month + 1, 1) };
  }
  const start = Date.UTC(year, month, date.getUTCDate());
  return { key: `day:${isoDate(start)}`, start, end: start + 86_400_000 };
}

function isoDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * The spend of a principal with a budget in the current period, as the API answers it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { budgetWindow, spendState } from "./spend.ts";
 * const window = budgetWindow("total", 0);
 * const state = spendState(1000n, window, { spent: 300n, reserved: 200n });
 * assert.equal(state.left.amount, "500");
 * ```
 */
export function spendState(
  budget: bigint,
  window: BudgetWindow,
  ledger: { spent: bigint; reserved: bigint },
): PrincipalSpend {
  return {
    ...(window.start !== undefined ? { periodStart: new Date(window.start).toISOString() } : {}),
    ...(window.end !== undefined ? { periodEnd: new Date(window.end).toISOString() } : {}),
    spent: money(ledger.spent),
    reserved: money(ledger.reserved),
    left: money(budget - ledger.spent - ledger.reserved),
  };
}

/**
 * What principals with a budget spent and hold in their current periods (`GET /v1/runtime`, the
 * entries of `GET /v1/principals`), in the order given: undefined for a principal without a
 * budget. One store read for them all.
 *
 * @example
 * ```ts ignore
 * const [spend] = await spendStates(store.spend, [{ principalId, limits }], Date.now());
 * ```
 */
export async function spendStates(
  store: SpendStore,
  principals: readonly { principalId: string; limits: SpendLimits }[],
  now: number,
): Promise<(PrincipalSpend | undefined)[]> {
  const asked: { index: number; amount: bigint; window: BudgetWindow }[] = [];
  principals.forEach((principal, index) => {
    const budget = principal.limits.budget;
    if (budget !== null) {
      asked.push({ index, amount: budget.amount, window: budgetWindow(budget.period, now) });
    }
  });
  const out: (PrincipalSpend | undefined)[] = principals.map(() => undefined);
  if (asked.length === 0) return out;
  const ledgers = await store.ledgers(asked.map((entry) => ({
    principalId: principals[entry.index].principalId,
    period: entry.window.key,
  })));
  asked.forEach((entry, i) =>
    out[entry.index] = spendState(entry.amount, entry.window, ledgers[i])
  );
  return out;
}

/**
 * The hold a start (turn 1) or a follow-up (a later turn) asks for, or null when the principal
 * holds no money. A follow-up while an earlier hold of the run is still open (a cancelled turn
 * that has not reported its end yet) counts in that hold's period, so the two stay in one ledger.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { holdRequest, spendLimitsOf } from "./spend.ts";
 * const limits = spendLimitsOf({
 *   budget: { amount: "1000", period: "day" },
 *   maxRunCost: { amount: "300" },
 * });
 * const hold = holdRequest(limits, Date.parse("2026-11-27T10:00:00Z"), { holdId: "s1", turn: 1 });
 * assert.equal(hold?.period, "day:2026-11-27");
 * assert.equal(hold?.limit, 1000n);
 * assert.equal(hold?.runCap, 300n);
 * ```
 */
export function holdRequest(
  limits: SpendLimits,
  now: number,
  target: {
    holdId: string;
    turn: number;
    runId?: string;
    openPeriod?: string | null;
    /** A lower cap of the run, such as the budget its request asks for. */
    cap?: bigint;
  },
): SpendHoldRequest | null {
  if (!holdsMoney(limits)) return null;
  const period = limits.budget === null
    ? null
    : target.openPeriod ?? budgetWindow(limits.budget.period, now).key;
  let runCap = limits.maxRunCost;
  if (target.cap !== undefined && (runCap === null || target.cap < runCap)) runCap = target.cap;
  return {
    holdId: target.holdId,
    ...(target.runId !== undefined ? { runId: target.runId } : {}),
    turn: target.turn,
    period,
    limit: limits.budget?.amount ?? null,
    runCap,
  };
}

/**
 * The ceiling a start's request asks for itself (a `/provider` create body's `budget`): its
 * `max_list_cost` in minor units of USD, or null when it asks for none (or not in a shape the
 * provider takes).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { requestedCeiling } from "./spend.ts";
 * assert.equal(requestedCeiling({ type: "limit", max_list_cost: { amount: "90", currency: "USD" } }), 90n);
 * assert.equal(requestedCeiling(undefined), null);
 * ```
 */
export function requestedCeiling(budget: unknown): bigint | null {
  if (typeof budget !== "object" || budget === null) return null;
  const max = (budget as { max_list_cost?: { amount?: unknown; currency?: unknown } })
    .max_list_cost;
  return max?.currency === CURRENCY ? parseAmount(max.amount) : null;
}

/**
 * The provider budget a start's session is created with: its hold's ceiling when it holds money;
 * zero for a principal that holds money on a session starting without a turn (its first
 * follow-up raises it); else the budget the request asked for, passed on as it is (none: none).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sessionBudgetOf, spendLimitsOf } from "./spend.ts";
 * const capped = spendLimitsOf({ maxRunCost: { amount: "300" } });
 * assert.deepEqual(sessionBudgetOf(capped, { ceiling: 300n }, undefined), {
 *   budget: { type: "limit", max_list_cost: { amount: "300", currency: "USD" } },
 * });
 * assert.deepEqual(sessionBudgetOf(spendLimitsOf({}), undefined, undefined), {});
 * ```
 */
export function sessionBudgetOf(
  limits: SpendLimits,
  granted: { ceiling: bigint } | undefined,
  asked: Record<string, unknown> | undefined,
): { budget?: Record<string, unknown> } {
  if (granted !== undefined) return { budget: sessionBudget(granted.ceiling) };
  if (holdsMoney(limits)) return { budget: sessionBudget(0n) };
  return asked === undefined ? {} : { budget: asked };
}

/**
 * The provider's session budget for a ceiling: `{type: "limit", max_list_cost}`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sessionBudget } from "./spend.ts";
 * assert.deepEqual(sessionBudget(300n), {
 *   type: "limit",
 *   max_list_cost: { amount: "300", currency: "USD" },
 * });
 * ```
 */
export function sessionBudget(
  ceiling: bigint,
): { type: "limit"; max_list_cost: MonetaryAmount } {
  return { type: "limit", max_list_cost: money(ceiling) };
}

/**
 * The 429 `budgetExceeded` of a start or follow-up that could hold nothing: what is left (zero)
 * of which limit, and, for a `day` or `month` budget, `Retry-After` until its next period.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { budgetExceeded } from "./spend.ts";
 * const error = budgetExceeded({ limit: "budget", left: 0n, now: 0, period: "total" });
 * assert.equal(error.status, 429);
 * assert.deepEqual(error.extra?.left, { amount: "0", currency: "USD" });
 * ```
 */
export function budgetExceeded(
  refusal: { limit: "budget" | "maxRunCost"; left: bigint; now: number; period?: BudgetPeriod },
): InterfaceError {
  const window = refusal.limit === "budget" && refusal.period !== undefined
    ? budgetWindow(refusal.period, refusal.now)
    : null;
  const retryAfter = window?.end === undefined
    ? undefined
    : String(Math.max(1, Math.ceil((window.end - refusal.now) / 1000)));
  return new InterfaceError(
    "budgetExceeded",
    refusal.limit === "budget"
      ? "The principal's budget has nothing left to hold for another run in this period"
      : "The run has spent (or holds) its maxRunCost",
    {
      extra: {
        limit: refusal.limit,
        left: money(refusal.left),
        ...(window?.end !== undefined ? { periodEnd: new Date(window.end).toISOString() } : {}),
      },
      ...(retryAfter !== undefined ? { headers: { "retry-after": retryAfter } } : {}),
    },
  );
}

/** What a provider usage object (`session.usage`'s `usage`, a session's `usage`) reports. */
export interface UsageReport {
  /** The cumulative list cost in {@linkcode CURRENCY}, or null when it has none. */
  cost: bigint | null;
  /** The cumulative token counts. */
  tokens: TokenCounts;
}

/**
 * Reads a provider usage object: its `list_cost` (when in {@linkcode CURRENCY}) and its token
 * counts (`cache_creation` summed over its lifetimes when the total is not given). Null for
 * anything that is not an object.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { usageReportOf } from "./spend.ts";
 * const report = usageReportOf({
 *   input_tokens: 10, output_tokens: 5,
 *   cache_creation: { ephemeral_5m_input_tokens: 3 },
 *   list_cost: { amount: "42", currency: "USD" },
 * });
 * assert.equal(report?.cost, 42n);
 * assert.equal(report?.tokens.cacheCreationInputTokens, 3);
 * assert.equal(usageReportOf({ input_tokens: 1 })?.cost, null);
 * ```
 */
export function usageReportOf(usage: unknown): UsageReport | null {
  if (typeof usage !== "object" || usage === null || Array.isArray(usage)) return null;
  const raw = usage as Record<string, unknown>;
  const count = (value: unknown): number =>
    typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : 0;
  let creation = count(raw.cache_creation_input_tokens);
  if (creation === 0 && typeof raw.cache_creation === "object" && raw.cache_creation !== null) {
    for (const value of Object.values(raw.cache_creation)) creation += count(value);
  }
  const listCost = raw.list_cost as { amount?: unknown; currency?: unknown } | null | undefined;
  const cost = listCost?.currency === CURRENCY ? parseAmount(listCost.amount) : null;
  return {
    cost,
    tokens: {
      inputTokens: count(raw.input_tokens),
      outputTokens: count(raw.output_tokens),
      cacheReadInputTokens: count(raw.cache_read_input_tokens),
      cacheCreationInputTokens: creation,
    },
  };
}

/**
 * The answer to a provider refusal of a session's budget because a model the session can run has
 * no list price (`model_not_budgetable`): 422 `modelNotBudgetable`, the provider's failure kept as
 * its cause. Any other refusal is answered as it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InterfaceError } from "../errors.ts";
 * import { interfaceErrorOf, ProviderFailure } from "./provider_failure.ts";
 * import { unbudgetableRefusal } from "./spend.ts";
 * const refused = interfaceErrorOf(new ProviderFailure({
 *   kind: "refused", providerStatus: 400, providerErrorType: "invalid_request_error",
 *   message: "model_not_budgetable: model-x has no list price",
 * }));
 * assert.equal(unbudgetableRefusal(refused).code, "modelNotBudgetable");
 * const other = new InterfaceError("runNotFound", "No run with this id");
 * assert.equal(unbudgetableRefusal(other), other);
 * ```
 */
export function unbudgetableRefusal(refusal: InterfaceError): InterfaceError {
  const failure = providerFailureOf(refusal);
  if (
    failure === null || failure.kind !== "refused" || failure.providerStatus !== 400 ||
    !failure.message.includes("model_not_budgetable")
  ) {
    return refusal;
  }
  return new InterfaceError(
    "modelNotBudgetable",
    "The principal has a budget or a maxRunCost, and the provider does not price a model this " +
      "run can use, so it cannot cap its spend: such runs are refused",
    { cause: failure },
  );
}
