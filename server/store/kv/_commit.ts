/**
 * Every write of the KV store goes through {@linkcode commitKv}: it commits an atomic operation
 * and, while SQLite reports the file busy, commits it again.
 *
 * Each handle on a KV file (the workers of `deno serve --parallel`, two processes sharing a
 * file) holds its own SQLite connection, and Deno KV's commit does not wait for another
 * connection's write to finish: it fails at once with "database is locked". Two handles writing
 * in a loop saw about one commit in two fail that way (measured 2026-11-26, Deno 2.9.6). Reads
 * go on beside a writer in SQLite's WAL mode; only the first access of a handle opening the
 * file while another opens it has been seen busy, and the authority claim waits that out.
 *
 * Trying again is safe. A busy commit applied nothing (SQLite rolled its transaction back), and
 * an operation can be committed again: its checks are read anew each time, so a retry that
 * meets a changed key reports `ok: false` like any lost race. denokv's own SQLite backend does
 * the same for its transactions, also after a short random pause.
 *
 * @module
 */

/** How long a busy file is waited for before its error reaches the caller. */
const BUSY_BUDGET_MS = 2_000;

/** Whether `error` is SQLite's "database is locked": another connection holds the write lock. */
function isBusy(error: unknown): boolean {
  return error instanceof Error && /database is locked/i.test(error.message);
}

/**
 * Runs `attempt`, and runs it again after a pause of 2 to 12 ms (about the time another
 * connection's commit, with its fsync, holds the lock; random so two waiting handles do not
 * retry in step) while it fails with a busy file, for up to 2 s. Any other error, and a busy
 * file past that, reaches the caller.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { whileBusy } from "./_commit.ts";
 * let calls = 0;
 * const value = await whileBusy(() => {
 *   calls++;
 *   return calls < 3 ? Promise.reject(new TypeError("database is locked")) : Promise.resolve(7);
 * });
 * assert.deepEqual([value, calls], [7, 3]);
 * ```
 */
export async function whileBusy<T>(attempt: () => Promise<T>): Promise<T> {
  const deadline = performance.now() + BUSY_BUDGET_MS;
  while (true) {
    try {
      return await attempt();
    } catch (error) {
      if (!isBusy(error) || performance.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 10));
    }
  }
}

/**
 * Commits `operation` {@linkcode whileBusy}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { commitKv } from "./_commit.ts";
 * const kv = await Deno.openKv(":memory:");
 * const fresh = kv.atomic().check({ key: ["k"], versionstamp: null }).set(["k"], 1);
 * assert.equal((await commitKv(fresh)).ok, true);
 * // Committed again, the same operation reads its check anew: the key exists now.
 * assert.equal((await commitKv(fresh)).ok, false);
 * kv.close();
 * ```
 */
export function commitKv(
  operation: Deno.AtomicOperation,
): Promise<Deno.KvCommitResult | Deno.KvCommitError> {
  return whileBusy(() => operation.commit());
}
