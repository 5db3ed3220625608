/**
 * The lifetime of a serving command (`serve`, `demo`): it waits for SIGINT or SIGTERM (SIGBREAK
 * on Windows), then lets requests in flight finish within a grace period; a second signal, or the
 * end of the grace period, stops it without waiting for open connections.
 *
 * @module
 */
import type { RuntimeLogger } from "../server/log.ts";
import type { RunningRuntime } from "../server/serve.ts";

/** How long a graceful shutdown waits for requests in flight, in ms. */
export const SHUTDOWN_GRACE_MS = 10_000;

/** A wait for the stop signals. */
export interface SignalWait {
  /** Resolves with the first signal received. */
  readonly promise: Promise<string>;
  /** Removes the listeners. */
  dispose(): void;
}

/**
 * Starts listening for the stop signals. Start it before the service listens, so that a signal
 * that comes during the start is not lost.
 *
 * @example
 * ```ts
 * import { waitForSignal } from "./_lifetime.ts";
 * const wait = waitForSignal();
 * wait.dispose();
 * ```
 */
export function waitForSignal(): SignalWait {
  const signals: Deno.Signal[] = Deno.build.os === "windows"
    ? ["SIGINT", "SIGBREAK"]
    : ["SIGINT", "SIGTERM"];
  const received = Promise.withResolvers<string>();
  const listeners = signals.map((signal) => {
    const listener = () => received.resolve(signal);
    Deno.addSignalListener(signal, listener);
    return [signal, listener] as const;
  });
  return {
    promise: received.promise,
    dispose() {
      for (const [signal, listener] of listeners) Deno.removeSignalListener(signal, listener);
    },
  };
}

/** How {@linkcode serveUntilSignal} ended. */
export type ServeOutcome = "stopped" | "forced" | "timeout";

/**
 * Serves until a stop signal (or until the listener closes by itself), then shuts the runtime
 * down gracefully and logs it. Disposes `signal`. Resolves with `stopped` after a clean shutdown,
 * `forced` after a second signal, `timeout` when the grace period ran out; the caller then closes
 * what it owns (the store: only after `stopped`, as requests may still use it otherwise).
 *
 * @example
 * ```ts ignore
 * import { serveUntilSignal, waitForSignal } from "./_lifetime.ts";
 * const signal = waitForSignal();
 * const running = await serveRuntime(options);
 * if (await serveUntilSignal(running, signal, logger) === "stopped") await store.close();
 * ```
 */
export async function serveUntilSignal(
  running: RunningRuntime,
  signal: SignalWait,
  logger: RuntimeLogger,
): Promise<ServeOutcome> {
  const received = await Promise.race([signal.promise, running.finished.then(() => null)]);
  logger.info("shutting down", { signal: received ?? undefined, graceMs: SHUTDOWN_GRACE_MS });
  // Requests in flight finish; a client that never completes its request (or a second signal)
  // cannot hold the process beyond the grace period.
  const again = waitForSignal();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    running.shutdown().then(() => "stopped" as const),
    again.promise.then(() => "forced" as const),
    new Promise<"timeout">((resolve) =>
      timer = setTimeout(() => resolve("timeout"), SHUTDOWN_GRACE_MS)
    ),
  ]);
  clearTimeout(timer);
  signal.dispose();
  again.dispose();
  return outcome;
}
