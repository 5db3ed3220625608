/**
 * The events part of the KV store: run event logs, native logs and tail leases. Keys, below the
 * store's namespace root:
 *
 * - `["run-event", runId, seq]` → {@linkcode RunEventEntry}
 * - `["run-event-source", runId, sourceId]` → seq (the dedupe index)
 * - `["run-native", runId, seq, part]` → a native entry: part 0 holds `{id, type, parts, json}`
 *   with the first piece of its JSON text, parts 1… the rest (a KV value holds at most 64 KiB,
 *   a provider event may hold more)
 * - `["run-native-source", runId, id]` → seq (the native dedupe index)
 * - `["run-event-head", runId]` → {@linkcode LogHead}, the last seq of both logs (watched for
 *   wake-ups; a plain number, as written before the native log existed, is that number and no
 *   native entry)
 * - `["run-lease", runId]` → {@linkcode LeaseEntry}
 *
 * An append reads the head and the source indexes, then commits the new entries of both logs,
 * their index keys and the new head in one atomic operation checked against the head's
 * versionstamp: a concurrent append to the same run moves the head, so one of the two retries on
 * the fresh head. No gap, no duplicate, in either log. A batch larger than one atomic operation
 * holds (about 500 KiB, or 96 entries with their checks) goes in several, in order: each is
 * checked the same way, and an append interrupted between them is finished by the next one (the
 * indexes skip what was written).
 *
 * The fast path, and why: a run has one appender at a time (its tail), so the head this store
 * committed last is usually still the head. The append then reads nothing: it commits at once,
 * checked against the remembered head's versionstamp and against the absence of every new
 * source id, which is the same guarantee as the reads give. Any failed check falls back to the
 * reads. One round trip to Deno KV's thread instead of three, the largest part of the time from
 * a provider frame to its subscribers (about 3 ms at p50 with 100 subscribers, bench/events_bench.ts).
 *
 * The fence: an append with a `holder` also checks `["run-lease", runId]` in its atomic operation,
 * against the versionstamp this store's last take or renewal of that lease by that holder wrote
 * (remembered per run, like the head). A lease another holder took has another versionstamp, so
 * the commit fails; so does one the holder renewed meanwhile, and the append's reading way then
 * reads the lease with the head (one `getMany`): still the holder's, the append goes on against
 * its fresh versionstamp; another's (or none), the append fails with {@linkcode RunLeaseLostError}
 * having written nothing. The fast path stays one round trip with one more check.
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
  NativeEventInput,
  NativeEventQuery,
  RunEventEntry,
  RunEventInput,
  RunLeaseParams,
} from "../run_event_types.ts";
import { type RunEventStore, RunLeaseLostError } from "../events.ts";
import { AGAIN, type KvCommits, storeFailure } from "./_commit.ts";
import { watchKey } from "./_watch.ts";
import { runsEndedBefore } from "./_runs.ts";

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

/** Runs whose head is remembered for the append fast path before the memory is emptied. */
const MAX_HEADS = 4096;
/**
 * Entries (of both logs) per atomic commit: 2 mutations and (on the fast path) 1 check each,
 * with the head's and the lease's checks inside KV's limits of 100 checks and 1000 mutations.
 */
const MAX_APPEND_GROUP = 96;
/** Bytes of values per atomic commit (estimated), inside KV's 800 KiB. */
const MAX_GROUP_BYTES = 500 * 1024;
/** Characters of native JSON per value: at most 48 KiB even as two-byte text, inside 64 KiB. */
const NATIVE_PART = 24_000;

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

/** Part 0 of a native entry. */
interface NativeFirstPart {
  id: string;
  type: string;
  parts: number;
  json: string;
}

/** A batch split into commits: each group's run events and native events, in order. */
interface Group {
  events: RunEventInput[];
  native: NativeEventInput[];
}

/** Splits a batch into groups that each fit one atomic operation. */
function groupsOf(batch: EventBatch): Group[] {
  const groups: Group[] = [];
  let group: Group = { events: [], native: [] };
  let count = 0;
  let bytes = 0;
  const add = (size: number): void => {
    if (count > 0 && (count + 1 > MAX_APPEND_GROUP || bytes + size > MAX_GROUP_BYTES)) {
      groups.push(group);
      group = { events: [], native: [] };
      count = 0;
      bytes = 0;
    }
    count++;
    bytes += size;
  };
  for (const event of batch.events) {
    add(2 * JSON.stringify(event.event).length + 256);
    group.events.push(event);
  }
  for (const event of batch.native ?? []) {
    add(2 * event.json.length + 256);
    group.native.push(event);
  }
  if (count > 0) groups.push(group);
  return groups;
}

