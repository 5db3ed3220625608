/**
 * How the KV store's run logs (`_events.ts`) lay their entries out in rows, and read them back.
 *
 * - **Run events**: `["run-event", runId, seq]` holds a pack, the consecutive entries of one
 *   commit up to `seq`, as the JSON text of an array (what PostgreSQL's `jsonb` keeps of an entry
 *   too). A pack longer than a value holds (one entry: a long reply's `message.completed`) is cut
 *   in pieces: `{parts, json}` under the seq, the further pieces under `[…, seq, 1…]`. A log
 *   written before packs holds one entry (an object) per key; all are read.
 * - **Native events**: `["run-native", runId, seq, 0]` holds a pack of whole entries up to
 *   `seq` (an array, each with its `seq`), or the first part of one entry too long for a pack
 *   (`{id, type, parts, json}`), whose further parts are `["run-native", runId, seq, 1…]` (strings:
 *   a KV value holds at most 64 KiB, a provider event may hold more). Logs written before packs
 *   hold only the parted form.
 * - **Spilled**: an entry cut in more parts than one commit keeps (`INLINE_PARTS`) has only its
 *   first part in its row (either log), which names (`spill`) where the others are: written before
 *   the commit, outside the log's rows (`_spill.ts`); readers join them through a {@linkcode
 *   Spilled}.
 *
 * Why packs, and the number: Deno KV's thread spends most of an append per row, not per byte. A
 * burst of 2,000 provider messages wrote three rows a message (the merged text delta, the
 * completed message, the provider's own event); packed, it writes about one row per hundred
 * entries. Its turn through `/provider` took 74 ms with a row per entry, 51 ms with run events
 * packed and 38 ms with both logs packed (`bench/native_bench.ts`'s turn, medians of 30, three
 * runs each, 2026-11-27).
 *
 * A pack is keyed by its last entry, so a read that starts after `seq` starts at the key
 * `seq + 1` and finds every pack holding a later entry (dropping the earlier entries of the first
 * one). A read going down from `before` also reads the one row keyed at or after `before`
 * ({@linkcode straddlingNative}), which may hold entries below it. A read joins an entry's parts
 * only in order and under its own seq: when a purge took rows between two batches of a read, the
 * page ends before the torn entry rather than join the parts of two.
 *
 * @module
 */
import type { NativeEventEntry, NativeEventQuery, RunEventEntry } from "../run_event_types.ts";
import { cutInParts, spills } from "./_append_groups.ts";

/**
 * Characters one pack holds at most (an entry larger than that alone is a pack, or a parted native
 * entry, of its own): a run-event pack is JSON text, a native pack strings and a few small fields
 * (48 characters' room an entry), so KV stores a character in at most 2 bytes and a pack stays
 * under 44 KiB, inside KV's 64 KiB a value. (Run entries are not packed as objects: V8 serializes
 * `[0.5,1,1]` parsed from a tool's input as 9 bytes a number, and keeps fields JSON drops.)
 */
export const MAX_PACK_CHARS = 16_384;

/**
 * The first row of a run-event pack too long for one value: how many pieces its JSON text is cut
 * into, and the first.
 */
export interface LongPack {
  /** Pieces of the JSON text, this one included. */
  parts: number;
  /** The first piece. */
  json: string;
  /**
   * Where the other pieces are when they went out of the pack's commit (an entry longer than
   * one commit may hold: `_spill.ts`); absent, they are under the pack's key, pieces 1….
   */
  spill?: string;
}

/**
 * What a run-event row holds: a pack (JSON text of an array of entries), the first piece of a long
 * one, a further piece (under a key one part longer), or one entry as written before packs.
 */
export type RunEventRow = string | LongPack | RunEventEntry;

/** Part 0 of a native entry too long for a pack. */
export interface NativeFirstPart {
  /** The provider event's id. */
  id: string;
  /** Its type. */
  type: string;
  /** How many parts its JSON is cut into. */
  parts: number;
  /** The first part of its JSON. */
  json: string;
  /** Where the other parts are when they went out of the entry's commit (see {@linkcode LongPack}). */
  spill?: string;
}

