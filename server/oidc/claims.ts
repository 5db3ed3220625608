/**
 * A trust policy's claim patterns: `claims` maps a claim name to an exact value or a `*` glob,
 * and a verified ID token satisfies the policy when every pattern matches. In a pattern `*`
 * matches any run of characters (none included, `/` included); every other character is
 * literal, and the pattern is anchored at both ends. A claim matches when the token has it as a
 * string, a number or a boolean (compared as its JSON text: `42`, `true`) and the pattern
 * matches that text; a claim the token lacks, or has as an object, array or null, never matches.
 *
 * Matching scans each pattern once, without regular expressions, so a hostile claim value cannot
 * make it slow.
 *
 * @module
 */

/** The most patterns a policy may have. */
export const MAX_CLAIM_PATTERNS = 32;

/** The longest claim name admitted, in characters. */
export const MAX_CLAIM_NAME_LENGTH = 128;

/** The longest pattern admitted, in characters. */
export const MAX_CLAIM_PATTERN_LENGTH = 1_024;

/**
 * Claims a pattern may not name: they differ on every token (`jti`, the times), so a pattern on
 * them is a mistake; the issuer and audience are checked by verification itself.
 */
export const UNMATCHABLE_CLAIMS: readonly string[] = Object.freeze([
  "iss",
  "aud",
  "exp",
  "iat",
  "nbf",
  "jti",
]);

/** The outcome of {@linkcode matchClaims}. */
export type ClaimMatch =
  | {
    /** Every pattern matched. */
    readonly ok: true;
    /** Each pattern's claim name with the token's value as matched (for the audit entry). */
    readonly matched: Readonly<Record<string, string>>;
  }
  | {
    /** A pattern did not match. */
    readonly ok: false;
    /** The name of the first claim that did not match (never its value). */
    readonly claim: string;
  };

/**
 * Whether `value` matches the glob `pattern`: `*` is any run of characters (`/` included), all
 * else is literal, anchored at both ends.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { matchesGlob } from "./claims.ts";
 * assert.equal(matchesGlob("refs/heads/main", "refs/heads/main"), true);
 * assert.equal(matchesGlob("refs/heads/*", "refs/heads/release/2026"), true);
 * assert.equal(matchesGlob("octo/*.yml@*", "octo/.github/workflows/ci.yml@refs/heads/main"), true);
 * assert.equal(matchesGlob("refs/heads/*", "refs/tags/v1"), false);
 * assert.equal(matchesGlob("main", "main2"), false);
 * ```
 */
export function matchesGlob(pattern: string, value: string): boolean {
  if (!pattern.includes("*")) return pattern === value;
  const parts = pattern.split("*");
  const head = parts[0];
  const tail = parts[parts.length - 1];
  if (value.length < head.length + tail.length) return false;
  if (!value.startsWith(head) || !value.endsWith(tail)) return false;
  // The middle parts in order, each at its leftmost place: leftmost is never worse for the
  // parts after it, so one pass decides.
  let at = head.length;
  const end = value.length - tail.length;
  for (let index = 1; index < parts.length - 1; index++) {
    const part = parts[index];
    if (part === "") continue;
    const found = value.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/**
 * Matches a verified token's claims against a policy's patterns, in the patterns' order. The
 * answer names the first claim that does not match (for a 403 `policyMismatch`), or gives every
 * matched claim with the token's value as text (for the audit).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { matchClaims } from "./claims.ts";
 * const claims = { repository: "octo/app", ref: "refs/heads/main", run_id: 7 };
 * assert.deepEqual(matchClaims(claims, { repository: "octo/*", run_id: "7" }), {
 *   ok: true,
 *   matched: { repository: "octo/app", run_id: "7" },
 * });
 * assert.deepEqual(matchClaims(claims, { ref: "refs/tags/*" }), { ok: false, claim: "ref" });
 * assert.deepEqual(matchClaims(claims, { environment: "*" }), { ok: false, claim: "environment" });
 * ```
 */
export function matchClaims(
  claims: Readonly<Record<string, unknown>>,
  patterns: Readonly<Record<string, string>>,
): ClaimMatch {
  const matched: Record<string, string> = {};
  for (const [name, pattern] of Object.entries(patterns)) {
    const value = Object.hasOwn(claims, name) ? claimText(claims[name]) : null;
    if (value === null || !matchesGlob(pattern, value)) return { ok: false, claim: name };
    matched[name] = value;
  }
  return { ok: true, matched };
}

/**
 * Why `patterns` cannot be a trust policy's claims, or null when they can. There must be at
 * least one (a policy without any would trust every subject of its issuer, and with GitHub's or
 * GitLab's issuer that is every repository on the service) and at most
 * {@linkcode MAX_CLAIM_PATTERNS}; each name is non-empty, at most
 * {@linkcode MAX_CLAIM_NAME_LENGTH} characters, free of control characters and not one of
 * {@linkcode UNMATCHABLE_CLAIMS};
 * each pattern is non-empty, at most {@linkcode MAX_CLAIM_PATTERN_LENGTH} characters and free
 * of control characters. Every other string is a valid glob.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { claimPatternsProblem } from "./claims.ts";
 * assert.equal(claimPatternsProblem({ repository: "octo/app", ref: "refs/heads/*" }), null);
 * assert.notEqual(claimPatternsProblem({}), null);
 * assert.notEqual(claimPatternsProblem({ jti: "*" }), null);
 * assert.notEqual(claimPatternsProblem({ ref: "" }), null);
 * ```
 */
export function claimPatternsProblem(patterns: Readonly<Record<string, string>>): string | null {
  const entries = Object.entries(patterns);
  if (entries.length === 0) {
    return "A trust policy needs at least one claim pattern: without one it trusts every subject of its issuer";
  }
  if (entries.length > MAX_CLAIM_PATTERNS) {
    return `A trust policy has at most ${MAX_CLAIM_PATTERNS} claim patterns`;
  }
  for (const [name, pattern] of entries) {
    if (name.length === 0 || name.length > MAX_CLAIM_NAME_LENGTH) {
      return `A claim name must have 1 to ${MAX_CLAIM_NAME_LENGTH} characters`;
    }
    if (hasControlCharacter(name)) return "A claim name has a control character";
    if (UNMATCHABLE_CLAIMS.includes(name)) {
      return `The claim ${name} cannot be matched: it is checked by verification or differs on every token`;
    }
    if (typeof pattern !== "string" || pattern.length === 0) {
      return `The pattern of the claim ${name} must be a non-empty string`;
    }
    if (pattern.length > MAX_CLAIM_PATTERN_LENGTH) {
      return `The pattern of the claim ${name} is longer than ${MAX_CLAIM_PATTERN_LENGTH} characters`;
    }
    if (hasControlCharacter(pattern)) {
      return `The pattern of the claim ${name} has a control character`;
    }
  }
  return null;
}

/** A claim's value as the text patterns match, or null when it is not a scalar. */
function claimText(value: unknown): string | null {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return null;
}

function hasControlCharacter(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}
