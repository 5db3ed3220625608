/**
 * Environments and their self-hosted work queue: the environment wire conversion, the environment
 * and work paths and the methods {@linkcode ProviderManagedAgentClient} takes from here.
 *
 * @module
 */
import { collect, compact, pathSegment, wire } from "./_resource.ts";
import { PROVIDER_COLLECTION_PATHS } from "./paths.ts";
import type {
  CreateManagedAgentEnvironmentParams,
  JsonObject,
  ListManagedAgentEnvironmentsParams,
  ManagedAgentEnvironment,
  ManagedAgentRequestOptions,
  ManagedAgentWorkQueueStats,
  StopWorkOptions,
  UpdateManagedAgentEnvironmentParams,
} from "./types.ts";

/**
 * The path of one environment: retrieve, update (`POST`) and delete.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerEnvironmentPath } from "@automation/runtime/client";
 * assert.deepEqual(providerEnvironmentPath("env_1"), "/v1/environments/env_1");
 * ```
 */
export function providerEnvironmentPath(environmentId: string): string {
  return `/v1/environments/${pathSegment("environmentId", environmentId)}`;
}

/**
 * The path of an environment's self-hosted work queue, or of one work item.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerWorkPath } from "@automation/runtime/client";
 * assert.deepEqual(providerWorkPath("env_1", "work_1"), "/v1/environments/env_1/work/work_1");
 * ```
 */
export function providerWorkPath(environmentId: string, workId?: string): string {
  const base = `${providerEnvironmentPath(environmentId)}/work`;
  return workId === undefined ? base : `${base}/${pathSegment("workId", workId)}`;
}

/** The default environment configuration: a cloud container with unrestricted networking. */
const DEFAULT_ENVIRONMENT_CONFIG: JsonObject = Object.freeze({
  type: "cloud",
  networking: Object.freeze({ type: "unrestricted" }),
}) as JsonObject;

/**
 * The environment and work-queue operations of {@linkcode ProviderManagedAgentClient}.
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
 *     Promise.resolve(Response.json({ id: "env_1", ...JSON.parse(String(init?.body)) })),
 * });
 * const environment = await client.createEnvironment({ name: "ci" });
 * // Without a config, the environment is a cloud container with unrestricted networking.
 * assert.deepEqual(environment.config, { type: "cloud", networking: { type: "unrestricted" } });
 * ```
 */
export interface ManagedAgentEnvironmentsApi {
  /** Creates an environment (by default a cloud container with unrestricted networking). */
  createEnvironment(
    params: CreateManagedAgentEnvironmentParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEnvironment>;

  /** Reads an environment. */
  getEnvironment(
    environmentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEnvironment>;

  /** Lists environments (every page). */
  listEnvironments(
    params?: ListManagedAgentEnvironmentsParams,
  ): Promise<ManagedAgentEnvironment[]>;

  /** Yields environments page by page. */
  iterateEnvironments(
    params?: ListManagedAgentEnvironmentsParams,
  ): AsyncGenerator<ManagedAgentEnvironment, void>;

  /** Updates an environment (applies to new containers only) and returns it. */
  updateEnvironment(
    environmentId: string,
    params: UpdateManagedAgentEnvironmentParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEnvironment>;

  /** Deletes an environment. */
  deleteEnvironment(environmentId: string, options?: ManagedAgentRequestOptions): Promise<void>;

  /** Archives an environment (read-only; new sessions cannot reference it). */
  archiveEnvironment(
    environmentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEnvironment>;

  /** Reads the self-hosted work queue statistics of an environment. */
  getWorkQueueStats(
    environmentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentWorkQueueStats>;

  /** Stops a work item of an environment's queue. */
  stopWork(environmentId: string, workId: string, options?: StopWorkOptions): Promise<JsonObject>;
}

/** The implementation of {@linkcode ManagedAgentEnvironmentsApi}, installed on the client's prototype. */
export const environmentsApi: ManagedAgentEnvironmentsApi & ThisType<ManagedAgentEnvironmentsApi> =
  {
    createEnvironment(
      params: CreateManagedAgentEnvironmentParams,
      options?: ManagedAgentRequestOptions,
    ): Promise<ManagedAgentEnvironment> {
      return wire(this).post(
        PROVIDER_COLLECTION_PATHS.environments,
        compact({
          name: params.name,
          config: params.config ?? DEFAULT_ENVIRONMENT_CONFIG,
          description: params.description,
          metadata: params.metadata,
        }),
        options,
      );
    },

    getEnvironment(
      environmentId: string,
      options?: ManagedAgentRequestOptions,
    ): Promise<ManagedAgentEnvironment> {
      return wire(this).get(providerEnvironmentPath(environmentId), undefined, options);
    },

    listEnvironments(
      params?: ListManagedAgentEnvironmentsParams,
    ): Promise<ManagedAgentEnvironment[]> {
      return collect(this.iterateEnvironments(params));
    },

    iterateEnvironments(
      params?: ListManagedAgentEnvironmentsParams,
    ): AsyncGenerator<ManagedAgentEnvironment, void> {
      return wire(this).iterate(PROVIDER_COLLECTION_PATHS.environments, {
        include_archived: params?.includeArchived,
      }, params);
    },

    updateEnvironment(
      environmentId: string,
      params: UpdateManagedAgentEnvironmentParams,
      options?: ManagedAgentRequestOptions,
    ): Promise<ManagedAgentEnvironment> {
      return wire(this).post(
        providerEnvironmentPath(environmentId),
        compact({
          name: params.name,
          config: params.config,
          description: params.description,
          metadata: params.metadata,
        }),
        options,
      );
    },

    deleteEnvironment(environmentId: string, options?: ManagedAgentRequestOptions): Promise<void> {
      return wire(this).delete(providerEnvironmentPath(environmentId), options);
    },

    archiveEnvironment(
      environmentId: string,
      options?: ManagedAgentRequestOptions,
    ): Promise<ManagedAgentEnvironment> {
      return wire(this).post(
        `${providerEnvironmentPath(environmentId)}/archive`,
        undefined,
        options,
      );
    },

    getWorkQueueStats(
      environmentId: string,
      options?: ManagedAgentRequestOptions,
    ): Promise<ManagedAgentWorkQueueStats> {
      return wire(this).get(`${providerWorkPath(environmentId)}/stats`, undefined, options);
    },

    stopWork(
      environmentId: string,
      workId: string,
      options?: StopWorkOptions,
    ): Promise<JsonObject> {
      return wire(this).post(
        `${providerWorkPath(environmentId, workId)}/stop`,
        compact({ force: options?.force }),
        options,
      );
    },
  };
