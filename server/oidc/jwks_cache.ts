/**
 * Each trusted issuer's signing keys, found through OpenID Connect discovery and cached.
 *
 * A load fetches `{issuer}/.well-known/openid-configuration`, checks that its `issuer` is the
 * configured issuer exactly, checks its `jwks_uri` against the URL rules, then fetches the JWKS.
 * Keys are kept for {@linkcode DEFAULT_MAX_KEY_AGE_MS} (then the next use loads them again, so a
 * key the issuer withdrew stops verifying). A token whose `kid` is not in the cached set asks for
 * one refetch ({@linkcode JwksCache.refetch}), granted at most once per
 * {@linkcode DEFAULT_REFETCH_INTERVAL_MS} per issuer counting every load: a key rotation at the
 * issuer is picked up without a restart, and a flood of made-up `kid`s costs the issuer at most one
 * fetch a minute. A failed load is remembered for {@linkcode DEFAULT_FAILURE_BACKOFF_MS}, during
 * which the issuer is not asked again. Concurrent callers share one load.
 *
 * Everything is bounded: each document is read up to {@linkcode DEFAULT_MAX_DOCUMENT_BYTES}, a
 * JWKS has at most {@linkcode DEFAULT_MAX_KEYS} keys, at most {@linkcode DEFAULT_MAX_ISSUERS}
 * issuers are kept (the least recently used goes first), and every fetch has a deadline
 * ({@linkcode DEFAULT_FETCH_TIMEOUT_MS}). Redirects are not followed.
 *
 * @module
 */
import { fetchJsonDocument } from "./_document.ts";
import { OidcVerificationError } from "./errors.ts";
import {
  discoveryUrl,
  type IssuerUrlOptions,
  issuerUrlProblem,
  jwksUriProblem,
} from "./issuer_url.ts";

/** Default deadline of one fetch (request and body), in ms. */
export const DEFAULT_FETCH_TIMEOUT_MS = 5_000;

/** Default cap on a discovery document or a JWKS, in bytes (64 KiB). */
export const DEFAULT_MAX_DOCUMENT_BYTES = 65_536;

/** Default cap on the keys of one JWKS (GitHub and GitLab publish two to four). */
export const DEFAULT_MAX_KEYS = 32;

/** Default cap on the issuers whose keys are kept. */
export const DEFAULT_MAX_ISSUERS = 64;

/** Default least time between two loads of one issuer's keys for an unknown `kid`, in ms. */
export const DEFAULT_REFETCH_INTERVAL_MS = 60_000;

/** Default time an issuer's keys are used before they are loaded again, in ms. */
export const DEFAULT_MAX_KEY_AGE_MS = 600_000;

/** Default time a failed load is remembered (and the issuer not asked again), in ms. */
export const DEFAULT_FAILURE_BACKOFF_MS = 5_000;

/** Options of {@linkcode JwksCache}. */
export interface JwksCacheOptions extends IssuerUrlOptions {
  /** The fetch used for discovery and JWKS documents (default: the global `fetch`). */
  fetch?: typeof fetch;
  /** The clock, in ms since the epoch (default `Date.now`). */
  now?: () => number;
  /** Deadline of one fetch, in ms (default {@linkcode DEFAULT_FETCH_TIMEOUT_MS}). */
  timeoutMs?: number;
  /** Cap on each document, in bytes (default {@linkcode DEFAULT_MAX_DOCUMENT_BYTES}). */
  maxDocumentBytes?: number;
  /** Cap on the keys of a JWKS (default {@linkcode DEFAULT_MAX_KEYS}). */
  maxKeys?: number;
  /** Cap on the issuers kept (default {@linkcode DEFAULT_MAX_ISSUERS}). */
  maxIssuers?: number;
  /** Least ms between loads for an unknown `kid` (default {@linkcode DEFAULT_REFETCH_INTERVAL_MS}). */
  refetchIntervalMs?: number;
  /** Ms keys are used before they are loaded again (default {@linkcode DEFAULT_MAX_KEY_AGE_MS}). */
  maxAgeMs?: number;
  /** Ms a failed load is remembered (default {@linkcode DEFAULT_FAILURE_BACKOFF_MS}). */
  failureBackoffMs?: number;
}

