/**
 * What a KV store knows of its runs' logs, for the append's fast path (`_events.ts`): per run,
 * the head it last committed or read and every id the logs hold up to it, read from the run's
 * index chunks (a `["run-sources", runId, seq, native]` key per commit, {@linkcode SourcesChunk}).
 *
 * Bounded ({@linkcode KnownLogs}): {@linkcode MAX_KNOWN_BYTES} in all, counted per id. Past it,
 * runs idle for {@linkcode KNOWN_IDLE_MS} make room, the least recently used first, and a run
 * that finds no room is not kept (nor one larger than the bound alone): its appends then read
 * its whole index each time. Forgetting the least recent at once instead would make runs appended
 * to in turn, more than fit, forget one another at every append.
 *
 * @module
 */
import type { LogHead } from "../run_event_types.ts";

/**
 * Bytes (estimated: {@linkcode RUN_BYTES} per run, {@linkcode ID_BYTES} per id and a byte per
 * character) of what a store knows, all runs: about 200,000 ids of 30 characters.
 */
export const MAX_KNOWN_BYTES = 20 * 1024 * 1024;
/** What an id costs in memory beside its characters: its string's header and its set's slot. */
const ID_BYTES = 72;
/** What a run's known log costs beside its ids: the record, its two sets, its place in the map. */
const RUN_BYTES = 512;
/**
 * How long a known run must have gone unused before a run that needs the room may make it
 * forgotten: until then the newcomer is not kept.
 */
export const KNOWN_IDLE_MS = 30_000;

/** The ids one commit wrote: the value of a `run-sources` key. */
export interface SourcesChunk {
  /** Source ids of the run entries. */
  events: string[];
  /** Ids of the native entries. */
  native: string[];
}

/**
 * What a store knows of a run's logs: every id they hold up to `head`, exact while the stored
 * head's versionstamp is `versionstamp` (empty: no head written yet).
 */
export interface KnownLog {
  head: LogHead;
  versionstamp: string;
  /** Source ids of the run entries. */
  events: Set<string>;
  /** Ids of the native entries. */
  native: Set<string>;
  /** Whether the logs have keys of the earlier index (one per id). */
  legacy: boolean;
  /** Bytes of the ids (estimated, as {@linkcode MAX_KNOWN_BYTES} counts them). */
  bytes: number;
  /** When the store last appended to or read the run (the memory's clock, ms). */
  usedAt: number;
}

/** A known log of nothing yet, at `head`. */
export function emptyLog(head: LogHead, versionstamp: string): KnownLog {
  return {
    head,
    versionstamp,
    events: new Set(),
    native: new Set(),
    legacy: false,
    bytes: RUN_BYTES,
    usedAt: 0,
  };
}

/**
 * Adds the ids of `chunk` to `known`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { addChunk, emptyLog } from "./_known_logs.ts";
 * const known = emptyLog({ seq: 0, native: 0 }, "");
 * addChunk(known, { events: ["a", "a#1"], native: ["a"] });
 * addChunk(known, { events: ["a"], native: [] });
 * assert.deepEqual([known.events.size, known.native.size], [2, 1]);
 * ```
 */
export function addChunk(known: KnownLog, chunk: SourcesChunk): void {
  known.bytes += addIds(known.events, chunk.events) + addIds(known.native, chunk.native);
}

/** Adds the ids `set` lacks; the bytes they count. */
function addIds(set: Set<string>, ids: readonly string[]): number {
  let bytes = 0;
  for (const id of ids) {
    if (set.has(id)) continue;
    set.add(id);
    bytes += id.length + ID_BYTES;
  }
  return bytes;
}

/** The known logs of a store's runs, bounded (see the module doc). */
export class KnownLogs {
  readonly #maxBytes: number;
  readonly #now: () => number;
  /** The runs' known logs, the least recently used first. */
  #logs = new Map<string, KnownLog>();
  /** Bytes of `#logs`, all runs. */
  #bytes = 0;

  /** A memory of at most `maxBytes`, telling idle runs by `now` (ms). */
  constructor(maxBytes: number = MAX_KNOWN_BYTES, now: () => number = () => performance.now()) {
    this.#maxBytes = maxBytes;
    this.#now = now;
  }

  /** A run's known log, taken out of the memory (a commit puts it back), or undefined. */
  take(runId: string): KnownLog | undefined {
    const known = this.#logs.get(runId);
    if (known !== undefined) {
      this.#logs.delete(runId);
      this.#bytes -= known.bytes;
    }
    return known;
  }

  /**
   * Keeps a run's known log as the most recently used, if there is room (see the module doc).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { addChunk, emptyLog, KnownLogs } from "./_known_logs.ts";
   * let now = 0;
   * const logs = new KnownLogs(1_200, () => now);
   * const log = (id: string) => {
   *   const known = emptyLog({ seq: 1, native: 0 }, "v");
   *   addChunk(known, { events: [id], native: [] });
   *   return known;
   * };
   * logs.remember("a", log("a".repeat(60)));
   * logs.remember("b", log("b".repeat(60)));
   * assert.ok(logs.take("b") === undefined, "no room, and a is not idle");
   * now += 60_000;
   * logs.remember("b", log("b".repeat(60)));
   * assert.ok(logs.take("a") === undefined && logs.take("b") !== undefined);
   * ```
   */
  remember(runId: string, known: KnownLog): void {
    this.take(runId);
    const now = this.#now();
    known.usedAt = now;
    if (known.bytes > this.#maxBytes) return;
    for (const [other, log] of this.#logs) {
      if (this.#bytes + known.bytes <= this.#maxBytes) break;
      // In order of use: once one is not idle, none after it is.
      if (now - log.usedAt < KNOWN_IDLE_MS) break;
      this.take(other);
    }
    if (this.#bytes + known.bytes > this.#maxBytes) return;
    this.#logs.set(runId, known);
    this.#bytes += known.bytes;
  }
}
