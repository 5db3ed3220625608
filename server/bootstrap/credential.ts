/**
 * The resolved bootstrap credential: what the server keeps of the bootstrap bearer once it has
 * been read. The plaintext is dropped right after these digests are taken.
 *
 * @module
 */
import { hmacSha256, sha256, toHex } from "../digest.ts";
import { authorityKeyBytes, legacyAuthorityKey } from "./variables.ts";
import type { BootstrapClaim, Capability } from "../store/types.ts";

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
   * The authority key: the secret file's `AUTOMATION_RUNTIME_BOOTSTRAP_AUTHORITY_KEY`, else
   * (a bootstrap made before rotation existed) derived from the bearer (HMAC-SHA256). It never
   * touches the store; principal bearers and the store namespace are derived from it, so a
   * rotated bearer (`init --rotate`, same key) leaves them valid and a new credential
   * (`init --force`, a new key) orphans every old record.
   */
  readonly authorityKey: Uint8Array;
  /** Store namespace derived from {@linkcode BootstrapCredential.authorityKey} (hex, 32 chars). */
  readonly namespace: string;
  /** Where the credential was found. */
  readonly source: BootstrapSource;
  /** The bearer's generation (0: a bootstrap without one); a store refuses the ones before. */
  readonly generation: number;
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
  /** The authority key (base64url of 32 bytes); absent: derived from `token`. */
  authorityKey?: string;
  /** The bearer's generation (default 0). */
  generation?: number;
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
  const authorityKey = input.authorityKey === undefined
    ? legacyAuthorityKey(input.token)
    : authorityKeyBytes(input.authorityKey);
  const namespace = toHex(hmacSha256(authorityKey, "automation-runtime/namespace/v1")).slice(0, 32);
  return Object.freeze({
    principalId: input.principalId,
    capabilities: Object.freeze([...input.capabilities]),
    expiresAt: input.expiresAt,
    tokenDigest,
    authorityKey,
    namespace,
    source: input.source,
    generation: input.generation ?? 0,
  });
}

/**
 * What a process claims the store with for its bootstrap (`store.authority.claim`): the bearer's
 * generation and its digest in hex.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bootstrapClaim, deriveBootstrapCredential } from "./credential.ts";
 * const credential = deriveBootstrapCredential({
 *   token: "art_" + "x".repeat(43),
 *   principalId: crypto.randomUUID(),
 *   capabilities: ["authority:admin"],
 *   expiresAt: "2030-01-01T00:00:00Z",
 *   source: "file",
 *   generation: 3,
 * });
 * assert.equal(bootstrapClaim(credential).generation, 3);
 * assert.equal(bootstrapClaim(credential).digest.length, 64);
 * ```
 */
export function bootstrapClaim(credential: BootstrapCredential): BootstrapClaim {
  return { generation: credential.generation, digest: toHex(credential.tokenDigest) };
}
