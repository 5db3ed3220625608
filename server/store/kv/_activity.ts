/**
 * The activity part of the KV store. Keys, below the store's namespace root:
 *
 * - `["activity", seq]` → {@linkcode ActivityRecord}
 * - `["activity-seq"]` → the last seq (watched for wake-ups)
 * - `["activity-run", runId, seq]` → true (a run's entries, for the inbox)
 * - `["activity-key", runId, key]` → seq (the dedupe index)
 *
 * Entries are numbered in the atomic operation that appends them, after the last seq and checked
 * against it (and against the absence of each new key), so two commits can never number alike
 * and an entry becomes visible only with every entry before it. The runs and answers parts append
 * entries in their own operations through {@linkcode KvActivityLog}: `read` what numbering needs
 * (inside their read-check-commit step), `add` it to their operation. Commits of this process
 * that append entries run one at a time ({@linkcode KvActivityLog.serial}), so they never fail
 * each other's check on the seq (the commit helper's `activity` lane); other processes' can race,
 * and those retry.
 *
 * @module
 */
import {
  ACTIVITY_SCAN_LIMIT,
  type ActivityInput,
  type ActivityListParams,
  type ActivityPage,
  type ActivityRecord,
  type ActivityStore,
} from "../activity.ts";
import { AGAIN, type KvCommits, storeFailure } from "./_commit.ts";
import { watchNumber } from "./_watch.ts";

/** What appending some inputs in an operation needs, as read in one attempt. */
export interface ActivityPlan {
  /** The seq entry as read. */
  readonly last: Deno.KvEntryMaybe<number>;
  /** The inputs whose key is not in their run's log yet (all those without a key). */
  readonly fresh: readonly ActivityInput[];
}

const NO_PLAN: ActivityPlan = Object.freeze({
  last: Object.freeze({ key: [], value: null, versionstamp: null }),
  fresh: Object.freeze([]),
});

/**
 * The activity log's keys and numbering, for every part that appends entries in its own atomic
 * operation (and for the activity part itself).
 */
export class KvActivityLog {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #root: Deno.KvKey;
  /** The seq key. */
  readonly seqKey: Deno.KvKey;

