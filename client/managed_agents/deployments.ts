/**
 * Deployments and deployment runs: the deployment wire conversion, their paths and the methods
 * {@linkcode ProviderManagedAgentClient} takes from here.
 *
 * @module
 */
import { collect, compact, pathSegment, range, wire } from "./_resource.ts";
import { PROVIDER_COLLECTION_PATHS } from "./paths.ts";
import type {
  CreateManagedAgentDeploymentParams,
  ListDeploymentRunsParams,
  ListManagedAgentDeploymentsParams,
  ManagedAgentDeployment,
  ManagedAgentDeploymentRun,
  ManagedAgentListOptions,
  ManagedAgentRequestOptions,
} from "./types.ts";
import { agentReference } from "./agents.ts";

/**
 * The path of a deployment.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerDeploymentPath } from "@automation/runtime/client";
 * assert.deepEqual(providerDeploymentPath("depl_1"), "/v1/deployments/depl_1");
 * ```
 */
export function providerDeploymentPath(deploymentId: string): string {
  return `/v1/deployments/${pathSegment("deploymentId", deploymentId)}`;
}

/**
 * The path of a deployment run.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerDeploymentRunPath } from "@automation/runtime/client";
 * assert.deepEqual(providerDeploymentRunPath("drun_1"), "/v1/deployment_runs/drun_1");
 * ```
 */
export function providerDeploymentRunPath(deploymentRunId: string): string {
  return `/v1/deployment_runs/${pathSegment("deploymentRunId", deploymentRunId)}`;
}

/**
 * The deployment and deployment-run operations of {@linkcode ProviderManagedAgentClient}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderManagedAgentClient } from "@automation/runtime/client";
 *
 * // A local stand-in for the provider that records each request.
 * const seen: string[] = [];
 * const client = new ProviderManagedAgentClient({
 *   baseUrl: "https://provider.example",
 *   apiKey: "<API_KEY>",
 *   fetchImpl: (input, init) => {
 *     seen.push(`${init?.method} ${new URL(String(input)).pathname} body=${init?.body ?? "none"}`);
 *     return Promise.resolve(Response.json({ id: "drun_1", deployment_id: "dep_1" }));
 *   },
 * });
 * const run = await client.runDeployment("dep_1");
 * assert.equal(run.id, "drun_1");
 * // Triggering a deployment is a body-less POST.
 * assert.deepEqual(seen, ["POST /v1/deployments/dep_1/run body=none"]);
 * ```
 */
export interface ManagedAgentDeploymentsApi {
  /** Creates a scheduled deployment; `schedule.upcoming_runs_at` shows how the cron parsed. */
  createDeployment(
    params: CreateManagedAgentDeploymentParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment>;

  /** Reads a deployment. */
  getDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment>;

  /** Lists deployments (every page). */
  listDeployments(params?: ListManagedAgentDeploymentsParams): Promise<ManagedAgentDeployment[]>;

  /** Yields deployments page by page. */
  iterateDeployments(
    params?: ListManagedAgentDeploymentsParams,
  ): AsyncGenerator<ManagedAgentDeployment, void>;

  /** Pauses a deployment: scheduled triggers are suppressed, manual runs still work. */
  pauseDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment>;

  /** Resumes a paused deployment from its next occurrence (no backfill). */
  unpauseDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment>;

  /** Archives a deployment (terminal: the schedule stops). */
  archiveDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment>;

  /** Triggers a deployment now (works while paused) and returns the run record. */
  runDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeploymentRun>;

  /** Lists a deployment's runs (every page); `hasError` lists failed runs only. */
  listDeploymentRuns(
    deploymentId: string,
    params?: ListDeploymentRunsParams & ManagedAgentListOptions,
  ): Promise<ManagedAgentDeploymentRun[]>;

  /** Yields a deployment's runs page by page. */
  iterateDeploymentRuns(
    deploymentId: string,
    params?: ListDeploymentRunsParams & ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentDeploymentRun, void>;

  /** Reads a deployment run. */
  getDeploymentRun(
    deploymentRunId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeploymentRun>;
}

/** The implementation of {@linkcode ManagedAgentDeploymentsApi}, installed on the client's prototype. */
export const deploymentsApi: ManagedAgentDeploymentsApi & ThisType<ManagedAgentDeploymentsApi> = {
  createDeployment(
    params: CreateManagedAgentDeploymentParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment> {
    return wire(this).post(
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
  },

  getDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment> {
    return wire(this).get(providerDeploymentPath(deploymentId), undefined, options);
  },

  listDeployments(params?: ListManagedAgentDeploymentsParams): Promise<ManagedAgentDeployment[]> {
    return collect(this.iterateDeployments(params));
  },

  iterateDeployments(
    params?: ListManagedAgentDeploymentsParams,
  ): AsyncGenerator<ManagedAgentDeployment, void> {
    return wire(this).iterate(PROVIDER_COLLECTION_PATHS.deployments, {
      agent_id: params?.agentId,
      status: params?.status,
      include_archived: params?.includeArchived,
      created_at: range(params?.createdAt),
    }, params);
  },

  pauseDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment> {
    return wire(this).post(`${providerDeploymentPath(deploymentId)}/pause`, undefined, options);
  },

  unpauseDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment> {
    return wire(this).post(`${providerDeploymentPath(deploymentId)}/unpause`, undefined, options);
  },

  archiveDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeployment> {
    return wire(this).post(`${providerDeploymentPath(deploymentId)}/archive`, undefined, options);
  },

  runDeployment(
    deploymentId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeploymentRun> {
    return wire(this).post(`${providerDeploymentPath(deploymentId)}/run`, undefined, options);
  },

  listDeploymentRuns(
    deploymentId: string,
    params?: ListDeploymentRunsParams & ManagedAgentListOptions,
  ): Promise<ManagedAgentDeploymentRun[]> {
    return collect(this.iterateDeploymentRuns(deploymentId, params));
  },

  iterateDeploymentRuns(
    deploymentId: string,
    params?: ListDeploymentRunsParams & ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentDeploymentRun, void> {
    if (typeof deploymentId !== "string" || deploymentId === "") {
      throw new TypeError("deploymentId must be a non-empty string");
    }
    return wire(this).iterate(PROVIDER_COLLECTION_PATHS.deploymentRuns, {
      deployment_id: deploymentId,
      has_error: params?.hasError,
    }, params);
  },

  getDeploymentRun(
    deploymentRunId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentDeploymentRun> {
    return wire(this).get(providerDeploymentRunPath(deploymentRunId), undefined, options);
  },
};
