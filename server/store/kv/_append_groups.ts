/**
 * How the KV store's run event log (`_events.ts`) cuts an append into atomic commits and numbers
 * their entries: the commit budgets against Deno KV's limits (1,000 mutations, 100 checks, 80 KiB
 * of keys, 800 KiB of values, 64 KiB a value), and the size of a key as KV encodes it.
 *
 * @module
 */
import type {
  EventBatch,
  NativeEventEntry,
  NativeEventInput,
  RunEventEntry,
  RunEventInput,
} from "../run_event_types.ts";

/**
 * Entries (of both logs) per atomic commit. A burst's appends often hold more than a hundred, and
 * each commit costs Deno KV's thread a fixed part besides its rows: in commits of up to 400 rather
 * than 96, a turn of 2,000 messages through `/provider` took 66 to 72 ms instead of 80 to 93 ms
 * (`bench/native_bench.ts`'s turn, medians of 30, 2026-11-27).
 */
const MAX_APPEND_GROUP = 400;
/**
 * Entries per fast-path commit in a log with keys of the earlier index, which checks one key
 * each: inside KV's 100 checks with the head's and the lease's.
 */
export const MAX_CHECKED_GROUP = 96;
/** Mutations per atomic commit, inside KV's 1,000 with the index chunk and the head. */
const MAX_MUTATIONS = 990;
/** Bytes of the mutations' keys per atomic commit, leaving room in KV's 80 KiB for the checks'. */
const MAX_KEY_BYTES = 48 * 1024;
/** Bytes of the checks' keys of the earlier index one fast-path commit may hold. */
export const MAX_CHECKED_KEY_BYTES = 24 * 1024;
/** Bytes of values per atomic commit (estimated), inside KV's 800 KiB. */
const MAX_GROUP_BYTES = 500 * 1024;
/** Characters of ids per index chunk: at most 40 KiB even as two-byte text, inside 64 KiB. */
const MAX_CHUNK_CHARS = 20_000;
/**
 * Characters of JSON per part of a value cut in parts (a provider event, or a run-event pack, too
 * long for one value): at most 48 KiB even as two-byte text, inside 64 KiB.
 */
export const PART_CHARS = 24_000;
/**
 * Parts an entry keeps in its commit at most. An entry cut in more parts keeps only its first
 * there; the others are written beforehand, in commits of their own, under a key of their own
 * (`_spill.ts`): one entry's parts all in one commit made an entry longer than a commit holds
 * (800 KiB: a 795 KiB message) fail every append of its run, forever.
 */
export const INLINE_PARTS = 4;

/**
 * Whether an entry of `chars` characters of JSON goes out of its commit (more than
 * {@linkcode INLINE_PARTS} parts): the one rule the rows (`_packs.ts`) and the commit budget
 * ({@linkcode groupsOf}) share.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { INLINE_PARTS, PART_CHARS, spills } from "./_append_groups.ts";
 * assert.equal(spills(INLINE_PARTS * PART_CHARS), false);
 * assert.equal(spills(INLINE_PARTS * PART_CHARS + 1), true);
 * ```
 */
export function spills(chars: number): boolean {
  return chars > INLINE_PARTS * PART_CHARS;
}

/**
 * `json` cut in parts of {@linkcode PART_CHARS} (one part when it fits, also when empty).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cutInParts } from "./_append_groups.ts";
 * assert.deepEqual(cutInParts("{}"), ["{}"]);
 * assert.equal(cutInParts("x".repeat(50_000)).length, 3);
 * ```
 */
export function cutInParts(json: string): string[] {
  const parts = [json.slice(0, PART_CHARS)];
  for (let at = PART_CHARS; at < json.length; at += PART_CHARS) {
    parts.push(json.slice(at, at + PART_CHARS));
  }
  return parts;
}

/**
 * The bytes Deno KV encodes `key` in: a string part is a type byte, its UTF-8 bytes (a NUL as two)
 * and a NUL; a number is a type byte and 8.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keySize } from "./_append_groups.ts";
 * assert.equal(keySize(["ab", 1]), 4 + 9);
 * assert.equal(keySize(["é\ud83d\ude00\ud800"]), 2 + 2 + 4 + 3);
 * ```
 */