  /** The log below `root`. */
  constructor(commits: KvCommits, root: Deno.KvKey) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#root = root;
    this.seqKey = [...root, "activity-seq"];
  }

  /** The key of one entry (without `seq`: the prefix of every entry). */
  entryKey(seq?: number): Deno.KvKey {
    return seq === undefined ? [...this.#root, "activity"] : [...this.#root, "activity", seq];
  }

  #keyOf(input: ActivityInput): Deno.KvKey | null {
    return input.key === undefined ? null : [...this.#root, "activity-key", input.runId, input.key];
  }

  /**
   * Runs `write` after this process's earlier writes that append entries, in the commit helper's
   * `activity` lane (at once when `inputs` is empty). A write that also moves the active-run
   * counters takes their lane inside this one, never the other way round.
   */
  serial<T>(inputs: readonly ActivityInput[] | undefined, write: () => Promise<T>): Promise<T> {
    if (inputs === undefined || inputs.length === 0) return write();
    return this.#commits.inLane("activity", write);
  }

  /**
   * Reads the seq and which keys of `inputs` exist (nothing for no inputs): one `getMany` for up
   * to 9 keys (a run's creation reads one), so a write that carries entries pays one more read.
   */
  async read(inputs: readonly ActivityInput[] | undefined): Promise<ActivityPlan> {
    if (inputs === undefined || inputs.length === 0) return NO_PLAN;
    const keyed = inputs.map((input) => this.#keyOf(input));
    const keys = keyed.filter((key): key is Deno.KvKey => key !== null);
    const present = new Set<string>();
    let last: Deno.KvEntryMaybe<number> | undefined;
    for (let i = 0; i < keys.length || last === undefined; i += 9) {
      const slice = keys.slice(i, i + 9);
      const found = await this.#kv.getMany<unknown[]>(
        last === undefined ? [this.seqKey, ...slice] : slice,
      );
      if (last === undefined) last = found.shift() as Deno.KvEntryMaybe<number>;
      for (const entry of found) if (entry.value !== null) present.add(JSON.stringify(entry.key));
    }
    const seen = new Set<string>();
    const fresh = inputs.filter((_input, index) => {
      const key = keyed[index];
      if (key === null) return true;
      const name = JSON.stringify(key);
      if (present.has(name) || seen.has(name)) return false;
      seen.add(name);
      return true;
    });
    return { last, fresh };
  }

  /**
   * Adds the plan's fresh inputs to `operation`, numbered after the seq it read and checked
   * against it and against the absence of their keys; returns the entries as they will be stored.
   */
  add(operation: Deno.AtomicOperation, plan: ActivityPlan): ActivityRecord[] {
    if (plan.fresh.length === 0) return [];
    const first = (plan.last.value ?? 0) + 1;
    operation.check(plan.last).set(this.seqKey, first + plan.fresh.length - 1);
    return plan.fresh.map((input, index) => {
      const seq = first + index;
      const entry = { ...input, seq } as ActivityRecord;
      const key = this.#keyOf(input);
      if (key !== null) operation.check({ key, versionstamp: null }).set(key, seq);
      operation
        .set(this.entryKey(seq), entry)
        .set([...this.#root, "activity-run", input.runId, seq], true);
      return entry;
    });
  }
}

/** The activity part of the KV store. */
export class KvActivity implements ActivityStore {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #root: Deno.KvKey;
  readonly #log: KvActivityLog;

  constructor(commits: KvCommits, root: Deno.KvKey, log: KvActivityLog) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#root = root;
    this.#log = log;
  }

  append(inputs: readonly ActivityInput[]): Promise<ActivityRecord[]> {
    if (inputs.length === 0) return Promise.resolve([]);
    return this.#log.serial(inputs, () =>
      this.#commits.retry(async () => {
        const plan = await this.#log.read(inputs);
        if (plan.fresh.length === 0) return [];
        const operation = this.#kv.atomic();
        const entries = this.#log.add(operation, plan);
        return (await this.#commits.commit(operation)).ok ? entries : AGAIN;
      }));
  }

  async list(params: ActivityListParams): Promise<ActivityPage> {
    try {
      const prefix = this.#log.entryKey();
      const entries: ActivityRecord[] = [];
      let last = params.after;
      const scanLimit = params.principalId === undefined ? params.limit : ACTIVITY_SCAN_LIMIT;
      const iterator = this.#kv.list<ActivityRecord>(
        { prefix, start: [...prefix, params.after + 1] },
        { limit: scanLimit, batchSize: Math.min(scanLimit, 500) },
      );
      for await (const item of iterator) {
        const entry = item.value;
        if (params.principalId === undefined || entry.principalId === params.principalId) {
          entries.push(entry);
        }
        last = entry.seq;
        if (entries.length === params.limit) break;
      }
      return { entries, last };
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async listRun(runId: string, limit: number): Promise<ActivityRecord[]> {
    try {
      const seqs: number[] = [];
      const iterator = this.#kv.list(
        { prefix: [...this.#root, "activity-run", runId] },
        { limit, reverse: true, batchSize: Math.min(limit, 500) },
      );
      for await (const item of iterator) seqs.push(item.key[item.key.length - 1] as number);
      seqs.reverse();
      const entries: ActivityRecord[] = [];
      for (let i = 0; i < seqs.length; i += 10) {
        const found = await this.#kv.getMany<ActivityRecord[]>(
          seqs.slice(i, i + 10).map((seq) => this.#log.entryKey(seq)),
        );
        for (const entry of found) if (entry.value !== null) entries.push(entry.value);
      }
      return entries;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async head(): Promise<number> {
    try {
      return (await this.#kv.get<number>(this.#log.seqKey)).value ?? 0;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  watch(listener: (last?: number) => void): () => void {
    return watchNumber(this.#kv, this.#log.seqKey, listener);
  }

  async purge(before: string): Promise<number> {
    try {
      let deleted = 0;
      const deletes = this.#commits.deletions();
      for await (const item of this.#kv.list<ActivityRecord>({ prefix: this.#log.entryKey() })) {
        const entry = item.value;
        if (entry.at >= before) break;
        await deletes.delete(
          item.key,
          [...this.#root, "activity-run", entry.runId, entry.seq],
          ...(entry.key !== undefined
            ? [[...this.#root, "activity-key", entry.runId, entry.key]]
            : []),
        );
        deleted++;
      }
      await deletes.flush();
      return deleted;
    } catch (error) {
      throw storeFailure(error);
    }
  }
}