/** `events` numbered after `seq`, skipping the source ids in `skip` and repeats within `events`. */
function numbered(
  events: readonly RunEventInput[],
  seq: number,
  skip: Set<string>,
): RunEventEntry[] {
  const entries: RunEventEntry[] = [];
  for (const event of events) {
    if (skip.has(event.sourceId)) continue;
    skip.add(event.sourceId);
    entries.push({ seq: ++seq, ...event });
  }
  return entries;
}

/** Native `events` numbered after `seq`, skipping the ids in `skip` and repeats. */
function numberedNative(
  events: readonly NativeEventInput[],
  seq: number,
  skip: Set<string>,
): NativeEventEntry[] {
  const entries: NativeEventEntry[] = [];
  for (const event of events) {
    if (skip.has(event.id)) continue;
    skip.add(event.id);
    entries.push({ seq: ++seq, id: event.id, type: event.type, json: event.json });
  }
  return entries;
}

/** One group, numbered: what one commit writes. */
interface Numbered {
  events: RunEventEntry[];
  native: NativeEventEntry[];
}

/** The events part of the KV store. */
export class KvEvents implements RunEventStore {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #root: Deno.KvKey;
  /** The head each run had after this store's last append to it, as it was committed. */
  #heads = new Map<string, { head: LogHead; versionstamp: string }>();
  /** The lease of each run as this store's last take or renewal of it wrote it (the fence). */
  #leases = new Map<string, HeldLease>();

