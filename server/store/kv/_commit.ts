/**
 * The one way the KV store writes: {@linkcode KvCommits}, one per open store, owns everything
 * between a part's atomic operation and the file.
 *
 * 1. **The busy file.** Each handle on a KV file (the workers of `deno serve --parallel`, two
 *    processes sharing a file) holds its own SQLite connection, and Deno KV's commit does not
 *    wait for another connection's write to finish: it fails at once with "database is locked".
 *    Two handles writing in a loop saw about one commit in two fail that way (measured
 *    2026-11-26, Deno 2.9.6). Reads go on beside a writer in SQLite's WAL mode; only the open
 *    and the first access of a handle opening the file while another opens it have been seen
 *    busy, and the open and the authority claim wait that out ({@linkcode whileBusy}). Trying
 *    again is safe: a busy commit applied nothing (SQLite rolled its transaction back), and an
 *    operation can be committed again: its checks are read anew each time, so a retry that
 *    meets a changed key reports `ok: false` like any lost race. denokv's own SQLite backend
 *    does the same for its transactions, also after a short random pause.
 * 2. **Lost races.** A part's read-check-commit step runs again while its checks fail, up to
 *    {@linkcode MAX_ATTEMPTS} times ({@linkcode KvCommits.retry}), then fails with
 *    {@linkcode StoreUnavailableError}.
 * 3. **Errors.** Anything KV throws becomes {@linkcode StoreUnavailableError}; the store's own
 *    errors pass unchanged ({@linkcode storeFailure}).
 * 4. **The audit log's seq.** A commit that appends audit entries numbers them after the log's
 *    last seq in the same atomic operation, checked against it
 *    ({@linkcode KvCommits.commitAudited}); the audit part (`_audit.ts`) owns the keys and gives
 *    them as an {@linkcode AuditNumbering}.
 * 5. **Group commit.** Writes that may share a commit queue up while one commits, and the next
 *    commit carries them together ({@linkcode KvCommits.batch}): principal issuances and audit
 *    appends, in one queue.
 * 6. **Lanes.** Steps that all check one hot key (the service-wide active-run counter) run one at
 *    a time in this process ({@linkcode KvCommits.inLane}), so they never lose a race to each
 *    other: 120 starts at once used to exhaust the retry budget of some of them. Only other
 *    processes' steps can still win a race, and those are retried within the budget.
 *
 * @module
 */
import type { AuditEntry, AuditEntryInput } from "../run_types.ts";
import { StoreUnavailableError } from "../types.ts";
import { IdempotencyLeaseLostError } from "../idempotency.ts";
import { SupersededNamespaceError } from "../authority.ts";
import { RunLeaseLostError } from "../events.ts";

/** How long a busy file is waited for before its error reaches the caller. */
const BUSY_BUDGET_MS = 2_000;

/**
 * How often a read-check-commit step runs before the store gives up as too contended. In every
 * round of a race on one key at least one contender commits, so `n` writers racing on a key
 * need at most `n` attempts: the contract races 50 writers on one key (slot counters, the
 * audit seq), and 64 covers that with room. One budget for every write of the store.
 */
export const MAX_ATTEMPTS = 64;

/**
 * Most writes in one group commit. Each audit entry is one mutation; a group stays far inside
 * Deno KV's limits of one atomic operation (1000 mutations, 800 KiB).
 */
const MAX_GROUP = 64;

/**
 * Most writes with checks of their own in one group commit: a principal's issuance has 3 checks
 * and 5 or 6 mutations (with its audit entry), so 16 stay far inside KV's 100 checks and 80 KiB
 * of keys.
 */
