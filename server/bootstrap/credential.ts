/**
 * The resolved bootstrap credential: what the server keeps of the bootstrap bearer once it has
 * been read. The plaintext is dropped right after these digests are taken.
 *
 * @module
 */
import { hmacSha256, sha256, toHex } from "../digest.ts";
import type { Capability } from "../store/types.ts";

/** Where the bootstrap credential came from. */
export type BootstrapSource = "environment" | "file" | "auto-init";

/** The bootstrap principal as the server holds it. No plaintext bearer. */
export interface BootstrapCredential {
  /** Principal id bound to the bootstrap bearer (lower-case UUID). */
  readonly principalId: string;
  /** Capabilities of the bootstrap principal. */
  readonly capabilities: readonly Capability[];
  /** RFC 3339 expiry of the bootstrap bearer. */
  readonly expiresAt: string;
  /** SHA-256 of the bootstrap bearer. */
  readonly tokenDigest: Uint8Array;
  /**
   * Key derived from the bearer (HMAC-SHA256). It never touches the store; principal bearers and
   * the store namespace are derived from it, so rotating the bootstrap orphans old records.
   */
  readonly authorityKey: Uint8Array;
  /** Store namespace derived from {@linkcode BootstrapCredential.authorityKey} (hex, 32 chars). */
  readonly namespace: string;
  /** Where the credential was found. */
  readonly source: BootstrapSource;
}

/** Inputs of {@linkcode deriveBootstrapCredential}. */
export interface BootstrapInput {
  /** The plaintext bootstrap bearer (already validated). */
  token: string;
  /** Principal id bound to it. */
  principalId: string;
  /** Its capabilities. */
  capabilities: readonly Capability[];
  /** Its expiry, RFC 3339. */
  expiresAt: string;
  /** Where it came from. */
  source: BootstrapSource;
}

/**
 * Takes the digests the server needs from a bootstrap bearer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deriveBootstrapCredential } from "./credential.ts";
 * const credential = deriveBootstrapCredential({
 *   token: "art_" + "x".repeat(43),
 *   principalId: crypto.randomUUID(),
 *   capabilities: ["authority:admin"],
 *   expiresAt: "2030-01-01T00:00:00Z",
 *   source: "environment",
 * });
 * assert.equal(credential.namespace.length, 32);
 * ```
 */
export function deriveBootstrapCredential(input: BootstrapInput): BootstrapCredential {
  const tokenDigest = sha256(input.token);
  const authorityKey = hmacSha256(input.token, "automation-runtime/authority/v1");
  const namespace = toHex(hmacSha256(authorityKey, "automation-runtime/namespace/v1")).slice(0, 32);
  return Object.freeze({
    principalId: input.principalId,
    capabilities: Object.freeze([...input.capabilities]),
    expiresAt: input.expiresAt,
    tokenDigest,
    authorityKey,
    namespace,
    source: input.source,
  });
}
