/**
 * Sessions in the provider simulator: creation (agent references, versions and overrides),
 * listing, updates, deletion and archiving, session resources and threads. The events of a
 * session and its turns are `_session_events.ts`'s.
 *
 * @module
 */
import { type Json, jsonResponse } from "./http.ts";
import type { SimulatedSession } from "./managed_agents.ts";
import type { AgentLookups } from "./_agents.ts";
import { costOfSession, pricesOfAgent, type SessionEvents } from "./_session_events.ts";
import {
  bad,
  newId,
  notFound,
  now,
  obj,
  paginate,
  patchMetadata,
  requireString,
  type Section,
  str,
  visible,
} from "./_support.ts";

/** What the other sections use of the sessions. */
export interface SessionLookups {
  /** Creates a session from a create body (a 400 or 404 when it is not a valid one). */
  createSession(body: Json): SimulatedSession;
}

/** Installs the session, resource and thread routes. */
export function installSessionRoutes(
  { state, route }: Section,
  agents: AgentLookups,
  events: SessionEvents,
): SessionLookups {
  const { getSession } = events;
  function resolveAgentRef(ref: unknown): Json {
    let id: string | undefined;
    let version: number | undefined;
    let overrides: Json = {};
    if (typeof ref === "string") id = ref;
    else {
      const o = obj(ref);
      if (!o || (o.type !== "agent" && o.type !== "agent_with_overrides")) {
        throw bad("agent must be an id or an agent reference");
      }
      id = str(o.id);
      version = typeof o.version === "number" ? o.version : undefined;
      if (o.type === "agent_with_overrides") {
        const { type: _t, id: _i, version: _v, ...rest } = o;
        overrides = rest;
      }
    }
    if (!id) throw bad("agent id is required");
    const agent = agents.getAgent(id);
    if (agent.record.archived_at) throw bad(`Agent ${id} is archived`);
    const base = version === undefined
      ? agent.record
      : agent.versions.find((v) => v.version === version);
    if (!base) throw bad(`Agent ${id} has no version ${version}`);
    const snapshot: Json = { ...structuredClone(base) };
    for (const [key, value] of Object.entries(overrides)) {
      if (value === null) snapshot[key] = Array.isArray(base[key]) ? [] : null;
      else snapshot[key] = key === "model" && typeof value === "string" ? { id: value } : value;
    }
    delete snapshot.created_at;
    delete snapshot.updated_at;
    delete snapshot.archived_at;
    delete snapshot.metadata;
    return snapshot;
  }
  /**
   * A budget of a create or update body, checked as the provider checks it: `{type: "limit",
   * max_list_cost: {amount, currency: "USD"}}`, every model of the session priced.
   */
  function budgetOf(value: unknown, agent: unknown): Json {
    const budget = obj(value);
    const max = obj(budget?.max_list_cost);
    if (
      budget?.type !== "limit" || typeof max?.amount !== "string" ||
      !/^(0|[1-9][0-9]{0,17})$/.test(max.amount) || max.currency !== "USD"
    ) {
      throw bad(
        'budget must be {type: "limit", max_list_cost: {amount: <integer string>, currency: "USD"}}',
      );
    }
    if (pricesOfAgent(state, agent) === null) {
      throw bad("model_not_budgetable: the session's model has no public list price");
    }
    return { type: "limit", max_list_cost: { amount: max.amount, currency: "USD" } };
  }
  function resourceRecord(resource: unknown): Json {
    const r = obj(resource);
    if (!r || typeof r.type !== "string") throw bad("resources[] entries need a type");
    const at = now();
    const { authorization_token: _token, ...rest } = r;
    return { id: newId("sesrsc"), ...rest, created_at: at, updated_at: at };
  }
  function createSession(body: Json): SimulatedSession {
    const agent = resolveAgentRef(body.agent);
    const environmentId = requireString(body, "environment_id");
    const env = agents.getEnvironment(environmentId);
    if (env.archived_at) throw bad(`Environment ${environmentId} is archived`);
    const budget = body.budget === undefined ? null : budgetOf(body.budget, agent);
    const at = now();
    const id = newId("sesn");
    const record: Json = {
      id,
      type: "session",
      status: "idle",
      agent,
      environment_id: environmentId,
      title: body.title ?? null,
      metadata: patchMetadata({}, body.metadata),
      resources: Array.isArray(body.resources) ? body.resources.map(resourceRecord) : [],
      vault_ids: Array.isArray(body.vault_ids) ? body.vault_ids : [],
      outcome_evaluations: [],
      usage: { input_tokens: 0, output_tokens: 0 },
      budget,
      stats: {},
      created_at: at,
      updated_at: at,
      archived_at: null,
    };
    if (typeof body.deployment_id === "string") record.deployment_id = body.deployment_id;
    for (const vaultId of record.vault_ids as unknown[]) {
      if (typeof vaultId !== "string" || !state.vaults.has(vaultId)) {
        throw bad(`Vault ${vaultId} not found`);
      }
    }
    const session: SimulatedSession = {
      record,
      events: [],
      threads: [{
        id: newId("sthr"),
        type: "session_thread",
        session_id: id,
        parent_thread_id: null,
        status: "idle",
        agent,
        created_at: at,
        updated_at: at,
        archived_at: null,
      }],
      pending: new Set(),
      subscribers: new Set(),
      timers: new Set(),
      budgetRemoved: false,
    };
    state.sessions.set(id, session);
    if (obj(env.config)?.type === "self_hosted") {
      agents.addWork(environmentId, { type: "session", id });
    }
    return session;
  }
  route("POST", "/v1/sessions", async (c) => {
    const body = await c.body();
    const session = createSession(body);
    if (Array.isArray(body.initial_events)) events.receiveEvents(session, body.initial_events);
    return jsonResponse(session.record);
  });
  route("GET", "/v1/sessions", (c) => {
    let records = [...state.sessions.values()].map((s) => s.record);
    records = visible(records, c.url);
    const agentId = c.url.searchParams.get("agent_id");
    if (agentId) records = records.filter((r) => obj(r.agent)?.id === agentId);
    const statuses = c.url.searchParams.getAll("statuses[]");
    if (statuses.length > 0) records = records.filter((r) => statuses.includes(r.status as string));
    if (c.url.searchParams.get("order") !== "asc") records = [...records].reverse();
    return jsonResponse(paginate(records, c.url, { prev: true }));
  });
  route("GET", "/v1/sessions/:id", (c) => jsonResponse(getSession(c.params.id).record));
  route("POST", "/v1/sessions/:id", async (c) => {
    const session = getSession(c.params.id);
    const body = await c.body();
    const record = session.record;
    if (record.archived_at) throw bad("Archived sessions are read-only");
    if (body.agent !== undefined || body.vault_ids !== undefined) {
      if (record.status !== "idle") throw bad("The session must be idle to change its agent");
    }
    if ("budget" in body) updateBudget(session, body.budget);
    if ("title" in body) record.title = body.title ?? null;
    if ("metadata" in body) record.metadata = patchMetadata(record.metadata, body.metadata);
    const agentPatch = obj(body.agent);
    if (agentPatch) {
      const agent = { ...obj(record.agent) };
      if (agentPatch.tools !== undefined) agent.tools = agentPatch.tools;
      if (agentPatch.mcp_servers !== undefined) agent.mcp_servers = agentPatch.mcp_servers;
      record.agent = agent;
    }
    if (Array.isArray(body.vault_ids)) record.vault_ids = body.vault_ids;
    record.updated_at = now();
    return jsonResponse(record);
  });
  /**
   * A budget update, as the provider rules it: only on a session created with one (never re-added
   * once removed), in any status but terminated, above what the session spent; announced with
   * `session.updated`.
   */
  function updateBudget(session: SimulatedSession, value: unknown): void {
    const record = session.record;
    if (record.status === "terminated") throw bad("A terminated session's budget cannot change");
    if (value === null) {
      if (record.budget !== null) {
        record.budget = null;
        session.budgetRemoved = true;
        events.emit(session, { type: "session.updated", budget: null });
      }
      return;
    }
    if (record.budget === null || session.budgetRemoved) {
      throw bad("budget_create_only: a budget can only be set on a session created with one");
    }
    const budget = budgetOf(value, record.agent);
    if (BigInt(obj(budget.max_list_cost)!.amount as string) <= costOfSession(session)) {
      throw bad("budget_not_raised: max_list_cost must be above the session's list cost");
    }
    record.budget = budget;
    events.emit(session, { type: "session.updated", budget });
  }
  route("DELETE", "/v1/sessions/:id", (c) => {
    const session = getSession(c.params.id);
    events.stopTurn(session);
    events.broadcast(session, { type: "session.deleted", id: newId("sevt"), processed_at: now() });
    for (const { subscriber } of session.subscribers) subscriber.close();
    state.sessions.delete(c.params.id);
    return jsonResponse({ id: c.params.id, type: "session_deleted" });
  });
  route("POST", "/v1/sessions/:id/archive", (c) => {
    const session = getSession(c.params.id);
    events.stopTurn(session);
    session.record.archived_at ??= now();
    session.record.status = "terminated";
    return jsonResponse(session.record);
  });

  // Session resources.
  function getResource(session: SimulatedSession, id: string): Json {
    const found = (session.record.resources as Json[]).find((r) => r.id === id);
    if (!found) throw notFound(`Resource ${id}`);
    return found;
  }
  route("POST", "/v1/sessions/:id/resources", async (c) => {
    const session = getSession(c.params.id);
    const body = await c.body();
    if (
      body.type !== "file" && body.type !== "code_repository" && body.type !== "github_repository"
    ) {
      throw bad("Only file and repository resources can be added");
    }
    if (body.type === "file") requireString(body, "file_id");
    const record = resourceRecord(body);
    if (body.type === "file" && record.mount_path === undefined) {
      record.mount_path = `/mnt/session/uploads/${body.file_id}`;
    }
    (session.record.resources as Json[]).push(record);
    return jsonResponse(record);
  });
  route("GET", "/v1/sessions/:id/resources", (c) => {
    return jsonResponse(paginate(getSession(c.params.id).record.resources as Json[], c.url));
  });
  route("GET", "/v1/sessions/:id/resources/:rid", (c) => {
    return jsonResponse(getResource(getSession(c.params.id), c.params.rid));
  });
  route("POST", "/v1/sessions/:id/resources/:rid", async (c) => {
    const resource = getResource(getSession(c.params.id), c.params.rid);
    const body = await c.body();
    if (resource.type === "file") throw bad("File resources cannot be updated");
    if (typeof body.authorization_token !== "string") throw bad("authorization_token is required");
    resource.updated_at = now();
    return jsonResponse(resource);
  });
  route("DELETE", "/v1/sessions/:id/resources/:rid", (c) => {
    const session = getSession(c.params.id);
    getResource(session, c.params.rid);
    session.record.resources = (session.record.resources as Json[]).filter((r) =>
      r.id !== c.params.rid
    );
    return jsonResponse({ id: c.params.rid, type: "session_resource_deleted" });
  });

  // Threads.
  function getThread(session: SimulatedSession, id: string): Json {
    const thread = session.threads.find((t) => t.id === id);
    if (!thread) throw notFound(`Thread ${id}`);
    return thread;
  }
  route("GET", "/v1/sessions/:id/threads", (c) => {
    let threads = getSession(c.params.id).threads;
    const statuses = c.url.searchParams.getAll("statuses[]");
    if (statuses.length > 0) threads = threads.filter((t) => statuses.includes(t.status as string));
    return jsonResponse(paginate(threads, c.url));
  });
  route("GET", "/v1/sessions/:id/threads/:tid", (c) => {
    return jsonResponse(getThread(getSession(c.params.id), c.params.tid));
  });
  route("POST", "/v1/sessions/:id/threads/:tid/archive", (c) => {
    const thread = getThread(getSession(c.params.id), c.params.tid);
    thread.archived_at ??= now();
    return jsonResponse(thread);
  });
  route("GET", "/v1/sessions/:id/threads/:tid/events", (c) => {
    const session = getSession(c.params.id);
    getThread(session, c.params.tid);
    const primary = session.threads[0].id === c.params.tid;
    const list = session.events.filter((e) =>
      primary ? e.session_thread_id === undefined : e.session_thread_id === c.params.tid
    );
    return events.listEvents(list, c.url);
  });
  route("GET", "/v1/sessions/:id/threads/:tid/stream", (c) => {
    const session = getSession(c.params.id);
    getThread(session, c.params.tid);
    return events.openStream(session, c.params.tid);
  });

  return { createSession };
}
