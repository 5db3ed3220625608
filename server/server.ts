/**
 * The runtime server: routes composed with the shared request rules, as a fetch-style handler.
 *
 * @module
 */
import { Authenticator } from "./authenticator.ts";
import type { BootstrapCredential } from "./bootstrap/credential.ts";
import { type CorsOptions, withCors } from "./cors.ts";
import { compose, composeEager, type EagerChain, type EagerStep, type Step } from "./chain.ts";
import { RequestContext } from "./context.ts";
import { InterfaceError, internalError, toResponse } from "./errors.ts";
import { createJsonLogger, type RuntimeLogger } from "./log.ts";
import type { McpOptions } from "./mcp/endpoint.ts";
import { createLazyMcpEndpoint } from "./mcp/_lazy.ts";
import { type RouteDefinition, Router } from "./router.ts";
import { healthRoutes } from "./routes/health.ts";
import { principalRoutes } from "./routes/principals.ts";
import { runtimeRoutes } from "./routes/runtime.ts";
import { authenticateStep } from "./rules/authenticate.ts";
import { bodyStep, DEFAULT_MAX_BODY_BYTES } from "./rules/body.ts";
import { capabilityStep } from "./rules/capability.ts";
import { contentTypeStep } from "./rules/content_type.ts";
import { correlationStep } from "./rules/correlation.ts";
import { deadlineStep } from "./rules/deadline.ts";
import { duplicatesStep } from "./rules/duplicates.ts";
import { idempotencyClaimStep, idempotencyKeyStep } from "./rules/idempotency.ts";
import { interfaceVersionStep } from "./rules/interface_version.ts";
import { jsonStep } from "./rules/json.ts";
import { DEFAULT_IN_FLIGHT_QUOTA, InFlightQuota, quotaStep } from "./rules/quota.ts";
import { routeStep } from "./rules/route.ts";
import type { RuntimeServices } from "./services.ts";
import { type Store, StoreUnavailableError } from "./store/types.ts";

/** Default retention of revoked and expired principals and retired namespaces: 30 days. */
export const DEFAULT_RETENTION_MS = 30 * 86_400_000;

/** Options of {@linkcode createRuntimeServer}. */
export interface RuntimeServerOptions {
  /** The enrolled bootstrap credential. */
  bootstrap: BootstrapCredential;
  /** The authority store; the caller opens and closes it. */
  store: Store;
  /** Body limit in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** Requests one principal may have in flight (default 64). */
  inFlightQuota?: number;
  /** Log sink (default: JSON lines on stderr). */
  logger?: RuntimeLogger;
  /** Clock, ms since the epoch (default `Date.now`). */
  now?: () => number;
  /**
   * Cache principals in this process (default on). Safe with several processes or replicas on
   * one store: every authenticated request reads the store's revocation epoch and the cache is
   * emptied when it moved (see `server/authenticator.ts`).
   */
  principalCache?: boolean;
  /**
   * How long revoked and expired principals, and the records of a rotated-away bootstrap, are
   * kept, in ms (default 30 days). They are purged with the idempotency records.
   */
  retentionMs?: number;
  /** Browser origins allowed to call `/v1/*` across origins (default: none). */
  cors?: CorsOptions;
  /**
   * How often expired idempotency records (and principals past their retention) are purged, in
   * ms: at most once an interval, by the first request after it (default 10 min; 0 never).
   */
  cleanupIntervalMs?: number;
  /** Further routes, such as the MCP endpoint, built from the server's shared parts. */
  routes?: (services: RuntimeServices) => readonly RouteDefinition[];
  /** The MCP endpoint at `/v1/mcp`: allowed origins and hosts, session limits. */
  mcp?: McpOptions;
}

/** A runtime server. */
export interface RuntimeServer {
  /** Answers one request; pass it to `Deno.serve`. */
  handler(request: Request, info?: unknown): Promise<Response>;
  /** The shared parts, for tools built on the server. */
  readonly services: RuntimeServices;
  /**
   * Ends every MCP session and its open SSE streams, which would otherwise hold a graceful
   * shutdown open forever; later sessions are refused. `close()` does it too.
   */
  closeSessions(): Promise<void>;
  /**
   * Starts draining: new requests get 503 `shuttingDown`; resolves once every request already
   * in flight has been answered.
   */
  drain(): Promise<void>;
  /** Stops background work and flushes the log. The store stays open. */
  close(): Promise<void>;
}

