/**
 * The TypeScript SDK of the automation runtime service. It runs in Deno, Node 20+ and browsers
 * (web standards only) and sets the shared request headers for you: `authorization`,
 * `x-interface-version`, a fresh `x-correlation-id`, `x-deadline`, and an `idempotency-key` on
 * mutating calls. Safe calls are retried on connection errors, 408, 409 `idempotencyInFlight`,
 * 429 and 503 (not `runQuotaExceeded` or `providerNotConfigured`, which last), honouring
 * `Retry-After`; failures reject with {@linkcode RuntimeServiceError}. Runs are under
 * `client.runs` ({@linkcode RunsApi}), the audit log under `client.audit` ({@linkcode AuditApi}),
 * trust policies under `client.trustPolicies` ({@linkcode TrustPoliciesApi});
 * {@linkcode exchangeToken} trades a CI job's OIDC ID token for a principal, with no stored
 * secret; {@linkcode createRuntimeServiceProviderModule} runs run-contract code through the
 * service.
 *
 * @example Issue, list and revoke a principal
 * ```ts
 * import assert from "node:assert/strict";
 * import { RuntimeServiceClient, RuntimeServiceError } from "./mod.ts";
 *
 * // A stand-in for the service, so that the example runs anywhere; leave `fetch` out for real.
 * const issuedBodies: unknown[] = [];
 * const service: typeof fetch = async (input, init) => {
 *   const request = new Request(input, init);
 *   if (request.method === "POST") {
 *     const body = await request.json();
 *     issuedBodies.push(body);
 *     return Response.json({ ...body, bearer: "art_" + "n".repeat(43) }, { status: 201 });
 *   }
 *   if (request.method === "GET") {
 *     return Response.json({ principals: issuedBodies, nextCursor: null });
 *   }
 *   return Response.json({
 *     error: { code: "notFound", layer: "authority", message: "No principal with this id" },
 *   }, { status: 404 });
 * };
 *
 * const client = new RuntimeServiceClient({
 *   baseUrl: "http://127.0.0.1:7777",
 *   token: "art_" + "x".repeat(43), // never hard-code a real bearer: omit it to read AUTOMATION_RUNTIME_TOKEN
 *   fetch: service,
 * });
 * const issued = await client.createPrincipal(
 *   { capabilities: ["session:read"], expiresAt: new Date(Date.now() + 7 * 86_400_000) },
 *   // no idempotencyKey: a fresh one per call, resent on its retries (a fixed key would meet
 *   // this fresh expiresAt on a second run and answer 422 idempotencyConflict)
 * );
 * // issued.bearer is shown only now: hand it to the new principal's owner.
 * assert.equal((await client.listPrincipals()).length, 1);
 * await assert.rejects(
 *   () => client.revokePrincipal(issued.principalId),
 *   (error) => error instanceof RuntimeServiceError && error.code === "notFound",
 * );
 * ```
 *
 * @example Start a run and read it back
 * ```ts ignore
 * const run = await client.runs.start(
 *   { input: "Summarise the open issues", metadata: { agent_id: "agent_01" } },
 *   { idempotencyKey: "nightly-summary-2026-07-23" },
 * );
 * const state = (await client.runs.get(run.runId)).state; // "running", then "completed"
 * const finished = [];
 * for await (const past of client.runs.listAll({ state: "completed" })) finished.push(past.runId);
 * ```
 *
 * @example Cancel a call
 * ```ts
 * import assert from "node:assert/strict";
 * import { RuntimeServiceClient } from "./mod.ts";
 *
 * // A service that never answers until the call is aborted.
 * const hanging: typeof fetch = (_input, init) =>
 *   new Promise((_resolve, reject) =>
 *     init?.signal?.addEventListener("abort", () => reject(init.signal!.reason))
 *   );
 * const client = new RuntimeServiceClient({
 *   baseUrl: "http://127.0.0.1:7777",
 *   token: "art_" + "x".repeat(43),
 *   fetch: hanging,
 * });
 * const controller = new AbortController();
 * setTimeout(() => controller.abort(new Error("stopped by the caller")), 10);
 * await assert.rejects(
 *   () => client.listPrincipals({ signal: controller.signal }),
 *   /stopped by the caller/,
 * );
 * ```
 *
 * @module
 */
export { RuntimeServiceClient, type RuntimeServiceClientOptions } from "./client.ts";
export { RunsApi } from "./runs.ts";
export type { OpenStream, RunEventsOptions } from "./run_events.ts";
export type { ActivityOptions } from "./activity.ts";
export { AuditApi } from "./audit.ts";
export { TrustPoliciesApi } from "./trust_policies.ts";
export {
  exchangeToken,
  type ExchangeTokenOptions,
  GITHUB_ID_TOKEN_TOKEN_VARIABLE,
  GITHUB_ID_TOKEN_URL_VARIABLE,
  type GitHubActionsIdTokenOptions,
  requestGitHubActionsIdToken,
} from "./token_exchange.ts";
export {
  createRuntimeServiceProviderModule,
  RUNTIME_SERVICE_PROVIDER_KIND,
  type RuntimeServiceProviderOptions,
  RuntimeServiceRunClient,
} from "./provider_module.ts";
export { RuntimeServiceError, type RuntimeServiceErrorInit } from "./errors.ts";
export {
  type CallOptions,
  type CreatePrincipalParams,
  type MutatingCallOptions,
  REQUEST_METHODS,
  RUNTIME_INTERFACE_VERSION,
  type RuntimeAnswer,
  type RuntimeCapability,
  type RuntimeRequest,
} from "./types.ts";
// The wire contract: every request and answer shape of the API, the same bindings the server
// exports.
export * from "../wire/mod.ts";
// What the SDK's own signatures use of the client library (the run contract's types, the base
// class of `RuntimeServiceRunClient`, the registry's and fetch's types), so this entry point
// documents itself; the same bindings as `@automation/runtime/client`'s.
export type {
  RunStreamHandlers,
  RunStreamOptions,
  RunStreamResult,
  RuntimeBatchRequest,
  RuntimeBatchResult,
  RuntimeBatchStatus,
  RuntimeCapabilities,
  RuntimeCapabilityName,
  RuntimeClient,
  RuntimeRunStartBody,
  RuntimeRunStatus,
} from "../client/contract.ts";
export { BatchlessRuntimeClient } from "../client/batchless.ts";
export type { ProviderConnectionOverrides, ProviderModule } from "../client/registry.ts";
export type { FetchLike, ProviderTrace, ProviderTraceCallback } from "../client/http.ts";
