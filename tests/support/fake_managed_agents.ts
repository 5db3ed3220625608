/**
 * The managed-agents API of the fake provider, stateful: agents with versions, environments (with
 * a self-hosted work queue), sessions whose status changes as scripted turns run, events with ids
 * and SSE streams, threads, memory stores with path conflicts and the 405 rule, vaults,
 * credentials, deployments and deployment runs.
 *
 * A turn is scripted: a `user.message` runs {@linkcode ManagedAgentsState.script} (default: an
 * echo), framed by `session.status_running` and a final `session.status_idle` whose stop reason is
 * `requires_action` while tool calls wait for answers. Answers (`user.tool_confirmation`,
 * `user.custom_tool_result`) resume the turn with {@linkcode ManagedAgentsState.continuation}.
 *
 * @module
 */
import { createHash } from "node:crypto";
import {
  FakeHttpError,
  type FakeProvider,
  type FakeRouteContext,
  type FakeStreamSubscriber,
  type Json,
  jsonResponse,
  sseFrame,
} from "./fake_provider.ts";

/** The managed-agents beta value. */
export const FAKE_MANAGED_AGENTS_BETA = "managed-agents-2026-04-01";
/** The memory beta value the vendor's SDK sends (also accepted on memory routes). */
export const FAKE_MEMORY_BETA = "agent-memory-2026-07-22";

/** One scripted step: an event to emit (id and time are added), or a pause. */
export type FakeStep = Json | { delayMs: number };

/** What a script sees. */
export interface FakeScriptContext {
  /** The session record. */
  session: Json;
  /** Text of the `user.message` that started the turn (empty for continuations). */
  text: string;
  /** Every event of the session so far. */
  events: readonly Json[];
}

/** A turn script. */
export type FakeScript = (context: FakeScriptContext) => FakeStep[];

interface SessionState {
  record: Json;
  events: Json[];
  threads: Json[];
  pending: Set<string>;
  subscribers: Set<{ subscriber: FakeStreamSubscriber; threadId?: string; deltas?: boolean }>;
  timers: Set<ReturnType<typeof setTimeout>>;
}

interface CredentialState {
  record: Json;
  secret: Json | null;
}

/** The fake's state, exposed for assertions and scripting. */
export interface ManagedAgentsState {
  /** Agents by id; `versions` holds every version's snapshot. */
  agents: Map<string, { record: Json; versions: Json[] }>;
  /** Environments by id. */
  environments: Map<string, Json>;
  /** Sessions by id. */
  sessions: Map<string, SessionState>;
  /** Memory stores by id, with their memories and versions. */
  memoryStores: Map<string, { record: Json; memories: Map<string, Json>; versions: Json[] }>;
  /** Vaults by id, with their credentials. */
  vaults: Map<string, { record: Json; credentials: Map<string, CredentialState> }>;
  /** Deployments by id. */
  deployments: Map<string, Json>;
  /** Deployment runs by id. */
  deploymentRuns: Map<string, Json>;
  /** Work items by id. */
  work: Map<string, Json>;
  /** The turn script run on each `user.message`. */
  script: FakeScript;
  /** The script run once every pending tool call of a turn was answered. */
  continuation: FakeScript;
  /** The verdict of outcome iterations. */
  outcomeResult: string;
  /** Characters per `event_delta` of a message preview (streams that asked for deltas). */
  deltaChunk: number;
  /**
   * Told of each event as it is made, before any stream gets it (a benchmark takes its time here:
   * `processed_at` holds only milliseconds).
   */
  onEmit?: (sessionId: string, event: Json) => void;
  /** Emits an arbitrary event on a session (added to its history and streams). */
  emit(sessionId: string, event: Json): Json;
  /** Changes a session's status without an event (for `getRun` tests). */
  setStatus(sessionId: string, status: string): void;
  /** Adds a work item to an environment's queue. */
  addWork(environmentId: string): Json;
}

let counter = 0;
function newId(prefix: string): string {
  counter += 1;
  return `${prefix}_${Date.now().toString(36)}${String(counter).padStart(6, "0")}`;
}

function now(): string {
  return new Date().toISOString();
}

function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function obj(value: unknown): Json | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Json
    : undefined;
}

function bad(message: string): FakeHttpError {
  return new FakeHttpError(400, "invalid_request_error", message);
}

function notFound(what: string): FakeHttpError {
  return new FakeHttpError(404, "not_found_error", `${what} not found`);
}

function conflict(type: string, message: string, extra?: Json): FakeHttpError {
  return new FakeHttpError(409, type, message, { headers: { "x-should-retry": "false" }, extra });
}

function requireString(body: Json, key: string): string {
  const value = body[key];
  if (typeof value !== "string" || value === "") throw bad(`${key} is required`);
  return value;
}

function patchMetadata(current: unknown, patch: unknown): Json {
  const out: Json = { ...(obj(current) ?? {}) };
  const changes = obj(patch);
  if (!changes) return out;
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) delete out[key];
    else out[key] = value;
  }
  return out;
}

/** Cursor pagination over a list: `limit` (default 20, max 1000) and `page` (an offset token). */
function paginate(items: Json[], url: URL, options: { prev?: boolean } = {}): Json {
  const limit = Math.min(Math.max(Number(url.searchParams.get("limit") ?? 20) || 20, 1), 1000);
  const page = url.searchParams.get("page");
  let start = 0;
  if (page !== null) {
    const match = /^p(\d+)$/.exec(page);
    if (!match) throw bad("page is not a valid cursor");
    start = Number(match[1]);
  }
  const data = items.slice(start, start + limit);
  const next = start + limit < items.length ? `p${start + limit}` : null;
  const out: Json = { data, next_page: next };
  if (options.prev) out.prev_page = start > 0 ? `p${Math.max(0, start - limit)}` : null;
  return out;
}