function shuttingDown(): InterfaceError {
  return new InterfaceError("shuttingDown", "The runtime is shutting down", {
    headers: { "retry-after": "1" },
  });
}

function neverNext(): never {
  throw new Error("The route step has no next step");
}

/**
 * Creates the runtime server.
 *
 * @example
 * ```ts ignore
 * import { createRuntimeServer } from "./server.ts";
 * const server = createRuntimeServer({ bootstrap, store });
 * Deno.serve({ hostname: "127.0.0.1", port: 7777 }, server.handler);
 * ```
 */
export function createRuntimeServer(options: RuntimeServerOptions): RuntimeServer {
  const { bootstrap, store } = options;
  const now = options.now ?? Date.now;
  const logger = options.logger ?? createJsonLogger();
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const authenticator = new Authenticator({
    bootstrap,
    store,
    cache: options.principalCache ?? true,
  });
  const quota = new InFlightQuota(options.inFlightQuota ?? DEFAULT_IN_FLIGHT_QUOTA);
  const services: RuntimeServices = Object.freeze({
    bootstrap,
    store,
    authenticator,
    quota,
    logger,
    now,
    maxBodyBytes,
  });

  const shared = {
    duplicates: duplicatesStep(),
    authenticate: authenticateStep(authenticator),
    interfaceVersion: interfaceVersionStep(),
    correlation: correlationStep(),
    deadline: deadlineStep(),
    quota: quotaStep(quota),
    idempotencyKey: idempotencyKeyStep(),
    contentType: contentTypeStep(),
    body: bodyStep({ maxBytes: maxBodyBytes }),
  };

  function chainFor(route: RouteDefinition): EagerChain<RequestContext> {
    const handle = (context: RequestContext) => route.handle(context);
    if (route.kind !== "shared") return handle;
    // The header rules answer or refuse without waiting (unless the principal must be read from
    // the store), so they run eagerly: a read allocates no promise on its way to the handler.
    const steps: EagerStep<RequestContext>[] = [
      shared.duplicates,
      shared.authenticate,
      shared.interfaceVersion,
      shared.correlation,
      shared.deadline,
    ];
    if (route.capability !== undefined) steps.push(capabilityStep(route.capability));
    steps.push(shared.quota);
    // The rules of a mutating route read the body and the store: one promise chain after quota.
    const tail: Step<RequestContext>[] = [];
    if (route.idempotent) tail.push(shared.idempotencyKey);
    if (route.body !== undefined) {
      tail.push(shared.contentType, shared.body, jsonStep(route.body));
    }
    if (route.idempotent) {
      tail.push(
        idempotencyClaimStep({
          store,
          replay: route.replay?.bind(route),
          mode: route.idempotency,
        }),
      );
    }
    if (tail.length === 0) {
      steps.push(handle);
    } else {
      tail.push(handle);
      const rest = compose(...tail);
      steps.push((context) => rest(context));
    }
    return composeEager(...steps);
  }

  const router = new Router<EagerChain<RequestContext>>();
  const mcp = createLazyMcpEndpoint(services, options.mcp);
  const routes = [
    ...healthRoutes(),
    ...runtimeRoutes(),
    ...principalRoutes(services),
    ...mcp.routes,
    ...(options.routes?.(services) ?? []),
  ];
  for (const route of routes) router.add(route.method, route.path, chainFor(route));
  const dispatch = routeStep(router);

  function fail(error: unknown, context: RequestContext): Response {
    let refusal: InterfaceError;
    if (error instanceof InterfaceError) {
      refusal = error;
    } else if (error instanceof StoreUnavailableError) {
      logger.error("store unavailable", { errorName: error.name, message: error.message });
      refusal = new InterfaceError("storeUnavailable", "The authority store is unavailable", {
        headers: { "retry-after": "1" },
      });
    } else {
      logger.error("unexpected failure", {
        errorName: error instanceof Error ? error.name : typeof error,
        method: context.method,
        path: context.path,
        correlationId: context.responseCorrelationId,
      });
      refusal = internalError();
    }
    return toResponse(refusal, context.responseCorrelationId);
  }

  function finish(context: RequestContext, response: Response): Response {
    if (context.finished) return response;
    let headers = response.headers;
    try {
      headers.set("x-content-type-options", "nosniff");
    } catch {
      response = new Response(response.body, response);
      headers = response.headers;
      headers.set("x-content-type-options", "nosniff");
    }
    if (context.interfaceVersion !== null) {
      headers.set("x-interface-version", context.interfaceVersion);
    }
    if (context.correlationHeader !== null) {
      headers.set("x-correlation-id", context.correlationHeader);
    }
    return response;
  }

  let inFlight = 0;
  let drained: PromiseWithResolvers<void> | null = null;

  function settleDrain(): void {
    if (drained !== null && inFlight === 0) drained.resolve();
  }

  function handler(request: Request, _info?: unknown): Promise<Response> {
    // (Deno.serve settles the answer of a handler that read the request headers through a
    // promise either way, so answering with a plain Response would save nothing more.)
    try {
      const answer = answerRequest(request);
      return answer instanceof Promise ? answer : Promise.resolve(answer);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  // The chain answers synchronously when no step had to wait (an unauthenticated read, a
  // refusal): such a request allocates no promise before its answer. An authenticated request
  // waits for one store read, the revocation epoch (see authenticator.ts).
  function answerRequest(request: Request): Response | Promise<Response> {
    const context = new RequestContext(request, now());
    maybeCleanup(context.receivedAt);
    if (drained !== null) {
      const response = toResponse(shuttingDown(), context.responseCorrelationId);
      response.headers.set("connection", "close");
      return complete(context, response);
    }
    inFlight++;
    let result: Response | Promise<Response>;
    try {
      result = dispatch(context, neverNext);
    } catch (error) {
      return settle(context, error, true);
    }
    if (result instanceof Promise) {
      return result.then(
        (response) => settle(context, response, false),
        (error) => settle(context, error, true),
      );
    }
    return settle(context, result, false);
  }

  /** A request in flight has its answer, or failed with `outcome`. */
  function settle(context: RequestContext, outcome: unknown, failed: boolean): Response {
    let response: Response;
    try {
      response = failed ? fail(outcome, context) : outcome as Response;
    } finally {
      inFlight--;
      settleDrain();
    }
    return complete(context, response);
  }

  function complete(context: RequestContext, answer: Response): Response {
    const response = finish(context, answer);
    const request = context.request;
    // GET and HEAD requests have no body.
    if (
      context.method !== "GET" && context.method !== "HEAD" && request.body !== null &&
      !request.bodyUsed
    ) {
      // An unread body (refused before the body rule) is dropped rather than buffered.
      request.body.cancel().catch(() => {});
    }
    logger.request({
      method: context.method,
      path: context.path.length > 256 ? context.path.slice(0, 256) : context.path,
      status: response.status,
      durationMs: performance.now() - context.startedAt,
      correlationId: context.loggedCorrelationId,
      principalId: context.principal?.principalId ?? null,
    });
    return response;
  }

  // Expired idempotency records are purged at most once an interval, started by a request
  // rather than a timer: the first timer of a process loads Deno's timer module (10 to 25 ms),
  // which would hold up startup. An idle runtime creates no records, so it has none to purge.
  const cleanupIntervalMs = options.cleanupIntervalMs ?? 600_000;
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
  let cleaning: Promise<void> | null = null;
  let nextCleanup = now() + cleanupIntervalMs;
  let closed = false;
  function maybeCleanup(at: number): void {
    if (cleanupIntervalMs <= 0 || at < nextCleanup || cleaning !== null || closed) return;
    nextCleanup = at + cleanupIntervalMs;
    cleaning = Promise.all([
      store.deleteExpired(at),
      store.purgeRetired({ now: at, retentionMs }),
    ]).then(
      () => {},
      (error) => logger.error("store cleanup failed", { errorName: error?.name }),
    ).finally(() => cleaning = null);
  }

  return {
    handler: options.cors === undefined ? handler : withCors(options.cors, handler),
    services,
    closeSessions: () => mcp.close(),
    drain(): Promise<void> {
      if (drained === null) {
        drained = Promise.withResolvers<void>();
        if (inFlight === 0) drained.resolve();
      }
      return drained.promise;
    },
    async close(): Promise<void> {
      await mcp.close();
      closed = true;
      if (cleaning !== null) await cleaning;
      logger.flush();
    },
  };
}
