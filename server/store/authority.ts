/**
 * The authority part of the store (`store.authority`): what every replica sharing the store
 * agrees on before it answers an authenticated request.
 *
 * Every record of the store lives under a namespace derived from the bootstrap credential. The
 * process started with a bootstrap claims the store for its namespace; the namespace it replaced
 * is retired, so rotating the bootstrap (`init --force`) orphans every record minted under the
 * old one and refuses its bearers on every replica. A revocation (see `PrincipalStore.revoke`)
 * moves the namespace's revocation epoch in the same atomic step, so principal caches emptied
 * when the epoch moves are never stale.
 *
 * @module
 */

/**
 * What a process must read before it answers an authenticated request, so that a revocation or
 * a bootstrap rotation made by any other process on the store holds for it at once.
 */
export interface AuthorityState {
  /**
   * False once another bootstrap claimed the store ({@linkcode AuthorityStore.claim} with another
   * namespace): this process runs with a rotated-away bootstrap and must refuse every bearer.
   */
  readonly current: boolean;
  /** Opaque; changes whenever a principal of this namespace is revoked or the store is claimed. */
  readonly epoch: string;
}

/** Options of the retention purges (`purgeRetired` of the principals and authority parts). */
export interface PurgeOptions {
  /** Current time, ms since epoch. */
  now: number;
  /** How long revoked and expired principals and retired namespaces are kept, in ms. */
  retentionMs: number;
}

/** The store's cross-process authority: the claiming namespace and the revocation epoch. */
export interface AuthorityStore {
  /**
   * Declares this namespace the store's current one: a process started with a rotated bootstrap
   * takes the store over, and the namespace it replaced is retired (its processes then see
   * `current: false`). Throws {@linkcode SupersededNamespaceError} when this namespace was
   * itself retired before, so an old bootstrap cannot take the store back.
   */
  claim(now: number): Promise<void>;
  /**
   * Reads the authority state in one round trip. A store never claimed counts as current.
   * Every authenticated request reads it first (see `server/authenticator.ts`).
   */
  readState(): Promise<AuthorityState>;
  /**
   * A marker read synchronously, without a round trip, that is equal on two calls only when no
   * process committed anything to the store in between; null when the backend cannot tell that
   * without a round trip (remote and in-memory KV, PostgreSQL) or the store is closed. While it
   * stays equal, an authority state read after the first call is still current, and the
   * authenticator does not read it again. Not a store call: it is never timed.
   */
  changeMarker(): number | null;
  /**
   * Deletes every record of each namespace retired more than `retentionMs` before `now`; returns
   * how many namespaces went. A namespace other than the current one that was never retired
   * counts as retired from this call on. The retired marks stay (a few bytes each), so an old
   * bootstrap still cannot claim the store back.
   */
  purgeRetired(options: PurgeOptions): Promise<number>;
}

/**
 * Raised by {@linkcode AuthorityStore.claim} when the namespace was claimed before and then
 * replaced by another one: the bootstrap it derives from was rotated away from.
 */
export class SupersededNamespaceError extends Error {
  /** Stable error code. */
  readonly code = "bootstrapSuperseded" as const;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { SupersededNamespaceError } from "./authority.ts";
   * assert.equal(new SupersededNamespaceError("rotated").code, "bootstrapSuperseded");
   * ```
   */
  constructor(message: string) {
    super(message);
    this.name = "SupersededNamespaceError";
  }
}
