/**
 * The events part of the KV store: run event logs, native logs and tail leases. Keys, below the
 * store's namespace root:
 *
 * - `["run-event", runId, seq]` → a pack of consecutive {@linkcode RunEventEntry}s ending at
 *   `seq`, as JSON text; a pack longer than a value holds (one long reply) is `{parts, json}` with
 *   its first piece, and `["run-event", runId, seq, 1…]` the others (one entry, as an object, in
 *   logs written before packs)
 * - `["run-native", runId, seq, part]` → a pack of whole native entries ending at `seq` (part 0),
 *   or an entry too long for a pack: part 0 holds `{id, type, parts, json}` with the first piece
 *   of its JSON text, parts 1… the rest (a KV value holds at most 64 KiB, a provider event may
 *   hold more); the layout and its reads are `_packs.ts`'s
 * - `["run-spill", runId, token, part]` → parts 1… of an entry too long for one commit, written
 *   before the commit that numbers it, whose first part names the token (`_spill.ts`)
 * - `["run-sources", runId, seq, native]` → {@linkcode SourcesChunk}: the source ids of the run
 *   entries and the ids of the native entries one commit wrote, keyed by the head it left (the
 *   dedupe index, a key per commit)
 * - `["run-event-head", runId]` → {@linkcode LogHead}, the last seq of both logs (watched for
 *   wake-ups; a plain number, as written before the native log existed, is that number and no
 *   native entry)
 * - `["run-lease", runId]` → {@linkcode LeaseEntry}
 * - written before the index took a key per commit, and still read where a log has them:
 *   `["run-event-source", runId, sourceId]` and `["run-native-source", runId, id]` → seq
 *
 * An append commits the new entries of both logs, their index chunk and the new head in one
 * atomic operation checked against the head's versionstamp: a concurrent append to the same run
 * moves the head, so one of the two retries on the fresh head. It skips the ids the log holds,
 * which it knows from the run's chunks ({@linkcode KnownLog}, read once and then only the chunks
 * after the head it knows). No gap, no duplicate, in either log. A batch larger than one atomic
 * operation holds (400 entries, fewer when KV's limits say so: `_append_groups.ts`) goes in
 * several, in order: each is checked the same way, and an append interrupted between them is
 * finished by the next one (the index skips what was written).
 *
 * Why a key per commit and not per id: a burst of 2,000 provider messages is 6,000 entries, and
 * an index key each (with a check of its absence) made every commit write twice the rows: the
 * turn took 125 ms through `/provider` against 74 ms without the index and 84 ms with a key per
 * commit (`bench/native_bench.ts`'s turn, median of 30, 2026-11-27).
 *
 * The fast path, and why: a run has one appender at a time (its tail), so the head this store
 * committed last is usually still the head, and what this store knows of the log is still all of
 * it. The append then reads nothing: it commits at once, checked against the remembered head's
 * versionstamp, which is the same guarantee as reading would give. A failed check falls back to
 * reading. One round trip to Deno KV's thread instead of three, the largest part of the time from
 * a provider frame to its subscribers (about 3 ms at p50 with 100 subscribers,
 * bench/events_bench.ts). What is known is bounded (`_known_logs.ts`: 20 MiB in all; a run that
 * finds no room, and so is not kept, reads its whole index at each append). A run is forgotten
 * when its lease is released.
 *
 * A log with keys of the earlier index (a file written before it took a key per commit) keeps
 * them: an append to it also looks up, or on the fast path checks the absence of, each new id's
 * earlier key (an id too long for a key had none). New appends write only chunks; the purge
 * removes both. A process of an earlier version writing to the same file meanwhile moves the head
 * without a chunk, which a later read notices (it reads everything again); the earlier version
 * itself knows nothing of chunks, so it must not run again on a file this one wrote to.
 *
 * The fence: an append with a `holder` also checks `["run-lease", runId]` in its atomic operation,
 * against the versionstamp this store's last take or renewal of that lease by that holder wrote
 * (remembered per run, like the head). A lease another holder took has another versionstamp, so
 * the commit fails; so does one the holder renewed meanwhile, and the append's reading way then
 * reads the lease with the head (one `getMany`): still the holder's, the append goes on against
 * its fresh versionstamp (what it knows of the log still holds while the head is unchanged);
 * another's (or none), the append fails with {@linkcode RunLeaseLostError} having written
 * nothing. The fast path stays one round trip with one more check.
 *
 * The purge learns which runs ended from the runs part ({@linkcode runsEndedBefore}); it reads
 * no key of the runs part itself.
 *
 * @module
 */
