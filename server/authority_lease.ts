/**
 * Authority leases: each process (each worker of `deno serve --parallel`, each isolate of a
 * Deploy-style host) answers authenticated requests from memory while it holds a short lease
 * recorded in the store, and a change that must hold everywhere (a revocation, a claim by a new
 * bootstrap) waits, before it is answered, until every live lease has acknowledged it or lapsed.
 *
 * **Holding.** {@linkcode AuthorityLease} renews its record every third of the lease. A renewal
 * records the epoch this process answers under (the one it had adopted when the renewal was
 * sent) and returns the store's current authority state, which the process adopts at once
 * (emptying its principal cache when the epoch moved); when that state is newer than what was
 * recorded, it renews again at once to acknowledge it. The lease is valid until
 * `start + 0.9 × leaseMs`, where `start` is read from the monotonic clock (and, beside it, the
 * wall clock) before the renewal was sent: a lease never outlives its holder's clock, and the
 * tenth it gives up covers a difference in clock rates between machines far beyond what real
 * clocks drift. Every request checks both clocks against the lease before answering from memory,
 * so a process that was frozen (SIGSTOP, a paused VM) and resumes refuses to use a lapsed lease
 * on its first request, before any timer of its own has run. Without a valid lease (not renewed
 * yet, the store unreachable, the lease lapsed) a request reads the authority state itself.
 *
 * **Waking.** The store wakes holders when an epoch moves (`store.leases.watch`: PostgreSQL
 * `LISTEN/NOTIFY`, a Deno KV file's change marker read every 10 ms, another KV's keys read every
 * 250 ms); a woken holder reads the state, adopts it and renews, which acknowledges the change
 * within milliseconds. Without a wake-up the next scheduled renewal does it.
 *
 * **Waiting.** {@linkcode awaitAcknowledged} lists the namespace's leases after the change was
 * committed, then waits until each acknowledges the new epoch or its `leaseMs` has passed on the
 * waiter's own monotonic clock since the change: a renewal recorded before the change was sent
 * before it, so the lease it granted ends before that. Records not renewed for `leaseMs` plus
 * {@linkcode LEASE_GRACE_MS} belong to holders gone for good and are skipped (and deleted).
 *
 * @module
 */
import type { AuthorityState, AuthorityStore, BootstrapClaim } from "./store/authority.ts";
import { FIRST_EPOCH } from "./store/authority.ts";
import type { AuthorityLeaseStore } from "./store/leases.ts";

/** Default length of an authority lease, in ms: the longest a revocation waits for a frozen process. */
export const DEFAULT_AUTHORITY_LEASE_MS = 3_000;

/** Shortest authority lease, in ms: renewed every third of it. */
export const MIN_AUTHORITY_LEASE_MS = 300;

/** Longest authority lease, in ms (a waiter never waits longer for one record). */
export const MAX_AUTHORITY_LEASE_MS = 60_000;

/**
 * How long after a record's lease a waiter still counts it as possibly live, in ms: on Deno KV,
 * `renewedAt` is the holder's wall clock, and this covers its difference from the waiter's
 * (machines whose clocks NTP keeps within a second or two). PostgreSQL uses its own clock.
 */
export const LEASE_GRACE_MS = 5_000;

/** Share of a lease its holder does not use (clock rate differences, the time to commit). */
const LEASE_MARGIN = 0.1;
/** A waiter looks at the leases at least this often, in ms, in case a wake-up is missed. */
const WAIT_POLL_MS = 50;
/** First pause before a failed renewal is tried again, in ms (doubling up to a third of the lease). */
const RETRY_MS = 100;

const NOOP = (): void => {};

/** Options of {@linkcode AuthorityLease}. */
export interface AuthorityLeaseOptions {
  /** The store's authority and leases parts. */
  store: { readonly authority: AuthorityStore; readonly leases: AuthorityLeaseStore };
  /** The lease's length in ms. */
  leaseMs: number;
  /** The epoch the process answers under now (null before it adopted any). */
  epoch(): string | null;
  /** Adopts a state read from the store (never an older epoch than the one adopted). */
  adopt(state: AuthorityState): void;
}

/**
 * One process's authority lease (see the module doc).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AuthorityLease } from "./authority_lease.ts";
 * import { openKvStore } from "./store/mod.ts";
 * import type { AuthorityState } from "./store/types.ts";
 * const store = await openKvStore({ path: ":memory:", namespace: "n" });
 * let adopted: AuthorityState | null = null;
 * const lease = new AuthorityLease({
 *   store,
 *   leaseMs: 3_000,
 *   epoch: () => adopted?.epoch ?? null,
 *   adopt: (state) => adopted = state,
 * });
 * assert.equal(lease.stateAt(Date.now()), null, "not held before its first renewal");
 * await lease.renew();
 * assert.equal(lease.stateAt(Date.now())?.current, true);
 * await lease.close();
 * assert.equal(lease.stateAt(Date.now()), null);
 * await store.close();
 * ```
 */
