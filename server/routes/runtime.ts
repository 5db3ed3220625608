/**
 * `GET /v1/runtime` (capability `session:read`): the interface version, the caller's own
 * principal id, capabilities, expiry and run policy, and whether runs are enabled (a provider
 * credential is configured).
 *
 * @module
 */
import type { AuthenticatedPrincipal, RequestContext } from "../context.ts";
import type { RouteDefinition } from "../router.ts";
import { INTERFACE_VERSION } from "../rules/interface_version.ts";
import { runPolicyOf } from "../runs/policy.ts";

/** Body of `GET /v1/runtime`. */
export interface RuntimeInfo {
  /** The interface version the runtime speaks. */
  interfaceVersion: string;
  /** The caller. */
  principalId: string;
  /** The caller's capabilities. */
  capabilities: readonly string[];
  /** The caller's expiry, RFC 3339. */
  expiresAt: string;
  /** Whether the run routes are enabled. */
  runs: boolean;
  /** The agents the caller may start runs on; absent: any. */
  agentIds?: readonly string[];
  /** The caller's active-run limit. */
  maxActiveRuns: number;
}

/** Options of {@linkcode runtimeRoutes}. */
export interface RuntimeRouteOptions {
  /** Whether the run routes are enabled (default false). */
  runs?: boolean;
}

/**
 * The runtime route.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runtimeRoutes } from "./runtime.ts";
 * assert.equal(runtimeRoutes()[0].path, "/v1/runtime");
 * ```
 */
export function runtimeRoutes(options: RuntimeRouteOptions = {}): RouteDefinition[] {
  const runs = options.runs ?? false;
  /** Serialized answers by principal: principals are immutable and cached by the authenticator. */
  const bodies = new WeakMap<AuthenticatedPrincipal, string>();
  function runtimeInfo(context: RequestContext): Response {
    const principal = context.principal!;
    let body = bodies.get(principal);
    if (body === undefined) {
      const policy = runPolicyOf(principal);
      const info: RuntimeInfo = {
        interfaceVersion: INTERFACE_VERSION,
        principalId: principal.principalId,
        capabilities: principal.capabilities,
        expiresAt: principal.expiresAt,
        runs,
        ...(policy.agentIds !== null ? { agentIds: policy.agentIds } : {}),
        maxActiveRuns: policy.maxActiveRuns,
      };
      body = JSON.stringify(info);
      bodies.set(principal, body);
    }
    return context.json(body);
  }
  return [{
    method: "GET",
    path: "/v1/runtime",
    kind: "shared",
    capability: "session:read",
    handle: runtimeInfo,
  }];
}
