/**
 * Watching one key of the KV store (a log's head, a number or the run logs' combined head): the
 * wake-ups of the events and activity parts, over Deno KV's `watch`.
 *
 * @module
 */

/**
 * Calls `listener` with the key's value (null when absent) each time Deno KV's watch reports it,
 * until the returned function is called. A closed store or a broken watch stops it quietly: the
 * watchers' own poll still covers what it watched.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { watchKey } from "./_watch.ts";
 * const kv = await Deno.openKv(":memory:");
 * const seen = Promise.withResolvers<unknown>();
 * const stop = watchKey(kv, ["head"], (value) => value !== null && seen.resolve(value));
 * await kv.set(["head"], { seq: 3 });
 * assert.deepEqual(await seen.promise, { seq: 3 });
 * stop();
 * kv.close();
 * ```
 */
export function watchKey(
  kv: Deno.Kv,
  key: Deno.KvKey,
  listener: (value: unknown) => void,
): () => void {
  const reader = kv.watch<[unknown]>([key]).getReader();
  let stopped = false;
  (async () => {
    try {
      while (!stopped) {
        const { done, value } = await reader.read();
        if (done) return;
        if (!stopped) listener(value[0].value);
      }
    } catch {
      // A closed store or a broken watch: the watchers' poll still covers the key.
    }
  })();
  return () => {
    stopped = true;
    reader.cancel().catch(() => {});
  };
}

/**
 * {@linkcode watchKey} of a number key: its value, 0 when absent.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { watchNumber } from "./_watch.ts";
 * const kv = await Deno.openKv(":memory:");
 * const seen = Promise.withResolvers<number>();
 * const stop = watchNumber(kv, ["head"], (value) => value === 3 && seen.resolve(value));
 * await kv.set(["head"], 3);
 * assert.equal(await seen.promise, 3);
 * stop();
 * kv.close();
 * ```
 */
export function watchNumber(
  kv: Deno.Kv,
  key: Deno.KvKey,
  listener: (value: number) => void,
): () => void {
  return watchKey(kv, key, (value) => listener(typeof value === "number" ? value : 0));
}