export function keySize(key: Deno.KvKey): number {
  let bytes = 0;
  for (const item of key) {
    if (typeof item !== "string") {
      bytes += 9;
      continue;
    }
    bytes += 2 + item.length;
    for (let i = 0; i < item.length; i++) {
      const code = item.charCodeAt(i);
      if (code >= 0xd800 && code <= 0xdfff) {
        // A pair is 4 bytes; a lone half is written as U+FFFD, 3 bytes.
        const next = item.charCodeAt(i + 1);
        if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++;
        bytes += 2;
      } else if (code === 0 || code > 0x7f) bytes += code > 0x7ff ? 2 : 1;
    }
  }
  return bytes;
}

/** A batch split into commits: each group's run events and native events, in order. */
export interface Group {
  events: RunEventInput[];
  native: NativeEventInput[];
}

/** Splits a batch into groups that each fit one atomic operation. */
export function groupsOf(batch: EventBatch, keyBytes: number): Group[] {
  const groups: Group[] = [];
  let group: Group = { events: [], native: [] };
  let count = 0;
  let bytes = 0;
  let ids = 0;
  let mutations = 0;
  const add = (size: number, id: string, parts: number): void => {
    if (
      count > 0 &&
      (count + 1 > MAX_APPEND_GROUP || bytes + size > MAX_GROUP_BYTES ||
        ids + id.length > MAX_CHUNK_CHARS || mutations + parts > MAX_MUTATIONS ||
        (mutations + parts) * keyBytes > MAX_KEY_BYTES)
    ) {
      groups.push(group);
      group = { events: [], native: [] };
      count = 0;
      bytes = 0;
      ids = 0;
      mutations = 0;
    }
    count++;
    bytes += size;
    ids += id.length;
    mutations += parts;
  };
  // Rows: one an entry at most (packs share them), or its parts when it alone is too long for a
  // value (an entry's JSON is its event's, its source id and room for the rest); an entry that
  // goes out of its commit (`spills`) leaves one part in it. A run entry's JSON is at least its
  // event's and its source id, and at most that and 128: counted as going out only when it
  // surely does, and whole when it may not.
  const rows = (chars: number) => Math.max(1, Math.ceil(chars / PART_CHARS));
  for (const event of batch.events) {
    const least = JSON.stringify(event.event).length + event.sourceId.length;
    const chars = spills(least) ? PART_CHARS : least + 128;
    add(2 * chars, event.sourceId, rows(chars));
    group.events.push(event);
  }
  for (const event of batch.native ?? []) {
    const chars = spills(event.json.length) ? PART_CHARS : event.json.length;
    add(2 * chars + 256, event.id, rows(chars));
    group.native.push(event);
  }
  if (count > 0) groups.push(group);
  return groups;
}

/** Whether a log already holds an id. */
export type Held = (id: string) => boolean;

/** Whether `first` or `second` (if given) holds an id. */
export function heldIn(first: ReadonlySet<string>, second?: ReadonlySet<string>): Held {
  return second === undefined || second.size === 0
    ? (id) => first.has(id)
    : (id) => first.has(id) || second.has(id);
}

/** `inputs` numbered after `seq` as `entry` makes them, skipping held ids and repeats. */
function numberedBy<I, E>(
  inputs: readonly I[],
  seq: number,
  held: Held,
  idOf: (input: I) => string,
  entry: (input: I, seq: number) => E,
): E[] {
  const entries: E[] = [];
  const taken = new Set<string>();
  for (const input of inputs) {
    const id = idOf(input);
    if (held(id) || taken.has(id)) continue;
    taken.add(id);
    entries.push(entry(input, ++seq));
  }
  return entries;
}

/** Run `events` numbered after `seq`, skipping held source ids and repeats within `events`. */
export function numbered(
  events: readonly RunEventInput[],
  seq: number,
  held: Held,
): RunEventEntry[] {
  return numberedBy(events, seq, held, (event) => event.sourceId, (event, seq) => ({
    seq,
    ...event,
  }));
}

/** Native `events` numbered after `seq`, skipping held ids and repeats. */
export function numberedNative(
  events: readonly NativeEventInput[],
  seq: number,
  held: Held,
): NativeEventEntry[] {
  return numberedBy(events, seq, held, (event) => event.id, (event, seq) => ({
    seq,
    id: event.id,
    type: event.type,
    json: event.json,
  }));
}

/** One group, numbered: what one commit writes. */
export interface Numbered {
  events: RunEventEntry[];
  native: NativeEventEntry[];
}
