/**
 * In-process dispatch of an MCP tool call to the route that serves the same operation over
 * HTTP. The call runs through the same rules as `/v1/*` would run after the headers (the
 * capability check, the in-flight quota, the idempotency key, the tool's own arguments, the JSON
 * body schema and the idempotency record), in the one order of the shared rules (`rules/order.ts`), then the route's
 * own handler, composed by the same composer with the same error handler, so both interfaces
 * share one implementation and one order of every rule and one rendering of every refusal.
 *
 * @module
 */
import { compose, type Next, type Rule } from "../chain.ts";
import { type AuthenticatedPrincipal, RequestContext } from "../context.ts";
import { errorResponse } from "../errors.ts";
import type { RouteDefinition } from "../router.ts";
import { capabilityRule } from "../rules/capability.ts";
import { MAX_DEADLINE_AHEAD_MS } from "../rules/deadline.ts";
import { idempotencyKeyRule } from "../rules/idempotency.ts";
import { jsonRule } from "../rules/json.ts";
import { inRuleOrder } from "../rules/order.ts";
import type { RuntimeServices } from "../services.ts";

/** Base of the URLs of in-process requests; never reached over the network. */
const INTERNAL_ORIGIN = "http://mcp.internal";

/** One operation run through a route. */
export interface RouteCall {
  /** The caller, authenticated on the MCP request that carries the call. */
  principal: AuthenticatedPrincipal;
  /** Path and query of the request, such as `/v1/runs/sesn_1/events?after=3`. */
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
  /** `Accept` of the request, for a route that answers in several forms (default none). */
  accept?: string;
  /**
   * Checks of the tool's own arguments: the `arguments` step of the shared order, after the
   * capability and the idempotency key, before the body schema.
   */
  prepare?: () => void;
  /**
   * The `quota` step: the tool call's own in-flight slot, held for the whole call
   * (`heldSlot` of `rules/quota.ts`); absent: none taken.
   */
  quota?: Rule<RequestContext>;
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
 * Runs a route in process for a tool call. Every refusal, of the rules or of the handler,
 * arrives as an outcome with the error body and its 4xx or 5xx status.
 */
export async function runRoute(
  route: RouteDefinition,
  services: Pick<RuntimeServices, "idempotency" | "logger">,
  call: RouteCall,
): Promise<RouteOutcome> {
  const headers = new Headers();
  headers.set("x-correlation-id", call.correlationId);
  if (call.idempotencyKey !== undefined) headers.set("idempotency-key", call.idempotencyKey);
  if (call.accept !== undefined) headers.set("accept", call.accept);
  const request = new Request(`${INTERNAL_ORIGIN}${call.path}`, { method: route.method, headers });
  const context = new RequestContext(request, call.now);
  context.principal = call.principal;
  context.route = route.path;
  context.params = call.params ?? {};
  context.deadline = call.deadline > 0 ? call.deadline : call.now + MAX_DEADLINE_AHEAD_MS;
  if (route.body !== undefined) context.bodyBytes = encoder.encode(JSON.stringify(call.body ?? {}));
  const prepare = call.prepare;
  // A call without a key skips both idempotency steps: over MCP the key is optional.
  const keyed = route.idempotent && call.idempotencyKey !== undefined;
  const rules = inRuleOrder<RequestContext>({
    capability: route.capability === undefined ? undefined : capabilityRule(route.capability),
    quota: call.quota,
    idempotencyKey: keyed ? idempotencyKeyRule() : undefined,
    arguments: prepare === undefined ? undefined : (_context: RequestContext, next: Next) => {
      prepare();
      return next();
    },
    json: route.body === undefined ? undefined : jsonRule(route.body),
    idempotency: keyed
      ? services.idempotency.rule({ mode: route.idempotency, replay: route.replay?.bind(route) })
      : undefined,
  });
  rules.push((current) => route.handle(current));
  const onError = (error: unknown, current: RequestContext): Response =>
    errorResponse(error, current, services.logger);
  const response = await compose(rules, { onError })(context);
  const text = await response.text();
  return {
    status: response.status,
    body: text === "" ? null : JSON.parse(text),
    replayed: response.headers.get("idempotent-replayed") === "true",
  };
}
