/**
 * The decision of a token exchange (`POST /v1/token-exchange`): whether a CI job's OIDC ID token
 * earns a principal under a trust policy, and with which expiry. In order:
 *
 * 1. the attempt takes a token of the replica's total rate limit (`rate_limit.ts`), else 429;
 * 2. the policy is read (every time: a policy deleted on any replica is gone at once), else 401
 *    `unknownPolicy`;
 * 3. the attempt takes a token of the policy's rate limit, else 429;
 * 4. the ID token is verified against the policy's issuer and audience (`verifier.ts`), else 401
 *    with the verifier's reason;
 * 5. its claims must match the policy's patterns (`claims.ts`), else 403 `policyMismatch` naming
 *    the first claim that did not (never its value);
 * 6. the policy's creator must still hold its authority: the bootstrap principal, or a principal
 *    neither revoked nor expired, else 401 `policyInactive`.
 *
 * The principal then expires at the earliest of: now plus the policy's `ttlSeconds`, the token's
 * `exp` plus the policy's `ttlSeconds` (so a principal never outlives its token by more than the
 * policy's TTL, at most an hour), and the creator's own expiry. The token's single use (its `jti`)
 * is enforced by the store, in the same atomic step that creates the principal
 * (`TrustPolicyStore.exchange`); this module only says what that step must write.
 *
 * Every refusal is an `InterfaceError` whose message and `details` hold a reason code and, for a
 * missing or unmatched claim, the claim's name: never any part of the token.
 *
 * @module
 */
import type { BootstrapCredential } from "../bootstrap/credential.ts";
import { sha256Hex } from "../digest.ts";
import { InterfaceError } from "../errors.ts";
import type { Store, TokenUse, TrustPolicyRecord } from "../store/types.ts";
import { parseRfc3339 } from "../time.ts";
import {
  PRINCIPAL_LABEL_LIMITS,
  type TokenExchangeBody,
  type TokenExchangeRefusal,
} from "../../wire/mod.ts";
import { matchClaims } from "./claims.ts";
import { OidcVerificationError } from "./errors.ts";
import { ExchangeRateLimit, type RateLimited } from "./rate_limit.ts";
import { CLOCK_SKEW_SECONDS, OidcVerifier, type VerifiedIdToken } from "./verifier.ts";

/** Options of the token exchange (`RuntimeServerOptions.tokenExchange`). */
export interface TokenExchangeOptions {
  /**
   * Let trust policies name OIDC issuers served over plain `http:` on `127.0.0.1`, `[::1]` or
   * `localhost` (default false): for tests and local use only.
   */
  allowLoopbackHttp?: boolean;
  /** Exchanges one policy admits per minute on this replica (default 120). */
  perPolicyPerMinute?: number;
  /** Exchange attempts this replica admits per minute in all (default 1,200). */
  totalPerMinute?: number;
  /** The fetch used for issuers' discovery documents and keys (default: the global `fetch`). */
  fetch?: typeof fetch;
  /** How long an exchange's body may take to arrive, in ms (default 10 s). */
  bodyTimeoutMs?: number;
}

/** Options of {@linkcode TokenExchange}. */
export interface TokenExchangeInit extends TokenExchangeOptions {
  /** The store (policies, principals). */
  store: Store;
  /** The bootstrap credential (a policy its principal made is as good as it). */
  bootstrap: Pick<BootstrapCredential, "principalId" | "expiresAt">;
  /** The server's clock, ms since the epoch. */
  now: () => number;
}

/**
 * The name of a principal an exchange issues, saying where it came from: the token's subject and
 * its issuer's host, `<sub> @ <host>`, cut to {@linkcode PRINCIPAL_LABEL_LIMITS}' 64 characters
 * (the last one then `…`; the audit entry keeps both whole). A character a name may not hold (a
 * control or format character) becomes `?`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { exchangedPrincipalName } from "./exchange.ts";
 * assert.equal(
 *   exchangedPrincipalName("https://gitlab.example.com", "project_path:group/app:ref_type:branch:ref:main"),
 *   "project_path:group/app:ref_type:branch:ref:main @ gitlab.exampl…",
 * );
 * assert.equal(exchangedPrincipalName("https://ci.example", "job-7"), "job-7 @ ci.example");
 * ```
 */
