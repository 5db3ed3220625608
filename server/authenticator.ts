/**
 * Bearer authentication: the bootstrap digest compared in constant time first, then the store
 * looked up by the SHA-256 digest of the bearer, with an optional in-process principal cache.
 *
 * Revocation is immediate on every process sharing the store: each authenticated request first
 * makes sure it holds the store's current authority state, then
 *
 * 1. refuses every bearer, its own bootstrap included, when another bootstrap has claimed the
 *    store (`init --force` and a restart elsewhere): this process must be restarted with the
 *    current credential; refuses its own bootstrap bearer only (401, "rotated") when a later
 *    generation of the bootstrap holds the store (`init --rotate` and a restart elsewhere): the
 *    principals it issued stay valid;
 * 2. empties the cache when the revocation epoch moved since the last request (any process
 *    revoked a principal);
 * 3. answers from the cache, else reads the principal and caches it only when the epoch is still
 *    the one read in step 1 (a revocation racing the read cannot leave a stale entry).
 *
 * "Current" means read after the request arrived, or proven unchanged since: the store's
 * `store.authority.changeMarker()` (a Deno KV file's commit counter, read in 1 µs with no round trip)
 * is equal to the marker taken just before the last authority read began, so nothing was
 * committed by any process since. Then a cached principal is answered synchronously. Otherwise
 * (the marker moved, or the backend has none: PostgreSQL, remote or in-memory KV) the request
 * waits for `store.authority.readState()`, one round trip shared by the requests that
 * arrive together.
 *
 * Expiry needs no read: it is checked against the cached expiry on every request. See
 * `docs/deployment.md` for the measurements behind this design.
 *
 * @module
 */
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
   * one store: the cache is emptied whenever the store's revocation epoch moves.
   */
  cache?: boolean;
  /** Most cached principals before the cache is emptied (default 10000). */
  cacheSize?: number;
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
  /** The revocation epoch the cache's entries were read under. */
  #epoch: string | null = null;
  /** The last authority state read, with the store's change marker taken before the read. */
  #known: { marker: number; state: AuthorityState } | null = null;
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
  }

  /** The bootstrap principal. */
  get bootstrapPrincipal(): AuthenticatedPrincipal {
    return this.#bootstrap;
  }

  /**
   * Authenticates an `Authorization` header value at time `now` (ms). A malformed header is
   * refused synchronously (it throws); so is any bearer while the store's change marker proves
   * the last authority state current, and a cached principal or the bootstrap is then answered
   * synchronously. Anything else returns a promise (see the module doc).
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
    // The bearer is printable ASCII here, so the fast synchronous digest applies.
    const digest = sha256Ascii(token, DIGEST);
    const isBootstrap = constantTimeEqual(digest, this.#bootstrapDigest);
    const hex = isBootstrap ? "" : toHex(DIGEST);
    const known = this.#known;
    if (known !== null && known.marker === this.#store.authority.changeMarker()) {
      return this.#decide(known.state, isBootstrap, hex, now);
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
    this.#observe(state);
    if (isBootstrap) {
      if (state.bootstrapGeneration > this.#bootstrapGeneration) throw bootstrapRotated();
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
   * arriving while a read runs share ONE later read, so under load the store is read about once
   * per read latency instead of once per request (a short wrk run at 50 connections: 4,100 req/s
   * with a read per request, see docs/deployment.md for the figures with this).
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
    // Taken before the read: a commit racing the read moves the marker, so the next request
    // reads again rather than trusting a state that may predate it.
    const marker = this.#store.authority.changeMarker();
    const read = this.#store.authority.readState();
    this.#running = read;
    const settled = () => {
      if (this.#running === read) this.#running = null;
    };
    read.then((state) => {
      this.#known = marker === null ? null : { marker, state };
      settled();
    }, settled);
    return read;
  }

  /** Steps 1 and 2 of the module doc: refuse when superseded, forget all when the epoch moved. */
  #observe(state: AuthorityState): void {
    if (!state.current) {
      this.#cache?.clear();
      throw bootstrapSuperseded();
    }
    if (state.epoch !== this.#epoch) {
      this.#cache?.clear();
      this.#epoch = state.epoch;
    }
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
