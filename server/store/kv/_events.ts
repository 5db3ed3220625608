/**
 * The events part of the KV store: run event logs and tail leases. Keys, below the store's
 * namespace root:
 *
 * - `["run-event", runId, seq]` → {@linkcode RunEventEntry}
 * - `["run-event-source", runId, sourceId]` → seq (the dedupe index)
 * - `["run-event-head", runId]` → the last seq (watched for wake-ups)
 * - `["run-lease", runId]` → {@linkcode LeaseEntry}
 *
 * An append reads the head and the source index, then commits the new entries, their index keys
 * and the new head in one atomic operation checked against the head's versionstamp: a concurrent
 * append to the same run moves the head, so one of the two retries on the fresh head. No gap, no
 * duplicate.
 *
 * The fast path, and why: a run has one appender at a time (its tail), so the head this store
 * committed last is usually still the head. The append then reads nothing: it commits at once,
 * checked against the remembered head's versionstamp and against the absence of every new
 * source id, which is the same guarantee as the reads give. Any failed check falls back to the
 * reads. One round trip to Deno KV's thread instead of three, the largest part of the time from
 * a provider frame to its subscribers (about 3 ms at p50 with 100 subscribers, bench/events_bench.ts).
 *
 * The purge learns which runs ended from the runs part ({@linkcode runsEndedBefore}); it reads
 * no key of the runs part itself.
 *
 * @module
 */
import type { RunEventEntry, RunEventInput, RunLeaseParams } from "../run_event_types.ts";
import type { RunEventStore } from "../events.ts";
import { AGAIN, type KvCommits, storeFailure } from "./_commit.ts";
import { watchNumber } from "./_watch.ts";
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

/** Runs whose head is remembered for the append fast path before the memory is emptied. */
const MAX_HEADS = 4096;
/**
 * Entries per atomic commit: 2 mutations and (on the fast path) 1 check each, inside KV's limits
 * of 100 checks, 1000 mutations and 800 KiB.
 */
const MAX_APPEND_GROUP = 64;

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

/** The events part of the KV store. */
export class KvEvents implements RunEventStore {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #root: Deno.KvKey;
  /** The head each run had after this store's last append to it, as it was committed. */
  #heads = new Map<string, { seq: number; versionstamp: string }>();

  constructor(commits: KvCommits, root: Deno.KvKey) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#root = root;
  }

  #key(...parts: Deno.KvKeyPart[]): Deno.KvKey {
    return [...this.#root, ...parts];
  }

  async append(runId: string, events: readonly RunEventInput[]): Promise<RunEventEntry[]> {
    try {
      const appended: RunEventEntry[] = [];
      for (let start = 0; start < events.length; start += MAX_APPEND_GROUP) {
        appended.push(
          ...await this.#appendGroup(runId, events.slice(start, start + MAX_APPEND_GROUP)),
        );
      }
      return appended;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async #appendGroup(runId: string, events: readonly RunEventInput[]): Promise<RunEventEntry[]> {
    const known = this.#heads.get(runId);
    // Taken at once, so a concurrent append of this process goes the checked, reading way.
    this.#heads.delete(runId);
    if (known !== undefined) {
      const entries = numbered(events, known.seq, new Set());
      if (await this.#commit(runId, known.versionstamp, entries, true)) return entries;
    }
    const headKey = this.#key("run-event-head", runId);
    return await this.#commits.retry(async () => {
      const head = await this.#kv.get<number>(headKey);
      const entries = numbered(events, head.value ?? 0, await this.#storedSources(runId, events));
      if (entries.length === 0) {
        if (head.versionstamp !== null) this.#remember(runId, head.value ?? 0, head.versionstamp);
        return [];
      }
      return await this.#commit(runId, head.versionstamp, entries, false) ? entries : AGAIN;
    });
  }

  /** The source ids of `events` the run's log already holds. */
  async #storedSources(runId: string, events: readonly RunEventInput[]): Promise<Set<string>> {
    const stored = new Set<string>();
    const sources = [...new Set(events.map((event) => event.sourceId))];
    for (let i = 0; i < sources.length; i += 10) {
      const slice = sources.slice(i, i + 10);
      const found = await this.#kv.getMany(
        slice.map((sourceId) => this.#key("run-event-source", runId, sourceId)),
      );
      found.forEach((entry, index) => {
        if (entry.value !== null) stored.add(slice[index]);
      });
    }
    return stored;
  }

  /**
   * Commits `entries` (at least one) checked against the head's versionstamp and, when
   * `checkSources` (the fast path, which read none), against the absence of each source id.
   * Whether it committed; a commit remembers the new head.
   */
  async #commit(
    runId: string,
    headVersionstamp: string | null,
    entries: readonly RunEventEntry[],
    checkSources: boolean,
  ): Promise<boolean> {
    const headKey = this.#key("run-event-head", runId);
    const last = entries[entries.length - 1].seq;
    const operation = this.#kv.atomic()
      .check({ key: headKey, versionstamp: headVersionstamp })
      .set(headKey, last);
    for (const entry of entries) {
      const sourceKey = this.#key("run-event-source", runId, entry.sourceId);
      if (checkSources) operation.check({ key: sourceKey, versionstamp: null });
      operation
        .set(this.#key("run-event", runId, entry.seq), entry)
        .set(sourceKey, entry.seq);
    }
    const result = await this.#commits.commit(operation);
    if (result.ok) this.#remember(runId, last, result.versionstamp);
    return result.ok;
  }

  /** Remembers a run's head for the next append's fast path (a few thousand runs at most). */
  #remember(runId: string, seq: number, versionstamp: string): void {
    if (this.#heads.size >= MAX_HEADS) this.#heads.clear();
    this.#heads.set(runId, { seq, versionstamp });
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
      return result.ok ? true : AGAIN;
    }, notTaken);
  }

  async releaseLease(runId: string, holder: string): Promise<void> {
    try {
      const key = this.#key("run-lease", runId);
      const current = await this.#kv.get<LeaseEntry>(key);
      if (current.value?.holder !== holder) return;
      await this.#commits.commit(this.#kv.atomic().check(current).delete(key));
    } catch (error) {
      throw storeFailure(error);
    }
  }

  watch(runId: string, listener: (last?: number) => void): () => void {
    return watchNumber(this.#kv, this.#key("run-event-head", runId), listener);
  }

  async purge(endedBefore: string): Promise<number> {
    try {
      let deleted = 0;
      for await (const runId of runsEndedBefore(this.#kv, this.#root, endedBefore)) {
        for (const part of ["run-event", "run-event-source"]) {
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
