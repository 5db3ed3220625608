/**
 * The managed-agents API of the tests' fake provider, under the names the tests have always
 * used: the provider simulator's (`testing/managed_agents.ts`, `testing/turns.ts`),
 * re-exported. There is one implementation; this file only names it.
 *
 * @module
 */
export {
  installManagedAgentRoutes,
  type ManagedAgentsState,
  SIMULATOR_MANAGED_AGENTS_BETA as FAKE_MANAGED_AGENTS_BETA,
  SIMULATOR_MEMORY_BETA as FAKE_MEMORY_BETA,
  type TurnContext as FakeScriptContext,
  type TurnScript as FakeScript,
  type TurnStep as FakeStep,
} from "../../testing/mod.ts";
