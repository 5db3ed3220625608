/**
 * Bearer authentication: the bootstrap digest compared in constant time first, then the store
 * looked up by the SHA-256 digest of the bearer, with an optional in-process principal cache.
 *
 * Revocation holds on every process sharing the store once it has been answered: each
 * authenticated request is decided under an authority state that is current for it, then
 *
 * 1. refuses every bearer, its own bootstrap included, once another bootstrap has claimed the
 *    store (`init --force` and a restart elsewhere): this process must be restarted with the
 *    current credential; refuses its own bootstrap bearer only (401, "rotated") when a later
 *    generation of the bootstrap holds the store (`init --rotate` and a restart elsewhere): the
 *    principals it issued stay valid;
 * 2. empties the cache when the namespace's epoch moved (any process revoked a principal, or the
 *    bootstrap was rotated);
 * 3. answers from the cache, else reads the principal and caches it only when the epoch is still
 *    the one the request was decided under (a revocation racing the read cannot leave a stale
 *    entry).
 *
 * "Current" means one of two things. While this process holds its authority lease
 * (`authority_lease.ts`), the state the lease acknowledged is current: a change that must hold
 * everywhere waits, before it is answered, until every lease has acknowledged it or lapsed. A
 * cached principal is then answered synchronously, with no store call. Without a valid lease (the
 * first requests, a store that cannot be reached, `leaseMs: 0`) the request waits for
 * `store.authority.readState()` started after it arrived, one round trip shared by the requests
 * that arrive together.
 *
 * Expiry needs no read: it is checked against the cached expiry on every request. See
 * `docs/deployment.md` for the measurements behind this design.
 *
 * @module
 */
import {
  AuthorityLease,
  awaitAcknowledged,
  DEFAULT_AUTHORITY_LEASE_MS,
} from "./authority_lease.ts";
import { constantTimeEqual, sha256Ascii, sha256Hex, toHex } from "./digest.ts";
import type { BootstrapCredential } from "./bootstrap/credential.ts";
import type { AuthenticatedPrincipal } from "./context.ts";
import { InterfaceError } from "./errors.ts";
import type { AuthorityState, PrincipalRecord, Store } from "./store/types.ts";
import { parseRfc3339 } from "./time.ts";
import { RESOURCE_POLICY_FIELDS } from "../wire/mod.ts";

/** Options of {@linkcode Authenticator}. */
export interface AuthenticatorOptions {
  /** The enrolled bootstrap credential. */
  bootstrap: BootstrapCredential;
  /** The principal store. */
  store: Store;
  /**
   * Keep principals found in the store in memory (default true). Safe with several processes on
   * one store: the cache is emptied whenever the namespace's epoch moves.
   */
  cache?: boolean;
  /** Most cached principals before the cache is emptied (default 10000). */
  cacheSize?: number;
  /**
   * Length of this process's authority lease in ms (default 3000): the longest a revocation
   * waits for a process that stopped answering. 0 holds none: every authenticated request then
   * reads the authority state.
   */
  leaseMs?: number;
}

/** Longest bearer token accepted, in characters. */
const MAX_TOKEN = 4096;
/** Scratch space of the digest; authentication is synchronous up to the store lookup. */
const DIGEST = new Uint8Array(32);
const MALFORMED = "Authorization must be one `Bearer <token>` header";
const NOOP = (): void => {};

function authenticationFailed(message: string): InterfaceError {
  return new InterfaceError("authenticationFailed", message, {
    headers: { "www-authenticate": "Bearer" },
  });
}

function bootstrapSuperseded(): InterfaceError {
  return new InterfaceError(
    "authenticationFailed",
    "The store was claimed by a newer bootstrap credential; this process must be restarted",
    { headers: { "www-authenticate": 'Bearer error="invalid_token"' } },
  );
}

function bootstrapRotated(): InterfaceError {
  return new InterfaceError(
    "authenticationFailed",
    "This bootstrap bearer was rotated away (init --rotate); use the current one",
    { headers: { "www-authenticate": 'Bearer error="invalid_token"' } },
  );
}

function tokenExpired(): InterfaceError {
  return new InterfaceError("tokenExpired", "Bearer credential has expired", {
    headers: { "www-authenticate": 'Bearer error="invalid_token"' },
  });
}

