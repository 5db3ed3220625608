/**
 * The managed-agents API of the provider simulator, stateful: agents with versions, environments
 * (with a self-hosted work queue), sessions whose status follows their scripted turns, events
 * with ids, history and SSE streams (with text previews on request), threads, memory stores with
 * path conflicts and preconditions, vaults and credentials, deployments and their runs. Every
 * route requires the `provider-beta: managed-agents-2026-04-01` header, as the provider does.
 *
 * Turns are scripted (see `turns.ts`): a `user.message` runs the session's agent's turn script
 * ({@linkcode ManagedAgentsState.agentScripts}, else {@linkcode ManagedAgentsState.script}, an
 * echo by default); once every tool call of a turn is answered, the continuation script runs.
 *
 * Sessions honour a `budget` (`{type: "limit", max_list_cost}`) given at creation or raised by an
 * update, as the provider does: usage is priced per model request, and a session stops issuing
 * requests once its list cost reaches the ceiling (`budget_reached`). A model priced `null` in
 * {@linkcode ManagedAgentsState.modelPrices} reports no list cost and cannot carry a budget.
 *
 * @module
 */
import { type AgentLookups, installAgentRoutes } from "./_agents.ts";
import { installDeploymentRoutes } from "./_deployments.ts";
import { installMemoryRoutes } from "./_memory.ts";
import { installSessionEventRoutes, type SessionEvents } from "./_session_events.ts";
import { installSessionRoutes } from "./_sessions.ts";
import { MANAGED_AGENTS_BETA, MEMORY_BETA, newId, type Section } from "./_support.ts";
import { installVaultRoutes } from "./_vaults.ts";
import type { Json, SimulatorStreamSubscriber } from "./http.ts";
import type { ProviderSimulator } from "./simulator.ts";
import { agentMessage, DEFAULT_LIST_PRICES, type ListPrices, type TurnScript } from "./turns.ts";

/** The managed-agents beta value the simulator requires. */
export const SIMULATOR_MANAGED_AGENTS_BETA: string = MANAGED_AGENTS_BETA;
/** The memory beta value the vendor's SDK sends (also accepted on memory routes). */
export const SIMULATOR_MEMORY_BETA: string = MEMORY_BETA;

/** One open event stream of a session. */
export interface SessionStream {
  /** Its writer. */
  subscriber: SimulatorStreamSubscriber;
  /** Only this thread's events (the primary thread's when it is the first). */
  threadId?: string;
  /** Whether the stream asked for text previews (`event_deltas[]=agent.message`). */
  deltas?: boolean;
}

/** A session as the simulator holds it. */
export interface SimulatedSession {
  /** The session record (the provider's wire shape). */
  record: Json;
  /** Its event history, oldest first. */
  events: Json[];
  /** Its threads, the primary thread first. */
  threads: Json[];
  /** Ids of the tool calls waiting for an answer. */
  pending: Set<string>;
  /** Its open event streams. */
  subscribers: Set<SessionStream>;
  /** Timers of its scripted turn's pauses. */
  timers: Set<ReturnType<typeof setTimeout>>;
  /** Whether an update removed its budget (a removed budget cannot be set again). */
  budgetRemoved?: boolean;
}

/** An agent with every version's snapshot. */
export interface AgentEntry {
  /** The current record. */
  record: Json;
  /** Every version's snapshot, oldest first. */
  versions: Json[];
}

/** A memory store with its memories and their versions. */
export interface MemoryStoreEntry {
  /** The store record. */
  record: Json;
  /** Memories by id. */
  memories: Map<string, Json>;
  /** Every memory version, oldest first. */
  versions: Json[];
}

/** A vault credential: its record (no secrets) and its secrets apart. */
export interface SimulatedCredential {
  /** The record, as answers show it. */
  record: Json;
  /** The secrets it was given, null once archived. */
  secret: Json | null;
}

/** A vault with its credentials. */
export interface VaultEntry {
  /** The vault record. */
  record: Json;
  /** Credentials by id. */
  credentials: Map<string, SimulatedCredential>;
}

/** The turn scripts of one agent. */
export interface AgentScript {
  /** The steps of a turn started by a `user.message`. */
  turn?: TurnScript;
  /** The steps once every tool call of a turn was answered (default: the state's). */
  continuation?: TurnScript;
}

/** Options of {@linkcode ManagedAgentsState.addAgent}. */
export interface AddAgentOptions extends AgentScript {
  /** The agent's name. */
  name: string;
  /** Its model id (default `model-small`). */
  model?: string;
  /** Further fields of the create body (`system`, `tools`, `metadata` …). */
  fields?: Json;
}

/** Options of {@linkcode ManagedAgentsState.addEnvironment}. */
export interface AddEnvironmentOptions {
  /** The environment's name. */
  name: string;
  /** Further fields of the create body (`config`, `metadata` …). */
  fields?: Json;
}

