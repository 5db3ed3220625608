/**
 * The automation runtime service (Deno): the HTTP API, its middleware chain, the bootstrap
 * credential and the store backends.
 *
 * @module
 */
export * from "./store/types.ts";
export * from "./bootstrap/credential.ts";