export function exchangedPrincipalName(issuer: string, subject: string): string {
  const host = URL.parse(issuer)?.host ?? issuer;
  const text = `${subject} @ ${host}`.replace(/[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu, "?");
  const characters = [...text];
  const limit = PRINCIPAL_LABEL_LIMITS.nameLength;
  return characters.length <= limit ? text : `${characters.slice(0, limit - 1).join("")}…`;
}

/** What an accepted exchange issues. */
export interface ExchangeDecision {
  /** The policy, as read. */
  readonly policy: TrustPolicyRecord;
  /** The verified token. */
  readonly token: VerifiedIdToken;
  /** Each claim the policy matched, with the token's value (for the audit entry). */
  readonly matched: Readonly<Record<string, string>>;
  /** The principal's expiry, ms since the epoch. */
  readonly expiresAt: number;
  /** The principal's name: where it came from ({@linkcode exchangedPrincipalName}). */
  readonly name: string;
  /** The token's use, for the store's atomic step. */
  readonly use: TokenUse;
}

/**
 * The 401 `authenticationFailed` of a refused exchange, with its reason code in `details`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { exchangeRefused } from "./exchange.ts";
 * const error = exchangeRefused("replayed", "This ID token was exchanged already");
 * assert.equal(error.status, 401);
 * assert.deepEqual(error.extra, { details: { reason: "replayed" } });
 * ```
 */
export function exchangeRefused(
  reason: TokenExchangeRefusal,
  message: string,
  claim?: string,
): InterfaceError {
  return new InterfaceError("authenticationFailed", message, {
    extra: { details: claim === undefined ? { reason } : { reason, claim } },
    headers: { "www-authenticate": 'Bearer error="invalid_token"' },
  });
}

function rateLimited(limited: RateLimited): InterfaceError {
  const which = limited.limit === "policy" ? "this trust policy" : "this service";
  return new InterfaceError(
    "resourceExhausted",
    `Too many token exchanges for ${which}; retry later`,
    { headers: { "retry-after": String(Math.max(1, Math.ceil(limited.retryAfterMs / 1000))) } },
  );
}

/**
 * Decides token exchanges (see the module documentation). One per server: it holds the
 * issuers' key cache and the rate limits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TokenExchange } from "./exchange.ts";
 * import { openKvStore } from "../store/mod.ts";
 * const store = await openKvStore({ path: ":memory:", namespace: "n" });
 * const exchange = new TokenExchange({
 *   store,
 *   bootstrap: { principalId: crypto.randomUUID(), expiresAt: "2099-01-01T00:00:00Z" },
 *   now: Date.now,
 * });
 * await assert.rejects(
 *   exchange.decide({
 *     grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
 *     subject_token: "a.b.c",
 *     subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
 *     policy: "absent",
 *   }),
 *   (error: { extra?: { details?: { reason?: string } } }) =>
 *     error.extra?.details?.reason === "unknownPolicy",
 * );
 * await store.close();
 * ```
 */
export class TokenExchange {
  readonly #store: Store;
  readonly #bootstrap: Pick<BootstrapCredential, "principalId" | "expiresAt">;
  readonly #now: () => number;
  readonly #limit: ExchangeRateLimit;
  readonly #verifier: OidcVerifier;
  /** Whether trust policies may name loopback `http:` issuers. */
  readonly allowLoopbackHttp: boolean;

  /** Creates the exchange (no I/O, `jose` not loaded, until the first token). */
  constructor(init: TokenExchangeInit) {
    this.#store = init.store;
    this.#bootstrap = init.bootstrap;
    this.#now = init.now;
    this.allowLoopbackHttp = init.allowLoopbackHttp === true;
    this.#limit = new ExchangeRateLimit({
      perPolicyPerMinute: init.perPolicyPerMinute,
      totalPerMinute: init.totalPerMinute,
    });
    this.#verifier = new OidcVerifier({
      allowLoopbackHttp: this.allowLoopbackHttp,
      now: init.now,
      fetch: init.fetch,
    });
  }

  /**
   * Decides the exchange `body` asks for; throws the refusal as an `InterfaceError`, or the
   * signal's reason when it aborts.
   */
  async decide(body: TokenExchangeBody, signal?: AbortSignal): Promise<ExchangeDecision> {
    const total = this.#limit.admitAttempt(this.#now());
    if (total !== null) throw rateLimited(total);
    const policy = await this.#store.trustPolicies.get(body.policy);
    if (policy === null) {
      throw exchangeRefused("unknownPolicy", "No trust policy has this name");
    }
    const limited = this.#limit.admitPolicy(policy.name, this.#now());
    if (limited !== null) throw rateLimited(limited);
    let token: VerifiedIdToken;
    try {
      token = await this.#verifier.verify(body.subject_token, {
        issuer: policy.issuer,
        audience: policy.audience,
        signal,
      });
    } catch (error) {
      if (!(error instanceof OidcVerificationError)) throw error;
      throw exchangeRefused(error.reason, error.message, error.claim);
    }
    const match = matchClaims(token.claims, policy.claims);
    if (!match.ok) {
      throw new InterfaceError(
        "policyMismatch",
        `The ID token's ${match.claim} claim does not match the trust policy`,
        { extra: { details: { claim: match.claim } } },
      );
    }
    const creatorExpiry = await this.#creatorExpiry(policy.creatorId);
    const now = this.#now();
    if (creatorExpiry === null || creatorExpiry <= now) {
      throw exchangeRefused(
        "policyInactive",
        "The principal that made this trust policy is revoked or expired",
      );
    }
    const ttlMs = policy.ttlSeconds * 1000;
    const expiresAt = Math.min(now + ttlMs, token.expiresAt + ttlMs, creatorExpiry);
    return {
      policy,
      token,
      matched: match.matched,
      expiresAt,
      name: exchangedPrincipalName(token.issuer, token.subject),
      use: {
        policyName: policy.name,
        policyId: policy.policyId,
        tokenDigest: sha256Hex(`automation-runtime/oidc-jti/v1\n${token.issuer}\n${token.jwtId}`),
        // The verifier refuses the token as expired from then on.
        expiresAt: token.expiresAt + CLOCK_SKEW_SECONDS * 1000,
      },
    };
  }

  /** The creator's expiry in ms, or null when it is gone or revoked. */
  async #creatorExpiry(creatorId: string): Promise<number | null> {
    if (creatorId === this.#bootstrap.principalId) {
      return parseRfc3339(this.#bootstrap.expiresAt);
    }
    const creator = await this.#store.principals.get(creatorId);
    if (creator === null || creator.revokedAt !== null) return null;
    return parseRfc3339(creator.expiresAt);
  }
}
