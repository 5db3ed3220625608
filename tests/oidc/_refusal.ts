/**
 * Asserting a refusal of an ID token: its reason code, and that nothing the token carries (its
 * header, payload or signature, a claim value, the key id) appears in the error.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type OidcRefusalReason, OidcVerificationError } from "../../server/oidc/mod.ts";

/** Segments and claim values too short to be told apart from ordinary words in a message. */
const MIN_CHECKED_LENGTH = 6;

/**
 * Awaits `verification`, asserts it was refused for `reason`, and that the error's message,
 * string form and JSON form contain no part of `token`. Returns the error.
 */
export async function assertRefused(
  verification: Promise<unknown>,
  reason: OidcRefusalReason,
  token: string,
): Promise<OidcVerificationError> {
  let refused: unknown = null;
  try {
    await verification;
  } catch (error) {
    refused = error;
  }
  assert.ok(refused instanceof OidcVerificationError, `expected a refusal, got ${refused}`);
  assert.equal(refused.reason, reason, refused.message);
  assert.equal(refused.cause, undefined, "a refusal carries no cause");
  const shown = [refused.message, String(refused), JSON.stringify(refused), refused.stack ?? ""]
    .join("\n");
  for (const secret of tokenParts(token)) {
    assert.ok(!shown.includes(secret), `the refusal repeats a part of the token: ${secret}`);
  }
  return refused;
}

/** The token's segments, its header's `kid` and its string claim values. */
function tokenParts(token: string): string[] {
  const segments = token.split(".").filter((segment) => segment.length >= MIN_CHECKED_LENGTH);
  const parts = [...segments];
  for (const segment of segments.slice(0, 2)) {
    let decoded: unknown;
    try {
      decoded = JSON.parse(atob(segment.replaceAll("-", "+").replaceAll("_", "/")));
    } catch {
      continue;
    }
    for (const value of Object.values(decoded as Record<string, unknown>)) {
      const text = typeof value === "string" ? value : null;
      if (text !== null && text.length >= MIN_CHECKED_LENGTH) parts.push(text);
    }
  }
  return parts;
}
