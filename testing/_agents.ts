/**
 * Agents (with versions), environments and an environment's self-hosted work queue in the
 * provider simulator.
 *
 * @module
 */
import { type Json, jsonResponse, SimulatorHttpError } from "./http.ts";
import type { AgentEntry } from "./managed_agents.ts";
import {
  bad,
  conflict,
  newId,
  notFound,
  now,
  obj,
  paginate,
  patchMetadata,
  requireString,
  type Section,
  visible,
} from "./_support.ts";

/** What the other sections look up here. */
export interface AgentLookups {
  /** The agent, else a 404. */
  getAgent(id: string): AgentEntry;
  /** The environment, else a 404. */
  getEnvironment(id: string): Json;
  /** Queues a work item on an environment. */
  addWork(environmentId: string, data: Json): Json;
  /** Creates an agent from a create body (a 400 when it is not one). */
  createAgent(body: Json): Json;
  /** Creates an environment from a create body (a 400 when it is not one). */
  createEnvironment(body: Json): Json;
}

/** Installs the agent, environment and work-queue routes. */
export function installAgentRoutes({ state, route }: Section): AgentLookups {
  function getAgent(id: string): AgentEntry {
    const agent = state.agents.get(id);
    if (!agent) throw notFound(`Agent ${id}`);
    return agent;
  }
  function applyAgentFields(record: Json, body: Json): void {
    if (body.name !== undefined) record.name = requireString(body, "name");
    if (body.model !== undefined) {
      record.model = typeof body.model === "string" ? { id: body.model } : body.model;
    }
    for (const key of ["description", "system", "multiagent"]) {
      if (key in body) record[key] = body[key] ?? null;
    }
    for (const key of ["tools", "mcp_servers", "skills"]) {
      if (key in body) record[key] = body[key] ?? [];
    }
    if ("metadata" in body) record.metadata = patchMetadata(record.metadata, body.metadata);
  }
  function createAgent(body: Json): Json {
    requireString(body, "name");
    if (body.model === undefined) throw bad("model is required");
    const at = now();
    const record: Json = {
      id: newId("agent"),
      type: "agent",
      name: body.name,
      description: null,
      system: null,
      model: null,
      tools: [],
      mcp_servers: [],
      skills: [],
      multiagent: null,
      metadata: {},
      version: 1,
      created_at: at,
      updated_at: at,
      archived_at: null,
    };
    applyAgentFields(record, body);
    state.agents.set(record.id as string, { record, versions: [structuredClone(record)] });
    return record;
  }
  route("POST", "/v1/agents", async (c) => jsonResponse(createAgent(await c.body())));
  route("GET", "/v1/agents", (c) => {
    const records = [...state.agents.values()].map((a) => a.record);
    return jsonResponse(paginate(visible(records, c.url), c.url));
  });
  route("GET", "/v1/agents/:id", (c) => {
    const agent = getAgent(c.params.id);
    const version = c.url.searchParams.get("version");
    if (version === null) return jsonResponse(agent.record);
    const found = agent.versions.find((v) => v.version === Number(version));
    if (!found) throw notFound(`Version ${version} of agent ${c.params.id}`);
    return jsonResponse(found);
  });
  route("POST", "/v1/agents/:id", async (c) => {
    const agent = getAgent(c.params.id);
    const body = await c.body();
    if (agent.record.archived_at) throw bad("Archived agents cannot be updated");
    if (body.version !== undefined && body.version !== agent.record.version) {
      throw conflict("conflict_error", `Agent is at version ${agent.record.version}`);
    }
    const { version: _v, ...fields } = body;
    applyAgentFields(agent.record, fields);
    agent.record.version = (agent.record.version as number) + 1;
    agent.record.updated_at = now();
    agent.versions.push(structuredClone(agent.record));
    return jsonResponse(agent.record);
  });
  route("GET", "/v1/agents/:id/versions", (c) => {
    const agent = getAgent(c.params.id);
    return jsonResponse(paginate([...agent.versions].reverse(), c.url));
  });
  route("POST", "/v1/agents/:id/archive", (c) => {
    const agent = getAgent(c.params.id);
    agent.record.archived_at ??= now();
    return jsonResponse(agent.record);
  });

  function getEnvironment(id: string): Json {
    const env = state.environments.get(id);
    if (!env) throw notFound(`Environment ${id}`);
    return env;
  }
  function createEnvironment(body: Json): Json {
    requireString(body, "name");
    const at = now();
    const record: Json = {
      id: newId("env"),
      type: "environment",
      name: body.name,
      description: body.description ?? null,
      config: body.config ?? { type: "cloud", networking: { type: "unrestricted" } },
      metadata: patchMetadata({}, body.metadata),
      created_at: at,
      updated_at: at,
      archived_at: null,
    };
    state.environments.set(record.id as string, record);
    return record;
  }
  route("POST", "/v1/environments", async (c) => jsonResponse(createEnvironment(await c.body())));
  route("GET", "/v1/environments", (c) => {
    return jsonResponse(paginate(visible([...state.environments.values()], c.url), c.url));
  });
  route("GET", "/v1/environments/:id", (c) => jsonResponse(getEnvironment(c.params.id)));
  route("POST", "/v1/environments/:id", async (c) => {
    const env = getEnvironment(c.params.id);
    const body = await c.body();
    if (env.archived_at) throw bad("Archived environments are read-only");
    if (body.config !== undefined) {
      const type = obj(body.config)?.type;
      if (type !== undefined && type !== obj(env.config)?.type) {
        throw new SimulatorHttpError(400, "invalid_request_error", "config.type cannot change");
      }
      env.config = { ...obj(env.config), ...obj(body.config) };
    }
    if (body.name !== undefined) env.name = requireString(body, "name");
    if ("description" in body) env.description = body.description ?? null;
    if ("metadata" in body) env.metadata = patchMetadata(env.metadata, body.metadata);
    env.updated_at = now();
    return jsonResponse(env);
  });
  route("DELETE", "/v1/environments/:id", (c) => {
    getEnvironment(c.params.id);
    state.environments.delete(c.params.id);
    return new Response(null, { status: 204 });
  });
  route("POST", "/v1/environments/:id/archive", (c) => {
    const env = getEnvironment(c.params.id);
    env.archived_at ??= now();
    return jsonResponse(env);
  });

  function addWork(environmentId: string, data: Json): Json {
    const record: Json = {
      id: newId("work"),
      type: "work",
      environment_id: environmentId,
      data,
      state: "queued",
      metadata: {},
      secret: null,
      created_at: now(),
      stop_requested_at: null,
      stopped_at: null,
    };
    state.work.set(record.id as string, record);
    return record;
  }
  route("GET", "/v1/environments/:id/work/stats", (c) => {
    getEnvironment(c.params.id);
    const items = [...state.work.values()].filter((w) => w.environment_id === c.params.id);
    const queued = items.filter((w) => w.state === "queued");
    return jsonResponse({
      type: "work_queue_stats",
      depth: queued.length,
      pending: items.filter((w) => w.state === "starting" || w.state === "active").length,
      oldest_queued_at: queued.length > 0 ? queued[0].created_at : null,
      workers_polling: 0,
    });
  });
  route("POST", "/v1/environments/:id/work/:work_id/stop", async (c) => {
    getEnvironment(c.params.id);
    const body = await c.body();
    const work = state.work.get(c.params.work_id);
    if (!work || work.environment_id !== c.params.id) throw notFound(`Work ${c.params.work_id}`);
    work.stop_requested_at ??= now();
    work.state = body.force === true || work.state === "queued" ? "stopped" : "stopping";
    if (work.state === "stopped") work.stopped_at = now();
    return jsonResponse(work);
  });

  return { getAgent, getEnvironment, addWork, createAgent, createEnvironment };
}
