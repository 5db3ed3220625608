/**
 * Why an OIDC ID token was refused: {@linkcode OidcVerificationError} and its stable reason
 * codes. The token exchange answers every refusal with 401 `authenticationFailed` and the reason
 * in `details`; the message is for people and, like the reason, never repeats any part of the
 * token (no header, no claim value, no signature).
 *
 * @module
 */

import { ID_TOKEN_REFUSALS } from "../../wire/mod.ts";

/**
 * Every reason an ID token can be refused for, in the order verification meets them: the wire
 * contract's `ID_TOKEN_REFUSALS`, which the token exchange answers in `details.reason`.
 */
export const OIDC_REFUSAL_REASONS: typeof ID_TOKEN_REFUSALS = ID_TOKEN_REFUSALS;

/**
 * A stable reason code of {@linkcode OidcVerificationError}:
 *
 * - `malformed`: not a compact JWS with a JSON header and a JSON object of claims, longer than
 *   the verifier reads, or a registered claim of the wrong type.
 * - `unsupportedAlgorithm`: the header's `alg` is not RS256, ES256 or EdDSA (`none` and every
 *   HMAC algorithm included).
 * - `issuerNotAllowed`: the configured issuer breaks the issuer URL rules (HTTPS only; loopback
 *   HTTP only when allowed).
 * - `issuerUnreachable`: the issuer's discovery document or JWKS could not be fetched (network
 *   error, timeout, a status other than 200), or a recent attempt failed and is not yet retried.
 * - `issuerInvalid`: the issuer answered with a document the verifier refuses: too large, not
 *   JSON, a discovery `issuer` other than the configured one, a missing or disallowed
 *   `jwks_uri`, or a JWKS that is not one or has too many keys.
 * - `unknownKey`: no usable key of the issuer's JWKS matches the token's `kid` and algorithm,
 *   after the one refetch the rate limit allows.
 * - `badSignature`: the signature does not verify (a tampered header or payload, another key).
 * - `issuerMismatch`: `iss` is not the configured issuer.
 * - `audienceMismatch`: `aud` (a string or an array) does not contain the configured audience.
 * - `missingClaim`: `iss`, `aud`, `exp`, `iat`, `sub` or `jti` is absent (or `sub`/`jti` empty);
 *   the error's `claim` names it.
 * - `expired`: `exp` is more than the clock skew in the past.
 * - `notYetValid`: `nbf` or `iat` is more than the clock skew in the future.
 */
export type OidcRefusalReason = typeof OIDC_REFUSAL_REASONS[number];

/** Options of {@linkcode OidcVerificationError}. */
export interface OidcVerificationErrorOptions {
  /** For `missingClaim`: the name of the claim (one of the required ones, never a value). */
  claim?: string;
}

/**
 * An ID token refused by verification, with a stable {@linkcode OidcRefusalReason}. It never
 * carries the underlying error as `cause`: the JOSE library's errors hold the decoded claims.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { OidcVerificationError } from "./errors.ts";
 * const error = new OidcVerificationError("missingClaim", "The ID token has no jti claim", {
 *   claim: "jti",
 * });
 * assert.equal(error.reason, "missingClaim");
 * assert.equal(error.claim, "jti");
 * assert.equal(error.name, "OidcVerificationError");
 * ```
 */
export class OidcVerificationError extends Error {
  /** Why the token was refused. */
  readonly reason: OidcRefusalReason;
  /** For `missingClaim`, the claim's name; otherwise undefined. */
  readonly claim: string | undefined;

  /**
   * Creates the error. `message` must not contain any part of the token.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { OidcVerificationError } from "./errors.ts";
   * const error = new OidcVerificationError("expired", "The ID token has expired");
   * assert.equal(error.message, "The ID token has expired");
   * assert.equal(error.claim, undefined);
   * ```
   */
  constructor(
    reason: OidcRefusalReason,
    message: string,
    options: OidcVerificationErrorOptions = {},
  ) {
    super(message);
    this.name = "OidcVerificationError";
    this.reason = reason;
    this.claim = options.claim;
  }
}