function includeArchived(url: URL): boolean {
  return url.searchParams.get("include_archived") === "true";
}

function visible(records: Json[], url: URL): Json[] {
  return includeArchived(url) ? records : records.filter((r) => r.archived_at == null);
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Next UTC firing times of a five-field cron expression (`*`, lists, ranges, steps). */
function upcomingRuns(expression: string, count: number, from = new Date()): string[] {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) throw bad("schedule.expression must have five fields");
  const ranges: [number, number][] = [[0, 59], [0, 23], [1, 31], [1, 12], [0, 6]];
  const sets = fields.map((field, i) => {
    const [min, max] = ranges[i];
    const set = new Set<number>();
    for (const part of field.split(",")) {
      const m = /^(\*|\d+(?:-\d+)?)(?:\/(\d+))?$/.exec(part);
      if (!m) throw bad(`schedule.expression field "${field}" is not valid`);
      let [lo, hi] = m[1] === "*" ? [min, max] : m[1].split("-").map(Number);
      if (hi === undefined) hi = m[2] ? max : lo;
      const step = m[2] ? Number(m[2]) : 1;
      if (lo < min || hi > max || lo > hi || step < 1) {
        throw bad(`schedule.expression field "${field}" is out of range`);
      }
      for (let v = lo; v <= hi; v += step) set.add(v);
    }
    return set;
  });
  const out: string[] = [];
  const t = new Date(from.getTime());
  t.setUTCSeconds(0, 0);
  t.setUTCMinutes(t.getUTCMinutes() + 1);
  for (let guard = 0; out.length < count && guard < 600_000; guard++) {
    if (
      sets[0].has(t.getUTCMinutes()) && sets[1].has(t.getUTCHours()) &&
      sets[2].has(t.getUTCDate()) && sets[3].has(t.getUTCMonth() + 1) && sets[4].has(t.getUTCDay())
    ) out.push(t.toISOString());
    t.setUTCMinutes(t.getUTCMinutes() + 1);
  }
  return out;
}

const SECRET_KEYS = ["access_token", "token", "secret_value", "refresh_token", "client_secret"];

function stripSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripSecrets);
  const o = obj(value);
  if (!o) return value;
  const out: Json = {};
  for (const [key, inner] of Object.entries(o)) {
    if (!SECRET_KEYS.includes(key)) out[key] = stripSecrets(inner);
  }
  return out;
}