import type {
  AppendedBatch,
  AppendOptions,
  EventBatch,
  LogHead,
  NativeEventEntry,
  NativeEventQuery,
  RunEventEntry,
  RunEventInput,
  RunLeaseParams,
} from "../run_event_types.ts";
import { type RunEventStore, RunLeaseLostError } from "../events.ts";
import { AGAIN, type KvCommits, storeFailure } from "./_commit.ts";
import { watchKey } from "./_watch.ts";
import { runsEndedBefore } from "./_runs.ts";
import {
  type NativeRow,
  nativeRows,
  readNative,
  readRunEntries,
  type RunEventRow,
  runRows,
  straddlingNative,
} from "./_packs.ts";
import { spillReader, Spills } from "./_spill.ts";
import { addChunk, emptyLog, type KnownLog, KnownLogs, type SourcesChunk } from "./_known_logs.ts";
import {
  type Group,
  groupsOf,
  heldIn,
  keySize,
  MAX_CHECKED_GROUP,
  MAX_CHECKED_KEY_BYTES,
  type Numbered,
  numbered,
  numberedNative,
} from "./_append_groups.ts";

/** A lease still contended after every attempt is another replica's: not taken. */
function notTaken(): boolean {
  return false;
}

/** A tail lease. */
interface LeaseEntry {
  holder: string;
  leaseUntil: number;
}

/** The lease versionstamp a holder's last take or renewal through this store wrote. */
interface HeldLease {
  holder: string;
  versionstamp: string;
}

/** Runs whose lease is remembered for the fence before the memory is emptied. */
const MAX_LEASES = 4096;
const EMPTY_HEAD: LogHead = Object.freeze({ seq: 0, native: 0 });

/** The head a stored value stands for: a number is the run events' last seq (older files). */
function headOf(value: unknown): LogHead {
  if (typeof value === "number") return { seq: value, native: 0 };
  if (typeof value === "object" && value !== null) {
    const head = value as Partial<LogHead>;
    return { seq: head.seq ?? 0, native: head.native ?? 0 };
  }
  return EMPTY_HEAD;
}

/**
 * Rows fetched per batch of a read: a row holds at most 24 K characters (a piece of a long entry;
 * a pack 16 K), so a read fetches at most about 2.4 M characters beyond what it returns.
 */
const READ_BATCH = 100;

/** Options of {@linkcode KvEvents}. */
export interface KvEventsOptions {
  /** Bound of what is known of the runs' logs, bytes (default 20 MiB: `_known_logs.ts`). */
  maxKnownBytes?: number;
  /** The clock that tells idle runs in that memory, ms (default `performance.now`). */
  now?: () => number;
}

/** The events part of the KV store. */
export class KvEvents implements RunEventStore {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #root: Deno.KvKey;
  /** What this store knows of each run's logs after its last append or read (bounded). */
  readonly #known: KnownLogs;
  /** The lease of each run as this store's last take or renewal of it wrote it (the fence). */
  #leases = new Map<string, HeldLease>();

