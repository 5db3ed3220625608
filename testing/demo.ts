/**
 * The demo scenario: an agent whose turn shows what the runs gateway does, as
 * `automation-runtime demo` serves it. Its turn says what it will do and asks to run a shell
 * command (a tool call that needs a confirmation, so the run waits in `requires_action`); once
 * the call is answered it reports its result (a denied call ends the turn politely) and its usage
 * with the list cost, and completes.
 *
 * @module
 */
import type { Json } from "./http.ts";
import type { ManagedAgentsState } from "./managed_agents.ts";
import {
  agentMessage,
  pause,
  toolNeedingConfirmation,
  type TurnContext,
  type TurnStep,
  usageReport,
} from "./turns.ts";

/** The command the demo agent asks to run. */
export const DEMO_TOOL_INPUT: Readonly<Json> = Object.freeze({
  command: "gh issue list --state open --limit 20",
});

/** The first part of the demo turn: a message, then a tool call that needs a confirmation. */
export function demoTurn({ text }: TurnContext): TurnStep[] {
  return [
    agentMessage(`On it: "${text}". First I will list the open issues.`),
    toolNeedingConfirmation("bash", { ...DEMO_TOOL_INPUT }),
  ];
}

/**
 * The rest of the demo turn, once the tool call was answered: the result (or the denial), the
 * usage with its list cost, then the end of the turn.
 */
export function demoContinuation({ events }: TurnContext): TurnStep[] {
  const result = events.findLast((event) => event.type === "agent.tool_result");
  if (result?.is_error === true) {
    return [
      agentMessage("The command was denied, so I stopped before changing anything."),
      usageReport({ inputTokens: 6_000, outputTokens: 200 }),
    ];
  }
  return [
    pause(200),
    agentMessage(
      "Triaged 3 open issues: one bug (labelled high priority), one feature request and one " +
        "question (answered). A summary is in the run's messages.",
    ),
    usageReport({ inputTokens: 24_000, outputTokens: 1_800 }),
  ];
}

/** The demo's agent and environment. */
export interface DemoSetup {
  /** The agent's id. */
  agentId: string;
  /** The environment's id. */
  environmentId: string;
}

/**
 * Adds the demo agent (with {@linkcode demoTurn} and {@linkcode demoContinuation}) and an
 * environment to a simulator's state.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderManagedAgentClient } from "@automation/runtime/client";
 * import { addDemoAgent, ProviderSimulator } from "@automation/runtime/testing";
 *
 * await using simulator = await ProviderSimulator.start();
 * const demo = addDemoAgent(simulator.managedAgents!);
 * const client = new ProviderManagedAgentClient({
 *   baseUrl: simulator.baseUrl,
 *   apiKey: simulator.apiKey,
 *   agentId: demo.agentId,
 *   environmentId: demo.environmentId,
 * });
 * const started = await client.startRun({ input: "Triage the open issues" });
 * const run = await client.getRun(started.runId);
 * assert.equal(run.status, "requires_action"); // the tool call waits for a confirmation
 * ```
 */
export function addDemoAgent(state: ManagedAgentsState): DemoSetup {
  const agent = state.addAgent({
    name: "demo-triage",
    model: "model-small",
    fields: { description: "Triages open issues (the automation-runtime demo)" },
    turn: demoTurn,
    continuation: demoContinuation,
  });
  const environment = state.addEnvironment({ name: "demo" });
  return { agentId: agent.id, environmentId: environment.id };
}
