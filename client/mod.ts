/**
 * `@automation/runtime/client`: clients for a managed-agents provider. The stateless messages
 * client (`ProviderApiClient`), the managed-agents client, stream mapping onto the universal run
 * contract, message batches, webhook verification and the provider registry. Web standards only:
 * runs in Deno, Node 20+ and browsers.
 *
 * @example A run to completion, with a stand-in for the provider's `fetch`
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderApiClient } from "@automation/runtime/client";
 * const client = new ProviderApiClient({
 *   apiKey: "<API_KEY>",
 *   baseUrl: "https://provider.example",
 *   defaultModel: "model-small",
 *   defaultMaxTokens: 64,
 *   fetchImpl: () =>
 *     Promise.resolve(Response.json({
 *       id: "msg_1",
 *       type: "message",
 *       role: "assistant",
 *       content: [{ type: "text", text: "Hello" }],
 *       stop_reason: "end_turn",
 *     })),
 * });
 * const run = await client.startRun({ input: "Say hello" });
 * assert.equal(run.status, "completed");
 * assert.equal(run.output, "Hello");
 * ```
 *
 * @module
 */
export * from "./contract.ts";
export * from "./batchless.ts";
export * from "./errors.ts";
export * from "./sse.ts";
export type { FetchLike, ProviderTrace, ProviderTraceCallback } from "./http.ts";
export * from "./capabilities.ts";
export * from "./messages/mod.ts";
export * from "./registry.ts";
export * from "./managed_agents/mod.ts";