/** What a native row holds: a pack, an entry's first part, or a further part of its JSON. */
export type NativeRow = NativeEventEntry[] | NativeFirstPart | string;

/** A row to write: its key and value. */
export type Row = [key: Deno.KvKey, value: unknown];

/**
 * Takes parts 1… of one entry's JSON (`json`, cut in `parts`) out of its commit, to be written
 * before it (`_spill.ts`), and says where: what the first part's `spill` holds.
 */
export type Spill = (json: string, parts: readonly string[]) => string;

/**
 * Reads parts 1… of an entry whose first part says `spill` and `parts`, in order; null when they
 * are not all there (a purge under way took them, or they were never written): the page then ends
 * before the entry, as for any torn one.
 */
export type Spilled = (spill: string, parts: number) => Promise<string[] | null>;

/**
 * The rows of consecutive run `entries`: packs of at most {@linkcode MAX_PACK_CHARS}, each keyed
 * (by `keyOf`) with its last entry's seq. A pack of one entry longer than a value holds (a long
 * reply's `message.completed`) is cut into pieces: `{parts, json}` with the first piece under the
 * seq, the others under `keyOf(seq, 1…)`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runRows } from "./_packs.ts";
 * const entry = (seq: number, text = "") => ({
 *   seq,
 *   sourceId: `e${seq}`,
 *   at: "2026-11-27T00:00:00.000Z",
 *   event: { type: "message.completed" as const, runId: "r", text },
 * });
 * const keyOf = (seq: number, part?: number) =>
 *   part === undefined ? ["run-event", "r", seq] : ["run-event", "r", seq, part];
 * const rows = runRows([entry(1), entry(2), entry(3, "x".repeat(30_000))], keyOf);
 * assert.deepEqual(rows.map(([key]) => key), [
 *   ["run-event", "r", 2],
 *   ["run-event", "r", 3],
 *   ["run-event", "r", 3, 1],
 * ]);
 * ```
 */
export function runRows(
  entries: readonly RunEventEntry[],
  keyOf: (seq: number, part?: number) => Deno.KvKey,
  spill?: Spill,
): Row[] {
  const rows: Row[] = [];
  let pack: string[] = [];
  let chars = 0;
  let last = 0;
  const flush = () => {
    if (pack.length === 0) return;
    const json = `[${pack.join(",")}]`;
    const parts = cutInParts(json);
    if (parts.length === 1) rows.push([keyOf(last), parts[0]]);
    else if (spill !== undefined && spills(json.length)) {
      const first: LongPack = { parts: parts.length, json: parts[0], spill: spill(json, parts) };
      rows.push([keyOf(last), first]);
    } else {
      rows.push([keyOf(last), { parts: parts.length, json: parts[0] } satisfies LongPack]);
      for (let part = 1; part < parts.length; part++) rows.push([keyOf(last, part), parts[part]]);
    }
    pack = [];
    chars = 0;
  };
  for (const entry of entries) {
    const json = JSON.stringify(entry);
    if (chars + json.length > MAX_PACK_CHARS) flush();
    pack.push(json);
    chars += json.length;
    last = entry.seq;
  }
  flush();
  return rows;
}

/**
 * The rows of consecutive native `entries`: packs of whole entries keyed (by `keyOf`) with their
 * last seq and part 0, and an entry too long for a pack in parts of its own.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeRows } from "./_packs.ts";
 * const entry = (seq: number, json: string) => ({ seq, id: `n${seq}`, type: "agent.message", json });
 * const rows = nativeRows(
 *   [entry(1, "{}"), entry(2, "{}"), entry(3, `"${"x".repeat(30_000)}"`)],
 *   (seq, part) => ["run-native", "r", seq, part],
 * );
 * assert.deepEqual(rows.map(([key]) => key), [
 *   ["run-native", "r", 2, 0],
 *   ["run-native", "r", 3, 0],
 *   ["run-native", "r", 3, 1],
 * ]);
 * ```
 */
