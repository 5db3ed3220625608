/**
 * Agents: create, version, read, list and archive persisted agents. Holds the agent wire
 * conversion (`agentBody`, `agentReference`), the agent path and the methods
 * {@linkcode ProviderManagedAgentClient} takes from here.
 *
 * @module
 */
import { collect, compact, pathSegment, range, wire } from "./_resource.ts";
import { PROVIDER_COLLECTION_PATHS } from "./paths.ts";
import type {
  CreateManagedAgentParams,
  GetManagedAgentOptions,
  JsonObject,
  ListManagedAgentsParams,
  ManagedAgentAgent,
  ManagedAgentListOptions,
  ManagedAgentRequestOptions,
  UpdateManagedAgentParams,
} from "./types.ts";

/**
 * The path of one agent: retrieve (`GET`) and update (`POST`, creates a new version).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerAgentPath } from "@automation/runtime/client";
 * assert.deepEqual(providerAgentPath("agent_1"), "/v1/agents/agent_1");
 * ```
 */
export function providerAgentPath(agentId: string): string {
  return `/v1/agents/${pathSegment("agentId", agentId)}`;
}

/**
 * The wire form of an agent reference: the bare id (latest version), a pinned version, or a
 * reference with session-local overrides.
 */
export function agentReference(
  agentId: string,
  version: number | undefined,
  overrides?: JsonObject,
): unknown {
  if (overrides !== undefined) {
    return { type: "agent_with_overrides", id: agentId, ...compact({ version }), ...overrides };
  }
  return version === undefined ? agentId : { type: "agent", id: agentId, version };
}

function agentBody(params: Partial<CreateManagedAgentParams> & { version?: number }): JsonObject {
  return compact({
    name: params.name,
    model: params.model,
    description: params.description,
    system: params.system,
    tools: params.tools,
    mcp_servers: params.mcpServers,
    skills: params.skills,
    multiagent: params.multiagent,
    metadata: params.metadata,
    version: params.version,
  });
}

/**
 * The agent operations of {@linkcode ProviderManagedAgentClient}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderManagedAgentClient } from "@automation/runtime/client";
 *
 * // A local stand-in for the provider that records each request and echoes the body.
 * const seen: string[] = [];
 * const client = new ProviderManagedAgentClient({
 *   baseUrl: "https://provider.example",
 *   apiKey: "<API_KEY>",
 *   fetchImpl: (input, init) => {
 *     seen.push(`${init?.method} ${new URL(String(input)).pathname}`);
 *     const body = JSON.parse(String(init?.body ?? "{}"));
 *     return Promise.resolve(Response.json({ id: "agent_1", version: 1, ...body }));
 *   },
 * });
 * const agent = await client.createAgent({ name: "reviewer", model: "model-a" });
 * assert.equal(agent.id, "agent_1");
 * assert.equal(agent.name, "reviewer");
 * assert.deepEqual(seen, ["POST /v1/agents"]);
 * ```
 */
export interface ManagedAgentAgentsApi {
  /** Creates a persisted agent (version 1). */
  createAgent(
    params: CreateManagedAgentParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentAgent>;

  /** Updates an agent (a `POST`), which creates a new immutable version. */
  updateAgent(
    agentId: string,
    params: UpdateManagedAgentParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentAgent>;

  /** Reads an agent, or one of its versions. */
  getAgent(agentId: string, options?: GetManagedAgentOptions): Promise<ManagedAgentAgent>;

  /** Lists agents (every page). */
  listAgents(params?: ListManagedAgentsParams): Promise<ManagedAgentAgent[]>;

  /** Yields agents page by page. */
  iterateAgents(params?: ListManagedAgentsParams): AsyncGenerator<ManagedAgentAgent, void>;

  /** Lists every version of an agent. */
  listAgentVersions(
    agentId: string,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentAgent[]>;

  /** Yields an agent's versions page by page. */
  iterateAgentVersions(
    agentId: string,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentAgent, void>;

  /** Archives an agent: existing sessions continue, new ones cannot reference it. */
  archiveAgent(agentId: string, options?: ManagedAgentRequestOptions): Promise<ManagedAgentAgent>;
}

/** The implementation of {@linkcode ManagedAgentAgentsApi}, installed on the client's prototype. */
export const agentsApi: ManagedAgentAgentsApi & ThisType<ManagedAgentAgentsApi> = {
  createAgent(
    params: CreateManagedAgentParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentAgent> {
    return wire(this).post(PROVIDER_COLLECTION_PATHS.agents, agentBody(params), options);
  },

  updateAgent(
    agentId: string,
    params: UpdateManagedAgentParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentAgent> {
    return wire(this).post(providerAgentPath(agentId), agentBody(params), options);
  },

  getAgent(agentId: string, options?: GetManagedAgentOptions): Promise<ManagedAgentAgent> {
    return wire(this).get(providerAgentPath(agentId), { version: options?.version }, options);
  },

  listAgents(params?: ListManagedAgentsParams): Promise<ManagedAgentAgent[]> {
    return collect(this.iterateAgents(params));
  },

  iterateAgents(params?: ListManagedAgentsParams): AsyncGenerator<ManagedAgentAgent, void> {
    return wire(this).iterate(PROVIDER_COLLECTION_PATHS.agents, {
      include_archived: params?.includeArchived,
      created_at: range(params?.createdAt),
    }, params);
  },

  listAgentVersions(
    agentId: string,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentAgent[]> {
    return collect(this.iterateAgentVersions(agentId, params));
  },

  iterateAgentVersions(
    agentId: string,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentAgent, void> {
    return wire(this).iterate(`${providerAgentPath(agentId)}/versions`, {}, params);
  },

  archiveAgent(agentId: string, options?: ManagedAgentRequestOptions): Promise<ManagedAgentAgent> {
    return wire(this).post(`${providerAgentPath(agentId)}/archive`, undefined, options);
  },
};
