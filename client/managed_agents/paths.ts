/**
 * Wire constants of the managed-agents API: the beta value and the collection paths. The path of
 * each resource lives with its methods (`agents.ts`, `sessions.ts`, …); there every id is checked
 * and percent-encoded as one path segment, so an id can never climb out of its resource (`..`,
 * `/`, `?` and `#` are refused or encoded).
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
