/**
 * The rate limit of the token exchange, the one route any caller may reach without a bearer:
 * token buckets that refill continuously, one over every attempt on this replica (unknown policy
 * names included, checked before the policy is even read) and one per trust policy (checked
 * before its token is verified). A bucket holds a minute's allowance, so a burst of that many is
 * admitted at once and then one every `60 s / rate`. The per-policy buckets are capped in number
 * ({@linkcode MAX_POLICY_BUCKETS}); the least recently used goes first, and a policy seen again
 * starts full. Every limit is per replica: N replicas admit up to N times as much.
 *
 * @module
 */

/** Default exchanges one trust policy admits per minute. */
export const DEFAULT_EXCHANGES_PER_MINUTE = 120;

/** Default exchange attempts admitted per minute over every policy. */
export const DEFAULT_EXCHANGES_PER_MINUTE_TOTAL = 1_200;

/** Most per-policy buckets kept. */
export const MAX_POLICY_BUCKETS = 1_024;

/** Options of {@linkcode ExchangeRateLimit}. */
export interface ExchangeRateLimitOptions {
  /** Exchanges one policy admits per minute (default {@linkcode DEFAULT_EXCHANGES_PER_MINUTE}). */
  perPolicyPerMinute?: number;
  /**
   * Attempts admitted per minute in all (default
   * {@linkcode DEFAULT_EXCHANGES_PER_MINUTE_TOTAL}).
   */
  totalPerMinute?: number;
  /** Most per-policy buckets kept (default {@linkcode MAX_POLICY_BUCKETS}). */
  maxPolicies?: number;
}

/** A refusal of {@linkcode ExchangeRateLimit}: which limit, and when a token is back. */
export interface RateLimited {
  /** Which limit refused. */
  readonly limit: "total" | "policy";
  /** Ms until the bucket holds a token again. */
  readonly retryAfterMs: number;
}

class Bucket {
  #tokens: number;
  #at: number;
  readonly #capacity: number;

  constructor(capacity: number, now: number) {
    this.#capacity = capacity;
    this.#tokens = capacity;
    this.#at = now;
  }

  /** Takes a token, or returns the ms until one is back. */
  take(now: number): number {
    const perMs = this.#capacity / 60_000;
    this.#tokens = Math.min(this.#capacity, this.#tokens + Math.max(0, now - this.#at) * perMs);
    this.#at = Math.max(this.#at, now);
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - this.#tokens) / perMs);
  }
}

/**
 * The exchange's token buckets.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ExchangeRateLimit } from "./rate_limit.ts";
 * const limit = new ExchangeRateLimit({ perPolicyPerMinute: 2, totalPerMinute: 100 });
 * assert.equal(limit.admitAttempt(0), null);
 * assert.equal(limit.admitPolicy("ci", 0), null);
 * assert.equal(limit.admitPolicy("ci", 0), null);
 * assert.deepEqual(limit.admitPolicy("ci", 0), { limit: "policy", retryAfterMs: 30_000 });
 * assert.equal(limit.admitPolicy("other", 0), null); // each policy has its own
 * assert.equal(limit.admitPolicy("ci", 30_000), null); // one back every 30 s
 * ```
 */
export class ExchangeRateLimit {
  readonly #perPolicy: number;
  readonly #maxPolicies: number;
  readonly #total: Bucket;
  /** Policy name → bucket, least recently used first. */
  readonly #policies = new Map<string, Bucket>();

  /** Creates full buckets. */
  constructor(options: ExchangeRateLimitOptions = {}) {
    this.#perPolicy = options.perPolicyPerMinute ?? DEFAULT_EXCHANGES_PER_MINUTE;
    this.#maxPolicies = Math.max(1, options.maxPolicies ?? MAX_POLICY_BUCKETS);
    this.#total = new Bucket(options.totalPerMinute ?? DEFAULT_EXCHANGES_PER_MINUTE_TOTAL, 0);
  }

  /** How many per-policy buckets are kept. */
  get policies(): number {
    return this.#policies.size;
  }

  /** Takes a token of the total bucket (every attempt), or says when to retry. */
  admitAttempt(now: number): RateLimited | null {
    const wait = this.#total.take(now);
    return wait === 0 ? null : { limit: "total", retryAfterMs: wait };
  }

  /** Takes a token of `policy`'s bucket (an existing policy's attempt), or says when to retry. */
  admitPolicy(policy: string, now: number): RateLimited | null {
    let bucket = this.#policies.get(policy);
    if (bucket !== undefined) {
      this.#policies.delete(policy);
    } else {
      bucket = new Bucket(this.#perPolicy, now);
      if (this.#policies.size >= this.#maxPolicies) {
        this.#policies.delete(this.#policies.keys().next().value!);
      }
    }
    this.#policies.set(policy, bucket);
    const wait = bucket.take(now);
    return wait === 0 ? null : { limit: "policy", retryAfterMs: wait };
  }
}
