/**
 * `ProviderManagedAgentClient`: the stateful managed-agents client. It serves the universal run
 * contract on sessions (a run is a session; the run id is the session id) and every operation of
 * the managed-agents API: agents, environments, sessions, session resources, events, threads,
 * memory stores, memories, memory versions, vaults, credentials, the self-hosted work queue,
 * deployments and deployment runs.
 *
 * @module
 */
import {
  type FetchLike,
  HttpTransport,
  type ProviderTraceCallback,
  type QueryValue,
} from "../_http.ts";
import { providerCapabilities } from "../capabilities.ts";
import type {
  RunStreamHandlers,
  RunStreamOptions,
  RunStreamResult,
  RuntimeBatchRequest,
  RuntimeBatchResult,
  RuntimeBatchStatus,
  RuntimeCapabilities,
  RuntimeClient,
  RuntimeRunStartBody,
  RuntimeRunStatus,
} from "../contract.ts";
import { ProviderApiError, ProviderConnectionError, ProviderUnsupportedError } from "../errors.ts";
import { kickoffEvents, resolveRunTarget, runEventLoop } from "./_run.ts";
import { MemoryPathConflictError } from "./errors.ts";
import {
  PROVIDER_COLLECTION_PATHS,
  PROVIDER_MANAGED_AGENTS_BETA,
  providerAgentPath,
  providerCredentialPath,
  providerDeploymentPath,
  providerDeploymentRunPath,
  providerEnvironmentPath,
  providerMemoryPath,
  providerMemoryStorePath,
  providerMemoryVersionPath,
  providerSessionArchivePath,
  providerSessionEventsPath,
  providerSessionEventStreamPath,
  providerSessionPath,
  providerSessionResourcePath,
  providerSessionThreadPath,
  providerVaultPath,
  providerWorkPath,
} from "./paths.ts";
import { numericUsage, sessionStatusToRunState } from "./stream.ts";
import type {
  ConfirmToolParams,
  CreateCredentialParams,
  CreateManagedAgentDeploymentParams,
  CreateManagedAgentEnvironmentParams,
  CreateManagedAgentParams,
  CreateManagedAgentSessionParams,
  CreateMemoryParams,
  CreateMemoryStoreParams,
  CreateVaultParams,
  DefineOutcomeParams,
  GetManagedAgentOptions,
  InterruptSessionOptions,
  JsonObject,
  ListDeploymentRunsParams,
  ListManagedAgentDeploymentsParams,
  ListManagedAgentEnvironmentsParams,
  ListManagedAgentSessionsParams,
  ListManagedAgentsParams,
  ListManagedAgentThreadsParams,
  ListMemoriesParams,
  ListMemoryStoresParams,
  ListSessionEventsParams,
  ManagedAgentAgent,
  ManagedAgentCreatedAtRange,
  ManagedAgentCredential,
  ManagedAgentCredentialValidation,
  ManagedAgentDeployment,
  ManagedAgentDeploymentRun,
  ManagedAgentEnvironment,
  ManagedAgentEvent,
  ManagedAgentListOptions,
  ManagedAgentMemory,
  ManagedAgentMemoryStore,
  ManagedAgentMemoryVersion,
  ManagedAgentRequestOptions,
  ManagedAgentResource,
  ManagedAgentSession,
  ManagedAgentThread,
  ManagedAgentVault,
  ManagedAgentWorkQueueStats,
  RespondCustomToolParams,
  StopWorkOptions,
  UpdateCredentialParams,
  UpdateManagedAgentEnvironmentParams,
  UpdateManagedAgentParams,
  UpdateManagedAgentSessionParams,
  UpdateMemoryParams,
  UpdateMemoryStoreParams,
  UpdateSessionResourceParams,
  UpdateVaultParams,
} from "./types.ts";

/** Settings of a {@linkcode ProviderManagedAgentClient}. */
export interface ProviderManagedAgentClientOptions {
  /** Sent as `x-api-key`. Provide this or `authToken`. */
  apiKey?: string;
  /** OAuth or long-term bearer token, sent as `Authorization: Bearer`; wins over `apiKey`. */
  authToken?: string;
  /** The persisted agent runs use unless `metadata.agent_id` names another. */
  agentId?: string;
  /** The environment runs use unless `metadata.environment_id` names another. */
  environmentId?: string;
  /** Sent as `provider-version` (default `2026-10-21`). */
  providerVersion?: string;
  /** Unary call timeout in ms (default 60000). */
  defaultTimeoutMs?: number;
  /** Time allowed until an event stream's first byte, in ms (default 10 minutes); never caps a stream. */
  streamTimeoutMs?: number;
  /** Base URL of the provider API (required). */
  baseUrl?: string;
  /** The fetch to use (default `globalThis.fetch`). */
  fetchImpl?: FetchLike;
  /** Receives one trace per request attempt (method, path, status, duration, attempt, request id). */
  onTrace?: ProviderTraceCallback;
}

/** The default environment configuration: a cloud container with unrestricted networking. */
const DEFAULT_ENVIRONMENT_CONFIG: JsonObject = Object.freeze({
  type: "cloud",
  networking: Object.freeze({ type: "unrestricted" }),
}) as JsonObject;

const NO_BATCHES = "managed-agent sessions have no batch API; use the messages client";

interface Page<T> {
  data?: T[];
  next_page?: string | null;
}