export function nativeRows(
  entries: readonly NativeEventEntry[],
  keyOf: (seq: number, part: number) => Deno.KvKey,
  spill?: Spill,
): Row[] {
  const rows: Row[] = [];
  let pack: NativeEventEntry[] = [];
  let chars = 0;
  const flush = () => {
    if (pack.length === 0) return;
    rows.push([keyOf(pack[pack.length - 1].seq, 0), pack]);
    pack = [];
    chars = 0;
  };
  for (const entry of entries) {
    // The JSON, the id and the type, plus room for the names and the seq.
    const size = entry.json.length + entry.id.length + entry.type.length + 48;
    if (size > MAX_PACK_CHARS) {
      flush();
      const parts = cutInParts(entry.json);
      const out = spill !== undefined && spills(entry.json.length);
      rows.push([
        keyOf(entry.seq, 0),
        {
          id: entry.id,
          type: entry.type,
          parts: parts.length,
          json: parts[0],
          ...(out ? { spill: spill(entry.json, parts) } : {}),
        } satisfies NativeFirstPart,
      ]);
      for (let part = 1; part < parts.length && !out; part++) {
        rows.push([keyOf(entry.seq, part), parts[part]]);
      }
      continue;
    }
    if (chars + size > MAX_PACK_CHARS) flush();
    pack.push({ seq: entry.seq, id: entry.id, type: entry.type, json: entry.json });
    chars += size;
  }
  flush();
  return rows;
}

/**
 * The run entries of `rows` later than `after`, up to `limit`: `rows` are the run-event log's
 * rows from the key `after + 1` up.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readRunEntries } from "./_packs.ts";
 * const entry = (seq: number) => ({
 *   seq,
 *   sourceId: `e${seq}`,
 *   at: "2026-11-27T00:00:00.000Z",
 *   event: { type: "run.started" as const, runId: "r" },
 * });
 * async function* rows() {
 *   yield { key: ["r", 4], value: JSON.stringify([entry(2), entry(3), entry(4)]), versionstamp: "" };
 *   yield { key: ["r", 5], value: entry(5), versionstamp: "" };
 * }
 * const page = await readRunEntries(rows(), 2, 2);
 * assert.deepEqual(page.map((entry) => entry.seq), [3, 4]);
 * ```
 */
export async function readRunEntries(
  rows: AsyncIterable<Deno.KvEntry<RunEventRow>>,
  after: number,
  limit: number,
  spilled?: Spilled,
): Promise<RunEventEntry[]> {
  const entries: RunEventEntry[] = [];
  const take = (json: string) => {
    for (const entry of JSON.parse(json) as RunEventEntry[]) {
      if (entries.length >= limit) return;
      if (entry.seq > after) entries.push(entry);
    }
  };
  // The long pack being read: its seq, its pieces so far, how many it has.
  let long: { seq: number; pieces: string[]; parts: number } | null = null;
  for await (const { key, value } of rows) {
    const [seq, part] = rowPlace(key);
    if (part > 0) {
      // Only the next piece of the pack being read; any other (a purge under way took rows
      // between two batches of this read) ends the page before that pack.
      if (long === null || seq !== long.seq || part !== long.pieces.length) break;
      long.pieces.push(value as string);
      if (long.pieces.length === long.parts) {
        take(long.pieces.join(""));
        long = null;
      }
    } else {
      if (long !== null) break;
      if (typeof value === "string") take(value);
      else if ("sourceId" in value) {
        if (value.seq > after) entries.push(value);
      } else if (value.parts === 1) take(value.json);
      else if (value.spill !== undefined) {
        const rest = spilled === undefined ? null : await spilled(value.spill, value.parts);
        if (rest === null) break;
        take(value.json + rest.join(""));
      } else long = { seq, pieces: [value.json], parts: value.parts };
    }
    if (entries.length >= limit && long === null) break;
  }
  return entries;
}

