/**
 * Trust policies and the token exchange on the wire. A trust policy (`POST /v1/trust-policies`,
 * `authority:admin`) names an OIDC issuer, an audience and claim patterns, and what a principal
 * it issues gets; a CI job then trades its OIDC ID token for such a principal at
 * `POST /v1/token-exchange` (RFC 8693 style), with no stored secret.
 *
 * @module
 */
import type { Capability, PrincipalPolicy } from "./principals.ts";

/** The `grant_type` of `POST /v1/token-exchange` (RFC 8693, section 2.1). */
export const TOKEN_EXCHANGE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange";

/**
 * The `subject_token_type`s the exchange accepts: a JWT, or an OpenID Connect ID token (which
 * is one). RFC 8693, section 3.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SUBJECT_TOKEN_TYPES } from "./trust_policies.ts";
 * assert.ok(SUBJECT_TOKEN_TYPES.includes("urn:ietf:params:oauth:token-type:jwt"));
 * ```
 */
export const SUBJECT_TOKEN_TYPES = [
  "urn:ietf:params:oauth:token-type:jwt",
  "urn:ietf:params:oauth:token-type:id_token",
] as const;

/** A `subject_token_type` the exchange accepts: one of {@linkcode SUBJECT_TOKEN_TYPES}. */
export type SubjectTokenType = typeof SUBJECT_TOKEN_TYPES[number];

/**
 * What a trust policy's name may be: 1 to 64 letters, digits, `.`, `_` and `-`, starting with a
 * letter or digit (it appears in URLs and the audit log as it is).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TRUST_POLICY_NAME } from "./trust_policies.ts";
 * assert.ok(TRUST_POLICY_NAME.test("octo-repo.main"));
 * assert.ok(!TRUST_POLICY_NAME.test("-x") && !TRUST_POLICY_NAME.test("a/b"));
 * ```
 */
export const TRUST_POLICY_NAME: RegExp = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The longest lifetime a trust policy may give its principals: one hour, in seconds. */
export const MAX_TRUST_POLICY_TTL_SECONDS = 3_600;

/** The shortest lifetime a trust policy may give its principals, in seconds. */
export const MIN_TRUST_POLICY_TTL_SECONDS = 60;

/**
 * The reasons an ID token itself is refused for, in the order verification meets them (the
 * first part of {@linkcode TOKEN_EXCHANGE_REFUSALS}; the server's verifier gives exactly these).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ID_TOKEN_REFUSALS } from "./trust_policies.ts";
 * assert.equal(ID_TOKEN_REFUSALS[0], "malformed");
 * ```
 */
export const ID_TOKEN_REFUSALS = [
  "malformed",
  "unsupportedAlgorithm",
  "issuerNotAllowed",
  "issuerUnreachable",
  "issuerInvalid",
  "unknownKey",
  "badSignature",
  "issuerMismatch",
  "audienceMismatch",
  "missingClaim",
  "expired",
  "notYetValid",
] as const;

/**
 * Every reason code of a refused exchange (401 `authenticationFailed`, in `details.reason`), in
 * the order the exchange meets them. The ID token's own refusals come first:
 *
 * - `malformed`: not a compact JWS with a JSON header and claims, too long, or a registered
 *   claim of the wrong type;
 * - `unsupportedAlgorithm`: `alg` is not RS256, ES256 or EdDSA (`none` and HMAC included);
 * - `issuerNotAllowed`: the policy's issuer breaks the issuer URL rules of this service;
 * - `issuerUnreachable`: the issuer's discovery document or keys could not be fetched;
 * - `issuerInvalid`: the issuer answered with a document that is refused;
 * - `unknownKey`: no key of the issuer matches the token's `kid` (after one refetch);
 * - `badSignature`: the signature does not verify;
 * - `issuerMismatch`: `iss` is not the policy's issuer;
 * - `audienceMismatch`: `aud` does not hold the policy's audience;
 * - `missingClaim`: `iss`, `aud`, `exp`, `iat`, `sub` or `jti` is absent (`details.claim`
 *   names it);
 * - `expired`: `exp` is past (60 s of skew);
 * - `notYetValid`: `nbf` or `iat` is in the future (60 s of skew);
 *
 * then the exchange's own:
 *
 * - `unknownPolicy`: no trust policy has that name (a deleted one included);
 * - `policyInactive`: the admin who made the policy is revoked or expired;
 * - `replayed`: a token with this `jti` was exchanged already.
 *
 * A token that verifies but whose claims do not match the policy is 403 `policyMismatch`
 * instead, with the first claim that did not match in `details.claim`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TOKEN_EXCHANGE_REFUSALS } from "./trust_policies.ts";
 * assert.ok(TOKEN_EXCHANGE_REFUSALS.includes("replayed"));
 * ```
 */
