/**
 * The authority leases part of the KV store. Keys, below the namespace's root:
 *
 * - `["authority-lease", holder]` → {@linkcode LeaseEntry};
 * - `["authority-acks"]`: rewritten by a renewal that records another epoch than its holder's
 *   record held, so that a waiter's `watch` wakes up.
 *
 * A renewal reads the authority state (`_authority.ts`'s keys) with the holder's record and
 * commits the lease checked against the two authority entries it read: a revocation or a claim
 * committed in between fails the check, and the renewal reads again. So a renewal committed
 * before the epoch moved is seen by anyone listing the leases after the move, and one committed
 * after it returns the new epoch.
 *
 * Wake-ups come from a timer, never from Deno KV's `watch`: a pending `watch` keeps a process's
 * event loop alive, so `deno serve` would no longer exit on SIGTERM, and on a file it does not
 * reach another process anyway. On a file the timer reads the file's change marker
 * (`_change_marker.ts`, about 1 µs, no lock) every {@linkcode MARKER_POLL_MS} ms and wakes the
 * listener when another handle committed, another process's, another worker's or another store's
 * of this process: its own store's commits (a run's log, a renewal that acknowledges nothing) are
 * told apart and wake nobody ({@linkcode markerPoll}), except those that move the authority epoch,
 * acknowledge it or release a lease, which wake this process's watchers too (`wakesWatchers` in
 * `_commit.ts`: a second server on the same store object holds a lease of its own, and a waiter
 * counts on it). Without a file (the host's own KV, `:memory:`) it reads the watched keys every
 * {@linkcode KEY_POLL_MS} ms. The timers never keep a process alive.
 *
 * @module
 */
import type { AuthorityState } from "../authority.ts";
import type {
  AuthorityLeaseRecord,
  AuthorityLeaseStore,
  LeaseListOptions,
  LeaseRenewal,
} from "../leases.ts";
import { authorityKeys, authorityStateOf, namespaceRoot } from "./_authority.ts";
import type { ChangeMarker } from "./_change_marker.ts";
import { AGAIN, type KvCommits, type OwnCommits, storeFailure, wakesWatchers } from "./_commit.ts";

/** How often a watcher reads the KV file's change marker, in ms. */
export const MARKER_POLL_MS = 10;

/**
 * How long a watcher on a KV file may not know whose commit moved the file's marker (its own
 * store's commits were under way at every poll) before it wakes anyway, in ms.
 */
export const MAX_DOUBT_MS = 20;

/** How often a watcher reads the watched keys when the store is not a file, in ms. */
export const KEY_POLL_MS = 250;

/** One lease as stored. */
interface LeaseEntry {
  epoch: string;
  renewedAt: number;
  leaseMs: number;
}

function leasePrefix(namespace: string): Deno.KvKey {
  return [...namespaceRoot(namespace), "authority-lease"];
}

function acksKey(namespace: string): Deno.KvKey {
  return [...namespaceRoot(namespace), "authority-acks"];
}

function isLive(entry: LeaseEntry, options: LeaseListOptions): boolean {
  return entry.renewedAt + entry.leaseMs + options.graceMs > options.now;
}

/** The authority leases part of the KV store. */
export class KvLeases implements AuthorityLeaseStore {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #namespace: string;
  readonly #marker: ChangeMarker | null;
  readonly #stateKeys: readonly Deno.KvKey[];

