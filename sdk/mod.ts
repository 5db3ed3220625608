/**
 * The TypeScript SDK of the automation runtime service. It runs in Deno, Node 20+ and browsers
 * (web standards only) and sets the shared request headers for you: `authorization`,
 * `x-interface-version`, a fresh `x-correlation-id`, `x-deadline`, and an `idempotency-key` on
 * mutating calls. Safe calls are retried on connection errors, 408, 409 `idempotencyInFlight`,
 * 429 and 503 (not `runQuotaExceeded` or `providerNotConfigured`, which last), honouring
 * `Retry-After`; failures reject with {@linkcode RuntimeServiceError}. Runs are under
 * `client.runs` ({@linkcode RunsApi}), the audit log under `client.audit` ({@linkcode AuditApi});
 * {@linkcode createRuntimeServiceProviderModule} runs run-contract code through the service.
 *
 * @example Issue, list and revoke a principal
 * ```ts ignore
 * import { RuntimeServiceClient, RuntimeServiceError } from "@automation/runtime/sdk";
 *
 * const client = new RuntimeServiceClient({
 *   baseUrl: "http://127.0.0.1:7777",
 *   token: Deno.env.get("AUTOMATION_RUNTIME_TOKEN")!, // never hard-code a bearer
 * });
 * const issued = await client.createPrincipal(
 *   { capabilities: ["session:read"], expiresAt: new Date(Date.now() + 7 * 86_400_000) },
 *   // no idempotencyKey: a fresh one per call, resent on its retries (a fixed key would meet
 *   // this fresh expiresAt on a second run and answer 422 idempotencyConflict)
 * );
 * // issued.bearer is shown only now: hand it to the new principal's owner.
 * console.log((await client.listPrincipals()).length);
 * try {
 *   await client.revokePrincipal(issued.principalId);
 * } catch (error) {
 *   if (error instanceof RuntimeServiceError) console.error(error.code, error.correlationId);
 *   throw error;
 * }
 * ```
 *
 * @example Start a run and read it back
 * ```ts ignore
 * const run = await client.runs.start(
 *   { input: "Summarise the open issues", metadata: { agent_id: "agent_01" } },
 *   { idempotencyKey: "nightly-summary-2026-07-23" },
 * );
 * console.log((await client.runs.get(run.runId)).state);
 * for await (const past of client.runs.listAll({ state: "completed" })) console.log(past.runId);
 * ```
 *
 * @example Cancel a call
 * ```ts ignore
 * const controller = new AbortController();
 * setTimeout(() => controller.abort(), 1000);
 * await client.listPrincipals({ signal: controller.signal });
 * ```
 *
 * @module
 */
export { RuntimeServiceClient, type RuntimeServiceClientOptions } from "./client.ts";
export {
  type ListRunsParams,
  type RunPage,
  type RunRecord,
  RunsApi,
  type SendRunMessageBody,
  type StartRunBody,
  type StartRunMetadata,
} from "./runs.ts";
export {
  type AuditAction,
  AuditApi,
  type AuditEntry,
  type AuditPage,
  type ListAuditParams,
} from "./audit.ts";
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
  type HealthStatus,
  type IssuedPrincipal,
  type MutatingCallOptions,
  type PrincipalSummary,
  RUNTIME_INTERFACE_VERSION,
  type RuntimeCapability,
  type RuntimeInfo,
  type RuntimePrincipal,
} from "./types.ts";
// The run contract's types the SDK's own signatures use, so this entry point documents itself.
export type {
  RunStreamEvent,
  RunStreamHandlers,
  RunStreamOptions,
  RunStreamResult,
  RuntimeBatchRequest,
  RuntimeBatchResult,
  RuntimeBatchStatus,
  RuntimeCapabilities,
  RuntimeCapabilityName,
  RuntimeClient,
  RuntimeRunInput,
  RuntimeRunStartBody,
  RuntimeRunState,
  RuntimeRunStatus,
  RuntimeUsage,
} from "../client/contract.ts";
export type { ProviderConnectionOverrides, ProviderModule } from "../client/registry.ts";
export type { FetchLike, ProviderTrace, ProviderTraceCallback } from "../client/_http.ts";