  /** The events part over `commits`, below `root`. */
  constructor(commits: KvCommits, root: Deno.KvKey, options: KvEventsOptions = {}) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#root = root;
    this.#known = new KnownLogs(options.maxKnownBytes, options.now);
  }

  #key(...parts: Deno.KvKeyPart[]): Deno.KvKey {
    return [...this.#root, ...parts];
  }

  /** Where the parts of a run's entries too long for their commit are (`_spill.ts`). */
  #spilled(runId: string): (token: string) => Deno.KvKey {
    return (token) => this.#key("run-spill", runId, token);
  }

  async append(runId: string, events: readonly RunEventInput[]): Promise<RunEventEntry[]> {
    return (await this.appendBatch(runId, { events })).events;
  }

  async appendBatch(
    runId: string,
    batch: EventBatch,
    options: AppendOptions = {},
  ): Promise<AppendedBatch> {
    try {
      const appended: AppendedBatch = { events: [], native: [] };
      // Every mutation's key is at most a native part's (the longest: a number more).
      const groups = groupsOf(batch, keySize(this.#key("run-native", runId, 0, 0)));
      // A fenced append of nothing still says whether its holder holds the lease.
      if (groups.length === 0 && options.holder !== undefined) {
        await this.#heldLease(runId, options.holder);
      }
      for (const group of groups) {
        const done = await this.#appendGroup(runId, group, options.holder);
        appended.events.push(...done.events);
        appended.native.push(...done.native);
      }
      return appended;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async #appendGroup(runId: string, group: Group, holder?: string): Promise<Numbered> {
    // Taken at once, so a concurrent append of this process goes the checked, reading way.
    let known = this.#known.take(runId);
    const spills = new Spills(this.#commits, this.#spilled(runId));
    const lease = holder === undefined ? undefined : this.#leases.get(runId);
    if (known !== undefined && (holder === undefined || lease?.holder === holder)) {
      const entries = {
        events: numbered(group.events, known.head.seq, heldIn(known.events)),
        native: numberedNative(group.native, known.head.native, heldIn(known.native)),
      };
      if (entries.events.length > 0 || entries.native.length > 0) {
        // In a log with keys of the earlier index, too many to check go the reading way.
        const checks = known.legacy ? this.#legacyChecks(runId, entries) : [];
        if (
          checks !== null &&
          await this.#commit(runId, known, entries, spills, checks, lease?.versionstamp)
        ) return entries;
      } else if (holder === undefined) {
        this.#known.remember(runId, known);
        return entries;
      }
      // Nothing new for a holder: the reading way reads the lease (and only that, and the head).
    }
    const headKey = this.#key("run-event-head", runId);
    const leaseKey = this.#key("run-lease", runId);
    return await this.#commits.retry(async () => {
      let stored: Deno.KvEntryMaybe<unknown>;
      let fence: string | undefined;
      if (holder === undefined) stored = await this.#kv.get(headKey);
      else {
        const [head, lease] = await this.#kv.getMany<[unknown, LeaseEntry]>([headKey, leaseKey]);
        stored = head;
        fence = this.#fence(runId, holder, lease);
      }
      known = await this.#read(runId, stored, known);
      const [events, native] = known.legacy
        ? await Promise.all([
          this.#stored(runId, "run-event-source", group.events.map((event) => event.sourceId)),
          this.#stored(runId, "run-native-source", group.native.map((event) => event.id)),
        ])
        : [new Set<string>(), new Set<string>()];
      const entries = {
        events: numbered(group.events, known.head.seq, heldIn(known.events, events)),
        native: numberedNative(group.native, known.head.native, heldIn(known.native, native)),
      };
      if (entries.events.length === 0 && entries.native.length === 0) {
        if (known.versionstamp !== "") this.#known.remember(runId, known);
        return entries;
      }
      return await this.#commit(runId, known, entries, spills, [], fence) ? entries : AGAIN;
    });
  }

  /**
   * What the run's logs hold up to the `stored` head (an empty versionstamp: none written yet):
   * `known` as it is while the head is unchanged (only the lease moved); else `known` with the
   * index chunks written after its head, while the chunk its head left is still there; else (the
   * log was purged meanwhile, or `known`'s head came from the earlier index) every chunk.
   */
  async #read(
    runId: string,
    stored: Deno.KvEntryMaybe<unknown>,
    known: KnownLog | undefined,
  ): Promise<KnownLog> {
    const versionstamp = stored.versionstamp ?? "";
    const head = headOf(stored.value);
    if (known !== undefined && known.versionstamp === versionstamp) return known;
    const prefix = this.#key("run-sources", runId);
    if (known !== undefined) {
      // Chunk keys are the heads their commits left, which only grow: from `known`'s on.
      const from = known.head;
      let first = true;
      let found = false;
      let reached = false;
      let last = from;
      const newer: SourcesChunk[] = [];
      for await (
        const chunk of this.#kv.list<SourcesChunk>(
          { prefix, start: [...prefix, from.seq, from.native] },
          { batchSize: 500 },
        )
      ) {
        if (first) {
          first = false;
          // The chunk the known head's own commit wrote (the same versionstamp), not one that a
          // log written again after a purge left at the same place.
          const key = chunk.key;
          found = key[key.length - 2] === from.seq && key[key.length - 1] === from.native &&
            chunk.versionstamp === known.versionstamp;
          if (!found) break;
          continue;
        }
        // Each commit's chunk starts where the one before ended: a gap is a commit without a
        // chunk (a process of an earlier version), whose ids only keys of the earlier index hold.
        const key = chunk.key;
        const seq = key[key.length - 2] as number;
        const native = key[key.length - 1] as number;
        const value = chunk.value;
        if (
          seq - value.events.length !== last.seq || native - value.native.length !== last.native
        ) break;
        last = { seq, native };
        newer.push(value);
        if (chunk.versionstamp === versionstamp) {
          reached = true;
          break;
        }
      }
      // Every commit up to the stored head wrote a chunk (else a process of an earlier version
      // moved it, writing keys of the earlier index): read everything.
      if (found && reached) {
        for (const chunk of newer) addChunk(known, chunk);
        return { ...known, head, versionstamp };
      }
    }
    const read = emptyLog(head, versionstamp);
    for await (
      const chunk of this.#kv.list<SourcesChunk>({ prefix }, { batchSize: 500 })
    ) {
      addChunk(read, chunk.value);
    }
    // A log written before the index took a key per commit has keys of the earlier one.
    const [events, native] = await Promise.all([
      this.#kv.list({ prefix: this.#key("run-event-source", runId) }, { limit: 1 }).next(),
      this.#kv.list({ prefix: this.#key("run-native-source", runId) }, { limit: 1 }).next(),
    ]);
    read.legacy = events.done !== true || native.done !== true;
    return read;
  }

  /**
   * The versionstamp of `lease` as read, when `holder` holds it (remembered for the next append);
   * {@linkcode RunLeaseLostError} when it does not (another holder's, or none).
   */
  #fence(runId: string, holder: string, lease: Deno.KvEntryMaybe<LeaseEntry>): string {
    if (lease.value?.holder !== holder || lease.versionstamp === null) {
      this.#leases.delete(runId);
      throw new RunLeaseLostError(runId);
    }
    this.#rememberLease(runId, { holder, versionstamp: lease.versionstamp });
    return lease.versionstamp;
  }

  /** Fails with {@linkcode RunLeaseLostError} unless `holder` holds the run's lease. */
  async #heldLease(runId: string, holder: string): Promise<void> {
    this.#fence(runId, holder, await this.#kv.get<LeaseEntry>(this.#key("run-lease", runId)));
  }

  /** The ids among `ids` with a key of the earlier index under `part`. */
  async #stored(runId: string, part: string, ids: readonly string[]): Promise<Set<string>> {
    const stored = new Set<string>();
    const keyed = [...new Set(ids)].flatMap((id) => {
      const legacy = this.#legacyKey(part, runId, id);
      return legacy === null ? [] : [{ id, key: legacy.key }];
    });
    for (let i = 0; i < keyed.length; i += 10) {
      const slice = keyed.slice(i, i + 10);
      const found = await this.#kv.getMany(slice.map((item) => item.key));
      found.forEach((entry, index) => {
        if (entry.value !== null) stored.add(slice[index].id);
      });
    }
    return stored;
  }

  /**
   * Commits `entries` (at least one) after the head `known` has, checked against its
   * versionstamp, the lease's when fenced (`leaseVersionstamp`) and the absence of each key in
   * `absent` (the fast path's keys of the earlier index, `#legacyChecks`).
   * Whether it committed; a commit makes `known` the new head's, and this store remembers it.
   */
  async #commit(
    runId: string,
    known: KnownLog,
    entries: Numbered,
    spills: Spills,
    absent: readonly Deno.KvKey[],
    leaseVersionstamp?: string,
  ): Promise<boolean> {
    const headKey = this.#key("run-event-head", runId);
    const head = known.head;
    const next: LogHead = {
      seq: entries.events.at(-1)?.seq ?? head.seq,
      native: entries.native.at(-1)?.seq ?? head.native,
    };
    const operation = this.#kv.atomic()
      .check({ key: headKey, versionstamp: known.versionstamp === "" ? null : known.versionstamp })
      .set(headKey, next);
    if (leaseVersionstamp !== undefined) {
      operation.check({ key: this.#key("run-lease", runId), versionstamp: leaseVersionstamp });
    }
    for (const key of absent) operation.check({ key, versionstamp: null });
    const rows = [
      ...runRows(
        entries.events,
        (seq, part) =>
          part === undefined
            ? this.#key("run-event", runId, seq)
            : this.#key("run-event", runId, seq, part),
        spills.spill,
      ),
      ...nativeRows(
        entries.native,
        (seq, part) => this.#key("run-native", runId, seq, part),
        spills.spill,
      ),
    ];
    for (const [key, value] of rows) operation.set(key, value);
    const chunk: SourcesChunk = {
      events: entries.events.map((entry) => entry.sourceId),
      native: entries.native.map((entry) => entry.id),
    };
    operation.set(this.#key("run-sources", runId, next.seq, next.native), chunk);
    // The parts of entries too long for this commit first: it refers to them.
    await spills.write();
    const result = await this.#commits.commit(operation);
    if (!result.ok) return false;
    addChunk(known, chunk);
    known.head = next;
    known.versionstamp = result.versionstamp;
    this.#known.remember(runId, known);
    return true;
  }

  /**
   * The key of `id` in the earlier index under `part` and its size, or null when it is longer
   * than a KV key may be (2,048 bytes): such an id had no key there, and asking for one would fail.
   */
  #legacyKey(part: string, runId: string, id: string): { key: Deno.KvKey; size: number } | null {
    const key = this.#key(part, runId, id);
    const size = keySize(key);
    return size <= 2048 ? { key, size } : null;
  }

  /**
   * The keys of the earlier index a fast-path commit of `entries` checks the absence of, or null
   * when they are more than one commit can check (the append then reads instead).
   */
  #legacyChecks(runId: string, entries: Numbered): Deno.KvKey[] | null {
    if (entries.events.length + entries.native.length > MAX_CHECKED_GROUP) return null;
    const keys: Deno.KvKey[] = [];
    let bytes = 0;
    const add = (legacy: { key: Deno.KvKey; size: number } | null): void => {
      if (legacy === null) return;
      keys.push(legacy.key);
      bytes += legacy.size;
    };
    for (const entry of entries.events) {
      add(this.#legacyKey("run-event-source", runId, entry.sourceId));
    }
    for (const entry of entries.native) add(this.#legacyKey("run-native-source", runId, entry.id));
    return bytes <= MAX_CHECKED_KEY_BYTES ? keys : null;
  }

  /** Remembers the lease a holder's take or renewal wrote, for the fence (bounded the same). */
  #rememberLease(runId: string, lease: HeldLease): void {
    if (this.#leases.size >= MAX_LEASES) this.#leases.clear();
    this.#leases.set(runId, lease);
  }

  async list(runId: string, after: number, limit: number): Promise<RunEventEntry[]> {
    // A page of no entries is empty (Deno KV refuses a batch of none).
    if (!(limit >= 1)) return [];
    try {
      const prefix = this.#key("run-event", runId);
      const rows = this.#kv.list<RunEventRow>(
        { prefix, start: [...prefix, after + 1] },
        { batchSize: Math.min(limit, READ_BATCH) },
      );
      return await readRunEntries(rows, after, limit, spillReader(this.#kv, this.#spilled(runId)));
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async listNative(runId: string, query: NativeEventQuery): Promise<NativeEventEntry[]> {
    if (!(query.limit >= 1)) return [];
    try {
      const prefix = this.#key("run-native", runId);
      const batchSize = Math.min(query.limit + 1, READ_BATCH);
      if (query.order === "asc") {
        const rows = this.#kv.list<NativeRow>(
          { prefix, start: [...prefix, (query.after ?? 0) + 1] },
          { batchSize },
        );
        return await readNative(rows, query, [], spillReader(this.#kv, this.#spilled(runId)));
      }
      let first: NativeEventEntry[] = [];
      if (query.before !== undefined) {
        for await (
          const row of this.#kv.list<NativeRow>(
            { prefix, start: [...prefix, query.before] },
            { limit: 1 },
          )
        ) first = straddlingNative(row.value, query.before);
        if (first.length >= query.limit) return first.slice(0, query.limit);
      }
      const rows = this.#kv.list<NativeRow>(
        query.before === undefined ? { prefix } : { prefix, end: [...prefix, query.before] },
        { reverse: true, batchSize },
      );
      return await readNative(rows, query, first, spillReader(this.#kv, this.#spilled(runId)));
    } catch (error) {
      throw storeFailure(error);
    }
  }

  acquireLease(params: RunLeaseParams): Promise<boolean> {
    const key = this.#key("run-lease", params.runId);
    return this.#commits.retry(async () => {
      const current = await this.#kv.get<LeaseEntry>(key);
      const lease = current.value;
      if (lease !== null && lease.holder !== params.holder && lease.leaseUntil > params.now) {
        return false;
      }
      const result = await this.#commits.commit(
        this.#kv.atomic().check(current).set(
          key,
          { holder: params.holder, leaseUntil: params.now + params.ttlMs } satisfies LeaseEntry,
        ),
      );
      if (!result.ok) return AGAIN;
      this.#rememberLease(params.runId, {
        holder: params.holder,
        versionstamp: result.versionstamp,
      });
      return true;
    }, notTaken);
  }

  async releaseLease(runId: string, holder: string): Promise<void> {
    try {
      const key = this.#key("run-lease", runId);
      const current = await this.#kv.get<LeaseEntry>(key);
      if (current.value?.holder !== holder) return;
      this.#leases.delete(runId);
      // Its holder stopped appending (the run ended, or the tail stopped): what is known of its
      // logs is only memory now.
      this.#known.take(runId);
      await this.#commits.commit(this.#kv.atomic().check(current).delete(key));
    } catch (error) {
      throw storeFailure(error);
    }
  }

  watch(runId: string, listener: (last?: number, head?: LogHead) => void): () => void {
    return watchKey(this.#kv, this.#key("run-event-head", runId), (value) => {
      const head = headOf(value);
      listener(head.seq, head);
    });
  }

  async purge(endedBefore: string): Promise<number> {
    try {
      let deleted = 0;
      for await (const runId of runsEndedBefore(this.#kv, this.#root, endedBefore)) {
        this.#known.take(runId);
        let lastSeq = 0;
        for (
          const part of [
            "run-event",
            "run-native",
            "run-sources",
            "run-event-source",
            "run-native-source",
            "run-spill",
          ]
        ) {
          let operation = this.#kv.atomic();
          let pending = 0;
          for await (const item of this.#kv.list({ prefix: this.#key(part, runId) })) {
            operation.delete(item.key);
            // Pieces of a long pack count none: its head counts its one entry.
            if (part === "run-event" && typeof item.key[item.key.length - 2] !== "number") {
              const seq = item.key[item.key.length - 1] as number;
              // The first pack left counts its own (a purge cut short may have taken the ones
              // before it); each later one holds the entries after the one before it.
              deleted += lastSeq > 0
                ? seq - lastSeq
                : typeof item.value === "string"
                ? (JSON.parse(item.value) as unknown[]).length
                : 1;
              lastSeq = seq;
            }
            if (++pending === 500) {
              await this.#commits.commit(operation);
              operation = this.#kv.atomic();
              pending = 0;
            }
          }
          if (pending > 0) await this.#commits.commit(operation);
        }
        await this.#commits.commit(
          this.#kv.atomic()
            .delete(this.#key("run-event-head", runId))
            .delete(this.#key("run-lease", runId)),
        );
      }
      return deleted;
    } catch (error) {
      throw storeFailure(error);
    }
  }
}
