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

/** A slot of the in-flight quota held across several steps (see {@linkcode heldSlot}). */
export interface HeldSlot {
  /**
   * The quota step: takes the slot the first time it runs (429 `resourceExhausted` when the
   * principal is at its limit), passes through every later time, and keeps the slot.
   */
  readonly rule: Rule<RequestContext>;
  /** Gives the slot back, if it was taken (once; later calls do nothing). */
  release(): void;
}

/**
 * A slot of `principalId` that is taken by `rule` and held until `release`: for work that runs
 * longer than one chain, such as an MCP tool call that runs its twin route several times while it
 * waits, or whose request is answered before it ends.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { heldSlot, InFlightQuota } from "./quota.ts";
 * const quota = new InFlightQuota(1);
 * const slot = heldSlot(quota, "p");
 * const ok = () => new Response(null, { status: 204 });
 * // deno-lint-ignore no-explicit-any
 * const context = {} as any;
 * slot.rule(context, ok);
 * slot.rule(context, ok); // held already: no second slot
 * assert.equal(quota.acquire("p"), false);
 * slot.release();
 * assert.equal(quota.acquire("p"), true);
 * ```
 */
export function heldSlot(quota: InFlightQuota, principalId: string): HeldSlot {
  let held = false;
  return {
    rule(_context: RequestContext, next: Next) {
      if (!held) {
        if (!quota.acquire(principalId)) throw quotaExceeded();
        held = true;
      }
      return next();
    },
    release(): void {
      if (!held) return;
      held = false;
      quota.release(principalId);
    },
  };
}