/** Options of one {@linkcode JwksCache} call. */
export interface JwksCacheCallOptions {
  /** Stops waiting (rejecting with the signal's reason); a load other callers share goes on. */
  signal?: AbortSignal;
}

/** One issuer's keys as last loaded. A new load gives a new object. */
export interface IssuerKeySet {
  /** The issuer, exactly as configured. */
  readonly issuer: string;
  /** Where the keys were fetched from (the discovery document's `jwks_uri`). */
  readonly jwksUri: string;
  /** The JWKS (frozen, keys as the issuer published them). */
  readonly jwks: { readonly keys: readonly Readonly<Record<string, unknown>>[] };
  /** When the load started, in ms since the epoch. */
  readonly fetchedAt: number;
}

interface IssuerEntry {
  /** The last keys loaded, or null before the first load succeeds. */
  keys: IssuerKeySet | null;
  /** When the last load started (successful or not), or -Infinity. */
  lastLoadAt: number;
  /** The load under way, shared by every caller. */
  loading: Promise<IssuerKeySet> | null;
  /** The last load's failure and when it happened, while no load has succeeded since. */
  failure: { readonly error: OidcVerificationError; readonly at: number } | null;
}

/**
 * The issuers' signing keys, loaded through discovery and cached with the bounds above.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { JwksCache } from "./jwks_cache.ts";
 * const issuer = "https://ci.example";
 * const documents: Record<string, unknown> = {
 *   [`${issuer}/.well-known/openid-configuration`]: { issuer, jwks_uri: `${issuer}/jwks` },
 *   [`${issuer}/jwks`]: { keys: [{ kty: "EC", crv: "P-256", kid: "k1", x: "…", y: "…" }] },
 * };
 * let fetches = 0;
 * const cache = new JwksCache({
 *   fetch: (input) => {
 *     fetches++;
 *     return Promise.resolve(Response.json(documents[String(input)]));
 *   },
 * });
 * const keys = await cache.keySet(issuer);
 * assert.deepEqual(keys.jwks.keys.map((key) => key.kid), ["k1"]);
 * assert.equal(await cache.keySet(issuer), keys);
 * // Just loaded: an unknown kid does not get a refetch yet.
 * assert.equal(await cache.refetch(issuer, keys), null);
 * assert.equal(fetches, 2);
 * ```
 */
export class JwksCache {
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  readonly #urlOptions: IssuerUrlOptions;
  readonly #timeoutMs: number;
  readonly #maxDocumentBytes: number;
  readonly #maxKeys: number;
  readonly #maxIssuers: number;
  readonly #refetchIntervalMs: number;
  readonly #maxAgeMs: number;
  readonly #failureBackoffMs: number;
  /** Issuer → entry, least recently used first. */
  readonly #entries = new Map<string, IssuerEntry>();

  /** Creates an empty cache. */
  constructor(options: JwksCacheOptions = {}) {
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#now = options.now ?? Date.now;
    this.#urlOptions = { allowLoopbackHttp: options.allowLoopbackHttp === true };
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
    this.#maxDocumentBytes = options.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
    this.#maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
    this.#maxIssuers = Math.max(1, options.maxIssuers ?? DEFAULT_MAX_ISSUERS);
    this.#refetchIntervalMs = options.refetchIntervalMs ?? DEFAULT_REFETCH_INTERVAL_MS;
    this.#maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_KEY_AGE_MS;
    this.#failureBackoffMs = options.failureBackoffMs ?? DEFAULT_FAILURE_BACKOFF_MS;
  }

