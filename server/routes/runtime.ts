/**
 * `GET /v1/runtime` (capability `session:read`): the interface version, the caller's own
 * principal id, name and metadata (when it has them), capabilities, expiry and run policy,
 * whether runs are enabled (a provider credential is configured), and, for a caller with a
 * budget, what it spent and holds in the budget's current period (read from the store on every
 * request; the rest of the answer is built once per principal).
 *
 * @module
 */
import type { AuthenticatedPrincipal, RequestContext } from "../context.ts";
import type { RouteDefinition } from "../router.ts";
import { INTERFACE_VERSION, type RuntimeInfo } from "../../wire/mod.ts";
import { policyAnswer, runPolicyOf } from "../runs/policy.ts";
import { spendStates } from "../runs/spend.ts";
import type { SpendStore } from "../store/spend.ts";

/** Options of {@linkcode runtimeRoutes}. */
export interface RuntimeRouteOptions {
  /** Whether the run routes are enabled (default false). */
  runs?: boolean;
  /** The store's spend part, for what a caller with a budget spent (without: not shown). */
  spend?: SpendStore;
  /** The clock (the current budget period), default `Date.now`. */
  now?: () => number;
}

/**
 * The runtime route.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runtimeRoutes } from "./runtime.ts";
 * assert.equal(runtimeRoutes()[0].path, "/v1/runtime");
 * ```
 */
export function runtimeRoutes(options: RuntimeRouteOptions = {}): RouteDefinition[] {
  const runs = options.runs ?? false;
  const spend = options.spend;
  const now = options.now ?? Date.now;
  /** Serialized answers by principal: principals are immutable and cached by the authenticator. */
  const bodies = new WeakMap<AuthenticatedPrincipal, string>();
  /** The answers of principals with a budget, without what they spent (read per request). */
  const budgeted = new WeakMap<AuthenticatedPrincipal, RuntimeInfo>();
  function runtimeInfo(context: RequestContext): Response | Promise<Response> {
    const principal = context.principal!;
    const held = budgeted.get(principal);
    if (held !== undefined) return withSpend(context, principal, held);
    let body = bodies.get(principal);
    if (body === undefined) {
      // Copies of the principal's frozen lists: built once per principal, then cached.
      const policy = runPolicyOf(principal);
      const info: RuntimeInfo = {
        interfaceVersion: INTERFACE_VERSION,
        principalId: principal.principalId,
        ...(principal.name !== undefined ? { name: principal.name } : {}),
        ...(principal.metadata !== undefined ? { metadata: { ...principal.metadata } } : {}),
        capabilities: [...principal.capabilities],
        expiresAt: principal.expiresAt,
        runs,
        ...policyAnswer(policy),
      };
      if (policy.spend.budget !== null && spend !== undefined) {
        budgeted.set(principal, info);
        return withSpend(context, principal, info);
      }
      body = JSON.stringify(info);
      bodies.set(principal, body);
    }
    return context.json(body);
  }
  async function withSpend(
    context: RequestContext,
    principal: AuthenticatedPrincipal,
    info: RuntimeInfo,
  ): Promise<Response> {
    const [state] = await spendStates(spend!, [{
      principalId: principal.principalId,
      limits: runPolicyOf(principal).spend,
    }], now());
    return context.json(JSON.stringify({ ...info, spend: state }));
  }
  return [{
    method: "GET",
    path: "/v1/runtime",
    kind: "shared",
    capability: "session:read",
    handle: runtimeInfo,
  }];
}
