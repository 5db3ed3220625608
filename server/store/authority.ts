/**
 * The authority part of the store (`store.authority`): what every replica sharing the store
 * agrees on before it answers an authenticated request.
 *
 * Every record of the store lives under a namespace derived from the bootstrap's authority key.
 * The process started with a bootstrap claims the store for its namespace and its bearer's
 * generation:
 *
 * - another namespace (`init --force`: a new authority key) takes the store over and the
 *   namespace it replaced is retired, which orphans every record minted under the old one and
 *   refuses its bearers on every replica;
 * - the same namespace with a later generation (`init --rotate`: a new bearer, the same key)
 *   takes the bootstrap over: every replica refuses the old bootstrap bearer from its next
 *   request on, while the principals it issued stay valid; an earlier generation, or another
 *   bearer of the same generation, is refused.
 *
 * A revocation (see `PrincipalStore.revoke`) moves the namespace's authority epoch in the same
 * atomic step, and so do the claim that retires a namespace and the one that rotates its
 * bootstrap, so principal caches emptied when the epoch moves are never stale. The processes
 * answering from memory hold authority leases (`leases.ts`) that acknowledge the epoch.
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
  /**
   * The namespace's authority epoch: 20 characters that only ever grow, compared as strings (a
   * later epoch is greater). It moves whenever a principal of this namespace is revoked, a claim
   * by another namespace retires this one, or a later bootstrap generation takes the bootstrap
   * over, in the same atomic step as that change; `0`×20 before the first move.
   */
  readonly epoch: string;
  /**
   * The generation of the bootstrap bearer holding the store (0 until a claim named one). A
   * process whose own bootstrap is of an earlier generation was rotated away from: it must
   * refuse its bootstrap bearer, and keeps serving the principals of the namespace.
   */
  readonly bootstrapGeneration: number;
}

/** The bootstrap bearer a process claims the store with (see {@linkcode AuthorityStore.claim}). */
export interface BootstrapClaim {
  /** The bearer's generation (0: a bootstrap without one). */
  readonly generation: number;
  /** Lower-case hex SHA-256 of the bearer. */
  readonly digest: string;
}

/** The epoch of a namespace nothing has moved yet. */
export const FIRST_EPOCH = "00000000000000000000";

/** What {@linkcode AuthorityStore.claim} changed. */
export interface ClaimResult {
  /**
   * The namespace whose epoch the claim moved, and the epoch after the move: the namespace it
   * retired (another authority key took the store), or its own (a later bootstrap generation
   * took the bootstrap over); null when it moved none. The processes of that namespace must
   * acknowledge the epoch (or let their leases lapse) before the claimer answers anything: see
   * `claimAuthority` in `server/authority_lease.ts`.
   */
  readonly moved: { readonly namespace: string; readonly epoch: string } | null;
}

/** Options of the retention purges (`purgeRetired` of the principals and authority parts). */
export interface PurgeOptions {
  /** Current time, ms since epoch. */
  now: number;
  /** How long revoked and expired principals and retired namespaces are kept, in ms. */
  retentionMs: number;
}

/** The store's cross-process authority: the claiming namespace and the authority epoch. */
export interface AuthorityStore {
  /**
   * Declares this namespace the store's current one: a process started with a new credential
   * takes the store over, and the namespace it replaced is retired (its processes then see
   * `current: false`) and its epoch moves. Throws {@linkcode SupersededNamespaceError} when this
   * namespace was itself retired before, so an old bootstrap cannot take the store back.
   *
   * With `bootstrap`, the claim also names the bootstrap bearer: a later generation than the
   * store's takes the bootstrap over (every process then sees the new `bootstrapGeneration`) and
   * the namespace's epoch moves; an earlier one, or another bearer of the same generation, is
   * refused with {@linkcode SupersededNamespaceError}. Without it the bootstrap the store holds
   * stays. Each change is one atomic step with its epoch move.
   */
  claim(now: number, bootstrap?: BootstrapClaim): Promise<ClaimResult>;
  /**
   * Reads the authority state in one round trip. A store never claimed counts as current. A
   * process that holds no authority lease reads it for every authenticated request (see
   * `server/authenticator.ts`).
   */
  readState(): Promise<AuthorityState>;
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

/**
 * What a claim by `bootstrap` does to the bootstrap `held` of the same namespace: `held` (the
 * same bearer: nothing to write), `recorded` (the same generation, whose bearer was not recorded
 * yet: record it), `rotated` (a later generation takes over), or it throws
 * {@linkcode SupersededNamespaceError} (an earlier generation, or another bearer of the same
 * one). Both backends decide with it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bootstrapClaimOf } from "./authority.ts";
 * const held = { generation: 2, bootstrap: "aa" };
 * assert.equal(bootstrapClaimOf(held, { generation: 2, digest: "aa" }), "held");
 * assert.equal(bootstrapClaimOf(held, { generation: 3, digest: "bb" }), "rotated");
 * assert.throws(() => bootstrapClaimOf(held, { generation: 1, digest: "cc" }));
 * ```
 */
export function bootstrapClaimOf(
  held: { generation?: number | null; bootstrap?: string | null },
  bootstrap: BootstrapClaim,
): "held" | "recorded" | "rotated" {
  const generation = held.generation ?? 0;
  if (bootstrap.generation > generation) return "rotated";
  if (bootstrap.generation < generation) {
    throw new SupersededNamespaceError(
      `This bootstrap bearer (generation ${bootstrap.generation}) was rotated away on the store, which holds generation ${generation}; start with the current secret file`,
    );
  }
  if (held.bootstrap === undefined || held.bootstrap === null) return "recorded";
  if (held.bootstrap === bootstrap.digest) return "held";
  throw new SupersededNamespaceError(
    `Another bootstrap bearer of generation ${generation} holds the store (was the secret file rotated twice from one copy?); start with the current secret file`,
  );
}