/** Installs the managed-agents routes on a fake provider and returns its state. */
export function installManagedAgentRoutes(fake: FakeProvider): ManagedAgentsState {
  const state: ManagedAgentsState = {
    agents: new Map(),
    environments: new Map(),
    sessions: new Map(),
    memoryStores: new Map(),
    vaults: new Map(),
    deployments: new Map(),
    deploymentRuns: new Map(),
    work: new Map(),
    script: (
      { text },
    ) => [{ type: "agent.message", content: [{ type: "text", text: `Echo: ${text}` }] }],
    continuation: () => [{ type: "agent.message", content: [{ type: "text", text: "Done" }] }],
    outcomeResult: "satisfied",
    deltaChunk: 4,
    emit: (sessionId, event) => emit(getSession(sessionId), event),
    setStatus: (sessionId, status) => {
      getSession(sessionId).record.status = status;
    },
    addWork: (environmentId) => addWork(environmentId, { type: "healthcheck", id: newId("hc") }),
  };
  const ma = { betas: [FAKE_MANAGED_AGENTS_BETA] };
  const mem = { betas: [FAKE_MANAGED_AGENTS_BETA, FAKE_MEMORY_BETA] };
  const route = (
    method: string,
    pattern: string,
    handler: (c: FakeRouteContext) => Response | Promise<Response>,
    options = ma,
  ) => fake.route(method, pattern, handler, options);

  fake.onClose(() => {
    for (const session of state.sessions.values()) {
      for (const timer of session.timers) clearTimeout(timer);
      session.timers.clear();
    }
  });

  // ---------------------------------------------------------------- agents
  function getAgent(id: string): { record: Json; versions: Json[] } {
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
  route("POST", "/v1/agents", async (c) => {
    const body = await c.body();
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
    return jsonResponse(record);
  });
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

  // ---------------------------------------------------------------- environments
  function getEnvironment(id: string): Json {
    const env = state.environments.get(id);
    if (!env) throw notFound(`Environment ${id}`);
    return env;
  }
  route("POST", "/v1/environments", async (c) => {
    const body = await c.body();
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
    return jsonResponse(record);
  });
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
        throw new FakeHttpError(400, "invalid_request_error", "config.type cannot change");
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

  // ---------------------------------------------------------------- work queue
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

  // ---------------------------------------------------------------- sessions
  function getSession(id: string): SessionState {
    const session = state.sessions.get(id);
    if (!session) throw notFound(`Session ${id}`);
    return session;
  }
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
    const agent = getAgent(id);
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
  function resourceRecord(resource: unknown): Json {
    const r = obj(resource);
    if (!r || typeof r.type !== "string") throw bad("resources[] entries need a type");
    const at = now();
    const { authorization_token: _token, ...rest } = r;
    return { id: newId("sesrsc"), ...rest, created_at: at, updated_at: at };
  }
  function createSession(body: Json): SessionState {
    const agent = resolveAgentRef(body.agent);
    const environmentId = requireString(body, "environment_id");
    const env = getEnvironment(environmentId);
    if (env.archived_at) throw bad(`Environment ${environmentId} is archived`);
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
    const session: SessionState = {
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
    };
    state.sessions.set(id, session);
    if (obj(env.config)?.type === "self_hosted") addWork(environmentId, { type: "session", id });
    return session;
  }
  route("POST", "/v1/sessions", async (c) => {
    const body = await c.body();
    const session = createSession(body);
    if (Array.isArray(body.initial_events)) receiveEvents(session, body.initial_events);
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
  route("DELETE", "/v1/sessions/:id", (c) => {
    const session = getSession(c.params.id);
    stopTurn(session);
    broadcast(session, { type: "session.deleted", id: newId("sevt"), processed_at: now() });
    for (const { subscriber } of session.subscribers) subscriber.close();
    state.sessions.delete(c.params.id);
    return jsonResponse({ id: c.params.id, type: "session_deleted" });
  });
  route("POST", "/v1/sessions/:id/archive", (c) => {
    const session = getSession(c.params.id);
    stopTurn(session);
    session.record.archived_at ??= now();
    session.record.status = "terminated";
    return jsonResponse(session.record);
  });

  // ---------------------------------------------------------------- session resources
  function getResource(session: SessionState, id: string): Json {
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

  // ---------------------------------------------------------------- events and turns
  function broadcast(session: SessionState, event: Json): void {
    const threadId = str(event.session_thread_id);
    const primary = session.threads[0].id;
    for (const { subscriber, threadId: filter, deltas } of session.subscribers) {
      if (filter !== undefined && filter !== (threadId ?? primary)) continue;
      if (deltas && event.type === "agent.message") subscriber.write(previewFrames(event));
      subscriber.write(sseFrame(event));
    }
  }
  function emit(session: SessionState, partial: Json): Json {
    if (fake.injectUnknownEvents) {
      const unknown = { type: "unknown.future_event", id: newId("sevt"), processed_at: now() };
      session.events.push(unknown);
      broadcast(session, unknown);
    }
    // `type` first, as the provider writes it (the clients read a frame's type from its text).
    const event: Json = { type: partial.type, id: newId("sevt"), processed_at: now(), ...partial };
    session.events.push(event);
    const type = event.type as string;
    const record = session.record;
    if (type === "session.status_running") record.status = "running";
    else if (type === "session.status_idle") record.status = "idle";
    else if (type === "session.status_rescheduled") record.status = "rescheduling";
    else if (type === "session.status_terminated") record.status = "terminated";
    else if (type === "session.thread_created") {
      session.threads.push({
        id: event.session_thread_id ?? newId("sthr"),
        type: "session_thread",
        session_id: record.id,
        parent_thread_id: session.threads[0].id,
        status: "running",
        agent: { type: "agent", name: event.agent_name ?? null },
        created_at: event.processed_at,
        updated_at: event.processed_at,
        archived_at: null,
      });
    } else if (type.startsWith("session.thread_status_")) {
      const thread = session.threads.find((t) => t.id === event.session_thread_id);
      if (thread) {
        thread.status = type.slice(22) === "rescheduled" ? "rescheduling" : type.slice(22);
      }
    } else if (type === "session.usage") {
      record.usage = event.usage;
    }
    if (type.startsWith("session.status_")) session.threads[0].status = record.status;
    if (
      (type === "agent.tool_use" || type === "agent.mcp_tool_use") &&
      event.evaluated_permission === "ask"
    ) session.pending.add(event.id as string);
    if (type === "agent.custom_tool_use") session.pending.add(event.id as string);
    state.onEmit?.(record.id as string, event);
    broadcast(session, event);
    return event;
  }
  function stopTurn(session: SessionState): void {
    for (const timer of session.timers) clearTimeout(timer);
    session.timers.clear();
  }
  function runSteps(session: SessionState, steps: FakeStep[]): void {
    const run = (index: number): void => {
      for (let i = index; i < steps.length; i++) {
        const step = steps[i];
        if (typeof (step as { delayMs?: unknown }).delayMs === "number") {
          const timer = setTimeout(() => {
            session.timers.delete(timer);
            if (state.sessions.get(session.record.id as string) === session) run(i + 1);
          }, (step as { delayMs: number }).delayMs);
          session.timers.add(timer);
          return;
        }
        emit(session, step as Json);
      }
      const last = session.events.at(-1)?.type as string | undefined;
      if (last === "session.status_idle" || last === "session.status_terminated") return;
      if (session.pending.size > 0) {
        emit(session, {
          type: "session.status_idle",
          stop_reason: { type: "requires_action", event_ids: [...session.pending] },
          stop_details: null,
        });
      } else {
        emit(session, {
          type: "session.status_idle",
          stop_reason: { type: "end_turn" },
          stop_details: null,
        });
      }
    };
    run(0);
  }
  function startTurn(session: SessionState, steps: FakeStep[]): void {
    emit(session, { type: "session.status_running" });
    runSteps(session, steps);
  }
  function answer(session: SessionState, toolUseId: string): void {
    if (!session.pending.has(toolUseId)) {
      throw bad(`Tool use ${toolUseId} is not awaiting an answer`);
    }
    session.pending.delete(toolUseId);
  }
  function afterAnswer(session: SessionState): void {
    if (session.pending.size > 0) {
      emit(session, {
        type: "session.status_idle",
        stop_reason: { type: "requires_action", event_ids: [...session.pending] },
        stop_details: null,
      });
      return;
    }
    startTurn(
      session,
      state.continuation({ session: session.record, text: "", events: session.events }),
    );
  }
  function textOf(content: unknown): string {
    if (!Array.isArray(content)) return "";
    return content.map((b) => obj(b)?.type === "text" ? String(obj(b)?.text ?? "") : "").join("");
  }
  const SENDABLE = new Set([
    "user.message",
    "user.interrupt",
    "user.tool_confirmation",
    "user.custom_tool_result",
    "user.tool_result",
    "user.define_outcome",
    "system.message",
  ]);
  function receiveEvents(session: SessionState, events: unknown[]): Json[] {
    if (session.record.archived_at || session.record.status === "terminated") {
      throw bad("The session no longer accepts events");
    }
    const parsed = events.map((e) => {
      const event = obj(e);
      if (!event || !SENDABLE.has(event.type as string)) {
        throw bad(`events[] has an unsupported type: ${obj(e)?.type}`);
      }
      return event;
    });
    // Validate answers before recording anything.
    const answering = new Set<string>();
    for (const event of parsed) {
      const id = event.type === "user.tool_confirmation"
        ? event.tool_use_id
        : event.type === "user.custom_tool_result"
        ? event.custom_tool_use_id
        : undefined;
      if (id === undefined) continue;
      if (typeof id !== "string" || !session.pending.has(id) || answering.has(id)) {
        throw bad(`Tool use ${id} is not awaiting an answer`);
      }
      if (
        event.type === "user.tool_confirmation" && event.result !== "allow" &&
        event.result !== "deny"
      ) {
        throw bad("result must be allow or deny");
      }
      answering.add(id);
    }
    const recorded: Json[] = [];
    for (const event of parsed) {
      const echoed = emit(session, event);
      recorded.push(echoed);
      switch (event.type) {
        case "user.message":
          startTurn(
            session,
            state.script({
              session: session.record,
              text: textOf(event.content),
              events: session.events,
            }),
          );
          break;
        case "user.interrupt":
          stopTurn(session);
          session.pending.clear();
          emit(session, {
            type: "session.status_idle",
            stop_reason: { type: "end_turn" },
            stop_details: null,
          });
          break;
        case "user.tool_confirmation": {
          const toolUseId = event.tool_use_id as string;
          answer(session, toolUseId);
          emit(session, {
            type: "agent.tool_result",
            tool_use_id: toolUseId,
            content: [{ type: "text", text: event.result === "allow" ? "ran" : "denied" }],
            is_error: event.result !== "allow",
          });
          afterAnswer(session);
          break;
        }
        case "user.custom_tool_result":
          answer(session, event.custom_tool_use_id as string);
          afterAnswer(session);
          break;
        case "user.define_outcome": {
          const outcomeId = newId("outc");
          const maxIterations = typeof event.max_iterations === "number" ? event.max_iterations : 3;
          if (maxIterations < 1 || maxIterations > 20) throw bad("max_iterations must be 1 to 20");
          echoed.outcome_id = outcomeId;
          startTurn(session, [
            { type: "span.outcome_evaluation_start", outcome_id: outcomeId, iteration: 0 },
            { type: "agent.message", content: [{ type: "text", text: "Working on the outcome" }] },
            { type: "span.outcome_evaluation_ongoing", outcome_id: outcomeId, iteration: 0 },
            {
              type: "span.outcome_evaluation_end",
              outcome_id: outcomeId,
              iteration: 0,
              result: state.outcomeResult,
              explanation: `Graded ${state.outcomeResult}`,
            },
          ]);
          (session.record.outcome_evaluations as Json[]).push({
            type: "outcome_evaluation",
            outcome_id: outcomeId,
            description: event.description,
            iteration: 0,
            result: state.outcomeResult,
          });
          break;
        }
      }
    }
    return recorded;
  }
  route("POST", "/v1/sessions/:id/events", async (c) => {
    const session = getSession(c.params.id);
    const body = await c.body();
    if (!Array.isArray(body.events) || body.events.length === 0) {
      throw bad("events must be a non-empty array");
    }
    return jsonResponse({ data: receiveEvents(session, body.events) });
  });
  function listEvents(events: Json[], url: URL): Response {
    let list = events;
    const types = url.searchParams.getAll("types[]");
    if (types.length > 0) list = list.filter((e) => types.includes(e.type as string));
    if (url.searchParams.get("order") === "desc") list = [...list].reverse();
    return jsonResponse(paginate(list, url));
  }
  route("GET", "/v1/sessions/:id/events", (c) => listEvents(getSession(c.params.id).events, c.url));
  /**
   * The preview of an `agent.message` for a stream that asked for `event_deltas[]=agent.message`:
   * an `event_start` with the final event's id, then its text as `event_delta` frames of at most
   * `state.deltaChunk` characters (the final buffered event follows).
   */
  function previewFrames(event: Json): string {
    let frames = sseFrame({ type: "event_start", event: { type: event.type, id: event.id } });
    const text = textOf(event.content);
    const size = Math.max(1, state.deltaChunk);
    for (let i = 0; i < text.length; i += size) {
      frames += sseFrame({
        type: "event_delta",
        event_id: event.id,
        delta: { type: "content_delta", content: { type: "text", text: text.slice(i, i + size) } },
      });
    }
    return frames;
  }
  function openStream(session: SessionState, threadId?: string, url?: URL): Response {
    const deltas = url?.searchParams.getAll("event_deltas[]").includes("agent.message") ?? false;
    return fake.sseResponse((subscriber) => {
      const entry = { subscriber, threadId, deltas };
      session.subscribers.add(entry);
      return () => session.subscribers.delete(entry);
    });
  }
  route(
    "GET",
    "/v1/sessions/:id/events/stream",
    (c) => openStream(getSession(c.params.id), undefined, c.url),
  );

  // ---------------------------------------------------------------- threads
  function getThread(session: SessionState, id: string): Json {
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
    const events = session.events.filter((e) =>
      primary ? e.session_thread_id === undefined : e.session_thread_id === c.params.tid
    );
    return listEvents(events, c.url);
  });
  route("GET", "/v1/sessions/:id/threads/:tid/stream", (c) => {
    const session = getSession(c.params.id);
    getThread(session, c.params.tid);
    return openStream(session, c.params.tid);
  });

  // ---------------------------------------------------------------- memory stores
  function getStore(id: string) {
    const store = state.memoryStores.get(id);
    if (!store) throw notFound(`Memory store ${id}`);
    return store;
  }
  route("POST", "/v1/memory_stores", async (c) => {
    const body = await c.body();
    requireString(body, "name");
    const at = now();
    const record: Json = {
      id: newId("memstore"),
      type: "memory_store",
      name: body.name,
      description: body.description ?? "",
      metadata: patchMetadata({}, body.metadata),
      created_at: at,
      updated_at: at,
      archived_at: null,
    };
    state.memoryStores.set(record.id as string, { record, memories: new Map(), versions: [] });
    return jsonResponse(record);
  }, mem);
  route("GET", "/v1/memory_stores", (c) => {
    const records = [...state.memoryStores.values()].map((s) => s.record);
    return jsonResponse(paginate(visible(records, c.url), c.url));
  }, mem);
  route("GET", "/v1/memory_stores/:id", (c) => jsonResponse(getStore(c.params.id).record), mem);
  route("POST", "/v1/memory_stores/:id", async (c) => {
    const store = getStore(c.params.id);
    const body = await c.body();
    if (store.record.archived_at) throw bad("Archived memory stores are read-only");
    if (body.name !== undefined) store.record.name = requireString(body, "name");
    if (body.description !== undefined) store.record.description = body.description;
    if ("metadata" in body) {
      store.record.metadata = patchMetadata(store.record.metadata, body.metadata);
    }
    store.record.updated_at = now();
    return jsonResponse(store.record);
  }, mem);
  route("DELETE", "/v1/memory_stores/:id", (c) => {
    getStore(c.params.id);
    state.memoryStores.delete(c.params.id);
    return jsonResponse({ id: c.params.id, type: "memory_store_deleted" });
  }, mem);
  route("POST", "/v1/memory_stores/:id/archive", (c) => {
    const store = getStore(c.params.id);
    store.record.archived_at ??= now();
    return jsonResponse(store.record);
  }, mem);

  // ---------------------------------------------------------------- memories
  function memoryView(memory: Json, view: string | null, fallback: "basic" | "full"): Json {
    return (view ?? fallback) === "full" ? memory : { ...memory, content: null };
  }
  function writableStore(id: string) {
    const store = getStore(id);
    if (store.record.archived_at) throw bad("Archived memory stores are read-only");
    return store;
  }
  function addVersion(store: ReturnType<typeof getStore>, memory: Json, operation: string): void {
    const version: Json = {
      id: newId("memver"),
      type: "memory_version",
      memory_id: memory.id,
      memory_store_id: memory.memory_store_id,
      operation,
      path: memory.path,
      content: operation === "deleted" ? null : memory.content,
      content_sha256: memory.content_sha256,
      content_size_bytes: memory.content_size_bytes,
      created_by: { type: "api_actor", api_key_id: "apikey_fake" },
      redacted_at: null,
      redacted_by: null,
      created_at: now(),
    };
    store.versions.push(version);
    memory.memory_version_id = version.id;
  }
  function checkPath(path: unknown): string {
    if (typeof path !== "string" || !path.startsWith("/") || path.length > 1024) {
      throw bad("path must start with / and be at most 1024 bytes");
    }
    return path;
  }
  function pathTaken(store: ReturnType<typeof getStore>, path: string, except?: string): void {
    for (const memory of store.memories.values()) {
      if (memory.path === path && memory.id !== except) {
        throw conflict("memory_path_conflict_error", `A memory already exists at ${path}`, {
          conflicting_memory_id: memory.id,
          conflicting_path: path,
        });
      }
    }
  }
  route("POST", "/v1/memory_stores/:id/memories", async (c) => {
    const store = writableStore(c.params.id);
    const body = await c.body();
    const path = checkPath(body.path);
    const content = typeof body.content === "string" ? body.content : "";
    pathTaken(store, path);
    const at = now();
    const memory: Json = {
      id: newId("mem"),
      type: "memory",
      memory_store_id: c.params.id,
      path,
      content,
      content_sha256: sha256(content),
      content_size_bytes: new TextEncoder().encode(content).length,
      memory_version_id: null,
      created_at: at,
      updated_at: at,
    };
    store.memories.set(memory.id as string, memory);
    addVersion(store, memory, "created");
    return jsonResponse(memoryView(memory, c.url.searchParams.get("view"), "full"));
  }, mem);
  route("GET", "/v1/memory_stores/:id/memories", (c) => {
    const store = getStore(c.params.id);
    const prefix = c.url.searchParams.get("path_prefix") ?? "/";
    const depth = Number(c.url.searchParams.get("depth") ?? 0);
    const view = c.url.searchParams.get("view");
    const items: Json[] = [];
    const prefixes = new Set<string>();
    for (const memory of store.memories.values()) {
      const path = memory.path as string;
      if (!path.startsWith(prefix)) continue;
      const rest = path.slice(prefix.length).split("/").filter((s) => s !== "");
      if (depth > 0 && rest.length > depth) {
        const folder = prefix + rest.slice(0, depth).join("/") + "/";
        if (!prefixes.has(folder)) {
          prefixes.add(folder);
          items.push({ type: "memory_prefix", path: folder });
        }
        continue;
      }
      items.push(memoryView(memory, view, "basic"));
    }
    return jsonResponse(paginate(items, c.url));
  }, mem);
  function getMemory(c: FakeRouteContext) {
    const store = getStore(c.params.id);
    const memory = store.memories.get(c.params.mid);
    if (!memory) throw notFound(`Memory ${c.params.mid}`);
    return { store, memory };
  }
  route("GET", "/v1/memory_stores/:id/memories/:mid", (c) => {
    return jsonResponse(memoryView(getMemory(c).memory, c.url.searchParams.get("view"), "full"));
  }, mem);
  route("POST", "/v1/memory_stores/:id/memories/:mid", async (c) => {
    writableStore(c.params.id);
    const { store, memory } = getMemory(c);
    const body = await c.body();
    const precondition = obj(body.precondition);
    if (precondition && precondition.content_sha256 !== memory.content_sha256) {
      throw conflict("memory_precondition_failed_error", "The memory changed since it was read");
    }
    if (body.path !== undefined) {
      const path = checkPath(body.path);
      pathTaken(store, path, memory.id as string);
      memory.path = path;
    }
    if (typeof body.content === "string") {
      memory.content = body.content;
      memory.content_sha256 = sha256(body.content);
      memory.content_size_bytes = new TextEncoder().encode(body.content).length;
    }
    memory.updated_at = now();
    addVersion(store, memory, "modified");
    return jsonResponse(memoryView(memory, c.url.searchParams.get("view"), "full"));
  }, mem);
  route("DELETE", "/v1/memory_stores/:id/memories/:mid", (c) => {
    writableStore(c.params.id);
    const { store, memory } = getMemory(c);
    const expected = c.url.searchParams.get("expected_content_sha256");
    if (expected !== null && expected !== memory.content_sha256) {
      throw conflict("memory_precondition_failed_error", "The memory changed since it was read");
    }
    addVersion(store, memory, "deleted");
    store.memories.delete(memory.id as string);
    return jsonResponse({ id: memory.id, type: "memory_deleted" });
  }, mem);

  // ---------------------------------------------------------------- memory versions
  route("GET", "/v1/memory_stores/:id/memory_versions", (c) => {
    let versions = [...getStore(c.params.id).versions].reverse();
    const memoryId = c.url.searchParams.get("memory_id");
    if (memoryId) versions = versions.filter((v) => v.memory_id === memoryId);
    return jsonResponse(paginate(versions, c.url));
  }, mem);
  function getVersion(c: FakeRouteContext): Json {
    const version = getStore(c.params.id).versions.find((v) => v.id === c.params.vid);
    if (!version) throw notFound(`Memory version ${c.params.vid}`);
    return version;
  }
  route(
    "GET",
    "/v1/memory_stores/:id/memory_versions/:vid",
    (c) => jsonResponse(getVersion(c)),
    mem,
  );
  route("POST", "/v1/memory_stores/:id/memory_versions/:vid/redact", (c) => {
    const version = getVersion(c);
    if (!version.redacted_at) {
      Object.assign(version, {
        path: null,
        content: null,
        content_sha256: null,
        content_size_bytes: null,
        redacted_at: now(),
        redacted_by: { type: "api_actor", api_key_id: "apikey_fake" },
      });
    }
    return jsonResponse(version);
  }, mem);

  // ---------------------------------------------------------------- vaults and credentials
  function getVault(id: string) {
    const vault = state.vaults.get(id);
    if (!vault) throw notFound(`Vault ${id}`);
    return vault;
  }
  route("POST", "/v1/vaults", async (c) => {
    const body = await c.body();
    requireString(body, "display_name");
    const at = now();
    const record: Json = {
      id: newId("vlt"),
      type: "vault",
      display_name: body.display_name,
      metadata: patchMetadata({}, body.metadata),
      created_at: at,
      updated_at: at,
      archived_at: null,
    };
    state.vaults.set(record.id as string, { record, credentials: new Map() });
    return jsonResponse(record);
  });
  route("GET", "/v1/vaults", (c) => {
    const records = [...state.vaults.values()].map((v) => v.record);
    return jsonResponse(paginate(visible(records, c.url), c.url));
  });
  route("GET", "/v1/vaults/:id", (c) => jsonResponse(getVault(c.params.id).record));
  route("POST", "/v1/vaults/:id", async (c) => {
    const vault = getVault(c.params.id);
    const body = await c.body();
    if (vault.record.archived_at) throw bad("Archived vaults are read-only");
    if (body.display_name !== undefined) {
      vault.record.display_name = requireString(body, "display_name");
    }
    if ("metadata" in body) {
      vault.record.metadata = patchMetadata(vault.record.metadata, body.metadata);
    }
    vault.record.updated_at = now();
    return jsonResponse(vault.record);
  });
  route("DELETE", "/v1/vaults/:id", (c) => {
    getVault(c.params.id);
    state.vaults.delete(c.params.id);
    return jsonResponse({ id: c.params.id, type: "vault_deleted" });
  });
  route("POST", "/v1/vaults/:id/archive", (c) => {
    const vault = getVault(c.params.id);
    const at = now();
    vault.record.archived_at ??= at;
    for (const credential of vault.credentials.values()) {
      credential.record.archived_at ??= at;
      credential.secret = null;
    }
    return jsonResponse(vault.record);
  });
  function getCredential(c: FakeRouteContext): CredentialState {
    const credential = getVault(c.params.id).credentials.get(c.params.cid);
    if (!credential) throw notFound(`Credential ${c.params.cid}`);
    return credential;
  }
  route("POST", "/v1/vaults/:id/credentials", async (c) => {
    const vault = getVault(c.params.id);
    if (vault.record.archived_at) throw bad("Archived vaults are read-only");
    const body = await c.body();
    const auth = obj(body.auth);
    const type = auth?.type;
    if (
      !auth || (type !== "mcp_oauth" && type !== "static_bearer" && type !== "environment_variable")
    ) {
      throw bad("auth.type must be mcp_oauth, static_bearer or environment_variable");
    }
    const url = str(auth.mcp_server_url);
    if (type !== "environment_variable") {
      if (!url) throw bad("auth.mcp_server_url is required");
      for (const other of vault.credentials.values()) {
        if (!other.record.archived_at && obj(other.record.auth)?.mcp_server_url === url) {
          throw conflict("conflict_error", `An active credential already serves ${url}`);
        }
      }
    }
    const at = now();
    const record: Json = {
      id: newId("vcrd"),
      type: "vault_credential",
      vault_id: c.params.id,
      display_name: body.display_name ?? null,
      metadata: patchMetadata({}, body.metadata),
      auth: stripSecrets(auth),
      created_at: at,
      updated_at: at,
      archived_at: null,
    };
    vault.credentials.set(record.id as string, { record, secret: auth });
    return jsonResponse(record);
  });
  route("GET", "/v1/vaults/:id/credentials", (c) => {
    const records = [...getVault(c.params.id).credentials.values()].map((x) => x.record);
    return jsonResponse(paginate(visible(records, c.url), c.url));
  });
  route("GET", "/v1/vaults/:id/credentials/:cid", (c) => jsonResponse(getCredential(c).record));
  route("POST", "/v1/vaults/:id/credentials/:cid", async (c) => {
    const credential = getCredential(c);
    const body = await c.body();
    if (credential.record.archived_at) throw bad("Archived credentials are read-only");
    const auth = obj(body.auth);
    if (auth) {
      const current = obj(credential.record.auth) ?? {};
      const refresh = obj(auth.refresh);
      const currentRefresh = obj(current.refresh);
      if (
        (auth.mcp_server_url !== undefined && auth.mcp_server_url !== current.mcp_server_url) ||
        (refresh?.token_endpoint !== undefined &&
          refresh.token_endpoint !== currentRefresh?.token_endpoint) ||
        (refresh?.client_id !== undefined && refresh.client_id !== currentRefresh?.client_id) ||
        (auth.type !== undefined && auth.type !== current.type)
      ) {
        throw bad("mcp_server_url, token_endpoint, client_id and type are locked");
      }
      credential.secret = { ...credential.secret, ...auth };
      credential.record.auth = stripSecrets({
        ...current,
        ...auth,
        refresh: refresh ? { ...currentRefresh, ...refresh } : current.refresh,
      });
    }
    if ("display_name" in body) credential.record.display_name = body.display_name ?? null;
    if ("metadata" in body) {
      credential.record.metadata = patchMetadata(credential.record.metadata, body.metadata);
    }
    credential.record.updated_at = now();
    return jsonResponse(credential.record);
  });
  route("DELETE", "/v1/vaults/:id/credentials/:cid", (c) => {
    getCredential(c);
    getVault(c.params.id).credentials.delete(c.params.cid);
    return jsonResponse({ id: c.params.cid, type: "vault_credential_deleted" });
  });
  route("POST", "/v1/vaults/:id/credentials/:cid/archive", (c) => {
    const credential = getCredential(c);
    credential.record.archived_at ??= now();
    credential.secret = null;
    return jsonResponse(credential.record);
  });
  route("POST", "/v1/vaults/:id/credentials/:cid/mcp_oauth_validate", (c) => {
    const credential = getCredential(c);
    if (obj(credential.record.auth)?.type !== "mcp_oauth") {
      throw bad("Only mcp_oauth credentials can be validated");
    }
    const secret = credential.secret;
    return jsonResponse({
      type: "vault_credential_validation",
      credential_id: c.params.cid,
      vault_id: c.params.id,
      status: secret && typeof secret.access_token === "string" ? "valid" : "invalid",
      has_refresh_token: typeof obj(secret?.refresh)?.refresh_token === "string",
      validated_at: now(),
      mcp_probe: null,
      refresh: null,
    });
  });

  // ---------------------------------------------------------------- deployments
  function getDeployment(id: string): Json {
    const deployment = state.deployments.get(id);
    if (!deployment) throw notFound(`Deployment ${id}`);
    return deployment;
  }
  function checkSchedule(schedule: unknown): Json | null {
    if (schedule === undefined || schedule === null) return null;
    const s = obj(schedule);
    if (
      !s || s.type !== "cron" || typeof s.expression !== "string" || typeof s.timezone !== "string"
    ) {
      throw bad("schedule must be {type: cron, expression, timezone}");
    }
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: s.timezone });
    } catch {
      throw bad(`schedule.timezone ${s.timezone} is not an IANA time zone`);
    }
    return { ...s, last_run_at: null, upcoming_runs_at: upcomingRuns(s.expression, 5) };
  }
  route("POST", "/v1/deployments", async (c) => {
    const body = await c.body();
    requireString(body, "name");
    const agentRef = body.agent;
    const agentId = typeof agentRef === "string" ? agentRef : str(obj(agentRef)?.id);
    if (!agentId) throw bad("agent is required");
    getAgent(agentId);
    getEnvironment(requireString(body, "environment_id"));
    const initial = body.initial_events;
    if (!Array.isArray(initial) || initial.length < 1 || initial.length > 50) {
      throw bad("initial_events must hold 1 to 50 events");
    }
    if (!initial.some((e) => obj(e)?.type === "user.message")) {
      throw bad("initial_events must include a user.message");
    }
    const at = now();
    const version = typeof obj(agentRef)?.version === "number" ? obj(agentRef)?.version : null;
    const record: Json = {
      id: newId("depl"),
      type: "deployment",
      name: body.name,
      description: body.description ?? null,
      agent: { type: "agent", id: agentId, version },
      environment_id: body.environment_id,
      initial_events: initial,
      resources: body.resources ?? [],
      vault_ids: body.vault_ids ?? [],
      metadata: patchMetadata({}, body.metadata),
      status: "active",
      paused_reason: null,
      schedule: checkSchedule(body.schedule),
      created_at: at,
      updated_at: at,
      archived_at: null,
    };
    state.deployments.set(record.id as string, record);
    return jsonResponse(record);
  });
  route("GET", "/v1/deployments", (c) => {
    return jsonResponse(paginate(visible([...state.deployments.values()], c.url), c.url));
  });
  route("GET", "/v1/deployments/:id", (c) => jsonResponse(getDeployment(c.params.id)));
  function mutableDeployment(id: string): Json {
    const deployment = getDeployment(id);
    if (deployment.archived_at) throw bad("Archived deployments are immutable");
    return deployment;
  }
  route("POST", "/v1/deployments/:id/pause", (c) => {
    const deployment = mutableDeployment(c.params.id);
    deployment.status = "paused";
    deployment.paused_reason = { type: "manual" };
    return jsonResponse(deployment);
  });
  route("POST", "/v1/deployments/:id/unpause", (c) => {
    const deployment = mutableDeployment(c.params.id);
    deployment.status = "active";
    deployment.paused_reason = null;
    const schedule = obj(deployment.schedule);
    if (schedule) schedule.upcoming_runs_at = upcomingRuns(schedule.expression as string, 5);
    return jsonResponse(deployment);
  });
  route("POST", "/v1/deployments/:id/archive", (c) => {
    const deployment = getDeployment(c.params.id);
    deployment.archived_at ??= now();
    deployment.schedule = deployment.schedule
      ? { ...obj(deployment.schedule), upcoming_runs_at: [] }
      : null;
    return jsonResponse(deployment);
  });
  route("POST", "/v1/deployments/:id/run", (c) => {
    const deployment = mutableDeployment(c.params.id);
    const agent = obj(deployment.agent)!;
    const run: Json = {
      id: newId("drun"),
      type: "deployment_run",
      deployment_id: deployment.id,
      agent: { ...agent },
      trigger_context: { type: "manual" },
      session_id: null,
      error: null,
      created_at: now(),
    };
    try {
      const session = createSession({
        agent: agent.version === null
          ? agent.id
          : { type: "agent", id: agent.id, version: agent.version },
        environment_id: deployment.environment_id,
        resources: deployment.resources,
        vault_ids: deployment.vault_ids,
        deployment_id: deployment.id,
      });
      receiveEvents(session, deployment.initial_events as unknown[]);
      run.session_id = session.record.id;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      run.error = {
        type: /agent/i.test(message)
          ? "agent_archived_error"
          : /environment/i.test(message)
          ? "environment_archived_error"
          : "unknown_error",
        message,
      };
    }
    state.deploymentRuns.set(run.id as string, run);
    return jsonResponse(run);
  });
  route("GET", "/v1/deployment_runs", (c) => {
    let runs = [...state.deploymentRuns.values()].reverse();
    const deploymentId = c.url.searchParams.get("deployment_id");
    if (deploymentId) runs = runs.filter((r) => r.deployment_id === deploymentId);
    const hasError = c.url.searchParams.get("has_error");
    if (hasError === "true") runs = runs.filter((r) => r.error !== null);
    if (hasError === "false") runs = runs.filter((r) => r.session_id !== null);
    return jsonResponse(paginate(runs, c.url));
  });
  route("GET", "/v1/deployment_runs/:id", (c) => {
    const run = state.deploymentRuns.get(c.params.id);
    if (!run) throw notFound(`Deployment run ${c.params.id}`);
    return jsonResponse(run);
  });

  return state;
}
