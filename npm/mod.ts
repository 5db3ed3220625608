/**
 * The root of the npm package `@automation/runtime` (`import … from "@automation/runtime"` in
 * Node): the service SDK, the provider client library and the wire types, everything of the
 * package that runs in Node 20+, Deno and browsers. It is `@automation/runtime/sdk` and
 * `@automation/runtime/client` together, the same bindings.
 *
 * The JSR package's root (`mod.ts`) also re-exports the service itself
 * (`@automation/runtime/server`), which needs Deno; the npm package leaves the service out, and
 * `deno task npm` builds it from this module instead (see `docs/library.md`, "Installing").
 *
 * @example The SDK and the client library from one import
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderApiClient, RUN_STATES, RuntimeServiceClient } from "./mod.ts";
 *
 * // A stand-in for the service, so that the example runs anywhere; leave `fetch` out for real.
 * const service = new RuntimeServiceClient({
 *   baseUrl: "http://127.0.0.1:7777",
 *   token: "art_" + "x".repeat(43), // never hard-code a real bearer
 *   fetch: () => Promise.resolve(Response.json({ ok: true })),
 * });
 * assert.deepEqual(await service.health(), { ok: true });
 * assert.equal(typeof ProviderApiClient, "function");
 * assert.ok(RUN_STATES.includes("completed"));
 * ```
 *
 * @module
 */
export * from "../sdk/mod.ts";
export * from "../client/mod.ts";
