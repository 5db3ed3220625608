/**
 * Principals on the wire: the capabilities a principal may hold, a principal as the service
 * describes it (never with its bearer, except once at issuance), the body of
 * `POST /v1/principals` and the pages of `GET /v1/principals`.
 *
 * @module
 */

/**
 * Every capability a principal may hold, in canonical order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CAPABILITIES } from "./principals.ts";
 * assert.ok(CAPABILITIES.includes("session:approve"));
 * ```
 */
export const CAPABILITIES = [
  "session:read",
  "session:write",
  "session:approve",
  "authority:admin",
] as const;

/** A capability a principal may hold: one of {@linkcode CAPABILITIES}. */
export type Capability = typeof CAPABILITIES[number];

/**
 * The bounds of a principal's `name` and `metadata`: a name of 1 to 64 characters, at most 16
 * metadata pairs, each key 1 to 64 printable ASCII characters without spaces, each value a string
 * of at most 512 characters. Neither may hold a control character.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PRINCIPAL_LABEL_LIMITS } from "./principals.ts";
 * assert.equal(PRINCIPAL_LABEL_LIMITS.nameLength, 64);
 * ```
 */
export const PRINCIPAL_LABEL_LIMITS: Readonly<{
  nameLength: 64;
  metadataPairs: 16;
  metadataKeyLength: 64;
  metadataValueLength: 512;
}> = Object.freeze(
  {
    nameLength: 64,
    metadataPairs: 16,
    metadataKeyLength: 64,
    metadataValueLength: 512,
  } as const,
);

/** A principal as the service describes it (never with a bearer, except at creation). */
export interface RuntimePrincipal {
  /** Lower-case UUID. */
  principalId: string;
  /** A name for people (such as the CI job it is for); absent when none was given. */
  name?: string;
  /** String pairs given at issuance; absent when none were. */
  metadata?: Record<string, string>;
  /** Granted capabilities. */
  capabilities: Capability[];
  /** RFC 3339 UTC expiry. */
  expiresAt: string;
  /** Agent ids the principal may start runs on; absent: any its issuer may use. */
  agentIds?: string[];
  /** How many runs the principal may have active at once. */
  maxActiveRuns?: number;
}

/** The 201 answer of `POST /v1/principals`: the only time the bearer is shown. */
export interface IssuedPrincipal extends RuntimePrincipal {
  /** The one-time bearer of the new principal (`art_…`). Capture it at once. */
  bearer: string;
}

/** A principal in a page of `GET /v1/principals` (no bearer). */
export interface PrincipalSummary extends RuntimePrincipal {
  /** Principal id of the issuer. */
  issuerId: string;
  /** RFC 3339 creation time. */
  createdAt: string;
  /** RFC 3339 revocation time, present once the principal was revoked. */
  revokedAt?: string;
}

/** The query of `GET /v1/principals`. */
export interface PrincipalPageParams {
  /** Most principals in the page, 1 to 500 (default: the service's, 100). */
  limit?: number;
  /** The `nextCursor` of the previous page; omitted for the first page. */
  cursor?: string;
}

/** One page of `GET /v1/principals`, oldest first. */
export interface PrincipalPage {
  /** The principals of the page, oldest first. */
  principals: PrincipalSummary[];
  /** Pass it as `cursor` for the next page; null after the last page. */
  nextCursor: string | null;
}

/**
 * The body of `POST /v1/principals`. The service checks its shape, then the authority rules:
 * the capabilities a subset of the caller's and never `authority:admin`, the expiry at most 90
 * days ahead and not after the caller's own, the agents within the caller's.
 */
export interface CreatePrincipalBody {
  /** Lower-case UUID of the new principal, chosen by the caller. */
  principalId: string;
  /** Non-empty, without repeats. */
  capabilities: Capability[];
  /** RFC 3339 expiry. */
  expiresAt: string;
  /** The 1 to 32 agent ids it may start runs on; absent: the issuer's. */
  agentIds?: string[];
  /** Active runs it may have at once, 1 to 100 (default 8, at most the issuer's). */
  maxActiveRuns?: number;
  /** A name for people: 1 to 64 printable characters (no control characters). */
  name?: string;
  /** Up to 16 string pairs: keys 1 to 64 printable ASCII characters, values at most 512. */
  metadata?: Record<string, string>;
}
