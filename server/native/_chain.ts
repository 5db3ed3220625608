/**
 * The rules of the provider's own API (`/provider`), composed per route by the one composer
 * (`server/chain.ts`) in the one rule order (`server/rules/order.ts`), replacing the shared header
 * rules of `/v1` as MCP's do:
 *
 * | step | `/provider` |
 * |---|---|
 * | (first) | a `request-id` for the request (its correlation id), set on every answer |
 * | `duplicates` | the shared rule, and one credential: `Authorization` or `x-api-key` |
 * | `authenticate` | the shared authenticator, on that credential (same expiry and revocation) |
 * | `interfaceVersion` | the provider API's version and betas read, to pass on (`_headers.ts`) |
 * | `correlation` | when `x-correlation-id` is present |
 * | `deadline` | `x-deadline` when present, else the interface's timeout from now |
 * | `capability` | the route's, when it names one |
 * | `quota` | the shared in-flight quota |
 * | `idempotencyKey` | when `idempotency-key` is present (the vendor SDK sends none) |
 * | `body` | the shared limit, on routes that read a body |
 * | `json` | the route's schema, when it has one and a body came |
 * | `idempotency` | when `idempotency-key` is present: `/v1`'s semantics |
 *
 * Every refusal, of any rule or handler, is rendered once in the provider's shape
 * (`server/runs/native_error.ts`).
 *
 * @module
 */
import type { Authenticator } from "../authenticator.ts";
import { compose, type Next, type Rule } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { RuntimeLogger } from "../log.ts";
import type { BodySchema } from "../router.ts";
import { authenticateRule } from "../rules/authenticate.ts";
import { bodyRule } from "../rules/body.ts";
import { capabilityRule } from "../rules/capability.ts";
import { correlationRule } from "../rules/correlation.ts";
import { deadlineRule } from "../rules/deadline.ts";
import { duplicatesRule } from "../rules/duplicates.ts";
import { type Idempotency, idempotencyKeyRule } from "../rules/idempotency.ts";
import { jsonRule } from "../rules/json.ts";
import { inRuleOrder } from "../rules/order.ts";
import { type InFlightQuota, quotaRule } from "../rules/quota.ts";
import type { RunCall, UpstreamOptions } from "../runs/call.ts";
import { nativeErrorResponse } from "../runs/native_error.ts";
import type { Capability } from "../store/types.ts";
import { credentialOf, upstreamOf } from "./_headers.ts";

/** What a `/provider` handler knows of its request beyond the context. */
export interface NativeCall {
  /** The request's id (`request-id`). */
  readonly requestId: string;
  /** The request's credential as an `Authorization` value (streams re-check it). */
  readonly credential: string | null;
  /** The call into the run gateway, with what it passes on to the provider. */
  readonly run: RunCall;
  /** The version and betas to pass on. */
  readonly upstream: UpstreamOptions;
}

/** A `/provider` handler. */
export type NativeHandler = (context: RequestContext, call: NativeCall) => Promise<Response>;

/** What the rules of one route need. */
export interface NativeRouteRules {
  /** Capability the caller needs, when the route names one. */
  capability?: Capability;
  /** Whether the route reads a body (the body limit runs). */
  body?: boolean;
  /** The body's schema, checked when a body came. */
  schema?: BodySchema;
  /** Whether an `idempotency-key` is honoured (POSTs). */
  idempotent?: boolean;
}

/** The shared parts the rules use. */
export interface NativeRuleParts {
  authenticator: Authenticator;
  quota: InFlightQuota;
  idempotency: Idempotency;
  logger: RuntimeLogger;
  maxBodyBytes: number;
  /** How long each call of the interface may take, in ms, when it names no `x-deadline`. */
  timeoutMs: number;
}

interface NativeState {
  credential: string | null;
  upstream: UpstreamOptions;
}

/** What the rules found of each request under way, for its handler. */
const states = new WeakMap<RequestContext, NativeState>();

