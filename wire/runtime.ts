/**
 * The service's own descriptions: the interface version every request names, the answer of
 * `GET /v1/runtime` and the answer of `GET /healthz`.
 *
 * @module
 */
import type { Capability, PrincipalPolicy } from "./principals.ts";
import type { PrincipalSpend } from "./spend.ts";

/**
 * The interface version of this API: what every `/v1/*` request sends as `x-interface-version`
 * (the SDK sets it) and what the service answers with.
 */
export const INTERFACE_VERSION = "2026-07-23";

/**
 * The answer of `GET /v1/runtime`: the interface version and the calling principal, with its run
 * policy (see {@linkcode PrincipalPolicy}: a list is present when the caller is limited to it).
 */
export interface RuntimeInfo extends PrincipalPolicy {
  /** The interface version the service speaks. */
  interfaceVersion: string;
  /** The calling principal. */
  principalId: string;
  /** The caller's name, when it was given one at issuance. */
  name?: string;
  /** The caller's metadata, when it was given some at issuance. */
  metadata?: Record<string, string>;
  /** The caller's capabilities. */
  capabilities: Capability[];
  /** The caller's expiry, RFC 3339. */
  expiresAt: string;
  /** Whether the service can start runs (false while it has no provider credential). */
  runs?: boolean;
  /** What the caller spent and holds reserved in its budget's current period, when it has one. */
  spend?: PrincipalSpend;
}

/** The answer of `GET /healthz`. */
export interface HealthStatus {
  /** True when the service is up. */
  ok: boolean;
}
