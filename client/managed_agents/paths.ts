/**
 * Wire paths of the managed-agents API: the collection paths and one helper per resource path.
 * Every id is checked and percent-encoded as one path segment, so an id can never climb out of
 * its resource (`..`, `/`, `?` and `#` are refused or encoded).
 *
 * @module
 */

/** The beta value sent as `provider-beta` on every managed-agents request. */
export const PROVIDER_MANAGED_AGENTS_BETA = "managed-agents-2026-04-01";

/** The collection paths: each serves create (`POST`) and list (`GET`). */
export const PROVIDER_COLLECTION_PATHS: Readonly<{
  agents: "/v1/agents";
  sessions: "/v1/sessions";
  environments: "/v1/environments";
  memoryStores: "/v1/memory_stores";
  vaults: "/v1/vaults";
  deployments: "/v1/deployments";
  deploymentRuns: "/v1/deployment_runs";
}> = Object.freeze(
  {
    agents: "/v1/agents",
    sessions: "/v1/sessions",
    environments: "/v1/environments",
    memoryStores: "/v1/memory_stores",
    vaults: "/v1/vaults",
    deployments: "/v1/deployments",
    deploymentRuns: "/v1/deployment_runs",
  } as const,
);

/**
 * Encodes one id as a path segment the way the provider's SDK does (RFC 3986 `pchar` kept, the
 * rest percent-encoded). Empty ids, `.`, `..` and ids starting with `;` are refused.
 */
function segment(name: string, id: string): string {
  if (typeof id !== "string" || id === "") {
    throw new TypeError(`${name} must be a non-empty string`);
  }
  const encoded = id.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@]+/g, encodeURIComponent);
  if (/^(?:\.|%2e){1,2}$/i.test(encoded) || encoded.startsWith(";")) {
    throw new TypeError(`${name} cannot be used as a path segment`);
  }
  return encoded;
}

/**
 * The path of one agent: retrieve (`GET`) and update (`POST`, creates a new version).
 *
 * @example
 * ```ts
 * import { providerAgentPath } from "@automation/runtime/client";
 * console.log(providerAgentPath("agent_1")); // "/v1/agents/agent_1"
 * ```
 */
export function providerAgentPath(agentId: string): string {
  return `/v1/agents/${segment("agentId", agentId)}`;
}

/**
 * The path of one environment: retrieve, update (`POST`) and delete.
 *
 * @example
 * ```ts
 * import { providerEnvironmentPath } from "@automation/runtime/client";
 * console.log(providerEnvironmentPath("env_1")); // "/v1/environments/env_1"
 * ```
 */
export function providerEnvironmentPath(environmentId: string): string {
  return `/v1/environments/${segment("environmentId", environmentId)}`;
}

/**
 * The path of one session: retrieve, update (`POST`) and delete.
 *
 * @example
 * ```ts
 * import { providerSessionPath } from "@automation/runtime/client";
 * console.log(providerSessionPath("sesn_1")); // "/v1/sessions/sesn_1"
 * ```
 */
export function providerSessionPath(sessionId: string): string {
  return `/v1/sessions/${segment("sessionId", sessionId)}`;
}

/**
 * The path that archives a session (makes it read-only).
 *
 * @example
 * ```ts
 * import { providerSessionArchivePath } from "@automation/runtime/client";
 * console.log(providerSessionArchivePath("sesn_1")); // "/v1/sessions/sesn_1/archive"
 * ```
 */
export function providerSessionArchivePath(sessionId: string): string {
  return `${providerSessionPath(sessionId)}/archive`;
}

/**
 * The path to send events to a session (`POST`) and list its event history (`GET`).
 *
 * @example
 * ```ts
 * import { providerSessionEventsPath } from "@automation/runtime/client";
 * console.log(providerSessionEventsPath("sesn_1")); // "/v1/sessions/sesn_1/events"
 * ```
 */
export function providerSessionEventsPath(sessionId: string): string {
  return `${providerSessionPath(sessionId)}/events`;
}

/**
 * The path of a session's SSE event stream.
 *
 * @example
 * ```ts
 * import { providerSessionEventStreamPath } from "@automation/runtime/client";
 * console.log(providerSessionEventStreamPath("sesn_1")); // "/v1/sessions/sesn_1/events/stream"
 * ```
 */
export function providerSessionEventStreamPath(sessionId: string): string {
  return `${providerSessionPath(sessionId)}/events/stream`;
}

/**
 * The path of a session's resources, or of one resource when `resourceId` is given.
 *
 * @example
 * ```ts
 * import { providerSessionResourcePath } from "@automation/runtime/client";
 * console.log(providerSessionResourcePath("sesn_1", "sesrsc_1"));
 * // "/v1/sessions/sesn_1/resources/sesrsc_1"
 * ```
 */