/** The request's id: its correlation id (the request's own when valid, else a fresh one). */
export function requestIdOf(context: RequestContext): string {
  return context.responseCorrelationId;
}

/** Sets the `request-id` on an answer (a copy when its headers cannot change). */
export function withRequestId(response: Response, requestId: string): Response {
  try {
    response.headers.set("request-id", requestId);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    copy.headers.set("request-id", requestId);
    return copy;
  }
}

function whenPresent(
  present: (context: RequestContext) => boolean,
  rule: Rule<RequestContext>,
): Rule<RequestContext> {
  return (context, next) => present(context) ? rule(context, next) : next();
}

/**
 * Composes the chain of one `/provider` route: the rules of the module doc, then `handle`.
 */
export function nativeChain(
  parts: NativeRuleParts,
  rules: NativeRouteRules,
  handle: NativeHandler,
): (context: RequestContext) => Response | Promise<Response> {
  const hasKey = (context: RequestContext) => context.idempotencyKey !== null;

  async function tag(context: RequestContext, next: Next): Promise<Response> {
    return withRequestId(await next(), requestIdOf(context));
  }

  function credential(context: RequestContext, next: Next) {
    states.set(context, { credential: credentialOf(context.request.headers), upstream: {} });
    return next();
  }

  function upstream(context: RequestContext, next: Next) {
    states.get(context)!.upstream = upstreamOf(context.request.headers);
    return next();
  }

  const headerDeadline = deadlineRule();
  function deadline(context: RequestContext, next: Next) {
    if (context.deadlineHeader !== null) return headerDeadline(context, next);
    context.deadline = context.receivedAt + parts.timeoutMs;
    return next();
  }

  const schema = rules.schema === undefined ? undefined : jsonRule(rules.schema);
  function json(context: RequestContext, next: Next) {
    if (schema === undefined || (context.bodyBytes?.length ?? 0) === 0) return next();
    const type = context.request.headers.get("content-type");
    if (type !== null && !/^application\/json\s*(;|$)/i.test(type)) {
      throw new InterfaceError("unsupportedMediaType", "Content-Type must be application/json");
    }
    return schema(context, next);
  }

  function handler(context: RequestContext) {
    const state = states.get(context)!;
    const principal = context.principal;
    if (principal === null) {
      throw new InterfaceError("authenticationFailed", "The request is not authenticated");
    }
    return handle(context, {
      requestId: requestIdOf(context),
      credential: state.credential,
      upstream: state.upstream,
      run: {
        principal,
        deadline: context.deadline,
        correlationId: context.responseCorrelationId,
        at: context.receivedAt,
        idempotency: context.idempotency,
        upstream: state.upstream,
      },
    });
  }

  const duplicates = duplicatesRule();
  return compose<RequestContext>([
    tag,
    ...inRuleOrder<RequestContext>({
      duplicates: (context, next) => duplicates(context, () => credential(context, next)),
      authenticate: authenticateRule(
        parts.authenticator,
        (context) => states.get(context)?.credential ?? null,
      ),
      interfaceVersion: upstream,
      correlation: whenPresent((context) => context.correlationHeader !== null, correlationRule()),
      deadline,
      capability: rules.capability === undefined ? undefined : capabilityRule(rules.capability),
      quota: quotaRule(parts.quota),
      idempotencyKey: rules.idempotent ? whenPresent(hasKey, idempotencyKeyRule()) : undefined,
      body: rules.body ? bodyRule({ maxBytes: parts.maxBodyBytes }) : undefined,
      json: rules.body ? json : undefined,
      idempotency: rules.idempotent ? whenPresent(hasKey, parts.idempotency.rule()) : undefined,
    }),
    handler,
  ], {
    onError: (error, context) =>
      nativeErrorResponse(error, requestIdOf(context), parts.logger, {
        method: context.method,
        path: context.path,
        correlationId: context.responseCorrelationId,
      }),
  });
}