export class AuthorityLease {
  /** This holder's id in the store. */
  readonly holder: string = crypto.randomUUID();
  readonly #store: AuthorityLeaseOptions["store"];
  readonly #leaseMs: number;
  readonly #epoch: () => string | null;
  readonly #adopt: (state: AuthorityState) => void;
  /** The state the lease answers under while valid; null: not held. */
  #state: AuthorityState | null = null;
  /** Until when, on the monotonic clock (`performance.now()`). */
  #until = 0;
  /** Until when, on the wall clock: a machine's suspend stops the monotonic clock, not this. */
  #untilWall = 0;
  /** The epoch the last successful renewal recorded. */
  #recorded: string | null = null;
  #running: Promise<AuthorityState> | null = null;
  #queued: Promise<AuthorityState> | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopWatch: (() => void) | null = null;
  #checking = false;
  #recheck = false;
  #failures = 0;
  #started = false;
  /** Set once closed, or once the namespace was retired: nothing runs any more. */
  #stopped = false;
  #closed = false;

  /**
   * Creates the lease; nothing is written before {@linkcode AuthorityLease.start} or
   * {@linkcode AuthorityLease.renew}.
   */
  constructor(options: AuthorityLeaseOptions) {
    this.#store = options.store;
    this.#leaseMs = Math.min(options.leaseMs, MAX_AUTHORITY_LEASE_MS);
    this.#epoch = options.epoch;
    this.#adopt = options.adopt;
  }

  /**
   * The state to answer under at wall-clock time `now` (ms), or null when the lease is not held:
   * not renewed yet, lapsed on either clock, or closed. The one check of the hot path.
   */
  stateAt(now: number): AuthorityState | null {
    const state = this.#state;
    if (state === null || now >= this.#untilWall || performance.now() >= this.#until) return null;
    return state;
  }

  /** Starts holding: the first renewal now, then renewals and wake-ups. Later calls do nothing. */
  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    // The watch and the timers start once the first renewal settled, not inside the request that
    // started the lease: a process's first timer loads Deno's timer module (10 to 25 ms).
    this.renew().then(() => this.#watch(), () => this.#watch());
  }

  /** Whether {@linkcode AuthorityLease.start} ran and the lease is neither closed nor retired. */
  get active(): boolean {
    return this.#started && !this.#stopped;
  }

  /**
   * Renews the lease with a renewal that starts after this call (one already running may have
   * been sent before a change the caller must see acknowledged); resolves with the state the
   * store returned, which is adopted by then.
   */
  renew(): Promise<AuthorityState> {
    if (this.#running === null) return this.#startRenewal();
    this.#queued ??= this.#running.then(NOOP, NOOP).then(() => {
      this.#queued = null;
      return this.#startRenewal();
    });
    return this.#queued;
  }

  #startRenewal(): Promise<AuthorityState> {
    const renewal = this.#renewOnce();
    this.#running = renewal;
    const settled = () => {
      if (this.#running === renewal) this.#running = null;
    };
    renewal.then(settled, settled);
    return renewal;
  }

  async #renewOnce(): Promise<AuthorityState> {
    if (this.#stopped) throw new Error("The authority lease is closed");
    clearTimeout(this.#timer);
    const started = performance.now();
    const wall = Date.now();
    const recorded = this.#epoch() ?? FIRST_EPOCH;
    let state: AuthorityState;
    try {
      state = await this.#store.leases.renew({
        holder: this.holder,
        leaseMs: this.#leaseMs,
        now: wall,
        epoch: recorded,
      });
    } catch (error) {
      this.#failures++;
      this.#schedule(Math.min(RETRY_MS * 2 ** (this.#failures - 1), this.#leaseMs / 3));
      throw error;
    }
    this.#failures = 0;
    this.#recorded = recorded;
    this.#adopt(state);
    if (this.#stopped) return state;
    if (!state.current) {
      await this.#retire();
      return state;
    }
    const usable = this.#leaseMs * (1 - LEASE_MARGIN);
    this.#state = state;
    this.#until = started + usable;
    this.#untilWall = wall + usable;
    // A newer epoch than the one recorded is acknowledged by the next renewal, at once.
    this.#schedule(
      state.epoch > recorded ? 0 : this.#leaseMs / 3 - (performance.now() - started),
    );
    return state;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    const timer = setTimeout(() => {
      this.#timer = undefined;
      this.renew().catch(NOOP);
    }, Math.max(0, delayMs));
    Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  #watch(): void {
    if (this.#stopped || this.#stopWatch !== null) return;
    this.#stopWatch = this.#store.leases.watch(() => this.#wake());
  }

