/**
 * `@automation/runtime`: a runtime service for automation principals, its TypeScript SDK, and a
 * client library for a managed-agents provider.
 *
 * - `@automation/runtime/server`: the HTTP service (Deno).
 * - `@automation/runtime/sdk`: the service's TypeScript client (Deno, Node 20+, browsers).
 * - `@automation/runtime/client`: provider clients, stream mapping, session driver, teams,
 *   webhook verification and the provider registry (Deno, Node 20+, browsers).
 *
 * @module
 */
export * from "./server/mod.ts";
export * from "./sdk/mod.ts";
export * from "./client/mod.ts";
