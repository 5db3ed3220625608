/**
 * The authority leases part of the store (`store.leases`): one record per process (or worker,
 * or isolate) that answers authenticated requests from memory, saying which authority epoch it
 * has acknowledged and for how long it may keep answering without looking at the store again.
 *
 * A renewal records the epoch its holder answers under and reads the namespace's authority state
 * in one atomic step, so a renewal and a change of the epoch (a revocation, a claim) are ordered:
 * a renewal committed before the change is in the list anyone reads after it, and one committed
 * after it returns the new epoch, which the holder adopts before it uses the lease. A process
 * that changed the epoch lists the leases and waits until each acknowledged the new epoch or
 * lapsed (`server/authority_lease.ts`).
 *
 * The holder measures its lease on its own monotonic clock, from before it sent the renewal; the
 * store's `renewedAt` only tells a waiter which records belong to holders gone for good (a record
 * not renewed for `leaseMs + graceMs` is dead and deleted). On Deno KV `renewedAt` is the
 * holder's wall clock, on PostgreSQL the database's.
 *
 * @module
 */
import type { AuthorityState } from "./authority.ts";

/** One holder's lease as the store records it. */
export interface AuthorityLeaseRecord {
  /** The holder's id, random per process, worker or isolate. */
  readonly holder: string;
  /** The epoch the holder acknowledged with its last renewal (see `AuthorityState.epoch`). */
  readonly epoch: string;
  /** When the last renewal was recorded, ms since the epoch (see the module doc: whose clock). */
  readonly renewedAt: number;
  /** How long the holder may answer from memory after a renewal, in ms. */
  readonly leaseMs: number;
}

/** What a holder sends to renew its lease. */
export interface LeaseRenewal {
  /** The holder's id. */
  holder: string;
  /** The lease's length in ms. */
  leaseMs: number;
  /** The holder's wall clock, ms since the epoch, read before the renewal was sent. */
  now: number;
  /**
   * The epoch the holder answers under, adopted before the renewal was sent: what the lease
   * acknowledges. A renewal that records another epoch than the holder's record held wakes the
   * waiters ({@linkcode AuthorityLeaseStore.watch}).
   */
  epoch: string;
}

/** Options of {@linkcode AuthorityLeaseStore.list} and {@linkcode AuthorityLeaseStore.purge}. */
export interface LeaseListOptions {
  /** The caller's wall clock, ms since the epoch (PostgreSQL reads its own clock instead). */
  now: number;
  /**
   * How long after `renewedAt + leaseMs` a record still counts as possibly live: covers the
   * difference between the holder's clock and the reader's (Deno KV on several machines).
   */
  graceMs: number;
  /** The namespace whose leases to list (default this store's); a claim lists the retired one's. */
  namespace?: string;
}

/** The authority leases of the store's namespace. */
export interface AuthorityLeaseStore {
  /**
   * Records `renewal.holder`'s lease acknowledging `renewal.epoch` and reads the namespace's
   * authority state, in one atomic step; returns that state, current when the lease was recorded
   * (a newer epoch than `renewal.epoch` when one moved since the holder adopted it).
   */
  renew(renewal: LeaseRenewal): Promise<AuthorityState>;
  /** Deletes the holder's lease (a holder shutting down, or one whose namespace was retired). */
  release(holder: string): Promise<void>;
  /**
   * The leases that may still be live (see {@linkcode LeaseListOptions.graceMs}); the dead ones
   * found on the way are deleted.
   */
  list(options: LeaseListOptions): Promise<AuthorityLeaseRecord[]>;
  /** Deletes the namespace's dead lease records; returns how many went. */
  purge(options: LeaseListOptions): Promise<number>;
  /**
   * Calls `listener` when the namespace's authority state may have changed or a lease may have
   * acknowledged a new epoch (PostgreSQL `LISTEN/NOTIFY`; on a Deno KV file its change marker,
   * read every 10 ms; on another KV its keys, read every 250 ms); returns the function that stops
   * it. A watch never keeps a process alive. A wake-up can be missed (a broken connection) or
   * spurious, so callers also poll.
   */
  watch(listener: () => void, options?: { namespace?: string }): () => void;
}
