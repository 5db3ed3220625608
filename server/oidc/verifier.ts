/**
 * Verification of an OIDC ID token (a CI job's identity) against a trusted issuer, with the
 * maintained JOSE library `jose` rather than our own cryptography.
 *
 * A token is accepted when all of this holds, checked in this order:
 *
 * 1. it is a compact JWS of at most {@linkcode MAX_TOKEN_LENGTH} characters whose header's
 *    `alg` is one of {@linkcode ALLOWED_ALGORITHMS} (never `none`, never an HMAC algorithm: a
 *    token HMAC-signed with the issuer's public key as the secret is refused before any key is
 *    looked at);
 * 2. its signature verifies with a key of the issuer's JWKS ({@linkcode JwksCache}) chosen by
 *    `kid` and algorithm; an unknown `kid` gets one refetch of the JWKS when the rate limit
 *    allows it;
 * 3. `iss` is the configured issuer exactly, `aud` (a string or an array) contains the
 *    configured audience;
 * 4. `iss`, `aud`, `exp`, `iat`, `sub` and `jti` are present (`sub` and `jti` non-empty
 *    strings); `jti` is required because the exchange refuses a token used twice, and GitHub's
 *    and GitLab's tokens carry one;
 * 5. `exp` is not past, `nbf` and `iat` not in the future, each with
 *    {@linkcode CLOCK_SKEW_SECONDS} of skew.
 *
 * Every refusal is an {@linkcode OidcVerificationError} with a stable reason; none repeats any
 * part of the token. `jose` is loaded on the first call (see `_jose.ts`).
 *
 * @module
 */
import type * as Jose from "jose";
import { type JoseModule, loadJose } from "./_jose.ts";
import { OidcVerificationError } from "./errors.ts";
import { type IssuerKeySet, JwksCache, type JwksCacheOptions } from "./jwks_cache.ts";

/** The signature algorithms admitted: asymmetric only. */
export const ALLOWED_ALGORITHMS: readonly string[] = Object.freeze(["RS256", "ES256", "EdDSA"]);

/** Clock skew allowed on `exp`, `nbf` and `iat`, in seconds. */
export const CLOCK_SKEW_SECONDS = 60;

/** The longest ID token read, in characters (GitHub's and GitLab's are 1 to 2 KiB). */
export const MAX_TOKEN_LENGTH = 16_384;

/** The claims a token must have. */
export const REQUIRED_CLAIMS: readonly string[] = Object.freeze([
  "iss",
  "aud",
  "exp",
  "iat",
  "sub",
  "jti",
]);

/** Options of {@linkcode OidcVerifier}. */
export interface OidcVerifierOptions extends JwksCacheOptions {
  /**
   * The key cache to use (default: a new one made with these options). `now` should be the
   * same clock the cache was made with.
   */
  keys?: JwksCache;
}

/** What a token is verified against (a trust policy's issuer and audience). */
export interface VerifyIdTokenOptions {
  /** The trusted issuer, exactly as the token's `iss` and the discovery document spell it. */
  issuer: string;
  /** The audience the token must be for. */
  audience: string;
  /** Stops the verification (rejecting with the signal's reason). */
  signal?: AbortSignal;
}

/** A verified ID token. Times are in ms since the epoch. */
export interface VerifiedIdToken {
  /** `iss`. */
  readonly issuer: string;
  /** `sub`. */
  readonly subject: string;
  /** `jti`, for replay protection. */
  readonly jwtId: string;
  /** `aud`, as an array. */
  readonly audience: readonly string[];
  /** `iat`. */
  readonly issuedAt: number;
  /** `exp`. */
  readonly expiresAt: number;
  /** `nbf`, or null when the token has none. */
  readonly notBefore: number | null;
  /** The header's `alg`. */
  readonly algorithm: string;
  /** The header's `kid`, or null when it has none. */
  readonly keyId: string | null;
  /** Every claim of the token (frozen), for claim patterns. */
  readonly claims: Readonly<Record<string, unknown>>;
}

