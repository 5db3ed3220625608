/**
 * Request and response shapes of the runtime service API.
 *
 * @module
 */

/** The value of `x-interface-version` this SDK speaks. */
export const RUNTIME_INTERFACE_VERSION = "2026-07-23";

/** A capability a principal may hold. */
export type RuntimeCapability =
  | "session:read"
  | "session:write"
  | "session:approve"
  | "authority:admin";

/** A principal as the service describes it (never with a bearer, except at creation). */
export interface RuntimePrincipal {
  /** Lower-case UUID. */
  principalId: string;
  /** Granted capabilities. */
  capabilities: RuntimeCapability[];
  /** RFC 3339 UTC expiry. */
  expiresAt: string;
  /** Agent ids the principal may start runs on; absent: any its issuer may use. */
  agentIds?: string[];
  /** How many runs the principal may have active at once. */
  maxActiveRuns?: number;
}

/** The 201 answer of {@linkcode RuntimeServiceClient.createPrincipal}: the only time the bearer is shown. */
export interface IssuedPrincipal extends RuntimePrincipal {
  /** The one-time bearer of the new principal (`art_…`). Capture it at once. */
  bearer: string;
}

/** A principal in the answer of {@linkcode RuntimeServiceClient.listPrincipals} (no bearer). */
export interface PrincipalSummary extends RuntimePrincipal {
  /** Principal id of the issuer. */
  issuerId: string;
  /** RFC 3339 creation time. */
  createdAt: string;
  /** RFC 3339 revocation time, present once the principal was revoked. */
  revokedAt?: string;
}

/** Parameters of {@linkcode RuntimeServiceClient.listPrincipalPage}. */
export interface PrincipalPageParams {
  /** Most principals in the page, 1 to 500 (default: the service's, 100). */
  limit?: number;
  /** The `nextCursor` of the previous page; omitted for the first page. */
  cursor?: string;
}

/** One page of {@linkcode RuntimeServiceClient.listPrincipalPage}. */
export interface PrincipalPage {
  /** The principals of the page, oldest first. */
  principals: PrincipalSummary[];
  /** Pass it as `cursor` for the next page; null after the last page. */
  nextCursor: string | null;
}

/** Parameters of {@linkcode RuntimeServiceClient.createPrincipal}. */
export interface CreatePrincipalParams {
  /** Capabilities to grant: non-empty, a subset of the caller's, never `authority:admin`. */
  capabilities: readonly RuntimeCapability[];
  /** Expiry: at most 90 days ahead and not after the caller's own expiry. */
  expiresAt: string | Date;
  /**
   * Lower-case UUID of the new principal (default: a random UUID, generated once per call so
   * retries send the identical body). Pass one when you reuse an `idempotencyKey` across calls.
   */
  principalId?: string;
  /**
   * The 1 to 32 agent ids the principal may start runs on (a subset of the issuer's own list
   * when it has one). Absent: any agent the issuer may use.
   */
  agentIds?: readonly string[];
  /** Active runs the principal may have at once, 1 to 100 (service default 8). */
  maxActiveRuns?: number;
}

/** Options every call takes. */
export interface CallOptions {
  /** Aborts the call (and its retries); the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Deadline of this call in ms, sent as `x-deadline` (default: the client's `deadlineMs`). */
  deadlineMs?: number;
}

/** Options of mutating calls. */
export interface MutatingCallOptions extends CallOptions {
  /**
   * The `idempotency-key` (1 to 128 printable ASCII characters). Default: a random UUID per
   * call, identical across its retries.
   */
  idempotencyKey?: string;
}

/** Answer of {@linkcode RuntimeServiceClient.health}. */
export interface HealthStatus {
  /** True when the service is up. */
  ok: boolean;
}

/** Answer of {@linkcode RuntimeServiceClient.runtime}: the interface version and the caller. */
export interface RuntimeInfo {
  /** The interface version the service speaks. */
  interfaceVersion: string;
  /** The calling principal. */
  principalId: string;
  /** The caller's capabilities. */
  capabilities: RuntimeCapability[];
  /** The caller's expiry, RFC 3339. */
  expiresAt: string;
  /** Whether the service can start runs (false while it has no provider credential). */
  runs?: boolean;
  /** Agent ids the caller may start runs on, when it is limited to some. */
  agentIds?: string[];
  /** How many runs the caller may have active at once. */
  maxActiveRuns?: number;
}
