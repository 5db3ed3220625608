/**
 * `@automation/runtime/testing`: a managed-agents provider simulator for your own tests and
 * demos. It serves the provider's managed-agents API on a loopback socket with the provider's
 * wire shapes, headers and errors: agents, environments, sessions whose turns follow a script
 * (messages, tool calls that need a confirmation, custom tools, usage with its list cost,
 * failures), event streams, and fault switches (error statuses, slow answers, slow and dropped
 * streams). The runtime service's `demo` command runs its gateway against it.
 *
 * It runs in Deno (served with `Deno.serve`) and in Node 20+ (served with `node:http`); nothing
 * else in it uses a runtime's API.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderManagedAgentClient } from "@automation/runtime/client";
 * import {
 *   agentMessage,
 *   ProviderSimulator,
 *   toolNeedingConfirmation,
 *   usageReport,
 * } from "@automation/runtime/testing";
 *
 * await using simulator = await ProviderSimulator.start();
 * const agent = simulator.managedAgents!.addAgent({
 *   name: "deployer",
 *   turn: () => [agentMessage("Deploying"), toolNeedingConfirmation("bash", { command: "make" })],
 *   continuation: () => [agentMessage("Deployed"), usageReport({ inputTokens: 900, outputTokens: 40 })],
 * });
 * const environment = simulator.managedAgents!.addEnvironment({ name: "ci" });
 * const client = new ProviderManagedAgentClient({
 *   baseUrl: simulator.baseUrl,
 *   apiKey: simulator.apiKey,
 *   agentId: agent.id,
 *   environmentId: environment.id,
 * });
 * const started = await client.startRun({ input: "Deploy main" });
 * const [call] = simulator.managedAgents!.sessions.get(started.runId)!.events
 *   .filter((event) => event.type === "agent.tool_use");
 * await client.confirmTool(started.runId, { toolUseId: call.id as string, result: "allow" });
 * const run = await client.getRun(started.runId);
 * assert.equal(run.status, "completed");
 * assert.equal(run.usage?.output_tokens, 40);
 * ```
 *
 * @module
 */
export * from "./simulator.ts";
export * from "./http.ts";
export type {
  RequestMatch,
  SimulatorDelay,
  SimulatorFault,
  StreamDelay,
  StreamDrop,
} from "./faults.ts";
export * from "./managed_agents.ts";
export * from "./turns.ts";
export * from "./messages.ts";
export * from "./demo.ts";