const MAX_CHECKED = 16;

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
 * The error a KV store call fails with: the store's own errors unchanged, anything else as
 * {@linkcode StoreUnavailableError} (with the original as its cause, never in its message).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { storeFailure } from "./_commit.ts";
 * assert.equal(storeFailure(new TypeError("closed")).name, "StoreUnavailableError");
 * ```
 */
export function storeFailure(error: unknown): Error {
  if (
    error instanceof StoreUnavailableError || error instanceof IdempotencyLeaseLostError ||
    error instanceof SupersededNamespaceError || error instanceof RunLeaseLostError
  ) {
    return error;
  }
  return new StoreUnavailableError("The KV store failed", { cause: error });
}

/** The error of a step that lost its race {@linkcode MAX_ATTEMPTS} times. */
function contention(): StoreUnavailableError {
  return new StoreUnavailableError("The KV store is too contended to commit");
}

function tooContended(): never {
  throw contention();
}

/** What a retried step returns to be run again (its commit lost a race). */
export const AGAIN: unique symbol = Symbol("again");

/** How audit entries are numbered in a commit: given by the audit part, which owns the keys. */
export interface AuditNumbering {
  /** The key holding the last seq. */
  readonly seqKey: Deno.KvKey;
  /**
   * Adds `inputs` to `operation`, numbered after `last` (the entry at `seqKey`) and checked
   * against it; returns the entries as they will be stored.
   */
  add(
    operation: Deno.AtomicOperation,
    last: Deno.KvEntryMaybe<number>,
    inputs: readonly AuditEntryInput[],
  ): AuditEntry[];
}

/** The outcome of {@linkcode KvCommits.commitAudited}. */
export interface AuditedCommit {
  /** Whether it committed (false: a check failed and nothing was written). */
  ok: boolean;
  /** The audit entries as numbered in it. */
  entries: AuditEntry[];
  /** The versionstamp of the commit, when it committed. */
  versionstamp: string | null;
}

/**
 * A write that may share its atomic commit with others ({@linkcode KvCommits.batch}), appending
 * at most one audit entry. Each write stays all-or-nothing: its group commits whole or not at all.
 * It carries its own place in the queue (`done`, `lost`), so queueing it allocates nothing more.
 */
export abstract class BatchedWrite<T> {
  /** Settled with its result (or failure) once it committed (or could not). */
  readonly done: PromiseWithResolvers<T> = Promise.withResolvers<T>();
  /** Group commits it was in that did not commit, through no check of its own. */
  lost = 0;
  /**
   * Names of the keys it checks (unique across the store: prefix them by part); no two members of
   * a group share one. Empty: it checks nothing of its own.
   */
  abstract readonly keys: readonly string[];
  /** The audit entry appended with it, if any. */
  abstract readonly audit: AuditEntryInput | undefined;
  /** Adds its checks and mutations to its group's operation. */
  abstract add(operation: Deno.AtomicOperation): void;
  /** Its result once its group committed; `entry` is its audit entry as numbered. */
  abstract committed(entry: AuditEntry | undefined): T;
  /**
   * Commits it on its own after its group did not commit, finding out why; `failed` says it was
   * alone in that group, so its own checks failed already.
   */
  abstract alone(failed: boolean): Promise<T>;
}

/** Operations whose commit must wake this process's watchers too ({@linkcode wakesWatchers}). */
const WAKING = new WeakSet<Deno.AtomicOperation>();

/**
 * Marks `operation` as one whose commit wakes the authority-lease watchers of this process as
 * well as the other processes' (an epoch's move, a lease's acknowledgement): a store's other
 * commits are its own and wake none of its watchers ({@linkcode KvCommits.own}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { KvCommits, wakesWatchers } from "./_commit.ts";
 * import { auditNumbering } from "./_audit.ts";
 * const kv = await Deno.openKv(":memory:");
 * const commits = new KvCommits(kv, auditNumbering(["root"]));
 * await commits.commit(wakesWatchers(kv.atomic().set(["epoch"], 1)));
 * assert.equal(commits.own().wrote, 0); // not counted as the store's own: it wakes
 * kv.close();
 * ```
 */
export function wakesWatchers(operation: Deno.AtomicOperation): Deno.AtomicOperation {
  WAKING.add(operation);
  return operation;
}

/** A KV handle's own commits, counted ({@linkcode KvCommits.own}). */
export interface OwnCommits {
  /** Commits that wrote. */
  wrote: number;
  /** Commits that failed with an error (they may or may not have written). */
  failed: number;
  /** Commits sent and not yet returned. */
  underWay: number;
}