/**
 * Where a log row sits: its seq and its part, from its key (`[…, seq]` or `[…, seq, part]`: a
 * run-event row without a part is part 0).
 */
function rowPlace(key: Deno.KvKey): [seq: number, part: number] {
  const last = key[key.length - 1] as number;
  const before = key[key.length - 2];
  return typeof before === "number" ? [before, last] : [last, 0];
}

/**
 * The entries below `before` that the row keyed at or after it holds (`row`: the first row of the
 * native log from the key `before` up, if any), newest first: only a pack can hold them.
 */
export function straddlingNative(row: NativeRow | undefined, before: number): NativeEventEntry[] {
  if (!Array.isArray(row)) return [];
  return row.filter((entry) => entry.seq < before).reverse();
}

/**
 * The native entries of `rows` as `query` asks for them, up to its limit: `rows` are the native
 * log's rows from after `query.after` up (`asc`), or from below `query.before` (or the end) down
 * (`desc`), and `first` what comes before them (the entries of {@linkcode straddlingNative}).
 */
export async function readNative(
  rows: AsyncIterable<Deno.KvEntry<NativeRow>>,
  query: NativeEventQuery,
  first: readonly NativeEventEntry[] = [],
  spilled?: Spilled,
): Promise<NativeEventEntry[]> {
  const entries = first.slice(0, query.limit);
  const ascending = query.order === "asc";
  const after = query.after ?? 0;
  // Ascending: the parted entry whose further parts come next, and how many it has. Descending:
  // the further parts read before their first part (highest first), and their entry's seq.
  let open: NativeEventEntry | null = null;
  let openParts = 0;
  let nextPart = 0;
  let pieces: string[] = [];
  let piecesSeq = 0;
  let lastPart = 0;
  if (entries.length >= query.limit) return entries;
  for await (const { key, value } of rows) {
    const [seq, part] = rowPlace(key);
    if (typeof value === "string") {
      // Only the next part of the entry being read; any other (a purge under way took rows
      // between two batches of this read) ends the page before that entry.
      if (ascending) {
        if (open === null || seq !== open.seq || part !== nextPart) break;
        open.json += value;
        if (++nextPart === openParts) open = null;
      } else {
        if (pieces.length > 0 && (seq !== piecesSeq || part !== lastPart - 1)) break;
        piecesSeq = seq;
        lastPart = part;
        pieces.push(value);
      }
    } else {
      if (open !== null) break;
      if (Array.isArray(value)) {
        if (pieces.length > 0) break;
        const pack = ascending ? value : value.reverse();
        for (const entry of pack) {
          if (entries.length >= query.limit) break;
          if (!ascending || entry.seq > after) entries.push(entry);
        }
      } else {
        const entry: NativeEventEntry = { seq, id: value.id, type: value.type, json: value.json };
        if (value.spill !== undefined) {
          // Its other parts are out of the log's rows: none of them may have been read here.
          if (pieces.length > 0) break;
          const rest = spilled === undefined ? null : await spilled(value.spill, value.parts);
          if (rest === null) break;
          entry.json += rest.join("");
        } else if (ascending) {
          if (value.parts > 1) {
            open = entry;
            openParts = value.parts;
            nextPart = 1;
          }
        } else {
          // Its parts, read highest first, are parts - 1 down to 1 of this entry.
          if (
            pieces.length !== value.parts - 1 ||
            (pieces.length > 0 && (piecesSeq !== seq || lastPart !== 1))
          ) break;
          entry.json += pieces.reverse().join("");
          pieces = [];
        }
        entries.push(entry);
      }
    }
    // Full once no entry is part-read (descending, parts read without their first part yet).
    if (entries.length >= query.limit && open === null && pieces.length === 0) break;
  }
  // An entry whose parts stopped short is not returned.
  if (open !== null) entries.pop();
  return entries;
}