/** Copies the entries whose value is not undefined (null is kept: it clears on updates). */
function compact(entries: Record<string, unknown>): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(entries)) {
    if (value !== undefined) out[key] = value;
  }
  return out;
}

function pageQuery(options: ManagedAgentListOptions | undefined): Record<string, QueryValue> {
  return { limit: options?.limit, page: options?.page };
}

function range(value: ManagedAgentCreatedAtRange | undefined): QueryValue {
  return value as Record<string, string | undefined> | undefined;
}

function agentReference(
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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The managed-agents client. A run is a session of a persisted agent in an environment, both
 * created beforehand (`createAgent`, `createEnvironment`) and named by the `agentId` and
 * `environmentId` options or per run by `metadata.agent_id` / `metadata.environment_id`.
 *
 * Every request sends `provider-beta: managed-agents-2026-04-01`. Lists walk every page and
 * return arrays (`limit` is the page size); each has an `iterate…` twin yielding records lazily.
 * Deletes resolve to nothing. Provider errors are {@linkcode ProviderApiError}s (a memory path
 * conflict is the narrower {@linkcode MemoryPathConflictError}); failed connections, timeouts and
 * aborts are `ProviderConnectionError`, `ProviderTimeoutError` and `ProviderAbortError`.
 *
 * @example
 * ```ts
 * import { ProviderManagedAgentClient } from "@automation/runtime/client";
 *
 * const client = new ProviderManagedAgentClient({
 *   baseUrl: "https://provider.example",
 *   apiKey: "<API_KEY>",
 *   agentId: "agent_123",
 *   environmentId: "env_123",
 * });
 * const result = await client.streamRun({ input: "Summarize the repository" }, {
 *   onEvent(event) {
 *     if (event.type === "message.completed") console.log(event.text);
 *   },
 * });
 * console.log(result.terminal?.type); // "run.completed"
 * ```
 */
export class ProviderManagedAgentClient implements RuntimeClient {
  readonly #http: HttpTransport;
  readonly #agentId: string | undefined;
  readonly #environmentId: string | undefined;

  /**
   * Creates the client. A missing `baseUrl`, or neither `apiKey` nor `authToken`, is a
   * `TypeError`.
   */
  constructor(options: ProviderManagedAgentClientOptions) {
    if (typeof options !== "object" || options === null) {
      throw new TypeError("options are required");
    }
    if (!options.apiKey && !options.authToken) {
      throw new TypeError("apiKey or authToken is required");
    }
    this.#http = new HttpTransport({
      baseUrl: options.baseUrl,
      apiKey: options.apiKey,
      authToken: options.authToken,
      providerVersion: options.providerVersion,
      betas: [PROVIDER_MANAGED_AGENTS_BETA],
      defaultTimeoutMs: options.defaultTimeoutMs,
      streamTimeoutMs: options.streamTimeoutMs,
      fetchImpl: options.fetchImpl,
      onTrace: options.onTrace,
    });
    this.#agentId = options.agentId;
    this.#environmentId = options.environmentId;
  }

  // ------------------------------------------------------------------ plumbing

  #get<T>(
    path: string,
    query?: Record<string, QueryValue>,
    options?: ManagedAgentRequestOptions,
  ): Promise<T> {
    return this.#http.json<T>({ method: "GET", path, query, signal: options?.signal });
  }

  #post<T>(
    path: string,
    body: unknown,
    options?: ManagedAgentRequestOptions,
    query?: Record<string, QueryValue>,
  ): Promise<T> {
    return this.#http.json<T>({ method: "POST", path, body, query, signal: options?.signal });
  }

  async #delete(
    path: string,
    options?: ManagedAgentRequestOptions,
    query?: Record<string, QueryValue>,
  ): Promise<void> {
    await this.#http.json<unknown>({ method: "DELETE", path, query, signal: options?.signal });
  }

  async *#iterate<T>(
    path: string,
    query: Record<string, QueryValue>,
    options: ManagedAgentListOptions | undefined,
  ): AsyncGenerator<T, void, undefined> {
    let page = options?.page;
    const seen = new Set<string>();
    while (true) {
      const answer = await this.#get<Page<T>>(path, { ...query, ...pageQuery(options), page }, {
        signal: options?.signal,
      });
      for (const item of answer?.data ?? []) yield item;
      const next = answer?.next_page;
      if (typeof next !== "string" || next === "" || seen.has(next)) return;
      seen.add(next);
      page = next;
    }
  }

  async #collect<T>(iterator: AsyncIterable<T>): Promise<T[]> {
    const out: T[] = [];
    for await (const item of iterator) out.push(item);
    return out;
  }

  async #stream(
    path: string,
    signal: AbortSignal | undefined,
  ): Promise<ReadableStream<Uint8Array>> {
    const response = await this.#http.send({
      method: "GET",
      path,
      accept: "text/event-stream",
      stream: true,
      signal,
    });
    if (!response.body) throw new ProviderConnectionError("The event stream has no body");
    return response.body;
  }

  // ------------------------------------------------------------------ run contract

  /**
   * What this client supports: `runs` and `streaming` (from the shared capability declaration).
   *
   * @example
   * ```ts
   * import { ProviderManagedAgentClient } from "@automation/runtime/client";
   * const client = new ProviderManagedAgentClient({ baseUrl: "https://provider.example", apiKey: "k" });
   * console.log(client.getRuntimeCapabilities().streaming); // true
   * ```
   */
  getRuntimeCapabilities(): RuntimeCapabilities {
    return providerCapabilities("provider-managed-agents");
  }

  /**
   * Creates a session against the resolved agent and environment, sends the kickoff message and
   * returns the session id with status `started`. `body.model` and `body.instructions` are not
   * applied: model and system prompt live on the agent.
   */
  async startRun(body: RuntimeRunStartBody, options?: RunStreamOptions): Promise<RuntimeRunStatus> {
    const target = resolveRunTarget(body, {
      agentId: this.#agentId,
      environmentId: this.#environmentId,
    });
    const kickoff = kickoffEvents(body.input);
    const session = await this.createSession(target, options);
    await this.sendEvents(session.id, kickoff, options);
    return { runId: session.id, status: "started" };
  }

  /**
   * Creates a session, opens its event stream, then sends the kickoff (so no event is missed) and
   * emits canonical events until a terminal one. `run.started` comes first; `runId` is the
   * session id. Aborting `signal` closes the stream and rejects with `ProviderAbortError`.
   */
  async streamRun(
    body: RuntimeRunStartBody,
    handlers: RunStreamHandlers,
    options: RunStreamOptions = {},
  ): Promise<RunStreamResult> {
    const { signal } = options;
    const target = resolveRunTarget(body, {
      agentId: this.#agentId,
      environmentId: this.#environmentId,
    });
    const kickoff = kickoffEvents(body.input);
    const session = await this.createSession(target, { signal });
    const stream = await this.#stream(providerSessionEventStreamPath(session.id), signal);
    try {
      await handlers.onEvent?.({ type: "run.started", runId: session.id });
      await this.sendEvents(session.id, kickoff, { signal });
    } catch (error) {
      await stream.cancel().catch(() => {});
      throw error;
    }
    return await runEventLoop({ runId: session.id, body: stream, handlers, signal });
  }

  /**
   * Streams an existing session without a kickoff, emitting canonical events until a terminal
   * one or the end of the stream.
   */
  async streamSession(
    sessionId: string,
    handlers: RunStreamHandlers,
    options: RunStreamOptions = {},
  ): Promise<RunStreamResult> {
    const stream = await this.#stream(providerSessionEventStreamPath(sessionId), options.signal);
    return await runEventLoop({ runId: sessionId, body: stream, handlers, signal: options.signal });
  }

  /**
   * Reads a run's state: the session's live status, with the latest idle stop reason and whether
   * an interrupt asked for the stop, mapped to a run state.
   */
  async getRun(runId: string, options?: RunStreamOptions): Promise<RuntimeRunStatus> {
    const session = await this.getSession(runId, options);
    const status = typeof session.status === "string" ? session.status : undefined;
    let stopReason: string | undefined;
    let interrupted = false;
    let pending = false;
    if (status === "idle" || status === "terminated") {
      // Newest first: the latest turn boundary decides.
      const recent = await this.#get<Page<JsonObject>>(providerSessionEventsPath(runId), {
        order: "desc",
        limit: 50,
        types: [
          "session.status_idle",
          "session.status_terminated",
          "user.message",
          "user.interrupt",
        ],
      }, options);
      let sawStop = false;
      for (const event of recent?.data ?? []) {
        if (event.type === "session.status_idle" || event.type === "session.status_terminated") {
          if (sawStop) break;
          sawStop = true;
          if (status === "idle" && event.type === "session.status_idle") {
            const reason = event.stop_reason;
            stopReason = typeof reason === "string"
              ? reason
              : isObject(reason) && typeof reason.type === "string"
              ? reason.type
              : undefined;
          }
          continue;
        }
        if (event.type === "user.interrupt" && sawStop) interrupted = true;
        if (event.type === "user.message") {
          if (!sawStop) pending = true;
          break;
        }
      }
      if (!sawStop && status === "idle") pending = true;
    }
    const state = sessionStatusToRunState({ status, stopReason, interrupted, pending });
    const result: RuntimeRunStatus = { runId, status: state };
    if (stopReason !== undefined) result.stopReason = stopReason;
    const usage = numericUsage(session.usage);
    if (usage !== undefined) result.usage = usage;
    return result;
  }

  /** Interrupts the session (a graceful stop); the session stays reusable. */
  async cancelRun(runId: string, options?: RunStreamOptions): Promise<RuntimeRunStatus> {
    await this.interruptSession(runId, options);
    return { runId, status: "cancelled" };
  }

  /** Not supported: managed-agent sessions have no batch API. */
  submitBatch(
    _requests: RuntimeBatchRequest[],
    _options?: RunStreamOptions,
  ): Promise<RuntimeBatchStatus> {
    return Promise.reject(new ProviderUnsupportedError("submitBatch", NO_BATCHES));
  }

  /** Not supported: managed-agent sessions have no batch API. */
  getBatch(_batchId: string, _options?: RunStreamOptions): Promise<RuntimeBatchStatus> {
    return Promise.reject(new ProviderUnsupportedError("getBatch", NO_BATCHES));
  }

  /** Not supported: managed-agent sessions have no batch API. */
  cancelBatch(_batchId: string, _options?: RunStreamOptions): Promise<RuntimeBatchStatus> {
    return Promise.reject(new ProviderUnsupportedError("cancelBatch", NO_BATCHES));
  }

  /** Not supported: throws at once, before anything is iterated. */
  getBatchResults(
    _batchId: string,
    _options?: RunStreamOptions,
  ): AsyncIterable<RuntimeBatchResult> {
    throw new ProviderUnsupportedError("getBatchResults", NO_BATCHES);
  }

  // ------------------------------------------------------------------ agents

  /** Creates a persisted agent (version 1). */
  createAgent(
    params: CreateManagedAgentParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentAgent> {
    return this.#post(PROVIDER_COLLECTION_PATHS.agents, agentBody(params), options);
  }

  /** Updates an agent (a `POST`), which creates a new immutable version. */
  updateAgent(
    agentId: string,
    params: UpdateManagedAgentParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentAgent> {
    return this.#post(providerAgentPath(agentId), agentBody(params), options);
  }

  /** Reads an agent, or one of its versions. */
  getAgent(agentId: string, options?: GetManagedAgentOptions): Promise<ManagedAgentAgent> {
    return this.#get(providerAgentPath(agentId), { version: options?.version }, options);
  }

  /** Lists agents (every page). */
  listAgents(params?: ListManagedAgentsParams): Promise<ManagedAgentAgent[]> {
    return this.#collect(this.iterateAgents(params));
  }

  /** Yields agents page by page. */
  iterateAgents(params?: ListManagedAgentsParams): AsyncGenerator<ManagedAgentAgent, void> {
    return this.#iterate(PROVIDER_COLLECTION_PATHS.agents, {
      include_archived: params?.includeArchived,
      created_at: range(params?.createdAt),
    }, params);
  }

  /** Lists every version of an agent. */
  listAgentVersions(
    agentId: string,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentAgent[]> {
    return this.#collect(this.iterateAgentVersions(agentId, params));
  }

  /** Yields an agent's versions page by page. */
  iterateAgentVersions(
    agentId: string,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentAgent, void> {
    return this.#iterate(`${providerAgentPath(agentId)}/versions`, {}, params);
  }

  /** Archives an agent: existing sessions continue, new ones cannot reference it. */
  archiveAgent(agentId: string, options?: ManagedAgentRequestOptions): Promise<ManagedAgentAgent> {
    return this.#post(`${providerAgentPath(agentId)}/archive`, undefined, options);
  }

  // ------------------------------------------------------------------ environments

  /** Creates an environment (by default a cloud container with unrestricted networking). */
  createEnvironment(
    params: CreateManagedAgentEnvironmentParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEnvironment> {
    return this.#post(
      PROVIDER_COLLECTION_PATHS.environments,
      compact({
        name: params.name,
        config: params.config ?? DEFAULT_ENVIRONMENT_CONFIG,
        description: params.description,
        metadata: params.metadata,
      }),
      options,
    );
  }

  /** Reads an environment. */
  getEnvironment(
    environmentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEnvironment> {
    return this.#get(providerEnvironmentPath(environmentId), undefined, options);
  }

  /** Lists environments (every page). */
  listEnvironments(
    params?: ListManagedAgentEnvironmentsParams,
  ): Promise<ManagedAgentEnvironment[]> {
    return this.#collect(this.iterateEnvironments(params));
  }

  /** Yields environments page by page. */
  iterateEnvironments(
    params?: ListManagedAgentEnvironmentsParams,
  ): AsyncGenerator<ManagedAgentEnvironment, void> {
    return this.#iterate(PROVIDER_COLLECTION_PATHS.environments, {
      include_archived: params?.includeArchived,
    }, params);
  }

  /** Updates an environment (applies to new containers only) and returns it. */
  updateEnvironment(
    environmentId: string,
    params: UpdateManagedAgentEnvironmentParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEnvironment> {
    return this.#post(
      providerEnvironmentPath(environmentId),
      compact({
        name: params.name,
        config: params.config,
        description: params.description,
        metadata: params.metadata,
      }),
      options,
    );
  }

  /** Deletes an environment. */
  deleteEnvironment(environmentId: string, options?: ManagedAgentRequestOptions): Promise<void> {
    return this.#delete(providerEnvironmentPath(environmentId), options);
  }

  /** Archives an environment (read-only; new sessions cannot reference it). */
  archiveEnvironment(
    environmentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEnvironment> {
    return this.#post(`${providerEnvironmentPath(environmentId)}/archive`, undefined, options);
  }

  // ------------------------------------------------------------------ work queue

  /** Reads the self-hosted work queue statistics of an environment. */
  getWorkQueueStats(
    environmentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentWorkQueueStats> {
    return this.#get(`${providerWorkPath(environmentId)}/stats`, undefined, options);
  }

  /** Stops a work item of an environment's queue. */
  stopWork(environmentId: string, workId: string, options?: StopWorkOptions): Promise<JsonObject> {
    return this.#post(
      `${providerWorkPath(environmentId, workId)}/stop`,
      compact({ force: options?.force }),
      options,
    );
  }

  // ------------------------------------------------------------------ sessions

  /** Creates a session of an agent in an environment (status `idle`). */
  createSession(
    params: CreateManagedAgentSessionParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentSession> {
    return this.#post(
      PROVIDER_COLLECTION_PATHS.sessions,
      compact({
        agent: agentReference(params.agentId, params.agentVersion, params.agentOverrides),
        environment_id: params.environmentId,
        title: params.title,
        resources: params.resources,
        vault_ids: params.vaultIds,
        metadata: params.metadata,
      }),
      options,
    );
  }

  /** Reads a session. */
  getSession(
    sessionId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentSession> {
    return this.#get(providerSessionPath(sessionId), undefined, options);
  }

  /** Lists sessions (every page). */
  listSessions(params?: ListManagedAgentSessionsParams): Promise<ManagedAgentSession[]> {
    return this.#collect(this.iterateSessions(params));
  }

  /** Yields sessions page by page. */
  iterateSessions(
    params?: ListManagedAgentSessionsParams,
  ): AsyncGenerator<ManagedAgentSession, void> {
    return this.#iterate(PROVIDER_COLLECTION_PATHS.sessions, {
      agent_id: params?.agentId,
      agent_version: params?.agentVersion,
      deployment_id: params?.deploymentId,
      memory_store_id: params?.memoryStoreId,
      statuses: params?.statuses,
      include_archived: params?.includeArchived,
      order: params?.order,
      created_at: range(params?.createdAt),
    }, params);
  }

  /**
   * Updates an idle session (session-local; the agent object is untouched) and returns it.
   * `agent.tools`, `agent.mcp_servers` and `vaultIds` are full replacements.
   */
  updateSession(
    sessionId: string,
    params: UpdateManagedAgentSessionParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentSession> {
    return this.#post(
      providerSessionPath(sessionId),
      compact({
        title: params.title,
        metadata: params.metadata,
        agent: params.agent,
        vault_ids: params.vaultIds,
      }),
      options,
    );
  }

  /** Deletes a session with its event history, container and checkpoints. */
  deleteSession(sessionId: string, options?: ManagedAgentRequestOptions): Promise<void> {
    return this.#delete(providerSessionPath(sessionId), options);
  }

  /** Archives a session (permanent, read-only). */
  archiveSession(
    sessionId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentSession> {
    return this.#post(providerSessionArchivePath(sessionId), undefined, options);
  }

  // ------------------------------------------------------------------ session resources

  /** Adds a resource (a `file` or a code repository) to a session; wire-shaped. */
  addResource(
    sessionId: string,
    resource: JsonObject,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentResource> {
    return this.#post(providerSessionResourcePath(sessionId), resource, options);
  }

  /** Lists a session's resources (every page). */
  listResources(
    sessionId: string,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentResource[]> {
    return this.#collect(this.iterateResources(sessionId, params));
  }

  /** Yields a session's resources page by page. */
  iterateResources(
    sessionId: string,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentResource, void> {
    return this.#iterate(providerSessionResourcePath(sessionId), {}, params);
  }

  /** Reads a session resource. */
  getResource(
    sessionId: string,
    resourceId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentResource> {
    return this.#get(providerSessionResourcePath(sessionId, resourceId), undefined, options);
  }

  /** Updates a session resource (for example a rotated `authorization_token`). */
  updateResource(
    sessionId: string,
    resourceId: string,
    params: UpdateSessionResourceParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentResource> {
    return this.#post(providerSessionResourcePath(sessionId, resourceId), params, options);
  }

  /** Removes a resource from a session. */
  deleteResource(
    sessionId: string,
    resourceId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<void> {
    return this.#delete(providerSessionResourcePath(sessionId, resourceId), options);
  }

  // ------------------------------------------------------------------ session events

  /** Sends events to a session and returns them as recorded (with ids). */
  async sendEvents(
    sessionId: string,
    events: ManagedAgentEvent[],
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEvent[]> {
    if (!Array.isArray(events) || events.length === 0) {
      throw new TypeError("events must be a non-empty array");
    }
    const answer = await this.#post<{ data?: ManagedAgentEvent[] }>(
      providerSessionEventsPath(sessionId),
      { events },
      options,
    );
    return answer?.data ?? [];
  }

  /** Sends a `user.message` (text, or content blocks). */
  sendMessage(
    sessionId: string,
    input: string | JsonObject[],
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEvent[]> {
    const content = typeof input === "string" ? [{ type: "text", text: input }] : input;
    return this.sendEvents(sessionId, [{ type: "user.message", content }], options);
  }

  /** Sends a `user.interrupt` (all threads, or one); the session stays reusable. */
  interruptSession(
    sessionId: string,
    options?: InterruptSessionOptions,
  ): Promise<ManagedAgentEvent[]> {
    return this.sendEvents(sessionId, [
      compact({ type: "user.interrupt", session_thread_id: options?.sessionThreadId }),
    ], options);
  }

  /**
   * Lists a session's event history (every page, oldest first by default), for lossless
   * reconnects and dedupe by event id.
   */
  listEvents(sessionId: string, params?: ListSessionEventsParams): Promise<ManagedAgentEvent[]> {
    return this.#collect(this.iterateEvents(sessionId, params));
  }

  /** Yields a session's events page by page. */
  iterateEvents(
    sessionId: string,
    params?: ListSessionEventsParams,
  ): AsyncGenerator<ManagedAgentEvent, void> {
    return this.#iterate(providerSessionEventsPath(sessionId), {
      order: params?.order,
      types: params?.types,
      created_at: range(params?.createdAt),
    }, params);
  }

  /**
   * Answers a tool call paused on a confirmation (`user.tool_confirmation`). The provider routes
   * the answer by tool-use id, so `sessionThreadId` is not sent.
   */
  confirmTool(
    sessionId: string,
    params: ConfirmToolParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEvent[]> {
    if (params.result !== "allow" && params.result !== "deny") {
      throw new TypeError("result must be allow or deny");
    }
    return this.sendEvents(sessionId, [compact({
      type: "user.tool_confirmation",
      tool_use_id: params.toolUseId,
      result: params.result,
      deny_message: params.result === "deny" ? params.denyMessage : undefined,
    })], options);
  }

  /** Answers a custom tool call (`user.custom_tool_result`). */
  respondCustomTool(
    sessionId: string,
    params: RespondCustomToolParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEvent[]> {
    return this.sendEvents(sessionId, [compact({
      type: "user.custom_tool_result",
      custom_tool_use_id: params.toolUseId,
      content: params.content,
      is_error: params.isError,
    })], options);
  }

  /**
   * Defines an outcome (`user.define_outcome`): the harness grades and revises until it is
   * satisfied or `maxIterations` (default 3, at most 20) run out. Do not send a message as well.
   */
  defineOutcome(
    sessionId: string,
    params: DefineOutcomeParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEvent[]> {
    const max = params.maxIterations;
    if (max !== undefined && (!Number.isSafeInteger(max) || max < 1 || max > 20)) {
      throw new RangeError("maxIterations must be a whole number from 1 to 20");
    }
    return this.sendEvents(sessionId, [compact({
      type: "user.define_outcome",
      description: params.description,
      rubric: params.rubric,
      max_iterations: max,
    })], options);
  }

  /**
   * Opens a session's SSE event stream and returns the raw body once the response headers
   * arrived (`streamTimeoutMs` bounds only that wait). Read it with `readSessionEvents`;
   * cancelling it, or aborting `signal`, releases the connection.
   */
  openEventStream(sessionId: string, signal?: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    return this.#stream(providerSessionEventStreamPath(sessionId), signal);
  }

  // ------------------------------------------------------------------ threads

  /** Lists a session's threads, the primary thread included (every page). */
  listThreads(
    sessionId: string,
    params?: ListManagedAgentThreadsParams,
  ): Promise<ManagedAgentThread[]> {
    return this.#collect(this.iterateThreads(sessionId, params));
  }

  /** Yields a session's threads page by page. */
  iterateThreads(
    sessionId: string,
    params?: ListManagedAgentThreadsParams,
  ): AsyncGenerator<ManagedAgentThread, void> {
    return this.#iterate(providerSessionThreadPath(sessionId), {
      statuses: params?.statuses,
    }, params);
  }

  /** Reads a thread. */
  getThread(
    sessionId: string,
    threadId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentThread> {
    return this.#get(providerSessionThreadPath(sessionId, threadId), undefined, options);
  }

  /** Archives a thread. */
  archiveThread(
    sessionId: string,
    threadId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentThread> {
    return this.#post(
      `${providerSessionThreadPath(sessionId, threadId)}/archive`,
      undefined,
      options,
    );
  }

  /** Lists a thread's events (every page). */
  listThreadEvents(
    sessionId: string,
    threadId: string,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentEvent[]> {
    return this.#collect(this.iterateThreadEvents(sessionId, threadId, params));
  }

  /** Yields a thread's events page by page. */
  iterateThreadEvents(
    sessionId: string,
    threadId: string,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentEvent, void> {
    return this.#iterate(`${providerSessionThreadPath(sessionId, threadId)}/events`, {}, params);
  }

  /** Opens a thread's SSE event stream (raw body), like `openEventStream`. */
  openThreadEventStream(
    sessionId: string,
    threadId: string,
    signal?: AbortSignal,
  ): Promise<ReadableStream<Uint8Array>> {
    return this.#stream(`${providerSessionThreadPath(sessionId, threadId)}/stream`, signal);
  }

  // ------------------------------------------------------------------ memory stores

  /** Creates a memory store. */
  createMemoryStore(
    params: CreateMemoryStoreParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryStore> {
    return this.#post(
      PROVIDER_COLLECTION_PATHS.memoryStores,
      compact({
        name: params.name,
        description: params.description,
        metadata: params.metadata,
      }),
      options,
    );
  }

  /** Reads a memory store. */
  getMemoryStore(
    storeId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryStore> {
    return this.#get(providerMemoryStorePath(storeId), undefined, options);
  }

  /** Lists memory stores (every page). */
  listMemoryStores(params?: ListMemoryStoresParams): Promise<ManagedAgentMemoryStore[]> {
    return this.#collect(this.iterateMemoryStores(params));
  }

  /** Yields memory stores page by page. */
  iterateMemoryStores(
    params?: ListMemoryStoresParams,
  ): AsyncGenerator<ManagedAgentMemoryStore, void> {
    return this.#iterate(PROVIDER_COLLECTION_PATHS.memoryStores, {
      include_archived: params?.includeArchived,
      created_at: range(params?.createdAt),
    }, params);
  }

  /** Updates a memory store's name, description or metadata. */
  updateMemoryStore(
    storeId: string,
    params: UpdateMemoryStoreParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryStore> {
    return this.#post(
      providerMemoryStorePath(storeId),
      compact({
        name: params.name,
        description: params.description,
        metadata: params.metadata,
      }),
      options,
    );
  }

  /** Deletes a memory store. */
  deleteMemoryStore(storeId: string, options?: ManagedAgentRequestOptions): Promise<void> {
    return this.#delete(providerMemoryStorePath(storeId), options);
  }

  /** Archives a memory store (permanent, read-only; no unarchive). */
  archiveMemoryStore(
    storeId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryStore> {
    return this.#post(`${providerMemoryStorePath(storeId)}/archive`, undefined, options);
  }

  // ------------------------------------------------------------------ memories

  /**
   * Creates a memory. An occupied path rejects with {@linkcode MemoryPathConflictError}
   * (HTTP 409 `memory_path_conflict_error`).
   */
  async createMemory(
    storeId: string,
    params: CreateMemoryParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemory> {
    try {
      return await this.#post<ManagedAgentMemory>(
        providerMemoryPath(storeId),
        { path: params.path, content: params.content },
        options,
      );
    } catch (error) {
      throw memoryError(error);
    }
  }

  /** Reads a memory (`view` `full` by default). */
  getMemory(
    storeId: string,
    memoryId: string,
    view?: "basic" | "full",
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemory> {
    return this.#get(providerMemoryPath(storeId, memoryId), { view }, options);
  }

  /** Lists a store's memories (every page; `view` `basic` by default omits content). */
  listMemories(
    storeId: string,
    params?: ListMemoriesParams & ManagedAgentListOptions,
  ): Promise<ManagedAgentMemory[]> {
    return this.#collect(this.iterateMemories(storeId, params));
  }

  /** Yields a store's memories page by page. */
  iterateMemories(
    storeId: string,
    params?: ListMemoriesParams & ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentMemory, void> {
    return this.#iterate(providerMemoryPath(storeId), {
      path_prefix: params?.pathPrefix,
      depth: params?.depth,
      view: params?.view,
    }, params);
  }

  /**
   * Updates a memory with a `POST` (content, a rename, and an optional `content_sha256`
   * precondition). A rename onto an occupied path rejects with {@linkcode MemoryPathConflictError}.
   */
  async updateMemory(
    storeId: string,
    memoryId: string,
    params: UpdateMemoryParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemory> {
    try {
      return await this.#post<ManagedAgentMemory>(
        providerMemoryPath(storeId, memoryId),
        compact({
          content: params.content,
          path: params.path,
          precondition: params.precondition,
        }),
        options,
      );
    } catch (error) {
      throw memoryError(error);
    }
  }

  /** Deletes a memory. */
  deleteMemory(
    storeId: string,
    memoryId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<void> {
    return this.#delete(providerMemoryPath(storeId, memoryId), options);
  }

  // ------------------------------------------------------------------ memory versions

  /** Lists a store's memory versions, or one memory's (every page, newest first). */
  listMemoryVersions(
    storeId: string,
    memoryId?: string,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentMemoryVersion[]> {
    return this.#collect(this.iterateMemoryVersions(storeId, memoryId, params));
  }

  /** Yields memory versions page by page. */
  iterateMemoryVersions(
    storeId: string,
    memoryId?: string,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentMemoryVersion, void> {
    return this.#iterate(providerMemoryVersionPath(storeId), { memory_id: memoryId }, params);
  }

  /** Reads a memory version. */
  getMemoryVersion(
    storeId: string,
    versionId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryVersion> {
    return this.#get(providerMemoryVersionPath(storeId, versionId), undefined, options);
  }

  /** Removes a version's content while keeping the audit trail. */
  redactMemoryVersion(
    storeId: string,
    versionId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryVersion> {
    return this.#post(
      `${providerMemoryVersionPath(storeId, versionId)}/redact`,
      undefined,
      options,
    );
  }

  // ------------------------------------------------------------------ vaults

  /** Creates a vault. */
  createVault(
    params: CreateVaultParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentVault> {
    return this.#post(
      PROVIDER_COLLECTION_PATHS.vaults,
      compact({
        display_name: params.displayName,
        metadata: params.metadata,
      }),
      options,
    );
  }

  /** Reads a vault. */
  getVault(vaultId: string, options?: ManagedAgentRequestOptions): Promise<ManagedAgentVault> {
    return this.#get(providerVaultPath(vaultId), undefined, options);
  }

  /** Lists vaults (every page), archived ones too when `includeArchived`. */
  listVaults(
    includeArchived?: boolean,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentVault[]> {
    return this.#collect(this.iterateVaults(includeArchived, params));
  }

  /** Yields vaults page by page. */
  iterateVaults(
    includeArchived?: boolean,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentVault, void> {
    return this.#iterate(PROVIDER_COLLECTION_PATHS.vaults, {
      include_archived: includeArchived,
    }, params);
  }

  /** Updates a vault and returns it. */
  updateVault(
    vaultId: string,
    params: UpdateVaultParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentVault> {
    return this.#post(
      providerVaultPath(vaultId),
      compact({
        display_name: params.displayName,
        metadata: params.metadata,
      }),
      options,
    );
  }

  /** Deletes a vault. */
  deleteVault(vaultId: string, options?: ManagedAgentRequestOptions): Promise<void> {
    return this.#delete(providerVaultPath(vaultId), options);
  }

  /** Archives a vault; cascades to its credentials (secrets purged, records kept). */
  archiveVault(vaultId: string, options?: ManagedAgentRequestOptions): Promise<ManagedAgentVault> {
    return this.#post(`${providerVaultPath(vaultId)}/archive`, undefined, options);
  }

  // ------------------------------------------------------------------ credentials

  /** Creates a credential (one active credential per `mcp_server_url`); secrets are write-only. */
  createCredential(
    vaultId: string,
    params: CreateCredentialParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredential> {
    return this.#post(
      providerCredentialPath(vaultId),
      compact({
        display_name: params.displayName,
        auth: params.auth,
      }),
      options,
    );
  }

  /** Reads a credential (never its secrets). */
  getCredential(
    vaultId: string,
    credentialId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredential> {
    return this.#get(providerCredentialPath(vaultId, credentialId), undefined, options);
  }

  /** Lists a vault's credentials (every page), archived ones too when `includeArchived`. */
  listCredentials(
    vaultId: string,
    includeArchived?: boolean,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentCredential[]> {
    return this.#collect(this.iterateCredentials(vaultId, includeArchived, params));
  }

  /** Yields a vault's credentials page by page. */
  iterateCredentials(
    vaultId: string,
    includeArchived?: boolean,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentCredential, void> {
    return this.#iterate(providerCredentialPath(vaultId), {
      include_archived: includeArchived,
    }, params);
  }

  /** Updates a credential (`mcp_server_url`, `token_endpoint` and `client_id` are locked). */
  updateCredential(
    vaultId: string,
    credentialId: string,
    params: UpdateCredentialParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredential> {
    return this.#post(
      providerCredentialPath(vaultId, credentialId),
      compact({
        display_name: params.displayName,
        auth: params.auth,
      }),
      options,
    );
  }

  /** Deletes a credential. */
  deleteCredential(
    vaultId: string,
    credentialId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<void> {
    return this.#delete(providerCredentialPath(vaultId, credentialId), options);
  }

  /** Archives a credential: its secret is purged and its `mcp_server_url` freed. */
  archiveCredential(
    vaultId: string,
    credentialId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredential> {
    return this.#post(
      `${providerCredentialPath(vaultId, credentialId)}/archive`,
      undefined,
      options,
    );
  }

  /** Probes an `mcp_oauth` credential; the answer carries a `status`. */
  validateMcpOauthCredential(
    vaultId: string,
    credentialId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredentialValidation> {
    return this.#post(
      `${providerCredentialPath(vaultId, credentialId)}/mcp_oauth_validate`,
      undefined,
      options,
    );
  }

  // ------------------------------------------------------------------ deployments

  /** Creates a scheduled deployment; `schedule.upcoming_runs_at` shows how the cron parsed. */
  createDeployment(
    params: CreateManagedAgentDeploymentParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment> {
    return this.#post(
      PROVIDER_COLLECTION_PATHS.deployments,
      compact({
        name: params.name,
        agent: agentReference(params.agentId, params.agentVersion),
        environment_id: params.environmentId,
        initial_events: params.initialEvents,
        schedule: params.schedule,
        resources: params.resources,
        vault_ids: params.vaultIds,
        metadata: params.metadata,
      }),
      options,
    );
  }

  /** Reads a deployment. */
  getDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment> {
    return this.#get(providerDeploymentPath(deploymentId), undefined, options);
  }

  /** Lists deployments (every page). */
  listDeployments(params?: ListManagedAgentDeploymentsParams): Promise<ManagedAgentDeployment[]> {
    return this.#collect(this.iterateDeployments(params));
  }

  /** Yields deployments page by page. */
  iterateDeployments(
    params?: ListManagedAgentDeploymentsParams,
  ): AsyncGenerator<ManagedAgentDeployment, void> {
    return this.#iterate(PROVIDER_COLLECTION_PATHS.deployments, {
      agent_id: params?.agentId,
      status: params?.status,
      include_archived: params?.includeArchived,
      created_at: range(params?.createdAt),
    }, params);
  }

  /** Pauses a deployment: scheduled triggers are suppressed, manual runs still work. */
  pauseDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment> {
    return this.#post(`${providerDeploymentPath(deploymentId)}/pause`, undefined, options);
  }

  /** Resumes a paused deployment from its next occurrence (no backfill). */
  unpauseDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment> {
    return this.#post(`${providerDeploymentPath(deploymentId)}/unpause`, undefined, options);
  }

  /** Archives a deployment (terminal: the schedule stops). */
  archiveDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment> {
    return this.#post(`${providerDeploymentPath(deploymentId)}/archive`, undefined, options);
  }

  /** Triggers a deployment now (works while paused) and returns the run record. */
  runDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeploymentRun> {
    return this.#post(`${providerDeploymentPath(deploymentId)}/run`, undefined, options);
  }

  /** Lists a deployment's runs (every page); `hasError` lists failed runs only. */
  listDeploymentRuns(
    deploymentId: string,
    params?: ListDeploymentRunsParams & ManagedAgentListOptions,
  ): Promise<ManagedAgentDeploymentRun[]> {
    return this.#collect(this.iterateDeploymentRuns(deploymentId, params));
  }

  /** Yields a deployment's runs page by page. */
  iterateDeploymentRuns(
    deploymentId: string,
    params?: ListDeploymentRunsParams & ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentDeploymentRun, void> {
    if (typeof deploymentId !== "string" || deploymentId === "") {
      throw new TypeError("deploymentId must be a non-empty string");
    }
    return this.#iterate(PROVIDER_COLLECTION_PATHS.deploymentRuns, {
      deployment_id: deploymentId,
      has_error: params?.hasError,
    }, params);
  }

  /** Reads a deployment run. */
  getDeploymentRun(
    deploymentRunId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeploymentRun> {
    return this.#get(providerDeploymentRunPath(deploymentRunId), undefined, options);
  }
}

function memoryError(error: unknown): unknown {
  if (error instanceof ProviderApiError && error.type === "memory_path_conflict_error") {
    return new MemoryPathConflictError(error);
  }
  return error;
}