export function providerSessionResourcePath(sessionId: string, resourceId?: string): string {
  const base = `${providerSessionPath(sessionId)}/resources`;
  return resourceId === undefined ? base : `${base}/${segment("resourceId", resourceId)}`;
}

/**
 * The path of a session's threads, or of one thread when `threadId` is given.
 *
 * @example
 * ```ts
 * import { providerSessionThreadPath } from "@automation/runtime/client";
 * console.log(providerSessionThreadPath("sesn_1", "sthr_1")); // "/v1/sessions/sesn_1/threads/sthr_1"
 * ```
 */
export function providerSessionThreadPath(sessionId: string, threadId?: string): string {
  const base = `${providerSessionPath(sessionId)}/threads`;
  return threadId === undefined ? base : `${base}/${segment("threadId", threadId)}`;
}

/**
 * The path of a memory store.
 *
 * @example
 * ```ts
 * import { providerMemoryStorePath } from "@automation/runtime/client";
 * console.log(providerMemoryStorePath("memstore_1")); // "/v1/memory_stores/memstore_1"
 * ```
 */
export function providerMemoryStorePath(storeId: string): string {
  return `/v1/memory_stores/${segment("storeId", storeId)}`;
}

/**
 * The path of a store's memories, or of one memory when `memoryId` is given. Updates are `POST`.
 *
 * @example
 * ```ts
 * import { providerMemoryPath } from "@automation/runtime/client";
 * console.log(providerMemoryPath("memstore_1", "mem_1"));
 * // "/v1/memory_stores/memstore_1/memories/mem_1"
 * ```
 */
export function providerMemoryPath(storeId: string, memoryId?: string): string {
  const base = `${providerMemoryStorePath(storeId)}/memories`;
  return memoryId === undefined ? base : `${base}/${segment("memoryId", memoryId)}`;
}

/**
 * The path of a store's memory versions, or of one version when `versionId` is given.
 *
 * @example
 * ```ts
 * import { providerMemoryVersionPath } from "@automation/runtime/client";
 * console.log(providerMemoryVersionPath("memstore_1"));
 * // "/v1/memory_stores/memstore_1/memory_versions"
 * ```
 */
export function providerMemoryVersionPath(storeId: string, versionId?: string): string {
  const base = `${providerMemoryStorePath(storeId)}/memory_versions`;
  return versionId === undefined ? base : `${base}/${segment("versionId", versionId)}`;
}

/**
 * The path of a vault.
 *
 * @example
 * ```ts
 * import { providerVaultPath } from "@automation/runtime/client";
 * console.log(providerVaultPath("vlt_1")); // "/v1/vaults/vlt_1"
 * ```
 */
export function providerVaultPath(vaultId: string): string {
  return `/v1/vaults/${segment("vaultId", vaultId)}`;
}

/**
 * The path of a vault's credentials, or of one credential when `credentialId` is given.
 *
 * @example
 * ```ts
 * import { providerCredentialPath } from "@automation/runtime/client";
 * console.log(providerCredentialPath("vlt_1", "vcrd_1")); // "/v1/vaults/vlt_1/credentials/vcrd_1"
 * ```
 */
export function providerCredentialPath(vaultId: string, credentialId?: string): string {
  const base = `${providerVaultPath(vaultId)}/credentials`;
  return credentialId === undefined ? base : `${base}/${segment("credentialId", credentialId)}`;
}

/**
 * The path of a deployment.
 *
 * @example
 * ```ts
 * import { providerDeploymentPath } from "@automation/runtime/client";
 * console.log(providerDeploymentPath("depl_1")); // "/v1/deployments/depl_1"
 * ```
 */
export function providerDeploymentPath(deploymentId: string): string {
  return `/v1/deployments/${segment("deploymentId", deploymentId)}`;
}

/**
 * The path of a deployment run.
 *
 * @example
 * ```ts
 * import { providerDeploymentRunPath } from "@automation/runtime/client";
 * console.log(providerDeploymentRunPath("drun_1")); // "/v1/deployment_runs/drun_1"
 * ```
 */
export function providerDeploymentRunPath(deploymentRunId: string): string {
  return `/v1/deployment_runs/${segment("deploymentRunId", deploymentRunId)}`;
}

/**
 * The path of an environment's self-hosted work queue, or of one work item.
 *
 * @example
 * ```ts
 * import { providerWorkPath } from "@automation/runtime/client";
 * console.log(providerWorkPath("env_1", "work_1")); // "/v1/environments/env_1/work/work_1"
 * ```
 */
export function providerWorkPath(environmentId: string, workId?: string): string {
  const base = `${providerEnvironmentPath(environmentId)}/work`;
  return workId === undefined ? base : `${base}/${segment("workId", workId)}`;
}
