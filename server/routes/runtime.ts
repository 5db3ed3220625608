/**
 * `GET /v1/runtime` (capability `session:read`): the interface version and the caller's own
 * principal id, capabilities and expiry.
 *
 * @module
 */
import type { AuthenticatedPrincipal, RequestContext } from "../context.ts";
import type { RouteDefinition } from "../router.ts";
import { INTERFACE_VERSION } from "../rules/interface_version.ts";

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
}

/** Serialized answers by principal: principals are immutable and cached by the authenticator. */
const bodies = new WeakMap<AuthenticatedPrincipal, string>();

function runtimeInfo(context: RequestContext): Response {
  const principal = context.principal!;
  let body = bodies.get(principal);
  if (body === undefined) {
    const info: RuntimeInfo = {
      interfaceVersion: INTERFACE_VERSION,
      principalId: principal.principalId,
      capabilities: principal.capabilities,
      expiresAt: principal.expiresAt,
    };
    body = JSON.stringify(info);
    bodies.set(principal, body);
  }
  return context.json(body);
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
export function runtimeRoutes(): RouteDefinition[] {
  return [{
    method: "GET",
    path: "/v1/runtime",
    kind: "shared",
    capability: "session:read",
    handle: runtimeInfo,
  }];
}
