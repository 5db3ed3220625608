/**
 * Sessions and their resources: the session wire conversion, the session and resource paths and
 * the methods {@linkcode ProviderManagedAgentClient} takes from here.
 *
 * @module
 */
import { collect, compact, pathSegment, range, wire } from "./_resource.ts";
import { PROVIDER_COLLECTION_PATHS } from "./paths.ts";
import type {
  CreateManagedAgentSessionParams,
  JsonObject,
  ListManagedAgentSessionsParams,
  ManagedAgentListOptions,
  ManagedAgentRequestOptions,
  ManagedAgentResource,
  ManagedAgentSession,
  UpdateManagedAgentSessionParams,
  UpdateSessionResourceParams,
} from "./types.ts";
import { agentReference } from "./agents.ts";

/**
 * The path of one session: retrieve, update (`POST`) and delete.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerSessionPath } from "@automation/runtime/client";
 * assert.deepEqual(providerSessionPath("sesn_1"), "/v1/sessions/sesn_1");
 * ```
 */
export function providerSessionPath(sessionId: string): string {
  return `/v1/sessions/${pathSegment("sessionId", sessionId)}`;
}

/**
 * The path that archives a session (makes it read-only).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerSessionArchivePath } from "@automation/runtime/client";
 * assert.deepEqual(providerSessionArchivePath("sesn_1"), "/v1/sessions/sesn_1/archive");
 * ```
 */
export function providerSessionArchivePath(sessionId: string): string {
  return `${providerSessionPath(sessionId)}/archive`;
}

/**
 * The path of a session's resources, or of one resource when `resourceId` is given.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerSessionResourcePath } from "@automation/runtime/client";
 * assert.equal(
 *   providerSessionResourcePath("sesn_1", "sesrsc_1"),
 *   "/v1/sessions/sesn_1/resources/sesrsc_1",
 * );
 * ```
 */
export function providerSessionResourcePath(sessionId: string, resourceId?: string): string {
  const base = `${providerSessionPath(sessionId)}/resources`;
  return resourceId === undefined ? base : `${base}/${pathSegment("resourceId", resourceId)}`;
}

/**
 * The session and session-resource operations of {@linkcode ProviderManagedAgentClient}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderManagedAgentClient } from "@automation/runtime/client";
 *
 * // A local stand-in for the provider that echoes the body it was sent.
 * const client = new ProviderManagedAgentClient({
 *   baseUrl: "https://provider.example",
 *   apiKey: "<API_KEY>",
 *   fetchImpl: (_input, init) =>
 *     Promise.resolve(Response.json({ id: "sesn_1", ...JSON.parse(String(init?.body)) })),
 * });
 * const session = await client.createSession({
 *   agentId: "agent_1",
 *   agentVersion: 2,
 *   environmentId: "env_1",
 * });
 * // A pinned version is sent as an agent reference.
 * assert.deepEqual(session.agent, { type: "agent", id: "agent_1", version: 2 });
 * ```
 */
