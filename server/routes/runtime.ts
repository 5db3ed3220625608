/**
 * `GET /v1/runtime` (capability `session:read`): the interface version, the caller's own
 * principal id, name and metadata (when it has them), capabilities, expiry and run policy, and whether runs are enabled (a provider
 * credential is configured).
 *
 * @module
 */
import type { AuthenticatedPrincipal, RequestContext } from "../context.ts";
import type { RouteDefinition } from "../router.ts";
import { INTERFACE_VERSION, type RuntimeInfo } from "../../wire/mod.ts";
import { policyAnswer, runPolicyOf } from "../runs/policy.ts";

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
      // Copies of the principal's frozen lists: built once per principal, then cached.
      const info: RuntimeInfo = {
        interfaceVersion: INTERFACE_VERSION,
        principalId: principal.principalId,
        ...(principal.name !== undefined ? { name: principal.name } : {}),
        ...(principal.metadata !== undefined ? { metadata: { ...principal.metadata } } : {}),
        capabilities: [...principal.capabilities],
        expiresAt: principal.expiresAt,
        runs,
        ...policyAnswer(runPolicyOf(principal)),
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