/** The simulator's managed-agents state, for scripting and assertions. */
export interface ManagedAgentsState {
  /** Agents by id. */
  agents: Map<string, AgentEntry>;
  /** Environments by id. */
  environments: Map<string, Json>;
  /** Sessions by id (kept until deleted). */
  sessions: Map<string, SimulatedSession>;
  /** Memory stores by id. */
  memoryStores: Map<string, MemoryStoreEntry>;
  /** Vaults by id. */
  vaults: Map<string, VaultEntry>;
  /** Deployments by id. */
  deployments: Map<string, Json>;
  /** Deployment runs by id. */
  deploymentRuns: Map<string, Json>;
  /** Work items of self-hosted environments by id. */
  work: Map<string, Json>;
  /** The turn script of agents without one of their own (default: an echo of the message). */
  script: TurnScript;
  /** The continuation of agents without one of their own (default: an agent message `Done`). */
  continuation: TurnScript;
  /** Turn scripts by agent id. */
  agentScripts: Map<string, AgentScript>;
  /** The prices usage reports are priced with (unless `modelPrices` names the model). */
  listPrices: ListPrices;
  /**
   * Prices by model id, over `listPrices`; null for a model the provider does not price: its
   * usage reports carry no `list_cost`, and a session that can run it refuses a budget
   * (`model_not_budgetable`), as the provider does.
   */
  modelPrices: Map<string, ListPrices | null>;
  /** The verdict of outcome iterations (`satisfied` by default). */
  outcomeResult: string;
  /** Characters per `event_delta` of a message preview (streams that asked for deltas). */
  deltaChunk: number;
  /**
   * Told of each event as it is made, before any stream gets it (a benchmark takes its time here:
   * `processed_at` holds only milliseconds).
   */
  onEmit?: (sessionId: string, event: Json) => void;
  /** Emits an event on a session (added to its history and streams); returns it as recorded. */
  emit(sessionId: string, event: Json): Json;
  /** Changes a session's status without an event (what a read sees). */
  setStatus(sessionId: string, status: string): void;
  /** Adds a work item to an environment's queue. */
  addWork(environmentId: string): Json;
  /** Creates an agent (as `POST /v1/agents` would) with its own turn scripts. */
  addAgent(options: AddAgentOptions): Json & { id: string };
  /** Creates an environment (as `POST /v1/environments` would). */
  addEnvironment(options: AddEnvironmentOptions): Json & { id: string };
}

/**
 * Installs the managed-agents routes on a simulator and returns their state.
 * `ProviderSimulator.start` does it unless started `bare`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { installManagedAgentRoutes } from "./managed_agents.ts";
 * import { ProviderSimulator } from "./simulator.ts";
 * await using simulator = await ProviderSimulator.start({ bare: true });
 * const state = installManagedAgentRoutes(simulator);
 * const agent = state.addAgent({ name: "a" });
 * assert.equal(state.agents.get(agent.id)?.record.name, "a");
 * ```
 */
export function installManagedAgentRoutes(simulator: ProviderSimulator): ManagedAgentsState {
  // Set below, before any route or method of the state can run.
  const parts: { agents?: AgentLookups; events?: SessionEvents } = {};
  const state: ManagedAgentsState = {
    agents: new Map(),
    environments: new Map(),
    sessions: new Map(),
    memoryStores: new Map(),
    vaults: new Map(),
    deployments: new Map(),
    deploymentRuns: new Map(),
    work: new Map(),
    script: ({ text }) => [agentMessage(`Echo: ${text}`)],
    continuation: () => [agentMessage("Done")],
    agentScripts: new Map(),
    listPrices: { ...DEFAULT_LIST_PRICES },
    modelPrices: new Map(),
    outcomeResult: "satisfied",
    deltaChunk: 4,
    emit: (sessionId, event) => parts.events!.emit(parts.events!.getSession(sessionId), event),
    setStatus: (sessionId, status) => {
      parts.events!.getSession(sessionId).record.status = status;
    },
    addWork: (environmentId) =>
      parts.agents!.addWork(environmentId, { type: "healthcheck", id: newId("hc") }),
    addAgent(options) {
      const record = parts.agents!.createAgent({
        ...options.fields,
        name: options.name,
        model: options.model ?? "model-small",
      }) as Json & { id: string };
      if (options.turn !== undefined || options.continuation !== undefined) {
        state.agentScripts.set(record.id, {
          turn: options.turn,
          continuation: options.continuation,
        });
      }
      return record;
    },
    addEnvironment(options) {
      return parts.agents!.createEnvironment({ ...options.fields, name: options.name }) as
        & Json
        & { id: string };
    },
  };
  const section: Section = {
    simulator,
    state,
    route: (method, pattern, handler, options = { betas: [MANAGED_AGENTS_BETA] }) =>
      simulator.route(method, pattern, handler, options),
  };
  simulator.onClose(() => {
    for (const session of state.sessions.values()) {
      for (const timer of session.timers) clearTimeout(timer);
      session.timers.clear();
    }
  });
  const agents = parts.agents = installAgentRoutes(section);
  const events = parts.events = installSessionEventRoutes(section);
  const sessions = installSessionRoutes(section, agents, events);
  installMemoryRoutes(section);
  installVaultRoutes(section);
  installDeploymentRoutes(section, agents, sessions, events);
  return state;
}