/**
 * The token of an `Authorization` value of the form `Bearer <token>`: the scheme in any case,
 * one or more spaces, 1 to 4096 printable ASCII characters other than space, then nothing but
 * spaces. Returns null for anything else.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bearerToken } from "./authenticator.ts";
 * assert.equal(bearerToken("bearer  art_example "), "art_example");
 * assert.equal(bearerToken("Basic abc"), null);
 * ```
 */
export function bearerToken(authorization: string): string | null {
  const length = authorization.length;
  // "bearer" in any case: each letter with bit 5 set is the lower-case letter.
  if (
    length < 8 || (authorization.charCodeAt(0) | 0x20) !== 98 ||
    (authorization.charCodeAt(1) | 0x20) !== 101 || (authorization.charCodeAt(2) | 0x20) !== 97 ||
    (authorization.charCodeAt(3) | 0x20) !== 114 || (authorization.charCodeAt(4) | 0x20) !== 101 ||
    (authorization.charCodeAt(5) | 0x20) !== 114 || authorization.charCodeAt(6) !== 32
  ) {
    return null;
  }
  let start = 7;
  while (start < length && authorization.charCodeAt(start) === 32) start++;
  let end = start;
  while (end < length) {
    const code = authorization.charCodeAt(end);
    if (code < 0x21 || code > 0x7e) break;
    end++;
  }
  if (end === start || end - start > MAX_TOKEN) return null;
  for (let i = end; i < length; i++) {
    if (authorization.charCodeAt(i) !== 32) return null;
  }
  return authorization.slice(start, end);
}

/**
 * Computes the lower-case hex SHA-256 digest under which a bearer is stored.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bearerDigest } from "./authenticator.ts";
 * assert.equal(bearerDigest("art_example").length, 64);
 * ```
 */
export function bearerDigest(bearer: string): string {
  return sha256Hex(bearer);
}

/**
 * Resolves the `Authorization` header of a request to a principal, or throws the
 * {@linkcode InterfaceError} to answer (401 `authenticationFailed` or `tokenExpired`).
 *
 * @example
 * ```ts ignore
 * import { Authenticator } from "./authenticator.ts";
 * const authenticator = new Authenticator({ bootstrap, store });
 * const principal = await authenticator.authenticate(request.headers.get("authorization"), Date.now());
 * ```
 */
export class Authenticator {
  #bootstrapDigest: Uint8Array;
  #bootstrapGeneration: number;
  #bootstrap: AuthenticatedPrincipal;
  #store: Store;
  #cache: Map<string, AuthenticatedPrincipal> | null;
  #cacheSize: number;
  /** The epoch the cache's entries were read under: the latest one adopted. */
  #epoch: string | null = null;
  /** Set once another bootstrap claimed the store: every bearer is refused from then on. */
  #superseded = false;
  /**
   * Set once a later generation of this bootstrap holds the store (of the latest state adopted,
   * whatever state a request is decided under): this bootstrap bearer is refused from then on.
   */
  #rotated = false;
  /** This process's authority lease; null with `leaseMs: 0`. */
  readonly #lease: AuthorityLease | null;
  /** The authority read running now, if any. */
  #running: Promise<AuthorityState> | null = null;
  /** The read that starts once the running one settles, shared by the requests waiting for it. */
  #queued: Promise<AuthorityState> | null = null;

