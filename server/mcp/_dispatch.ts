/**
 * In-process dispatch of an MCP tool call to the route that serves the same operation over
 * HTTP. The call runs through the same steps as `/v1/*` would run after the headers (the
 * capability check, the idempotency key and claim, the JSON body schema) and the route's own
 * handler, so both interfaces share one implementation of every rule.
 *
 * @module
 */
import { compose, type Step } from "../chain.ts";
import { type AuthenticatedPrincipal, RequestContext } from "../context.ts";
import type { RouteDefinition } from "../router.ts";
import { capabilityStep } from "../rules/capability.ts";
import { MAX_DEADLINE_AHEAD_MS } from "../rules/deadline.ts";
import { idempotencyClaimStep, idempotencyKeyStep } from "../rules/idempotency.ts";
import { jsonStep } from "../rules/json.ts";
import type { Store } from "../store/types.ts";

/** Base of the URLs of in-process requests; never reached over the network. */
const INTERNAL_ORIGIN = "http://mcp.internal";

/** One operation run through a route. */
export interface RouteCall {
  /** The caller, authenticated on the MCP request that carries the call. */
  principal: AuthenticatedPrincipal;
  /** Path used for the idempotency scope, such as `/v1/mcp/tools/principal_issue`. */
  path: string;
  /** Path parameters the route reads. */
  params?: Record<string, string>;
  /** JSON body of a route with a body schema. */
  body?: unknown;
  /** Idempotency key of a mutating call, when the caller gave one. */
  idempotencyKey?: string;
  /** Correlation id of the call: the MCP request's when valid, else a generated one. */
  correlationId: string;
  /** The MCP request's deadline in ms since the epoch, or 0 when it carried none. */
  deadline: number;
  /** Current time, ms since the epoch. */
  now: number;
  /** Checks of the tool's own arguments, run right after the capability check. */
  prepare?: () => void;
}

/** What a route answered. */
export interface RouteOutcome {
  /** HTTP status the route answered with. */
  status: number;
  /** The parsed JSON body, or null for an empty one. */
  body: unknown;
  /** Whether the answer is a replay of a recorded one. */
  replayed: boolean;
}

const encoder = new TextEncoder();

/**
 * Runs a route in process for a tool call. Refusals of the shared steps and of the handler
 * arrive as thrown `InterfaceError`s (or, for recorded idempotent answers, as a 4xx outcome).
 *
 * @example
 * ```ts ignore
 * const outcome = await runRoute(route, { store }, {
 *   principal, path: "/v1/mcp/tools/principals_list", correlationId: crypto.randomUUID(), deadline: 0,
 *   now: Date.now(),
 * });
 * ```
 */
export async function runRoute(
  route: RouteDefinition,
  shared: { store: Store },
  call: RouteCall,
): Promise<RouteOutcome> {
  const headers = new Headers();
  headers.set("x-correlation-id", call.correlationId);
  if (call.idempotencyKey !== undefined) headers.set("idempotency-key", call.idempotencyKey);
  const request = new Request(`${INTERNAL_ORIGIN}${call.path}`, { method: route.method, headers });
  const context = new RequestContext(request, call.now);
  context.principal = call.principal;
  context.params = call.params ?? {};
  context.deadline = call.deadline > 0 ? call.deadline : call.now + MAX_DEADLINE_AHEAD_MS;
  const steps: Step<RequestContext>[] = [];
  if (route.capability !== undefined) steps.push(capabilityStep(route.capability));
  const prepare = call.prepare;
  if (prepare !== undefined) {
    steps.push((_context, next) => {
      prepare();
      return next();
    });
  }
  if (route.body !== undefined) {
    context.bodyBytes = encoder.encode(JSON.stringify(call.body ?? {}));
    steps.push(jsonStep(route.body));
  }
  if (route.idempotent && call.idempotencyKey !== undefined) {
    steps.push(
      idempotencyKeyStep(),
      idempotencyClaimStep({
        store: shared.store,
        replay: route.replay?.bind(route),
        mode: route.idempotency,
      }),
    );
  }
  steps.push((current) => route.handle(current));
  const response = await compose(...steps)(context);
  const text = await response.text();
  return {
    status: response.status,
    body: text === "" ? null : JSON.parse(text),
    replayed: response.headers.get("idempotent-replayed") === "true",
  };
}
