/**
 * Principals on the wire: the capabilities a principal may hold, a principal as the service
 * describes it (never with its bearer, except once at issuance), the body of
 * `POST /v1/principals` and the pages of `GET /v1/principals`.
 *
 * @module
 */
import type { PrincipalSpend, SpendPolicy } from "./spend.ts";

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
 * What a principal id is: a lower-case UUID (8-4-4-4-12 hexadecimal digits, any version).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PRINCIPAL_ID_PATTERN } from "./principals.ts";
 * assert.ok(PRINCIPAL_ID_PATTERN.test(crypto.randomUUID()));
 * assert.ok(!PRINCIPAL_ID_PATTERN.test(crypto.randomUUID().toUpperCase()));
 * ```
 */
export const PRINCIPAL_ID_PATTERN: RegExp =
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

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

/**
 * The lists of a principal's resource policy, in canonical order: what a run it starts may run
 * in (`environmentIds`) and attach (`vaultIds`, `memoryStoreIds`, `repositories` as
 * `owner/name`, `fileIds`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RESOURCE_POLICY_FIELDS } from "./principals.ts";
 * assert.deepEqual(RESOURCE_POLICY_FIELDS.slice(0, 2), ["environmentIds", "vaultIds"]);
 * ```
 */
export const RESOURCE_POLICY_FIELDS = [
  "environmentIds",
  "vaultIds",
  "memoryStoreIds",
  "repositories",
  "fileIds",
] as const;

/** One list of a principal's resource policy: one of {@linkcode RESOURCE_POLICY_FIELDS}. */
export type ResourcePolicyField = typeof RESOURCE_POLICY_FIELDS[number];

/**
 * A principal's run policy: each list names what the principal may use, and its spend limits
 * ({@linkcode SpendPolicy}).
 *
 * - **In an answer** (issuance, `GET /v1/principals`, `GET /v1/runtime`), a list is absent when
 *   the principal is not limited in that respect (the bootstrap principal, or an issued one whose
 *   issuer had no such list), and present with exactly what it may use otherwise; an empty list
 *   allows nothing of that kind.
 * - **In an issuance body** (`POST /v1/principals`), each list must lie within the issuer's own
 *   when the issuer has one (1 to 32 distinct ids; `agentIds` and `environmentIds` at least one).
 *   Left out, `agentIds` and `environmentIds` are the issuer's; `vaultIds`, `memoryStoreIds`,
 *   `repositories` and `fileIds` are none (an issued principal attaches only what it was given).
 */
export interface PrincipalPolicy extends SpendPolicy {
  /** Agent ids the principal may start runs on. */
  agentIds?: string[];
  /** Environment ids its runs may run in. */
  environmentIds?: string[];
  /** Vault ids its runs may attach (`vault_ids`). */
  vaultIds?: string[];
  /** Memory store ids its runs may mount (`memory_store` resources). */
  memoryStoreIds?: string[];
  /** GitHub repositories (`owner/name`) its runs may mount (`github_repository` resources). */
  repositories?: string[];
  /** File ids its runs may mount (`file` resources). */
  fileIds?: string[];
  /** How many runs it may have active at once, 1 to 100 (issuance: default 8, at most the issuer's). */
  maxActiveRuns?: number;
  /**
   * Whether its runs may override the agent (model, system prompt, tools, MCP servers, skills;
   * through the provider's own API). In an answer: present, `true`, only when it may. In an
   * issuance body: default false, never inherited, true only when the issuer may itself.
   */
  allowAgentOverrides?: boolean;
}

/** A principal as the service describes it (never with a bearer, except at creation). */
export interface RuntimePrincipal extends PrincipalPolicy {
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
  /** What it spent and holds reserved in its budget's current period, when it has a budget. */
  spend?: PrincipalSpend;
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
 * days ahead and not after the caller's own, the run policy within the caller's.
 */
export interface CreatePrincipalBody extends PrincipalPolicy {
  /** Lower-case UUID of the new principal, chosen by the caller. */
  principalId: string;
  /** Non-empty, without repeats. */
  capabilities: Capability[];
  /** RFC 3339 expiry. */
  expiresAt: string;
  /** A name for people: 1 to 64 printable characters (no control characters). */
  name?: string;
  /** Up to 16 string pairs: keys 1 to 64 printable ASCII characters, values at most 512. */
  metadata?: Record<string, string>;
}
