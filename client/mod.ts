/**
 * `@automation/runtime/client`: clients for a managed-agents provider. The stateless messages
 * client (`ProviderApiClient`), the managed-agents client, stream mapping onto the universal run
 * contract, message batches, webhook verification and the provider registry. Web standards only:
 * runs in Deno, Node 20+ and browsers.
 *
 * @module
 */
export * from "./contract.ts";
export * from "./errors.ts";
export * from "./sse.ts";
export type { FetchLike, ProviderTrace, ProviderTraceCallback } from "./_http.ts";
export * from "./capabilities.ts";
export * from "./messages/mod.ts";
export * from "./registry.ts";
export * from "./managed_agents/mod.ts";
