/**
 * The verification core of the OIDC token exchange (a CI job trades its OIDC ID token for a
 * short-lived principal): discovery and JWKS caching ({@linkcode JwksCache}), ID token
 * verification ({@linkcode OidcVerifier}, with `jose`, loaded on the first token), its typed
 * refusals ({@linkcode OidcVerificationError}), trust-policy claim patterns
 * ({@linkcode matchClaims}) and the rules for issuer URLs and patterns that a trust policy's
 * validation uses ({@linkcode issuerUrlProblem}, {@linkcode claimPatternsProblem}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { claimPatternsProblem, issuerUrlProblem, matchClaims } from "./mod.ts";
 * const patterns = { repository: "octo/app", ref: "refs/heads/*" };
 * assert.equal(issuerUrlProblem("https://token.actions.githubusercontent.com"), null);
 * assert.equal(claimPatternsProblem(patterns), null);
 * const claims = { repository: "octo/app", ref: "refs/heads/main", sub: "repo:octo/app" };
 * assert.deepEqual(matchClaims(claims, patterns), {
 *   ok: true,
 *   matched: { repository: "octo/app", ref: "refs/heads/main" },
 * });
 * ```
 *
 * @module
 */
export {
  OIDC_REFUSAL_REASONS,
  type OidcRefusalReason,
  OidcVerificationError,
  type OidcVerificationErrorOptions,
} from "./errors.ts";
export {
  DISCOVERY_PATH,
  discoveryUrl,
  type IssuerUrlOptions,
  issuerUrlProblem,
  MAX_ISSUER_LENGTH,
} from "./issuer_url.ts";
export {
  type ClaimMatch,
  claimPatternsProblem,
  matchClaims,
  matchesGlob,
  MAX_CLAIM_NAME_LENGTH,
  MAX_CLAIM_PATTERN_LENGTH,
  MAX_CLAIM_PATTERNS,
  UNMATCHABLE_CLAIMS,
} from "./claims.ts";
export {
  DEFAULT_FAILURE_BACKOFF_MS,
  DEFAULT_FETCH_TIMEOUT_MS,
  DEFAULT_MAX_DOCUMENT_BYTES,
  DEFAULT_MAX_ISSUERS,
  DEFAULT_MAX_KEY_AGE_MS,
  DEFAULT_MAX_KEYS,
  DEFAULT_REFETCH_INTERVAL_MS,
  type IssuerKeySet,
  JwksCache,
  type JwksCacheCallOptions,
  type JwksCacheOptions,
} from "./jwks_cache.ts";
export {
  ALLOWED_ALGORITHMS,
  CLOCK_SKEW_SECONDS,
  MAX_TOKEN_LENGTH,
  OidcVerifier,
  type OidcVerifierOptions,
  REQUIRED_CLAIMS,
  type VerifiedIdToken,
  type VerifyIdTokenOptions,
} from "./verifier.ts";
