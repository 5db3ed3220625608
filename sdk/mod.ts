/**
 * The TypeScript SDK of the automation runtime service. It runs in Deno, Node 20+ and browsers
 * (web standards only) and sets the shared request headers for you: `authorization`,
 * `x-interface-version`, a fresh `x-correlation-id`, `x-deadline`, and an `idempotency-key` on
 * mutating calls. Safe calls are retried on connection errors, 408, 409 `idempotencyInFlight`,
 * 429 and 503, honouring `Retry-After`; failures reject with {@linkcode RuntimeServiceError}.
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
 *   { idempotencyKey: "issue-reporting-bot" },
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
export { RuntimeServiceError, type RuntimeServiceErrorInit } from "./errors.ts";
export {
  type CallOptions,
  type CreatePrincipalParams,
  type HealthStatus,
  type IssuedPrincipal,
  type MutatingCallOptions,
  type PrincipalPage,
  type PrincipalPageParams,
  type PrincipalSummary,
  RUNTIME_INTERFACE_VERSION,
  type RuntimeCapability,
  type RuntimeInfo,
  type RuntimePrincipal,
} from "./types.ts";