  constructor(commits: KvCommits, root: Deno.KvKey) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#root = root;
  }

  #key(...parts: Deno.KvKeyPart[]): Deno.KvKey {
    return [...this.#root, ...parts];
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
      const groups = groupsOf(batch);
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
    const known = this.#heads.get(runId);
    // Taken at once, so a concurrent append of this process goes the checked, reading way.
    this.#heads.delete(runId);
    const lease = holder === undefined ? undefined : this.#leases.get(runId);
    if (known !== undefined && (holder === undefined || lease?.holder === holder)) {
      const entries = {
        events: numbered(group.events, known.head.seq, new Set()),
        native: numberedNative(group.native, known.head.native, new Set()),
      };
      const fence = lease?.versionstamp;
      if (await this.#commit(runId, known.versionstamp, known.head, entries, true, fence)) {
        return entries;
      }
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
      const head = headOf(stored.value);
      const entries = {
        events: numbered(group.events, head.seq, await this.#storedSources(runId, group.events)),
        native: numberedNative(
          group.native,
          head.native,
          await this.#storedNative(runId, group.native),
        ),
      };
      if (entries.events.length === 0 && entries.native.length === 0) {
        if (stored.versionstamp !== null) this.#remember(runId, head, stored.versionstamp);
        return entries;
      }
      return await this.#commit(runId, stored.versionstamp, head, entries, false, fence)
        ? entries
        : AGAIN;
    });
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

  /** The keys of `ids` under `part` that the run holds. */
  async #stored(runId: string, part: string, ids: readonly string[]): Promise<Set<string>> {
    const stored = new Set<string>();
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += 10) {
      const slice = unique.slice(i, i + 10);
      const found = await this.#kv.getMany(slice.map((id) => this.#key(part, runId, id)));
      found.forEach((entry, index) => {
        if (entry.value !== null) stored.add(slice[index]);
      });
    }
    return stored;
  }

  /** The source ids of `events` the run's log already holds. */
  #storedSources(runId: string, events: readonly RunEventInput[]): Promise<Set<string>> {
    return this.#stored(runId, "run-event-source", events.map((event) => event.sourceId));
  }

  /** The ids of `events` the run's native log already holds. */
  #storedNative(runId: string, events: readonly NativeEventInput[]): Promise<Set<string>> {
    return this.#stored(runId, "run-native-source", events.map((event) => event.id));
  }

  /**
   * Commits `entries` (at least one) checked against the head's versionstamp, the lease's when
   * fenced (`leaseVersionstamp`) and, when `checkSources` (the fast path, which read none),
   * against the absence of each id.
   * Whether it committed; a commit remembers the new head.
   */
  async #commit(
    runId: string,
    headVersionstamp: string | null,
    head: LogHead,
    entries: Numbered,
    checkSources: boolean,
    leaseVersionstamp?: string,
  ): Promise<boolean> {
    const headKey = this.#key("run-event-head", runId);
    const next: LogHead = {
      seq: entries.events.at(-1)?.seq ?? head.seq,
      native: entries.native.at(-1)?.seq ?? head.native,
    };
    const operation = this.#kv.atomic()
      .check({ key: headKey, versionstamp: headVersionstamp })
      .set(headKey, next);
    if (leaseVersionstamp !== undefined) {
      operation.check({ key: this.#key("run-lease", runId), versionstamp: leaseVersionstamp });
    }
    for (const entry of entries.events) {
      const sourceKey = this.#key("run-event-source", runId, entry.sourceId);
      if (checkSources) operation.check({ key: sourceKey, versionstamp: null });
      operation
        .set(this.#key("run-event", runId, entry.seq), entry)
        .set(sourceKey, entry.seq);
    }
    for (const entry of entries.native) {
      const sourceKey = this.#key("run-native-source", runId, entry.id);
      if (checkSources) operation.check({ key: sourceKey, versionstamp: null });
      const parts = Math.max(1, Math.ceil(entry.json.length / NATIVE_PART));
      operation.set(
        this.#key("run-native", runId, entry.seq, 0),
        {
          id: entry.id,
          type: entry.type,
          parts,
          json: entry.json.slice(0, NATIVE_PART),
        } satisfies NativeFirstPart,
      );
      for (let part = 1; part < parts; part++) {
        operation.set(
          this.#key("run-native", runId, entry.seq, part),
          entry.json.slice(part * NATIVE_PART, (part + 1) * NATIVE_PART),
        );
      }
      operation.set(sourceKey, entry.seq);
    }
    const result = await this.#commits.commit(operation);
    if (result.ok) this.#remember(runId, next, result.versionstamp);
    return result.ok;
  }

  /** Remembers a run's head for the next append's fast path (a few thousand runs at most). */
  #remember(runId: string, head: LogHead, versionstamp: string): void {
    if (this.#heads.size >= MAX_HEADS) this.#heads.clear();
    this.#heads.set(runId, { head, versionstamp });
  }

  /** Remembers the lease a holder's take or renewal wrote, for the fence (bounded the same). */
  #rememberLease(runId: string, lease: HeldLease): void {
    if (this.#leases.size >= MAX_HEADS) this.#leases.clear();
    this.#leases.set(runId, lease);
  }

  async list(runId: string, after: number, limit: number): Promise<RunEventEntry[]> {
    try {
      const prefix = this.#key("run-event", runId);
      const entries: RunEventEntry[] = [];
      const iterator = this.#kv.list<RunEventEntry>(
        { prefix, start: [...prefix, after + 1] },
        { limit, batchSize: Math.min(limit, 500) },
      );
      for await (const entry of iterator) entries.push(entry.value);
      return entries;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async listNative(runId: string, query: NativeEventQuery): Promise<NativeEventEntry[]> {
    try {
      const prefix = this.#key("run-native", runId);
      const selector: Deno.KvListSelector = query.order === "asc"
        ? { prefix, start: [...prefix, (query.after ?? 0) + 1] }
        : query.before === undefined
        ? { prefix }
        : { prefix, end: [...prefix, query.before] };
      const entries: NativeEventEntry[] = [];
      // Parts arrive in key order: 0, 1, … ascending; …, 1, 0 descending.
      let pieces: string[] = [];
      const iterator = this.#kv.list<NativeFirstPart | string>(selector, {
        reverse: query.order === "desc",
        batchSize: Math.min(query.limit + 1, 500),
      });
      for await (const item of iterator) {
        const value = item.value;
        if (typeof value === "string") {
          pieces.push(value);
          continue;
        }
        const rest = query.order === "asc" ? pieces : pieces.reverse();
        if (query.order === "asc" && entries.length > 0) {
          entries[entries.length - 1].json += rest.join("");
        }
        pieces = [];
        const seq = item.key[item.key.length - 2] as number;
        const entry = { seq, id: value.id, type: value.type, json: value.json };
        if (query.order === "desc") entry.json += rest.join("");
        if (query.order === "asc" && entries.length === query.limit) break;
        entries.push(entry);
        if (query.order === "desc" && entries.length === query.limit) break;
      }
      if (query.order === "asc" && entries.length > 0 && pieces.length > 0) {
        entries[entries.length - 1].json += pieces.join("");
      }
      return entries;
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
        for (const part of ["run-event", "run-event-source", "run-native", "run-native-source"]) {
          let operation = this.#kv.atomic();
          let pending = 0;
          for await (const item of this.#kv.list({ prefix: this.#key(part, runId) })) {
            operation.delete(item.key);
            if (part === "run-event") deleted++;
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
