/**
 * The managed-agents part of the client: {@linkcode ProviderManagedAgentClient} (the stateful
 * session client serving the universal run contract), wire paths, parsed session events, stream
 * mapping onto canonical run events, and the record and parameter types.
 *
 * @module
 */
export * from "./client.ts";
export * from "./errors.ts";
export * from "./events.ts";
export * from "./paths.ts";
export * from "./stream.ts";
export * from "./types.ts";
export * from "./driver.ts";
export * from "./teams.ts";
export * from "./webhooks.ts";