/**
 * Verifies ID tokens against trusted issuers, sharing one {@linkcode JwksCache}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { exportJWK, generateKeyPair, SignJWT } from "jose";
 * import { OidcVerificationError, OidcVerifier } from "./mod.ts";
 * const issuer = "https://ci.example";
 * const { privateKey, publicKey } = await generateKeyPair("ES256");
 * const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" };
 * const documents: Record<string, unknown> = {
 *   [`${issuer}/.well-known/openid-configuration`]: { issuer, jwks_uri: `${issuer}/jwks` },
 *   [`${issuer}/jwks`]: { keys: [jwk] },
 * };
 * const verifier = new OidcVerifier({
 *   fetch: (input) => Promise.resolve(Response.json(documents[String(input)])),
 * });
 * const token = await new SignJWT({ repository: "octo/app" })
 *   .setProtectedHeader({ alg: "ES256", kid: "k1" })
 *   .setIssuer(issuer)
 *   .setAudience("automation-runtime")
 *   .setSubject("repo:octo/app:ref:refs/heads/main")
 *   .setJti(crypto.randomUUID())
 *   .setIssuedAt()
 *   .setExpirationTime("5m")
 *   .sign(privateKey);
 * const verified = await verifier.verify(token, { issuer, audience: "automation-runtime" });
 * assert.equal(verified.subject, "repo:octo/app:ref:refs/heads/main");
 * assert.equal(verified.claims.repository, "octo/app");
 * await assert.rejects(
 *   verifier.verify(token, { issuer, audience: "elsewhere" }),
 *   (error) => error instanceof OidcVerificationError && error.reason === "audienceMismatch",
 * );
 * ```
 */
export class OidcVerifier {
  readonly #keys: JwksCache;
  readonly #now: () => number;
  /** One local key set per loaded JWKS: `jose` keeps the keys it imported in it. */
  readonly #keySets = new WeakMap<IssuerKeySet, Jose.LocalJWKSet>();

  /** Creates a verifier (no I/O until the first token). */
  constructor(options: OidcVerifierOptions = {}) {
    this.#keys = options.keys ?? new JwksCache(options);
    this.#now = options.now ?? Date.now;
  }

  /**
   * Verifies `token` against `options.issuer` and `options.audience`. Rejects with
   * {@linkcode OidcVerificationError} on every refusal, and with the signal's reason when
   * aborted.
   */
  async verify(token: string, options: VerifyIdTokenOptions): Promise<VerifiedIdToken> {
    const { issuer, audience, signal } = options;
    signal?.throwIfAborted();
    if (typeof token !== "string" || token.length === 0 || token.length > MAX_TOKEN_LENGTH) {
      throw new OidcVerificationError("malformed", "The ID token is empty or too long");
    }
    const jose = await loadJose();
    const now = this.#now();
    const verifyOptions: Jose.JWTVerifyOptions = {
      algorithms: [...ALLOWED_ALGORITHMS],
      issuer,
      audience,
      requiredClaims: [...REQUIRED_CLAIMS],
      clockTolerance: CLOCK_SKEW_SECONDS,
      currentDate: new Date(now),
    };
    const getKey = (header: Jose.JWSHeaderParameters): Promise<CryptoKey> =>
      this.#key(jose, issuer, header, signal);
    let result: Jose.JWTVerifyResult;
    try {
      result = await jose.jwtVerify(token, getKey, verifyOptions);
    } catch (error) {
      if (signal?.aborted && error === signal.reason) throw error;
      if (!hasCode(error, "ERR_JWKS_MULTIPLE_MATCHING_KEYS")) throw refusal(error);
      result = await tryEachKey(jose, token, error as Jose.errors.JWKSMultipleMatchingKeys, {
        verifyOptions,
      });
    }
    return verified(result, now);
  }

  /** The key for `header`: from the cached set, else from one refetch the rate limit allows. */
  async #key(
    jose: JoseModule,
    issuer: string,
    header: Jose.JWSHeaderParameters,
    signal: AbortSignal | undefined,
  ): Promise<CryptoKey> {
    const keys = await this.#keys.keySet(issuer, { signal });
    try {
      return await this.#keySet(jose, keys)(header);
    } catch (error) {
      if (!hasCode(error, "ERR_JWKS_NO_MATCHING_KEY")) throw keyRefusal(error);
    }
    const fresh = await this.#keys.refetch(issuer, keys, { signal });
    if (fresh === null) throw unknownKey();
    try {
      return await this.#keySet(jose, fresh)(header);
    } catch (error) {
      throw keyRefusal(error);
    }
  }

  #keySet(jose: JoseModule, keys: IssuerKeySet): Jose.LocalJWKSet {
    let keySet = this.#keySets.get(keys);
    if (keySet === undefined) {
      try {
        keySet = jose.createLocalJWKSet(keys.jwks as Jose.JSONWebKeySet);
      } catch {
        throw new OidcVerificationError("issuerInvalid", "The issuer's JWKS is malformed");
      }
      this.#keySets.set(keys, keySet);
    }
    return keySet;
  }
}

/**
 * When several keys of the JWKS fit a token (no `kid`, or a `kid` used twice), the token is
 * verified with each in turn until one verifies (the set is capped, so this is bounded).
 */
