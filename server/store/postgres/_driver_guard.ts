/**
 * A guard against one known crash of postgres.js 3.4.9: a write the driver deferred with
 * `setImmediate` runs after its socket was dropped and throws
 * `TypeError: Cannot read properties of null (reading 'write')` from a timer, where no caller
 * can catch it, so the whole process dies (porsager/postgres#1066, #1154, #1208). The connection
 * it happened on is left unusable: queries routed to it hang.
 *
 * A second one: when the server resets a connection (a restart, `pg_terminate_backend`), the
 * socket's `read ECONNRESET` (or `write EPIPE`) can surface as a promise rejection nobody
 * awaits, from Deno's Node socket layer under the driver, which also ends the process (seen in
 * `tests/replicas/outage_test.ts`, about one run in five, before this guard).
 *
 * While a PostgreSQL store is open, this module listens for uncaught errors and unhandled
 * rejections, swallows exactly those two (recognised by message and by the frames in their
 * stack) and tells every open store, which then replaces its connection pool. Every other
 * uncaught error or rejection is left alone.
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

/** Socket errors of a connection the server reset. */
const RESET_CODES = new Set(["ECONNRESET", "EPIPE"]);

/**
 * Whether `reason` is a reset connection's socket error from Deno's Node socket layer (the one
 * postgres.js runs on), as an unhandled rejection carries it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isDriverSocketReset } from "./_driver_guard.ts";
 * assert.equal(isDriverSocketReset(new Error("read ECONNRESET")), false);
 * ```
 */
export function isDriverSocketReset(reason: unknown): boolean {
  if (!(reason instanceof Error)) return false;
  const code = (reason as { code?: unknown }).code;
  if (typeof code !== "string" || !RESET_CODES.has(code)) return false;
  return /stream_base_commons|TCPWrap/.test(reason.stack ?? "");
}

function caughtOne(): void {
  caught++;
  for (const handler of [...handlers]) handler();
}

function onError(event: ErrorEvent): void {
  if (!isDriverWriteCrash(event.error)) return;
  event.preventDefault();
  caughtOne();
}

function onRejection(event: PromiseRejectionEvent): void {
  if (!isDriverSocketReset(event.reason)) return;
  event.preventDefault();
  caughtOne();
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
  if (handlers.size === 0) {
    globalThis.addEventListener("error", onError);
    globalThis.addEventListener("unhandledrejection", onRejection);
  }
  const handler = () => onCrash();
  handlers.add(handler);
  return () => {
    if (!handlers.delete(handler)) return;
    if (handlers.size === 0) {
      globalThis.removeEventListener("error", onError);
      globalThis.removeEventListener("unhandledrejection", onRejection);
    }
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