  /** How many issuers are kept. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * The issuer's current keys: the cached set while it is younger than the maximum age, else a
   * load (shared with concurrent callers). Throws {@linkcode OidcVerificationError}
   * (`issuerNotAllowed`, `issuerUnreachable`, `issuerInvalid`).
   */
  async keySet(issuer: string, options: JwksCacheCallOptions = {}): Promise<IssuerKeySet> {
    const entry = this.#entry(issuer);
    const keys = entry.keys;
    if (keys !== null && this.#now() - keys.fetchedAt < this.#maxAgeMs) return keys;
    return await untilAborted(this.#load(issuer, entry), options.signal);
  }

  /**
   * A newer key set than `seen` (the one that lacked a token's key), or null when none may be
   * had: if another caller already loaded a newer set it is returned; otherwise the issuer is
   * asked again only when its last load started at least the refetch interval ago.
   */
  async refetch(
    issuer: string,
    seen: IssuerKeySet,
    options: JwksCacheCallOptions = {},
  ): Promise<IssuerKeySet | null> {
    const entry = this.#entry(issuer);
    if (entry.keys !== null && entry.keys !== seen) return entry.keys;
    if (entry.loading === null && this.#now() - entry.lastLoadAt < this.#refetchIntervalMs) {
      return null;
    }
    return await untilAborted(this.#load(issuer, entry), options.signal);
  }

  /** The issuer's entry, made most recently used; checks the issuer URL first. */
  #entry(issuer: string): IssuerEntry {
    const problem = issuerUrlProblem(issuer, this.#urlOptions);
    if (problem !== null) throw new OidcVerificationError("issuerNotAllowed", problem);
    let entry = this.#entries.get(issuer);
    if (entry !== undefined) {
      this.#entries.delete(issuer);
    } else {
      entry = { keys: null, lastLoadAt: -Infinity, loading: null, failure: null };
      if (this.#entries.size >= this.#maxIssuers) {
        this.#entries.delete(this.#entries.keys().next().value!);
      }
    }
    this.#entries.set(issuer, entry);
    return entry;
  }

  /** The load under way, a remembered failure, or a new load. */
  #load(issuer: string, entry: IssuerEntry): Promise<IssuerKeySet> {
    if (entry.loading !== null) return entry.loading;
    const now = this.#now();
    const failure = entry.failure;
    if (failure !== null && now - failure.at < this.#failureBackoffMs) {
      return Promise.reject(
        new OidcVerificationError(failure.error.reason, failure.error.message),
      );
    }
    entry.lastLoadAt = now;
    const loading = this.#fetchKeys(issuer, now).then(
      (keys) => {
        entry.keys = keys;
        entry.failure = null;
        return keys;
      },
      (error: unknown) => {
        const refusal = error instanceof OidcVerificationError ? error : new OidcVerificationError(
          "issuerUnreachable",
          "The issuer's keys could not be loaded",
        );
        entry.failure = { error: refusal, at: this.#now() };
        throw refusal;
      },
    ).finally(() => {
      entry.loading = null;
    });
    entry.loading = loading;
    return loading;
  }

  async #fetchKeys(issuer: string, startedAt: number): Promise<IssuerKeySet> {
    const documentOptions = {
      fetch: this.#fetch,
      timeoutMs: this.#timeoutMs,
      maxBytes: this.#maxDocumentBytes,
    };
    const discovery = await fetchJsonDocument(discoveryUrl(issuer), {
      ...documentOptions,
      label: "discovery document",
    });
    if (!isObject(discovery)) {
      throw invalid("The issuer's discovery document is not a JSON object");
    }
    if (discovery.issuer !== issuer) {
      throw invalid("The issuer's discovery document names another issuer");
    }
    const jwksUri = discovery.jwks_uri;
    if (typeof jwksUri !== "string") {
      throw invalid("The issuer's discovery document has no jwks_uri");
    }
    const problem = jwksUriProblem(jwksUri, this.#urlOptions);
    if (problem !== null) throw invalid(problem);
    const jwks = await fetchJsonDocument(jwksUri, { ...documentOptions, label: "JWKS" });
    if (!isObject(jwks) || !Array.isArray(jwks.keys) || !jwks.keys.every(isObject)) {
      throw invalid("The issuer's JWKS is not a JSON Web Key Set");
    }
    if (jwks.keys.length > this.#maxKeys) {
      throw invalid(`The issuer's JWKS has more than ${this.#maxKeys} keys`);
    }
    const keys = Object.freeze(jwks.keys.map((key) => Object.freeze(key)));
    return Object.freeze({
      issuer,
      jwksUri,
      jwks: Object.freeze({ keys }),
      fetchedAt: startedAt,
    });
  }
}

function invalid(message: string): OidcVerificationError {
  return new OidcVerificationError("issuerInvalid", message);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `promise`, or the signal's reason as soon as it aborts (the promise itself goes on). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
