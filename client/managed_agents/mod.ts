/**
 * The managed-agents part of the client: {@linkcode ProviderManagedAgentClient} (the stateful
 * session client serving the universal run contract), wire paths, parsed session events, stream
 * mapping onto canonical run events, and the record and parameter types.
 *
 * @module
 */
export * from "./client.ts";
export { type ManagedAgentAgentsApi, providerAgentPath } from "./agents.ts";
export {
  type ManagedAgentEnvironmentsApi,
  providerEnvironmentPath,
  providerWorkPath,
} from "./environments.ts";
export {
  type ManagedAgentSessionsApi,
  providerSessionArchivePath,
  providerSessionPath,
  providerSessionResourcePath,
} from "./sessions.ts";
export {
  type ManagedAgentSessionEventsApi,
  providerSessionEventsPath,
  providerSessionEventStreamPath,
  providerSessionThreadPath,
} from "./session_events.ts";
export {
  type ManagedAgentMemoryApi,
  providerMemoryPath,
  providerMemoryStorePath,
  providerMemoryVersionPath,
} from "./memory.ts";
export { type ManagedAgentVaultsApi, providerCredentialPath, providerVaultPath } from "./vaults.ts";
export {
  type ManagedAgentDeploymentsApi,
  providerDeploymentPath,
  providerDeploymentRunPath,
} from "./deployments.ts";
export {
  checkRawPath,
  type ManagedAgentRawApi,
  type ManagedAgentRawRequest,
  type ManagedAgentRawResponse,
} from "./raw.ts";
export * from "./errors.ts";
export * from "./events.ts";
export * from "./session_reader.ts";
export * from "./paths.ts";
export * from "./stream.ts";
export * from "./types.ts";
export * from "./driver.ts";
export * from "./teams.ts";
export * from "./webhooks.ts";