/** The commit helper of one open KV store: see the module doc. */
export class KvCommits {
  /** The store's KV handle. */
  readonly kv: Deno.Kv;
  readonly #numbering: AuditNumbering;
  /** The last audited commit queued; every commit that moves the seq waits for it. */
  #tail: Promise<unknown> = Promise.resolve();
  /** The seq entry as the last audited commit left it; null: read it. */
  #last: Deno.KvEntryMaybe<number> | null = null;
  #queue: BatchedWrite<unknown>[] = [];
  #committing = false;
  /** The last step queued in each lane ({@linkcode KvCommits.inLane}). */
  readonly #lanes = new Map<string, Promise<unknown>>();
  /** This handle's commits, counted ({@linkcode KvCommits.own}). */
  readonly #own: OwnCommits = { wrote: 0, failed: 0, underWay: 0 };

  /**
   * A helper over `kv`, numbering audit entries as `numbering` says.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { KvCommits } from "./_commit.ts";
   * import { auditNumbering } from "./_audit.ts";
   * const kv = await Deno.openKv(":memory:");
   * const commits = new KvCommits(kv, auditNumbering(["root"]));
   * const fresh = kv.atomic().check({ key: ["k"], versionstamp: null }).set(["k"], 1);
   * assert.equal((await commits.commit(fresh)).ok, true);
   * // Committed again, the same operation reads its check anew: the key exists now.
   * assert.equal((await commits.commit(fresh)).ok, false);
   * kv.close();
   * ```
   */
  constructor(kv: Deno.Kv, numbering: AuditNumbering) {
    this.kv = kv;
    this.#numbering = numbering;
  }

  /**
   * Commits `operation`, waiting out a busy file ({@linkcode whileBusy}). Every commit of the
   * store goes through here, so {@linkcode KvCommits.own} can count them.
   */
  async commit(
    operation: Deno.AtomicOperation,
  ): Promise<Deno.KvCommitResult | Deno.KvCommitError> {
    this.#own.underWay++;
    try {
      const result = await whileBusy(() => operation.commit());
      if (result.ok && !WAKING.has(operation)) this.#own.wrote++;
      return result;
    } catch (error) {
      this.#own.failed++;
      throw error;
    } finally {
      this.#own.underWay--;
    }
  }