async function tryEachKey(
  jose: JoseModule,
  token: string,
  candidates: Jose.errors.JWKSMultipleMatchingKeys,
  options: { verifyOptions: Jose.JWTVerifyOptions },
): Promise<Jose.JWTVerifyResult> {
  for await (const key of candidates) {
    try {
      return await jose.jwtVerify(token, key, options.verifyOptions);
    } catch (error) {
      if (!hasCode(error, "ERR_JWS_SIGNATURE_VERIFICATION_FAILED")) throw refusal(error);
    }
  }
  throw new OidcVerificationError("badSignature", "The ID token's signature does not verify");
}

/** The verified token, after the checks `jose` leaves to its caller. */
function verified(result: Jose.JWTVerifyResult, now: number): VerifiedIdToken {
  const { payload, protectedHeader } = result;
  for (const claim of ["sub", "jti"] as const) {
    const value = payload[claim];
    if (typeof value !== "string") {
      throw new OidcVerificationError("malformed", `The ID token's ${claim} claim is not a string`);
    }
    if (value === "") {
      throw new OidcVerificationError("missingClaim", `The ID token's ${claim} claim is empty`, {
        claim,
      });
    }
  }
  // `jose` checks that `iat` is a number but not that it is past (it does so only with
  // `maxTokenAge`).
  if (payload.iat! > now / 1000 + CLOCK_SKEW_SECONDS) {
    throw new OidcVerificationError("notYetValid", "The ID token is issued in the future");
  }
  const audience = payload.aud!;
  return {
    issuer: payload.iss!,
    subject: payload.sub!,
    jwtId: payload.jti!,
    audience: Object.freeze(
      typeof audience === "string"
        ? [audience]
        : audience.filter((entry) => typeof entry === "string"),
    ),
    issuedAt: payload.iat! * 1000,
    expiresAt: payload.exp! * 1000,
    notBefore: payload.nbf === undefined ? null : payload.nbf * 1000,
    algorithm: protectedHeader.alg,
    keyId: typeof protectedHeader.kid === "string" ? protectedHeader.kid : null,
    claims: Object.freeze(payload),
  };
}

function unknownKey(): OidcVerificationError {
  return new OidcVerificationError(
    "unknownKey",
    "No key of the issuer's JWKS matches the ID token's key id and algorithm",
  );
}

/** A key lookup's error: several candidates go on to {@linkcode tryEachKey}. */
function keyRefusal(error: unknown): unknown {
  if (error instanceof OidcVerificationError) return error;
  if (hasCode(error, "ERR_JWKS_MULTIPLE_MATCHING_KEYS")) return error;
  // No match, or the matching key could not be imported (private, malformed, unsupported).
  return unknownKey();
}

/** The refusal for an error of `jose.jwtVerify`; never carries the error (it holds claims). */
function refusal(error: unknown): OidcVerificationError {
  if (error instanceof OidcVerificationError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  switch (code) {
    case "ERR_JOSE_ALG_NOT_ALLOWED":
      return new OidcVerificationError(
        "unsupportedAlgorithm",
        `The ID token's algorithm is not one of ${ALLOWED_ALGORITHMS.join(", ")}`,
      );
    case "ERR_JWS_INVALID":
    case "ERR_JWT_INVALID":
    case "ERR_JOSE_NOT_SUPPORTED":
      return new OidcVerificationError("malformed", "The ID token is not a well-formed JWT");
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return new OidcVerificationError("badSignature", "The ID token's signature does not verify");
    case "ERR_JWT_EXPIRED":
      return new OidcVerificationError("expired", "The ID token has expired");
    case "ERR_JWT_CLAIM_VALIDATION_FAILED":
      return claimRefusal(error as Jose.errors.JWTClaimValidationFailed);
  }
  // A key `jose` will not use (an RSA modulus under 2048 bits) verifies nothing.
  return new OidcVerificationError("unknownKey", "The issuer's key cannot verify the ID token");
}

function claimRefusal(error: Jose.errors.JWTClaimValidationFailed): OidcVerificationError {
  // `claim` is one of the names jose checks (never a value).
  const { claim, reason } = error;
  if (reason === "missing") {
    return new OidcVerificationError("missingClaim", `The ID token has no ${claim} claim`, {
      claim,
    });
  }
  if (reason === "check_failed") {
    switch (claim) {
      case "iss":
        return new OidcVerificationError(
          "issuerMismatch",
          "The ID token's issuer is not the trusted issuer",
        );
      case "aud":
        return new OidcVerificationError(
          "audienceMismatch",
          "The ID token is not for the expected audience",
        );
      case "nbf":
        return new OidcVerificationError("notYetValid", "The ID token is not valid yet");
    }
  }
  return new OidcVerificationError("malformed", "The ID token has a claim of the wrong type");
}

function hasCode(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}
