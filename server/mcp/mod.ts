/**
 * The runtime's MCP streamable HTTP endpoint at `/v1/mcp`: its options, the origin and host
 * allow-lists, the tools and the session limits. `createRuntimeServer` mounts it; these exports
 * serve configuration and embedding.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import {
 *   createJsonLogger,
 *   createRuntimeServer,
 *   deriveBootstrapCredential,
 *   openKvStore,
 *   parseAllowedOrigins,
 * } from "../mod.ts";
 * const bootstrap = deriveBootstrapCredential({
 *   token: "art_" + crypto.randomUUID().replaceAll("-", "").repeat(2),
 *   principalId: crypto.randomUUID(),
 *   capabilities: ["authority:admin"],
 *   expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
 *   source: "environment",
 * });
 * const store = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
 * const server = createRuntimeServer({
 *   bootstrap,
 *   store,
 *   logger: createJsonLogger({ write() {} }),
 *   mcp: { allowedOrigins: parseAllowedOrigins("loopback,https://ide.example.com") },
 * });
 * try {
 *   const response = await server.handler(
 *     new Request("http://localhost/v1/mcp", {
 *       method: "POST",
 *       headers: { origin: "https://elsewhere.example" },
 *     }),
 *   );
 *   assert.equal(response.status, 403);
 *   assert.equal((await response.json()).error.code, "originNotAllowed");
 * } finally {
 *   await server.close();
 *   await store.close();
 * }
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