  constructor(commits: KvCommits, namespace: string, marker: ChangeMarker | null) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#namespace = namespace;
    this.#marker = marker;
    this.#stateKeys = authorityKeys(namespace);
  }

  renew(renewal: LeaseRenewal): Promise<AuthorityState> {
    const kv = this.#kv;
    const namespace = this.#namespace;
    const key = [...leasePrefix(namespace), renewal.holder];
    const keys = [...this.#stateKeys, key];
    return this.#commits.retry(async () => {
      const [current, epoch, own] = await kv.getMany(keys);
      const operation = kv.atomic().check(current).check(epoch).set(
        key,
        {
          epoch: renewal.epoch,
          renewedAt: renewal.now,
          leaseMs: renewal.leaseMs,
        } satisfies LeaseEntry,
      );
      if ((own.value as LeaseEntry | null)?.epoch !== renewal.epoch) {
        // An acknowledgement: it wakes the waiters, this process's too.
        wakesWatchers(operation.set(acksKey(namespace), renewal.now));
      }
      if (!(await this.#commits.commit(operation)).ok) return AGAIN;
      return authorityStateOf(namespace, current, epoch);
    });
  }

  async release(holder: string): Promise<void> {
    try {
      // A lease gone: a waiter of this process stops counting it at once too.
      await this.#commits.commit(
        wakesWatchers(this.#kv.atomic().delete([...leasePrefix(this.#namespace), holder])),
      );
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async list(options: LeaseListOptions): Promise<AuthorityLeaseRecord[]> {
    const live: AuthorityLeaseRecord[] = [];
    await this.#sweep(options, (holder, entry) => live.push({ holder, ...entry }));
    return live;
  }

  purge(options: LeaseListOptions): Promise<number> {
    return this.#sweep(options, () => {});
  }

  /** Hands each live lease of the namespace to `onLive`, deletes the dead; returns how many. */
  async #sweep(
    options: LeaseListOptions,
    onLive: (holder: string, entry: LeaseEntry) => void,
  ): Promise<number> {
    const kv = this.#kv;
    let deleted = 0;
    try {
      const prefix = leasePrefix(options.namespace ?? this.#namespace);
      for await (const item of kv.list<LeaseEntry>({ prefix })) {
        const holder = item.key[item.key.length - 1];
        if (typeof holder !== "string") continue;
        if (isLive(item.value, options)) {
          onLive(holder, item.value);
          continue;
        }
        // Checked against the entry read: a holder that renewed meanwhile keeps its lease.
        if ((await this.#commits.commit(kv.atomic().check(item).delete(item.key))).ok) deleted++;
      }
      return deleted;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  watch(listener: () => void, options: { namespace?: string } = {}): () => void {
    const marker = this.#marker;
    let stopped = false;
    let poll: () => void;
    let everyMs: number;
    if (marker !== null) {
      poll = markerPoll(marker, () => this.#commits.own(), listener, () => stopped);
      everyMs = MARKER_POLL_MS;
    } else {
      const namespace = options.namespace ?? this.#namespace;
      const keys = [...authorityKeys(namespace), acksKey(namespace)];
      let reading = false;
      /** The keys' versionstamps at the last reading (the first only records). */
      let last: string | undefined;
      poll = () => {
        if (reading) return;
        reading = true;
        this.#kv.getMany(keys).then(
          (entries) => {
            const now = entries.map((entry) => entry.versionstamp).join();
            const moved = last !== undefined && now !== last;
            last = now;
            if (moved && !stopped) listener();
          },
          () => {}, // A closed store or a failed read: the callers' polls still cover it.
        ).finally(() => reading = false);
      };
      everyMs = KEY_POLL_MS;
    }
    poll();
    const timer = setInterval(poll, everyMs);
    // A watch never keeps a process alive.
    Deno.unrefTimer(timer);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }
}

/**
 * The poll of a watcher on a KV file: reads the file's change marker and wakes `listener` when a
 * commit that is not this store's own moved it.
 *
 * How it tells them apart: the marker moves by one for every commit that wrote, by any handle,
 * before the commit returns to its handle (a commit whose check failed writes nothing and leaves
 * it). At a poll when none of this store's commits is under way, every commit it sent has
 * returned, so the marker's move since the last such poll, less the commits of this store that
 * wrote meanwhile, is what the others committed: nothing, and nobody is woken. A commit of this
 * store that failed with an error (it may have written), a marker that cannot be read, or a move
 * that lasts {@linkcode MAX_DOUBT_MS} with this store's commits under way at every poll (a burst
 * of appends) wakes the listener: a wake-up too many costs a read, one too few a revocation's
 * wait.
 *
 * Speed trick, and why: a run's log commits to the same file for every event, and each wake-up
 * costs the holder a read of the authority state: a run streaming 50 frames a second cost its
 * replica a store read per frame (30 µs per frame of the JavaScript thread in a `--cpu-prof` of
 * `bench/events_bench.ts`'s live rounds). Waking at most once per 100 ms took most of that away
 * but made every revocation with two processes wait out the window (p50 94.5 ms, p99 99.5 ms in
 * `bench/revocation_bench.ts`): issuing the principal and renewing leases are commits too.
 */
function markerPoll(
  marker: ChangeMarker,
  own: () => OwnCommits,
  listener: () => void,
  stopped: () => boolean,
): () => void {
  /** The last reading (undefined before the first, which only records). */
  let seen: number | null | undefined = undefined;
  /** The marker and this store's counts at the last poll that could tell them apart. */
  let base: { marker: number; wrote: number; failed: number } | undefined;
  /** When the marker moved while this store's commits were under way, if it did. */
  let doubtSince: number | undefined;
  return () => {
    if (stopped()) return;
    const now = marker.read();
    const mine = own();
    const first = seen === undefined;
    const moved = !first && now !== seen;
    seen = now;
    if (now === null || mine.underWay > 0) {
      // Whose commit moved it cannot be told now: the next poll with nothing under way tells.
      if (now === null) base = undefined;
      if (moved) doubtSince ??= performance.now();
      if (doubtSince !== undefined && performance.now() - doubtSince >= MAX_DOUBT_MS) {
        doubtSince = undefined;
        listener();
      }
      return;
    }
    const others = base === undefined
      ? moved || doubtSince !== undefined
      : now - base.marker !== mine.wrote - base.wrote || mine.failed !== base.failed;
    base = { marker: now, wrote: mine.wrote, failed: mine.failed };
    doubtSince = undefined;
    if (others && !first) listener();
  };
}
