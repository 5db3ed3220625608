/**
 * The request bodies of the trust policy routes as zod schemas: `POST /v1/trust-policies`
 * ({@linkcode createTrustPolicyBody}) and `POST /v1/token-exchange`
 * ({@linkcode tokenExchangeBody}). They check the shape only: a policy's issuer against this
 * service's issuer rules and the authority rules (never wider than its creator) come after, in
 * the route; a token's verification is the exchange's. No message ever repeats a value of the
 * body (the subject token least of all).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createTrustPolicyBody, tokenExchangeBody } from "./trust_policies.ts";
 * assert.equal(createTrustPolicyBody.safeParse({ name: "ci" }).success, false);
 * assert.equal(tokenExchangeBody.safeParse({
 *   grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
 *   subject_token: "a.b.c",
 *   subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
 *   policy: "ci",
 * }).success, true);
 * ```
 *
 * @module
 */
import { z } from "zod";
import { claimPatternsProblem } from "../oidc/claims.ts";
import { MAX_ISSUER_LENGTH } from "../oidc/issuer_url.ts";
import { MAX_TOKEN_LENGTH } from "../oidc/verifier.ts";
import {
  type CreateTrustPolicyBody,
  MAX_TRUST_POLICY_TTL_SECONDS,
  MIN_TRUST_POLICY_TTL_SECONDS,
  SUBJECT_TOKEN_TYPES,
  TOKEN_EXCHANGE_GRANT_TYPE,
  type TokenExchangeBody,
  TRUST_POLICY_NAME,
} from "../../wire/mod.ts";
import { grantedCapabilities, principalPolicyShape } from "./principals.ts";

/** The longest audience admitted, in characters. */
export const MAX_AUDIENCE_LENGTH = 256;

/** A trust policy's name. */
export const trustPolicyName: z.ZodType<string> = z.string().regex(
  TRUST_POLICY_NAME,
  "Must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
);

/** Body of `POST /v1/trust-policies`. */
export const createTrustPolicyBody = z.strictObject({
  name: trustPolicyName.describe("The policy's name, unique on the service"),
  issuer: z.string().min(1).max(MAX_ISSUER_LENGTH).describe(
    "The OIDC issuer, exactly as its tokens' iss spells it: an https URL in canonical form",
  ),
  audience: z.string().regex(
    new RegExp(`^[\\x21-\\x7e]{1,${MAX_AUDIENCE_LENGTH}}$`),
    `Must be 1 to ${MAX_AUDIENCE_LENGTH} printable characters without spaces`,
  ).describe("The audience the tokens must be for (aud)"),
  claims: z.record(z.string(), z.string()).superRefine((claims, context) => {
    const problem = claimPatternsProblem(claims);
    if (problem !== null) context.addIssue({ code: "custom", message: problem });
  }).describe(
    "Claim name to exact value or * glob; all must match (e.g. repository, ref, environment)",
  ),
  capabilities: grantedCapabilities,
  ...principalPolicyShape(),
  ttlSeconds: z.number().int().min(MIN_TRUST_POLICY_TTL_SECONDS).max(
    MAX_TRUST_POLICY_TTL_SECONDS,
  ).describe(
    `Lifetime of each principal issued, ${MIN_TRUST_POLICY_TTL_SECONDS} to ` +
      `${MAX_TRUST_POLICY_TTL_SECONDS} seconds`,
  ),
}) satisfies z.ZodType<CreateTrustPolicyBody>;

/** Body of `POST /v1/token-exchange` (RFC 8693 style). */
export const tokenExchangeBody = z.strictObject({
  grant_type: z.literal(TOKEN_EXCHANGE_GRANT_TYPE),
  subject_token: z.string().min(1, "Must be the ID token").max(
    MAX_TOKEN_LENGTH,
    `Must be at most ${MAX_TOKEN_LENGTH} characters`,
  ).describe("The OIDC ID token; never stored, logged or echoed"),
  subject_token_type: z.enum(SUBJECT_TOKEN_TYPES),
  policy: trustPolicyName.describe("The trust policy to exchange it under"),
}) satisfies z.ZodType<TokenExchangeBody>;
