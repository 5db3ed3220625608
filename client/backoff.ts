/**
 * The one backoff of the clients: exponential delays with jitter, and an abortable sleep. The
 * request layer uses it between retries, the session driver between reconnects, and the SDK's
 * retries (`sdk/_retry.ts`) with their own bounds. Internal to the package: shared across its
 * folders, not exported from any entry point.
 *
 * @module
 */

/**
 * The delay before attempt `step + 1` (step 0 is the first retry): `minMs` doubling per step up
 * to `maxMs`, then scaled by a random factor in [0.75, 1] so clients that failed together do not
 * retry together.
 */
export function backoffDelayMs(step: number, minMs: number, maxMs: number): number {
  const base = Math.min(minMs * 2 ** Math.min(Math.max(step, 0), 30), maxMs);
  return base * (0.75 + Math.random() * 0.25);
}

/**
 * Waits `ms`, or rejects with the signal's reason as soon as `signal` aborts (at once when it
 * already has). The timer and the listener are always released.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