export const TOKEN_EXCHANGE_REFUSALS = [
  ...ID_TOKEN_REFUSALS,
  "unknownPolicy",
  "policyInactive",
  "replayed",
] as const;

/** A reason code of a refused exchange: one of {@linkcode TOKEN_EXCHANGE_REFUSALS}. */
export type TokenExchangeRefusal = typeof TOKEN_EXCHANGE_REFUSALS[number];

/**
 * The body of `POST /v1/trust-policies`. The service checks its shape, then the authority rules
 * of issuance: the capabilities a subset of the caller's and never `authority:admin`, the run
 * policy fields within the caller's, the issuer an `https:` URL.
 */
export interface CreateTrustPolicyBody extends PrincipalPolicy {
  /** 1 to 64 characters: letters, digits, `.`, `_` and `-`, starting with a letter or digit. */
  name: string;
  /** The OIDC issuer, exactly as its tokens' `iss` spells it (`https://…`, canonical form). */
  issuer: string;
  /** The audience its tokens must be for (`aud`). */
  audience: string;
  /**
   * Claim name → exact value or `*` glob (`*` matches any run of characters, `/` included);
   * every one must match. 1 to 32 patterns; `iss`, `aud`, `exp`, `iat`, `nbf` and `jti` cannot
   * be matched.
   */
  claims: Record<string, string>;
  /** What the principals it issues may do: non-empty, without repeats. */
  capabilities: Capability[];
  /** How long a principal it issues lives, in seconds: 60 to 3,600. */
  ttlSeconds: number;
}

/** A trust policy as the service describes it. */
export interface TrustPolicy extends CreateTrustPolicyBody {
  /** Active runs its principals may have at once (the default applied). */
  maxActiveRuns: number;
  /** The principal that made it: the issuer of the principals its exchanges issue. */
  creatorId: string;
  /** RFC 3339 creation time. */
  createdAt: string;
}

/** The query of `GET /v1/trust-policies`. */
export interface TrustPolicyPageParams {
  /** Most policies in the page, 1 to 500 (default 100). */
  limit?: number;
  /** The `nextCursor` of the previous page; omitted for the first page. */
  cursor?: string;
}

/** One page of `GET /v1/trust-policies`, by name. */
export interface TrustPolicyPage {
  /** The policies of the page, ordered by name. */
  trustPolicies: TrustPolicy[];
  /** Pass it as `cursor` for the next page; null after the last page. */
  nextCursor: string | null;
}

/**
 * The body of `POST /v1/token-exchange` (RFC 8693 style). The answer is a principal exactly as
 * `POST /v1/principals` answers it, with its one-time bearer.
 */
export interface TokenExchangeBody {
  /** Always {@linkcode TOKEN_EXCHANGE_GRANT_TYPE}. */
  grant_type: typeof TOKEN_EXCHANGE_GRANT_TYPE;
  /** The OIDC ID token (a compact JWT). It is never stored, logged or echoed. */
  subject_token: string;
  /** One of {@linkcode SUBJECT_TOKEN_TYPES}. */
  subject_token_type: SubjectTokenType;
  /** The name of the trust policy to exchange it under. */
  policy: string;
}
