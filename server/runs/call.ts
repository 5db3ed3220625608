/**
 * A call into the run gateway: who makes it, by when it must be answered, what may cut it short,
 * and what its audit entries carry. The HTTP routes build one from their request; the gateway
 * and the tool answers know nothing of HTTP.
 *
 * @module
 */
import type { AuthenticatedPrincipal, IdempotencyRecord } from "../context.ts";

/** One call into the run gateway or the tool answers. */
export interface RunCall {
  /** The caller, authenticated. */
  readonly principal: AuthenticatedPrincipal;
  /** When the call must be answered by, in ms since the epoch: provider calls are cut there. */
  readonly deadline: number;
  /** Aborted when the caller goes away before the deadline; absent: only the deadline cuts. */
  readonly signal?: AbortSignal;
  /** The correlation id its audit entries carry. */
  readonly correlationId: string;
  /** When the call was made, in ms since the epoch: the time its audit entries carry. */
  readonly at: number;
  /**
   * The call's idempotency key, when it has one: a start records its answer with the run, and a
   * start or a message marks the key begun right before the provider call that must not be
   * repeated (`IdempotencyRecord.begin`).
   */
  readonly idempotency?: IdempotencyRecord | null;
  /**
   * What the caller asked of the provider's API, passed on with the gateway's provider calls
   * for it (the `/provider` interface: its caller's betas and version).
   */
  readonly upstream?: UpstreamOptions;
}

/** Provider-API options a caller's requests pass on to the provider. */
export interface UpstreamOptions {
  /** Beta values, sent before the client's own. */
  readonly betas?: readonly string[];
  /** The provider API version, instead of the client's. */
  readonly providerVersion?: string;
}

/**
 * The per-call options of the provider client for a call: its signal (when given), and what it
 * passes on.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { upstreamOptions } from "./call.ts";
 * const signal = new AbortController().signal;
 * assert.deepEqual(upstreamOptions({ upstream: { betas: ["b-1"] } }, signal), {
 *   signal,
 *   betas: ["b-1"],
 * });
 * assert.deepEqual(upstreamOptions({}, signal), { signal });
 * ```
 */
export function upstreamOptions(
  call: { readonly upstream?: UpstreamOptions },
  signal?: AbortSignal,
): { signal?: AbortSignal; betas?: readonly string[]; providerVersion?: string } {
  const upstream = call.upstream;
  const base = signal === undefined ? {} : { signal };
  if (upstream === undefined) return base;
  return {
    ...base,
    ...(upstream.betas !== undefined ? { betas: upstream.betas } : {}),
    ...(upstream.providerVersion !== undefined
      ? { providerVersion: upstream.providerVersion }
      : {}),
  };
}

/**
 * A signal that fires at `deadline` (measured on `now`), or earlier when `signal` does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deadlineSignal } from "./call.ts";
 * const now = () => 1_000;
 * assert.equal(deadlineSignal({ deadline: 500 }, now).aborted, false);
 * const gone = new AbortController();
 * gone.abort();
 * assert.equal(deadlineSignal({ deadline: 60_000, signal: gone.signal }, now).aborted, true);
 * ```
 */
export function deadlineSignal(
  call: { readonly deadline: number; readonly signal?: AbortSignal },
  now: () => number,
): AbortSignal {
  // At least 1 ms: a deadline already passed still lets the provider call start and fail as
  // aborted, which answers 503 like any other deadline.
  const timeout = AbortSignal.timeout(Math.max(call.deadline - now(), 1));
  return call.signal === undefined ? timeout : AbortSignal.any([call.signal, timeout]);
}
