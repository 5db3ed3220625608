/**
 * Per-principal in-flight quota: a principal with more requests running than the quota gets
 * 429 `resourceExhausted` with `Retry-After`.
 *
 * @module
 */
import { type Next, type Rule, whileAnswering } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";

/** Default number of requests one principal may have in flight. */
export const DEFAULT_IN_FLIGHT_QUOTA = 64;

/**
 * Counts requests in flight per principal.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InFlightQuota } from "./quota.ts";
 * const quota = new InFlightQuota(1);
 * assert.equal(quota.acquire("p"), true);
 * assert.equal(quota.acquire("p"), false);
 * quota.release("p");
 * ```
 */
export class InFlightQuota {
  /** Most requests in flight per principal. */
  readonly limit: number;
  #counts = new Map<string, number>();

  /**
   * Creates the counter.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { InFlightQuota } from "./quota.ts";
   * assert.equal(new InFlightQuota(64).limit, 64);
   * ```
   */
  constructor(limit: number) {
    this.limit = limit;
  }

  /**
   * Takes a slot; false when the principal is at its limit.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { InFlightQuota } from "./quota.ts";
   * assert.equal(new InFlightQuota(1).acquire("p"), true);
   * ```
   */
  acquire(principalId: string): boolean {
    const count = this.#counts.get(principalId) ?? 0;
    if (count >= this.limit) return false;
    this.#counts.set(principalId, count + 1);
    return true;
  }

  /**
   * Gives a slot back.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { InFlightQuota } from "./quota.ts";
   * const quota = new InFlightQuota(1);
   * quota.acquire("p");
   * quota.release("p");
   * assert.equal(quota.acquire("p"), true);
   * ```
   */
  release(principalId: string): void {
    const count = this.#counts.get(principalId) ?? 0;
    if (count <= 1) this.#counts.delete(principalId);
    else this.#counts.set(principalId, count - 1);
  }
}

/**
 * The error answered when a principal is over its quota.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { quotaExceeded } from "./quota.ts";
 * assert.equal(quotaExceeded().status, 429);
 * ```
 */
export function quotaExceeded(): InterfaceError {
  return new InterfaceError("resourceExhausted", "Too many requests in flight for this principal", {
    headers: { "retry-after": "1" },
  });
}

/**
 * The quota rule: holds a slot until the rest of the chain has answered (at once when it
 * answers synchronously, else when its promise settles).
 */
export function quotaRule(quota: InFlightQuota): Rule<RequestContext> {
  return function inFlight(context: RequestContext, next: Next) {
    const principalId = context.principal?.principalId ?? "";
    if (!quota.acquire(principalId)) throw quotaExceeded();
    return whileAnswering(next, () => quota.release(principalId));
  };
}
