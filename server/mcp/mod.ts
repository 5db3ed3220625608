/**
 * The runtime's MCP streamable HTTP endpoint at `/v1/mcp`: its options, the origin and host
 * allow-lists, the tools and the session limits. `createRuntimeServer` mounts it; these exports
 * serve configuration and embedding.
 *
 * @example
 * ```ts ignore
 * import { createRuntimeServer, parseAllowedOrigins } from "@automation/runtime/server";
 * const server = createRuntimeServer({
 *   bootstrap,
 *   store,
 *   mcp: { allowedOrigins: parseAllowedOrigins("loopback,https://ide.example.com") },
 * });
 * ```
 *
 * @module
 */
export { createMcpEndpoint, MCP_PATH, type McpEndpoint, type McpOptions } from "./endpoint.ts";
export {
  ANY_HOST,
  DEFAULT_ALLOWED_HOSTS,
  DEFAULT_ALLOWED_ORIGINS,
  defaultAllowedHosts,
  isLoopbackHostname,
  LOOPBACK,
  OriginPolicy,
  type OriginPolicyOptions,
  parseAllowedHosts,
  parseAllowedOrigins,
} from "./origin.ts";
export {
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_SESSIONS,
  DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
} from "./sessions.ts";
export { DEFAULT_MAX_EVENTS } from "./event_store.ts";
export { MCP_SERVER_INFO } from "./protocol.ts";
export { REPLAYED_META_KEY } from "./tools.ts";