  /**
   * Creates the authenticator.
   *
   * @example
   * ```ts ignore
   * import { Authenticator } from "./authenticator.ts";
   * const authenticator = new Authenticator({ bootstrap, store, cache: false });
   * ```
   */
  constructor(options: AuthenticatorOptions) {
    const bootstrap = options.bootstrap;
    this.#bootstrapDigest = bootstrap.tokenDigest;
    this.#bootstrapGeneration = bootstrap.generation;
    this.#bootstrap = Object.freeze({
      principalId: bootstrap.principalId,
      capabilities: bootstrap.capabilities,
      expiresAt: bootstrap.expiresAt,
      expiresAtMs: parseRfc3339(bootstrap.expiresAt) ?? Number.NaN,
      bootstrap: true,
    });
    this.#store = options.store;
    this.#cache = options.cache === false ? null : new Map();
    this.#cacheSize = options.cacheSize ?? 10_000;
    const leaseMs = options.leaseMs ?? DEFAULT_AUTHORITY_LEASE_MS;
    this.#lease = leaseMs <= 0 ? null : new AuthorityLease({
      store: options.store,
      leaseMs,
      epoch: () => this.#epoch,
      adopt: (state) => this.#adopt(state),
    });
  }

  /** The bootstrap principal. */
  get bootstrapPrincipal(): AuthenticatedPrincipal {
    return this.#bootstrap;
  }

  /**
   * Authenticates an `Authorization` header value at time `now` (ms). A malformed header is
   * refused synchronously (it throws); while this process holds its authority lease, so is any
   * refused bearer, and a cached principal or the bootstrap is answered synchronously. Anything
   * else returns a promise (see the module doc).
   *
   * @example
   * ```ts ignore
   * const principal = await authenticator.authenticate("Bearer art_...", Date.now());
   * ```
   */
  authenticate(
    authorization: string | null,
    now: number,
  ): AuthenticatedPrincipal | Promise<AuthenticatedPrincipal> {
    if (authorization === null) throw authenticationFailed("Authorization header is required");
    const token = bearerToken(authorization);
    if (token === null) throw authenticationFailed(MALFORMED);
    if (this.#superseded) throw bootstrapSuperseded();
    // The bearer is printable ASCII here, so the fast synchronous digest applies.
    const digest = sha256Ascii(token, DIGEST);
    const isBootstrap = constantTimeEqual(digest, this.#bootstrapDigest);
    const hex = isBootstrap ? "" : toHex(DIGEST);
    const lease = this.#lease;
    if (lease !== null) {
      const state = lease.stateAt(now);
      if (state !== null) return this.#decide(state, isBootstrap, hex, now);
      lease.start();
    }
    return this.#readAuthority().then((state) => this.#decide(state, isBootstrap, hex, now));
  }

  /** Steps 1 to 3 of the module doc under a current authority state. */
  #decide(
    state: AuthorityState,
    isBootstrap: boolean,
    hex: string,
    now: number,
  ): AuthenticatedPrincipal | Promise<AuthenticatedPrincipal> {
    if (state.epoch !== this.#epoch || !state.current) this.#adopt(state);
    if (this.#superseded) throw bootstrapSuperseded();
    if (isBootstrap) {
      if (this.#rotated) throw bootstrapRotated();
      if (now >= this.#bootstrap.expiresAtMs) throw tokenExpired();
      return this.#bootstrap;
    }
    const cached = this.#cache?.get(hex);
    if (cached !== undefined) return checkExpiry(cached, now);
    return this.#store.principals.findByDigest(hex).then((record) =>
      this.#admit(hex, record, now, state.epoch)
    );
  }

  /**
   * Reads the authority state for a request that arrived now: joins the next read to start, never
   * one already running (it may have begun before a revocation this request must see). Requests
   * arriving while a read runs share ONE later read, so without a lease the store is read about
   * once per read latency instead of once per request.
   */
  #readAuthority(): Promise<AuthorityState> {
    if (this.#running === null) return this.#startRead();
    this.#queued ??= this.#running.then(NOOP, NOOP).then(() => {
      this.#queued = null;
      return this.#startRead();
    });
    return this.#queued;
  }

  #startRead(): Promise<AuthorityState> {
    const read = this.#store.authority.readState();
    this.#running = read;
    const settled = () => {
      if (this.#running === read) this.#running = null;
    };
    read.then(settled, settled);
    return read;
  }

  /**
   * Steps 1 and 2 of the module doc for a state read from the store: a claim by another bootstrap
   * is final, and so is a later generation of this bootstrap; a newer epoch empties the cache; an
   * older one (a read that raced a newer) changes nothing.
   */
  #adopt(state: AuthorityState): void {
    if (!state.current) {
      this.#superseded = true;
      this.#cache?.clear();
      return;
    }
    if (this.#epoch === null || state.epoch > this.#epoch) {
      this.#cache?.clear();
      this.#epoch = state.epoch;
      if (state.bootstrapGeneration > this.#bootstrapGeneration) this.#rotated = true;
    }
  }

  /**
   * Waits, after a change that must hold on every process before it is answered (a revocation),
   * until every live authority lease of the namespace has acknowledged the store's epoch or
   * lapsed. This process adopts that epoch first (and acknowledges it in its own lease). Resolves
   * with true, or false when `options.deadline` (wall-clock ms) came first; the change itself is
   * committed either way. Rejects when the store cannot be read.
   *
   * @example
   * ```ts ignore
   * await store.principals.revoke(principalId, revokedAt);
   * if (!await authenticator.settle({ deadline: context.deadline })) throw deadlineExceeded();
   * ```
   */
  async settle(options: { deadline?: number } = {}): Promise<boolean> {
    const since = performance.now();
    const state = await this.#store.authority.readState();
    this.#adopt(state);
    if (this.#lease?.active) await this.#lease.renew();
    return await awaitAcknowledged(this.#store.leases, {
      epoch: state.epoch,
      since,
      deadline: options.deadline,
    });
  }

  /**
   * Stops renewing this process's authority lease and deletes its record, so that no change waits
   * for it. Authentication goes on without the lease (reading the authority state per request).
   *
   * @example
   * ```ts ignore
   * await authenticator.close();
   * ```
   */
  async close(): Promise<void> {
    await this.#lease?.close();
  }

  /**
   * Forgets a principal held in the cache; called on revocation so the next request with its
   * bearer reaches the store.
   *
   * @example
   * ```ts ignore
   * authenticator.forget("6f1c3d1e-8a6b-4a0e-9d7e-2f4b5c6d7e8f");
   * ```
   */
  forget(principalId: string): void {
    if (this.#cache === null) return;
    for (const [digest, principal] of this.#cache) {
      if (principal.principalId === principalId) this.#cache.delete(digest);
    }
  }

  #admit(
    hex: string,
    record: PrincipalRecord | null,
    now: number,
    epoch: string,
  ): AuthenticatedPrincipal {
    if (record === null || record.revokedAt !== null || record.bearerDigest !== hex) {
      throw authenticationFailed("Bearer credential is not valid");
    }
    const principal: AuthenticatedPrincipal = Object.freeze({
      principalId: record.principalId,
      capabilities: Object.freeze([...record.capabilities]),
      expiresAt: record.expiresAt,
      expiresAtMs: parseRfc3339(record.expiresAt) ?? Number.NaN,
      bootstrap: false,
      ...policyListsOf(record),
      ...(record.maxActiveRuns !== undefined ? { maxActiveRuns: record.maxActiveRuns } : {}),
      ...(record.allowAgentOverrides === true ? { allowAgentOverrides: true } : {}),
      ...(record.budget !== undefined ? { budget: Object.freeze({ ...record.budget }) } : {}),
      ...(record.maxRunCost !== undefined
        ? { maxRunCost: Object.freeze({ ...record.maxRunCost }) }
        : {}),
      ...(record.maxRunSeconds !== undefined ? { maxRunSeconds: record.maxRunSeconds } : {}),
      ...(record.name !== undefined ? { name: record.name } : {}),
      ...(record.metadata !== undefined ? { metadata: Object.freeze({ ...record.metadata }) } : {}),
    });
    // Read under an older epoch than the latest seen: a revocation may have raced it.
    if (this.#cache !== null && epoch === this.#epoch) {
      if (this.#cache.size >= this.#cacheSize) this.#cache.clear();
      this.#cache.set(hex, principal);
    }
    return checkExpiry(principal, now);
  }
}

/** The policy lists a record holds, each as a frozen copy (absent ones left out). */
function policyListsOf(record: PrincipalRecord): Partial<Record<string, readonly string[]>> {
  const lists: Record<string, readonly string[]> = {};
  for (const field of ["agentIds", ...RESOURCE_POLICY_FIELDS] as const) {
    const list = record[field];
    if (list) lists[field] = Object.freeze([...list]);
  }
  return lists;
}

function checkExpiry(principal: AuthenticatedPrincipal, now: number): AuthenticatedPrincipal {
  if (!(now < principal.expiresAtMs)) throw tokenExpired();
  return principal;
}