export interface ManagedAgentSessionsApi {
  /** Creates a session of an agent in an environment (status `idle`). */
  createSession(
    params: CreateManagedAgentSessionParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentSession>;

  /** Reads a session. */
  getSession(
    sessionId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentSession>;

  /** Lists sessions (every page). */
  listSessions(params?: ListManagedAgentSessionsParams): Promise<ManagedAgentSession[]>;

  /** Yields sessions page by page. */
  iterateSessions(
    params?: ListManagedAgentSessionsParams,
  ): AsyncGenerator<ManagedAgentSession, void>;

  /**
   * Updates an idle session (session-local; the agent object is untouched) and returns it.
   * `agent.tools`, `agent.mcp_servers` and `vaultIds` are full replacements; `budget` replaces the
   * ceiling of a session created with one (any status but terminated).
   */
  updateSession(
    sessionId: string,
    params: UpdateManagedAgentSessionParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentSession>;

  /** Deletes a session with its event history, container and checkpoints. */
  deleteSession(sessionId: string, options?: ManagedAgentRequestOptions): Promise<void>;

  /** Archives a session (permanent, read-only). */
  archiveSession(
    sessionId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentSession>;

  /** Adds a resource (a `file` or a code repository) to a session; wire-shaped. */
  addResource(
    sessionId: string,
    resource: JsonObject,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentResource>;

  /** Lists a session's resources (every page). */
  listResources(
    sessionId: string,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentResource[]>;

  /** Yields a session's resources page by page. */
  iterateResources(
    sessionId: string,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentResource, void>;

  /** Reads a session resource. */
  getResource(
    sessionId: string,
    resourceId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentResource>;

  /** Updates a session resource (for example a rotated `authorization_token`). */
  updateResource(
    sessionId: string,
    resourceId: string,
    params: UpdateSessionResourceParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentResource>;

  /** Removes a resource from a session. */
  deleteResource(
    sessionId: string,
    resourceId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<void>;
}

/** The implementation of {@linkcode ManagedAgentSessionsApi}, installed on the client's prototype. */
export const sessionsApi: ManagedAgentSessionsApi & ThisType<ManagedAgentSessionsApi> = {
  createSession(
    params: CreateManagedAgentSessionParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentSession> {
    return wire(this).post(
      PROVIDER_COLLECTION_PATHS.sessions,
      compact({
        agent: agentReference(params.agentId, params.agentVersion, params.agentOverrides),
        environment_id: params.environmentId,
        title: params.title,
        resources: params.resources,
        vault_ids: params.vaultIds,
        metadata: params.metadata,
        budget: params.budget,
        initial_events: params.initialEvents,
      }),
      options,
    );
  },

  getSession(
    sessionId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentSession> {
    return wire(this).get(providerSessionPath(sessionId), undefined, options);
  },

  listSessions(params?: ListManagedAgentSessionsParams): Promise<ManagedAgentSession[]> {
    return collect(this.iterateSessions(params));
  },

  iterateSessions(
    params?: ListManagedAgentSessionsParams,
  ): AsyncGenerator<ManagedAgentSession, void> {
    return wire(this).iterate(PROVIDER_COLLECTION_PATHS.sessions, {
      agent_id: params?.agentId,
      agent_version: params?.agentVersion,
      deployment_id: params?.deploymentId,
      memory_store_id: params?.memoryStoreId,
      statuses: params?.statuses,
      include_archived: params?.includeArchived,
      order: params?.order,
      created_at: range(params?.createdAt),
    }, params);
  },

  updateSession(
    sessionId: string,
    params: UpdateManagedAgentSessionParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentSession> {
    return wire(this).post(
      providerSessionPath(sessionId),
      compact({
        title: params.title,
        metadata: params.metadata,
        agent: params.agent,
        vault_ids: params.vaultIds,
        budget: params.budget,
      }),
      options,
    );
  },

  deleteSession(sessionId: string, options?: ManagedAgentRequestOptions): Promise<void> {
    return wire(this).delete(providerSessionPath(sessionId), options);
  },

  archiveSession(
    sessionId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentSession> {
    return wire(this).post(providerSessionArchivePath(sessionId), undefined, options);
  },

  addResource(
    sessionId: string,
    resource: JsonObject,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentResource> {
    return wire(this).post(providerSessionResourcePath(sessionId), resource, options);
  },

  listResources(
    sessionId: string,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentResource[]> {
    return collect(this.iterateResources(sessionId, params));
  },

  iterateResources(
    sessionId: string,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentResource, void> {
    return wire(this).iterate(providerSessionResourcePath(sessionId), {}, params);
  },

  getResource(
    sessionId: string,
    resourceId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentResource> {
    return wire(this).get(providerSessionResourcePath(sessionId, resourceId), undefined, options);
  },

  updateResource(
    sessionId: string,
    resourceId: string,
    params: UpdateSessionResourceParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentResource> {
    return wire(this).post(providerSessionResourcePath(sessionId, resourceId), params, options);
  },

  deleteResource(
    sessionId: string,
    resourceId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<void> {
    return wire(this).delete(providerSessionResourcePath(sessionId, resourceId), options);
  },
};