  /** A wake-up: read the state, adopt it, and acknowledge it when it is news. */
  #wake(): void {
    if (this.#stopped) return;
    if (this.#checking) {
      this.#recheck = true;
      return;
    }
    this.#checking = true;
    this.#store.authority.readState().then(async (state): Promise<void> => {
      this.#adopt(state);
      if (!state.current) await this.#retire();
      else if (state.epoch > (this.#recorded ?? FIRST_EPOCH)) await this.renew();
    }).catch(NOOP).finally(() => {
      this.#checking = false;
      if (this.#recheck) {
        this.#recheck = false;
        this.#wake();
      }
    });
  }

  /**
   * Another bootstrap claimed the store (adopted by now: this process refuses every bearer from
   * then on): stop, and delete the record, which is this holder's acknowledgement of the claim.
   */
  async #retire(): Promise<void> {
    if (this.#stopped) return;
    this.#stop();
    await this.#store.leases.release(this.holder).catch(NOOP);
  }

  #stop(): void {
    this.#stopped = true;
    this.#state = null;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#stopWatch?.();
    this.#stopWatch = null;
  }

  /** Stops renewing and deletes the record, so that no change waits for this process. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const held = this.#started && !this.#stopped;
    this.#stop();
    await this.#running?.catch(NOOP);
    await this.#queued?.catch(NOOP);
    if (held) await this.#store.leases.release(this.holder).catch(NOOP);
  }
}

/** What {@linkcode awaitAcknowledged} waits for. */
export interface AcknowledgementTarget {
  /** The epoch every live lease must acknowledge. */
  epoch: string;
  /**
   * When the change was committed (or just after), on this process's monotonic clock: no lease
   * granted before it lasts longer than its `leaseMs` after it.
   */
  since: number;
  /** The namespace whose leases to wait for (default the store's). */
  namespace?: string;
  /** Wall-clock time (ms) after which the wait stops unfinished. */
  deadline?: number;
}

/**
 * Waits until every live lease of the namespace has acknowledged `target.epoch` or lapsed (see
 * the module doc); resolves with true, or false when `target.deadline` came first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { awaitAcknowledged } from "./authority_lease.ts";
 * import { openKvStore } from "./store/mod.ts";
 * const store = await openKvStore({ path: ":memory:", namespace: "n" });
 * const { epoch } = await store.authority.readState();
 * // Nobody holds a lease: nothing to wait for.
 * assert.equal(await awaitAcknowledged(store.leases, { epoch, since: performance.now() }), true);
 * await store.close();
 * ```
 */
export async function awaitAcknowledged(
  leases: AuthorityLeaseStore,
  target: AcknowledgementTarget,
): Promise<boolean> {
  let wake: PromiseWithResolvers<void> = Promise.withResolvers();
  const stop = leases.watch(() => wake.resolve(), { namespace: target.namespace });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    while (true) {
      const pending = await leases.list({
        namespace: target.namespace,
        now: Date.now(),
        graceMs: LEASE_GRACE_MS,
      });
      let until = Number.NEGATIVE_INFINITY;
      for (const lease of pending) {
        if (lease.epoch >= target.epoch) continue;
        until = Math.max(until, target.since + Math.min(lease.leaseMs, MAX_AUTHORITY_LEASE_MS));
      }
      const left = until - performance.now();
      if (left <= 0) return true;
      let pause = Math.min(left, WAIT_POLL_MS);
      if (target.deadline !== undefined) {
        const beforeDeadline = target.deadline - Date.now();
        if (beforeDeadline <= 0) return false;
        pause = Math.min(pause, beforeDeadline);
      }
      await new Promise<void>((resolve) => {
        timer = setTimeout(resolve, pause);
        wake.promise.then(resolve);
      });
      clearTimeout(timer);
      wake = Promise.withResolvers();
    }
  } finally {
    clearTimeout(timer);
    stop();
  }
}

/**
 * Claims the store for this process's bootstrap (`store.authority.claim`), then waits until
 * every process of the namespace whose epoch the claim moved has acknowledged it or its lease
 * lapsed, so that none of them answers from memory once this process serves: the processes of a
 * namespace the claim retired refuse every bearer from then on, those of a bootstrap it rotated
 * refuse the old bootstrap bearer. Rejects with `SupersededNamespaceError` when this bootstrap
 * was retired or rotated away itself.
 *
 * @example
 * ```ts
 * import { claimAuthority } from "./authority_lease.ts";
 * import { openKvStore } from "./store/mod.ts";
 * const store = await openKvStore({ path: ":memory:", namespace: "n" });
 * await claimAuthority(store, Date.now());
 * await store.close();
 * ```
 */
export async function claimAuthority(
  store: { readonly authority: AuthorityStore; readonly leases: AuthorityLeaseStore },
  now: number,
  bootstrap?: BootstrapClaim,
): Promise<void> {
  const { moved } = await store.authority.claim(now, bootstrap);
  if (moved === null) return;
  await awaitAcknowledged(store.leases, {
    namespace: moved.namespace,
    epoch: moved.epoch,
    since: performance.now(),
  });
}