  /**
   * This handle's own commits so far: those that wrote (a commit whose check failed writes
   * nothing; one marked by {@linkcode wakesWatchers} does not count), those that failed with an
   * error (whether they wrote is not known), and those under way. The lease watcher
   * (`_leases.ts`) tells them from other handles' commits by the file's change marker, which
   * moves once per commit that wrote, before that commit returns.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { KvCommits } from "./_commit.ts";
   * import { auditNumbering } from "./_audit.ts";
   * const kv = await Deno.openKv(":memory:");
   * const commits = new KvCommits(kv, auditNumbering(["root"]));
   * const fresh = kv.atomic().check({ key: ["k"], versionstamp: null }).set(["k"], 1);
   * await commits.commit(fresh);
   * await commits.commit(fresh); // its check fails now: it writes nothing
   * assert.deepEqual(commits.own(), { wrote: 1, failed: 0, underWay: 0 });
   * kv.close();
   * ```
   */
  own(): OwnCommits {
    return { ...this.#own };
  }

  /**
   * Bulk deletes, committed a batch at a time (at most 800 keys an operation, inside KV's 1,000
   * mutations): `delete` keys as they are found, then `flush` the rest. A purge is not one atomic
   * step; each batch is.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { KvCommits } from "./_commit.ts";
   * import { auditNumbering } from "./_audit.ts";
   * const kv = await Deno.openKv(":memory:");
   * const commits = new KvCommits(kv, auditNumbering(["root"]));
   * await kv.set(["a"], 1);
   * const deletes = commits.deletions();
   * await deletes.delete(["a"]);
   * await deletes.flush();
   * assert.equal((await kv.get(["a"])).value, null);
   * kv.close();
   * ```
   */
  deletions(): { delete(...keys: Deno.KvKey[]): Promise<void>; flush(): Promise<void> } {
    let operation = this.kv.atomic();
    let pending = 0;
    const flush = async () => {
      if (pending === 0) return;
      await this.commit(operation);
      operation = this.kv.atomic();
      pending = 0;
    };
    return {
      delete: async (...keys: Deno.KvKey[]) => {
        if (pending + keys.length > 800) await flush();
        for (const key of keys) operation.delete(key);
        pending += keys.length;
      },
      flush,
    };
  }

  /**
   * Runs `attempt` until it returns something other than {@linkcode AGAIN}, at most
   * {@linkcode MAX_ATTEMPTS} times; then answers `exhausted()`, by default a
   * {@linkcode StoreUnavailableError}. Whatever it throws reaches the caller as
   * {@linkcode storeFailure} says.
   */
  async retry<T>(
    attempt: () => Promise<T | typeof AGAIN>,
    exhausted: () => T = tooContended,
  ): Promise<T> {
    try {
      for (let round = 0; round < MAX_ATTEMPTS; round++) {
        const result = await attempt();
        if (result !== AGAIN) return result;
      }
      return exhausted();
    } catch (error) {
      throw storeFailure(error);
    }
  }

  /**
   * Runs `step` (usually a {@linkcode KvCommits.retry}) once every step queued before it in the
   * same `lane` has settled: the steps of one lane never overlap in this process. A lane is named
   * after the hot key its steps all check; a step must not wait for its own lane (it would wait
   * for itself).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { KvCommits } from "./_commit.ts";
   * import { auditNumbering } from "./_audit.ts";
   * const kv = await Deno.openKv(":memory:");
   * const commits = new KvCommits(kv, auditNumbering(["root"]));
   * const order: string[] = [];
   * const slow = commits.inLane("counter", async () => {
   *   await new Promise((resolve) => setTimeout(resolve, 5));
   *   order.push("first");
   * });
   * const fast = commits.inLane("counter", () => Promise.resolve(order.push("second")));
   * await Promise.all([slow, fast]);
   * assert.deepEqual(order, ["first", "second"]);
   * kv.close();
   * ```
   */
  inLane<T>(lane: string, step: () => Promise<T>): Promise<T> {
    const previous = this.#lanes.get(lane) ?? Promise.resolve();
    const result = previous.then(step);
    const settled = result.catch(() => {});
    this.#lanes.set(lane, settled);
    // The last step of an idle lane leaves nothing behind.
    settled.then(() => {
      if (this.#lanes.get(lane) === settled) this.#lanes.delete(lane);
    });
    return result;
  }

  /**
   * Commits `operation` with `inputs` appended to the audit log in it; without inputs it commits
   * `operation` as it is. A commit that met a moved seq (or failed another check) is not ok and
   * writes nothing: the caller tries again.
   *
   * It serializes this store's commits that move the seq (audit appends, issuances,
   * revocations), so that they never fail each other's check on the seq key: under load, one
   * in-process loser per commit would otherwise retry until it gave up. Commits of other
   * processes can still race; those retry.
   *
   * It also remembers the seq entry as its last commit left it. That entry is usually still the
   * head (one process issues), so the next commit is checked against it without reading the seq
   * first; when another handle or process moved it, the check fails, nothing is written, and the
   * caller's retry reads it. The read it saves is a round trip through Deno KV's thread for each
   * group of issuances: `POST /v1/principals` went from 0.68×, 0.98× and 0.78× of one KV commit
   * to 0.99× and 1.02× (`deno task bench --only server`, 2026-11-24; the build before the audit
   * entry existed: 1.05× to 1.42× in the same hour).
   */
  commitAudited(
    operation: Deno.AtomicOperation,
    inputs: readonly AuditEntryInput[],
  ): Promise<AuditedCommit> {
    if (inputs.length === 0) {
      return this.commit(operation).then((result) => ({
        ok: result.ok,
        entries: [],
        versionstamp: result.ok ? result.versionstamp : null,
      }));
    }
    const run = async (): Promise<AuditedCommit> => {
      const numbering = this.#numbering;
      const last = this.#last ?? await this.kv.get<number>(numbering.seqKey);
      const entries = numbering.add(operation, last, inputs);
      // Until this commit settles the seq is unknown; after a failed one it may have moved.
      this.#last = null;
      const result = await this.commit(operation);
      if (!result.ok) return { ok: false, entries, versionstamp: null };
      const value = entries[entries.length - 1].seq;
      this.#last = { key: last.key, value, versionstamp: result.versionstamp };
      return { ok: true, entries, versionstamp: result.versionstamp };
    };
    const result = this.#tail.then(run);
    this.#tail = result.catch(() => {});
    return result;
  }

  /**
   * Commits `write` in a group: while one group commits, the writes that arrive queue up, and the
   * next commit carries them together (up to {@linkcode MAX_GROUP}, at most
   * {@linkcode MAX_CHECKED} with checks of their own, none sharing a key with another), so a busy
   * server pays the fixed cost of a commit once per group instead of once per write, and the
   * audit entries of the group are numbered once, in queue order.
   *
   * When a group does not commit, a write with checks of its own goes alone
   * ({@linkcode BatchedWrite.alone}), which tells why; a write without any cannot be why, and
   * goes back to the head of the queue for the next group (up to {@linkcode MAX_ATTEMPTS}
   * times). When a group of several fails with an error (it may exceed a limit of the host's KV
   * that one write does not), every member goes alone.
   */
  batch<T>(write: BatchedWrite<T>): Promise<T> {
    // Queued writes differ in result type; each settles its own `done` with its own result.
    this.#queue.push(write as BatchedWrite<unknown>);
    if (!this.#committing) this.#commitGroups();
    return write.done.promise;
  }

  /** Commits queued writes group by group until the queue is empty. Never rejects. */
  async #commitGroups(): Promise<void> {
    this.#committing = true;
    try {
      while (this.#queue.length > 0) {
        const group = this.#takeGroup();
        let committed: AuditedCommit | null = null;
        let threw = false;
        try {
          const operation = this.kv.atomic();
          for (const write of group) write.add(operation);
          committed = await this.commitAudited(
            operation,
            group.flatMap((write) => write.audit ?? []),
          );
        } catch (error) {
          if (group.length === 1) {
            group[0].done.reject(storeFailure(error));
            continue;
          }
          threw = true;
        }
        if (committed?.ok) {
          let next = 0;
          for (const write of group) {
            const entry = write.audit === undefined ? undefined : committed.entries[next++];
            write.done.resolve(write.committed(entry));
          }
          continue;
        }
        const again: BatchedWrite<unknown>[] = [];
        for (const write of group) {
          if (!threw && write.keys.length === 0) {
            if (++write.lost < MAX_ATTEMPTS) again.push(write);
            else write.done.reject(contention());
            continue;
          }
          write.alone(group.length === 1).then(
            write.done.resolve,
            (error) => write.done.reject(storeFailure(error)),
          );
        }
        this.#queue.unshift(...again);
      }
    } finally {
      this.#committing = false;
    }
  }

  /** Takes the next group off the queue: queue order, no two members sharing a key. */
  #takeGroup(): BatchedWrite<unknown>[] {
    const group: BatchedWrite<unknown>[] = [];
    const rest: BatchedWrite<unknown>[] = [];
    const keys = new Set<string>();
    let checked = 0;
    for (const write of this.#queue) {
      const own = write.keys;
      const fits = group.length < MAX_GROUP &&
        (own.length === 0 || (checked < MAX_CHECKED && !own.some((key) => keys.has(key))));
      if (!fits) {
        rest.push(write);
        continue;
      }
      if (own.length > 0) {
        checked++;
        for (const key of own) keys.add(key);
      }
      group.push(write);
    }
    this.#queue = rest;
    return group;
  }
}
