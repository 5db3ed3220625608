/**
 * Retry timing of the SDK: which answers may be retried, `Retry-After`, backoff and an abortable
 * sleep. Web standards only.
 *
 * @module
 */
import { backoffDelayMs, sleep } from "../client/backoff.ts";

/** Statuses that may succeed when the same request is sent again. */
const RETRYABLE_STATUSES = new Set([408, 429, 503]);

/**
 * Codes of 429 and 503 answers that a retry within one call cannot cure: the service has no
 * provider credential until its operator adds one, a principal's run quota stays full until
 * one of its runs ends, and a budget with nothing left stays so until its next period.
 */
const LASTING_CODES = new Set(["providerNotConfigured", "runQuotaExceeded", "budgetExceeded"]);

/**
 * Whether an answer may be retried: 408, 429, 503 (except `providerNotConfigured`,
 * `runQuotaExceeded` and `budgetExceeded`, which last), and 409 when the service says the same
 * idempotency key is still in flight.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isRetryableAnswer } from "./_retry.ts";
 * assert.equal(isRetryableAnswer(409, "idempotencyInFlight"), true);
 * assert.equal(isRetryableAnswer(409, "principalExists"), false);
 * assert.equal(isRetryableAnswer(429, "budgetExceeded"), false);
 * ```
 */
export function isRetryableAnswer(status: number, code: string): boolean {
  if (LASTING_CODES.has(code)) return false;
  return RETRYABLE_STATUSES.has(status) || (status === 409 && code === "idempotencyInFlight");
}

/**
 * Parses `Retry-After` (seconds or an HTTP date) into ms, or null when absent or invalid.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseRetryAfter } from "./_retry.ts";
 * assert.equal(parseRetryAfter("2"), 2000);
 * ```
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d{1,9}$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}

/**
 * Exponential backoff with jitter: about 0.5 s, 1 s, 2 s … capped at 8 s (the clients' one
 * backoff, `client/backoff.ts`, with the SDK's bounds).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { backoffDelay } from "./_retry.ts";
 * assert.equal(backoffDelay(0) <= 500, true);
 * ```
 */
export function backoffDelay(attempt: number): number {
  return Math.round(backoffDelayMs(attempt, 500, 8000));
}

export { sleep };
