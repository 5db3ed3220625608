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
 * listener when anything was committed, by any process or worker, at most once per
 * {@linkcode MARKER_WAKE_GAP_MS} (the file also takes every run log's commits). Without a file
 * (the host's own KV, `:memory:`) it reads the watched keys every {@linkcode KEY_POLL_MS} ms. The
 * timers never keep a process alive.
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
import { AGAIN, type KvCommits, storeFailure } from "./_commit.ts";

/** How often a watcher reads the KV file's change marker, in ms. */
export const MARKER_POLL_MS = 10;

/**
 * Least time between two wake-ups of a watcher on a KV file, in ms: a commit seen sooner after
 * the last wake-up wakes the listener this long after it (see {@linkcode markerPoll}).
 */
export const MARKER_WAKE_GAP_MS = 100;

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
        operation.set(acksKey(namespace), renewal.now);
      }
      if (!(await this.#commits.commit(operation)).ok) return AGAIN;
      return authorityStateOf(namespace, current, epoch);
    });
  }

  async release(holder: string): Promise<void> {
    try {
      await this.#commits.commit(
        this.#kv.atomic().delete([...leasePrefix(this.#namespace), holder]),
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
    let last: unknown = undefined;
    /** Whether `now` differs from the last reading (the first only records). */
    const changed = (now: unknown): boolean => {
      if (stopped || now === last) return false;
      const first = last === undefined;
      last = now;
      return !first;
    };
    let poll: () => void;
    let everyMs: number;
    if (marker !== null) {
      poll = markerPoll(marker, changed, listener, () => stopped);
      everyMs = MARKER_POLL_MS;
    } else {
      const namespace = options.namespace ?? this.#namespace;
      const keys = [...authorityKeys(namespace), acksKey(namespace)];
      let reading = false;
      poll = () => {
        if (reading) return;
        reading = true;
        this.#kv.getMany(keys).then(
          (entries) => {
            if (changed(entries.map((entry) => entry.versionstamp).join())) listener();
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
 * The poll of a watcher on a KV file: reads the file's change marker and wakes `listener` when
 * `changed` says it moved, at most once per {@linkcode MARKER_WAKE_GAP_MS}: a change seen sooner
 * after the last wake-up is owed, and woken for by the first poll past the gap.
 *
 * Speed trick, and why: the marker moves with every commit to the file, whatever it wrote, and
 * each wake-up costs the holder a read of the authority state, so a run streaming 50 frames a
 * second (one log commit each) cost one store read per frame; with the gap, at most 10 a second
 * (in a `--cpu-prof` of `bench/events_bench.ts`'s live rounds, the wake-ups' reads went from 30
 * to 12 µs per frame). Revocation stays strict: a waiter waits for every
 * acknowledgement or lapse whatever the wake-ups do; a wake-up only comes up to 100 ms later while
 * the file takes commits continuously, and at once (within one poll) when it was quiet.
 */
function markerPoll(
  marker: ChangeMarker,
  changed: (now: unknown) => boolean,
  listener: () => void,
  stopped: () => boolean,
): () => void {
  let wokenAt = Number.NEGATIVE_INFINITY;
  let owed = false;
  return () => {
    if (changed(marker.read())) owed = true;
    if (!owed || stopped()) return;
    const now = performance.now();
    if (now - wokenAt < MARKER_WAKE_GAP_MS) return;
    owed = false;
    wokenAt = now;
    listener();
  };
}
