/**
 * A guard against one known crash of postgres.js 3.4.9: a write the driver deferred with
 * `setImmediate` runs after its socket was dropped and throws
 * `TypeError: Cannot read properties of null (reading 'write')` from a timer, where no caller
 * can catch it, so the whole process dies (porsager/postgres#1066, #1154, #1208). The connection
 * it happened on is left unusable: queries routed to it hang.
 *
 * While a PostgreSQL store is open, this module listens for uncaught errors, swallows exactly
 * that one (recognised by message and by the driver's `nextWrite` frame in its stack) and tells
 * every open store, which then replaces its connection pool. Every other uncaught error is left
 * alone.
 *
 * @module
 */

const MESSAGE = "Cannot read properties of null (reading 'write')";

const handlers = new Set<() => void>();
let caught = 0;

/**
 * Whether `error` is the postgres.js null-socket write crash.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isDriverWriteCrash } from "./_driver_guard.ts";
 * assert.equal(isDriverWriteCrash(new Error("other")), false);
 * ```
 */
export function isDriverWriteCrash(error: unknown): boolean {
  if (!(error instanceof TypeError) || error.message !== MESSAGE) return false;
  const stack = error.stack ?? "";
  return /\bnextWrite\b/.test(stack) && /postgres/.test(stack);
}

function onError(event: ErrorEvent): void {
  if (!isDriverWriteCrash(event.error)) return;
  event.preventDefault();
  caught++;
  for (const handler of [...handlers]) handler();
}

/**
 * Calls `onCrash` whenever the driver crash is caught; returns the function that stops it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { guardDriverCrash } from "./_driver_guard.ts";
 * let replaced = 0;
 * const stop = guardDriverCrash(() => replaced++);
 * stop();
 * assert.equal(replaced, 0);
 * ```
 */
export function guardDriverCrash(onCrash: () => void): () => void {
  if (handlers.size === 0) globalThis.addEventListener("error", onError);
  const handler = () => onCrash();
  handlers.add(handler);
  return () => {
    if (!handlers.delete(handler)) return;
    if (handlers.size === 0) globalThis.removeEventListener("error", onError);
  };
}

/**
 * How many driver crashes this process has caught so far.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { driverCrashesCaught } from "./_driver_guard.ts";
 * assert.equal(driverCrashesCaught(), 0);
 * ```
 */
export function driverCrashesCaught(): number {
  return caught;
}
