/**
 * `GET /v1/runtime` (capability `session:read`): the interface version and the caller's own
 * principal id, capabilities and expiry.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
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

const HEADERS: HeadersInit = [["content-type", "application/json"]];

function runtimeInfo(context: RequestContext): Response {
  const principal = context.principal!;
  const body: RuntimeInfo = {
    interfaceVersion: INTERFACE_VERSION,
    principalId: principal.principalId,
    capabilities: principal.capabilities,
    expiresAt: principal.expiresAt,
  };
  return new Response(JSON.stringify(body), { headers: HEADERS });
}

/**
 * The runtime route.
 *
 * @example
 * ```ts
 * import { runtimeRoutes } from "./runtime.ts";
 * console.log(runtimeRoutes()[0].path); // "/v1/runtime"
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
