/**
 * Watching one number key of the KV store (a log's last seq): the wake-ups of the events and
 * activity parts, over Deno KV's `watch`.
 *
 * @module
 */

/**
 * Calls `listener` with the key's value (0 when absent) each time Deno KV's watch reports it,
 * until the returned function is called. A closed store or a broken watch stops it quietly: the
 * watchers' own poll still covers what it watched.
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
  const reader = kv.watch<[number]>([key]).getReader();
  let stopped = false;
  (async () => {
    try {
      while (!stopped) {
        const { done, value } = await reader.read();
        if (done) return;
        if (!stopped) listener(value[0].value ?? 0);
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
