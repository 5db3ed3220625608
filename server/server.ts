/**
 * The runtime server: routes composed with the shared request rules, as a fetch-style handler.
 *
 * Every request takes one path: the server's chain (drain, then the route rule) hands it to the
 * chain of its route, which is the route's rules followed by its handler, all composed by
 * `compose` (`chain.ts`) with one error handler, {@linkcode errorResponse}. Whether a request
 * allocates promises is decided there alone: a read whose principal is cached answers without
 * one. The handler then adds the common response headers, drops an unread body and logs.
 *
 * @module
 */
import { Authenticator } from "./authenticator.ts";
import { LEASE_GRACE_MS } from "./authority_lease.ts";
import type { BootstrapCredential } from "./bootstrap/credential.ts";
import { type Chain, compose, type Next, whileAnswering } from "./chain.ts";
import { consoleRoutes, isConsolePath, setConsoleHeaders } from "./console/mod.ts";
import { type CorsOptions, withCors } from "./cors.ts";
import { RequestContext } from "./context.ts";
import { errorResponse, InterfaceError } from "./errors.ts";
import {
  boundedField,
  createJsonLogger,
  MAX_LOGGED_METHOD,
  MAX_LOGGED_PATH,
  type RuntimeLogger,
} from "./log.ts";
import type { McpOptions } from "./mcp/endpoint.ts";
import { createLazyMcpEndpoint } from "./mcp/lazy_endpoint.ts";
import { createLazyNativeRoutes } from "./native/lazy.ts";
import { isNativePath } from "./native/operations.ts";
import { nativeErrorResponse } from "./runs/native_error.ts";
import { measuredStore, type RuntimeMetrics } from "./metrics.ts";
import { type RouteDefinition, Router } from "./router.ts";
import { healthRoutes } from "./routes/health.ts";
import { principalRoutes } from "./routes/principals.ts";
import { runtimeRoutes } from "./routes/runtime.ts";
import { auditRoutes } from "./routes/audit.ts";
import { usageRoutes } from "./routes/usage.ts";
import { openApiRoutes } from "./routes/openapi.ts";
import { runRoutes } from "./routes/runs.ts";
import { answerRoutes } from "./routes/answers.ts";
import { webhookRoutes } from "./routes/webhooks.ts";
import { trustPolicyRoutes } from "./routes/trust_policies.ts";
import { tokenExchangeRoutes } from "./routes/token_exchange.ts";
import type { TokenExchangeOptions } from "./oidc/exchange.ts";
import { ToolAnswers } from "./runs/answers.ts";
import { runEventRoutes } from "./routes/run_events.ts";
import {
  DEFAULT_MAX_EVENT_STREAMS,
  DEFAULT_MAX_EVENT_STREAMS_PER_PRINCIPAL,
  RunEventHub,
} from "./runs/events.ts";
import { OpenStreams } from "./runs/open_streams.ts";
import { ActivityFeed } from "./runs/activity_feed.ts";
import { activityRoutes } from "./routes/activity.ts";
import { Notifications, type NotificationSettings } from "./notifications/mod.ts";
import { webhookSubscriptionRoutes } from "./routes/webhook_subscriptions.ts";
import { inboxRoutes } from "./routes/inbox.ts";
import { RunTails } from "./runs/tail.ts";
import { RUN_EVENT_RETENTION_MS } from "./store/run_event_types.ts";
import { ACTIVITY_RETENTION_MS } from "./store/activity.ts";
import { USAGE_RETENTION_MS } from "./store/spend.ts";
import {
  createGatewayProviderClient,
  hasProviderCredential,
  type ProviderSettings,
} from "./runs/provider.ts";
import { RunGateway } from "./runs/runs.ts";
import type { RunActivity } from "./runs/activity.ts";
import { releaseIdleSlots } from "./runs/idle_slots.ts";
import { authenticateRule } from "./rules/authenticate.ts";
import { bodyRule, DEFAULT_MAX_BODY_BYTES } from "./rules/body.ts";
import { capabilityRule } from "./rules/capability.ts";
import { contentTypeRule } from "./rules/content_type.ts";
import { correlationRule } from "./rules/correlation.ts";
import { deadlineRule } from "./rules/deadline.ts";
import { duplicatesRule } from "./rules/duplicates.ts";
import { Idempotency, idempotencyKeyRule } from "./rules/idempotency.ts";
import { interfaceVersionRule } from "./rules/interface_version.ts";
import { jsonRule } from "./rules/json.ts";
import { inRuleOrder, stepsOf } from "./rules/order.ts";
import { DEFAULT_IN_FLIGHT_QUOTA, InFlightQuota, quotaRule } from "./rules/quota.ts";
import { routeRule } from "./rules/route.ts";
import type { RuntimeServices } from "./services.ts";
import type { Store } from "./store/types.ts";
import { testHooksOf } from "./test_hooks.ts";
import type { RequestTracer } from "./tracing.ts";

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
  /**
   * Clock, ms since the epoch (default `Date.now`): the one the server reads every time through
   * (`services.now`, a request's `receivedAt`, the cleanup, the log's `time` by default).
   */
  now?: () => number;
  /**
   * Cache principals in this process (default on). Safe with several processes or replicas on
   * one store: the cache is emptied when the namespace's epoch moves, and a revocation waits for
   * every process to acknowledge it (see `server/authenticator.ts`).
   */
  principalCache?: boolean;
  /**
   * Length of this process's authority lease in ms (default 3000): while it holds the lease, a
   * cached principal is answered with no store call, and a revocation waits at most this long for
   * a process that stopped answering. 0: no lease, every authenticated request reads the
   * authority state (see `server/authority_lease.ts`).
   */
  authorityLeaseMs?: number;
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
  /** Provider settings of the run gateway; without a credential runs are disabled. */
  provider?: ProviderSettings;
  /** Active runs the whole service allows (default 1000). */
  maxActiveRuns?: number;
  /**
   * How long a tool request may stay pending before the fail-closed answer (deny, or an error
   * result), in ms (default 10 min).
   */
  pendingTimeoutMs?: number;
  /**
   * Metrics to keep (default none: no metric is counted). The server counts its requests, times
   * its store calls and reads the active runs from its store when scraped.
   */
  metrics?: RuntimeMetrics;
  /**
   * Annotates the request spans of Deno's OpenTelemetry support (default none); build it with
   * `loadRequestTracer` when `OTEL_DENO` is on.
   */
  tracer?: RequestTracer;
  /** Open event streams this replica allows (default 10000), then 503 `resourceExhausted`. */
  maxEventStreams?: number;
  /**
   * Open event streams one principal may hold on this replica (default 16), then 429
   * `resourceExhausted`.
   */
  maxEventStreamsPerPrincipal?: number;
  /** Bounds of the webhook intake before verification (defaults: 64 KiB bodies, 16 at once). */
  webhookIntake?: {
    /** Body limit of a delivery in bytes (default 65536). */
    maxBodyBytes?: number;
    /** Deliveries read and verified at once (default 16); one more answers 429. */
    maxUnverified?: number;
  };
  /**
   * The token exchange (`POST /v1/token-exchange`) and the trust policies it reads: whether
   * loopback `http:` issuers are allowed (tests and local use only), the rate limits, the fetch
   * of issuers' keys.
   */
  tokenExchange?: TokenExchangeOptions;
  /**
   * Notification webhooks: whether targets may be private addresses (default: refused), and the
   * bounds (subscriptions per principal, pending deliveries per subscription).
   */
  notifications?: NotificationSettings;
  /**
   * The URL people reach this service at (such as `https://runtime.example.com`): notification
   * deliveries link to its console, `<publicUrl>/console/`. Absent: no link.
   */
  publicUrl?: string;
  /**
   * Lease of a run's tail in ms (default 15000: renewed every 5 s, taken over within 20 s by
   * another replica once its holder is gone). Shorter: faster takeover, more store writes.
   */
  runLeaseMs?: number;
  /**
   * How long a call of the provider's own API at `/provider` may wait on the provider, in ms,
   * when it names no `x-deadline` (default 60000).
   */
  providerTimeoutMs?: number;
}

/** Default of `providerTimeoutMs`: a minute. */
export const DEFAULT_PROVIDER_TIMEOUT_MS = 60_000;

/** A runtime server. */
export interface RuntimeServer {
  /** Answers one request; pass it to `Deno.serve`. */
  handler(request: Request, info?: unknown): Promise<Response>;
  /** The shared parts, for tools built on the server. */
  readonly services: RuntimeServices;
  /** The route table, in the order the routes were added (the OpenAPI document's source). */
  readonly routes: readonly RouteDefinition[];
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
  /** Runs with news in this process (webhooks, answers): what a run's tail listens to. */
  readonly runActivity: RunActivity;
}

/**
 * The run retention purge: the event logs (and leases) of runs that ended before `endedBefore`,
 * then the runs themselves. In that order: the events part finds the runs through their records.
 */
async function purgeRuns(store: Store, endedBefore: string): Promise<void> {
  await store.events.purge(endedBefore);
  await store.runs.purgeEnded(endedBefore);
}

function shuttingDown(): InterfaceError {
  return new InterfaceError("shuttingDown", "The runtime is shutting down", {
    headers: { "retry-after": "1", connection: "close" },
  });
}

/**
 * Creates the runtime server.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deriveBootstrapCredential } from "./bootstrap/credential.ts";
 * import { INTERFACE_VERSION } from "../wire/mod.ts";
 * import { createJsonLogger } from "./log.ts";
 * import { createRuntimeServer } from "./server.ts";
 * import { openKvStore } from "./store/mod.ts";
 * const token = "art_" + crypto.randomUUID().replaceAll("-", "").repeat(2);
 * const bootstrap = deriveBootstrapCredential({
 *   token,
 *   principalId: crypto.randomUUID(),
 *   capabilities: ["authority:admin", "session:read"],
 *   expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
 *   source: "environment",
 * });
 * const store = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
 * const server = createRuntimeServer({ bootstrap, store, logger: createJsonLogger({ write() {} }) });
 * try {
 *   // Pass `server.handler` to `Deno.serve`; here it answers one request in process.
 *   const response = await server.handler(
 *     new Request("http://localhost/v1/runtime", {
 *       headers: {
 *         authorization: `Bearer ${token}`,
 *         "x-interface-version": INTERFACE_VERSION,
 *         "x-correlation-id": crypto.randomUUID(),
 *         "x-deadline": new Date(Date.now() + 30_000).toISOString(),
 *       },
 *     }),
 *   );
 *   assert.equal(response.status, 200);
 *   assert.equal((await response.json()).principalId, bootstrap.principalId);
 * } finally {
 *   await server.close();
 *   await store.close();
 * }
 * ```
 */
export function createRuntimeServer(options: RuntimeServerOptions): RuntimeServer {
  const { bootstrap, metrics, tracer } = options;
  // The server's one clock: every time it reads goes through `now` (services.now).
  const now = options.now ?? Date.now;
  const hooks = testHooksOf(options);
  const store = metrics === undefined ? options.store : measuredStore(options.store, metrics);
  if (metrics !== undefined) metrics.activeRuns = () => store.runs.countSlots(null, now());
  const logger = options.logger ?? createJsonLogger({ now });
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const authenticator = new Authenticator({
    bootstrap,
    store,
    cache: options.principalCache ?? true,
    leaseMs: options.authorityLeaseMs,
  });
  const quota = new InFlightQuota(options.inFlightQuota ?? DEFAULT_IN_FLIGHT_QUOTA);
  const idempotency = new Idempotency({ store });
  const services: RuntimeServices = Object.freeze({
    bootstrap,
    store,
    authenticator,
    quota,
    idempotency,
    logger,
    now,
    maxBodyBytes,
    ...(metrics !== undefined ? { metrics } : {}),
  });
  // A refusal under `/provider` (the router's own 404 and 405 too) is in the provider's shape.
  const onError = (error: unknown, context: RequestContext): Response =>
    isNativePath(context.path)
      ? nativeErrorResponse(error, context.responseCorrelationId, logger, {
        method: context.method,
        path: context.path,
        correlationId: context.responseCorrelationId,
      })
      : errorResponse(error, context, logger);

  const shared = {
    duplicates: duplicatesRule(),
    authenticate: authenticateRule(authenticator),
    interfaceVersion: interfaceVersionRule(),
    correlation: correlationRule(),
    deadline: deadlineRule(),
    quota: quotaRule(quota),
    idempotencyKey: idempotencyKeyRule(),
    contentType: contentTypeRule(),
    body: bodyRule({ maxBytes: maxBodyBytes }),
  };

  /**
   * The chain of one route: the rules its definition calls for, in the one order of the shared
   * rules (`rules/order.ts`, which the MCP tool calls follow too), then its handler.
   */
  function chainFor(route: RouteDefinition): Chain<RequestContext> {
    const anonymous = route.authentication === "none";
    if (anonymous && route.capability !== undefined) {
      throw new Error(`Route ${route.method} ${route.path} has a capability but no authentication`);
    }
    const body = route.maxBodyBytes === undefined && route.maxBodyMs === undefined
      ? shared.body
      : bodyRule({
        maxBytes: Math.min(route.maxBodyBytes ?? maxBodyBytes, maxBodyBytes),
        ...(route.maxBodyMs !== undefined ? { maxMs: route.maxBodyMs } : {}),
      });
    const rules = route.kind !== "shared" ? [] : inRuleOrder<RequestContext>({
      ...stepsOf(route, {
        duplicates: shared.duplicates,
        authenticate: shared.authenticate,
        interfaceVersion: shared.interfaceVersion,
        correlation: shared.correlation,
        deadline: shared.deadline,
        quota: shared.quota,
      }),
      capability: route.capability === undefined ? undefined : capabilityRule(route.capability),
      idempotencyKey: route.idempotent ? shared.idempotencyKey : undefined,
      contentType: route.body === undefined ? undefined : shared.contentType,
      body: route.body === undefined ? undefined : body,
      json: route.body === undefined ? undefined : jsonRule(route.body),
      idempotency: route.idempotent
        ? idempotency.rule({
          mode: route.idempotency,
          replay: route.replay?.bind(route),
          recordRefusals: !anonymous,
        })
        : undefined,
    });
    rules.push((context) => route.handle(context));
    return compose(rules, { onError });
  }

  const providerSettings = options.provider ?? {};
  const runs = new RunGateway({
    store,
    logger,
    settings: providerSettings,
    client: hooks?.providerClient ??
      (hasProviderCredential(providerSettings)
        ? async () => (await createGatewayProviderClient(providerSettings))!
        : null),
    now,
    serviceLimit: options.maxActiveRuns,
    onProviderError: metrics === undefined ? undefined : (type) => metrics.providerError(type),
  });

  const answers = new ToolAnswers({
    store,
    logger,
    gateway: runs,
    now,
    pendingTimeoutMs: options.pendingTimeoutMs,
    afterClaim: hooks?.afterClaim,
    claimStaleMs: hooks?.claimStaleMs,
  });
  if (runs.enabled) answers.start();
  // One set of open streams, one pair of limits: run event streams and the activity feed.
  const streams = new OpenStreams({
    authenticator,
    now,
    maxStreams: options.maxEventStreams ?? DEFAULT_MAX_EVENT_STREAMS,
    maxStreamsPerPrincipal: options.maxEventStreamsPerPrincipal ??
      DEFAULT_MAX_EVENT_STREAMS_PER_PRINCIPAL,
  });
  const events = new RunEventHub({ store, authenticator, now, streams });
  const activityFeed = new ActivityFeed({ store, authenticator, now, streams });
  const tails = runs.enabled
    ? new RunTails({
      store,
      logger,
      client: () => runs.providerClient(),
      activity: runs.activity,
      now,
      leaseMs: options.runLeaseMs,
      onAppend: (runId, entries) => events.publish(runId, entries),
      pendingTimeoutMs: answers.pendingTimeoutMs,
      onAppendNative: (runId, entries) => events.publishNative(runId, entries),
      ...(metrics !== undefined
        ? { onListCost: (agentId: string, amount: bigint) => metrics.runListCost(agentId, amount) }
        : {}),
      onTailing: (runId, tailing) => events.tailing(runId, tailing),
    })
    : null;
  tails?.start();
  const notifications = new Notifications({
    store,
    logger,
    bootstrap,
    now,
    ...options.notifications,
    ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl } : {}),
    ...(hooks?.notifications !== undefined ? { seams: hooks.notifications } : {}),
  });
  if (runs.enabled) notifications.start();
  metrics?.sampleOnScrape(() => {
    metrics.eventStreams.set(events.openStreams);
    metrics.tailsHeld.set(tails?.size ?? 0);
  });

  const router = new Router<Chain<RequestContext>>();
  // The MCP tools run their HTTP twins from this table, read on the first MCP request.
  const mcp = createLazyMcpEndpoint(services, options.mcp, () => routes);
  const routes: RouteDefinition[] = [
    ...healthRoutes(),
    ...runtimeRoutes({ runs: runs.enabled, spend: store.spend, now }),
    ...principalRoutes(services),
    ...runRoutes(runs),
    ...answerRoutes(answers),
    ...webhookRoutes({
      secrets: providerSettings.webhookSecrets ?? [],
      store,
      gateway: runs,
      logger,
      ...(options.webhookIntake !== undefined ? { limits: options.webhookIntake } : {}),
    }),
    ...runEventRoutes({ gateway: runs, hub: events, store }),
    ...inboxRoutes({ gateway: runs, store, pendingTimeoutMs: answers.pendingTimeoutMs }),
    ...activityRoutes({ gateway: runs, feed: activityFeed }),
    ...webhookSubscriptionRoutes({
      gateway: runs,
      subscriptions: notifications.subscriptions,
      store,
    }),
    ...createLazyNativeRoutes({
      gateway: runs,
      answers,
      hub: events,
      store,
      now,
      rules: {
        authenticator,
        quota,
        idempotency,
        logger,
        maxBodyBytes,
        timeoutMs: options.providerTimeoutMs ?? DEFAULT_PROVIDER_TIMEOUT_MS,
      },
    }),
    ...auditRoutes(services),
    ...trustPolicyRoutes(services, {
      allowLoopbackHttp: options.tokenExchange?.allowLoopbackHttp === true,
    }),
    ...tokenExchangeRoutes(services, options.tokenExchange),
    ...consoleRoutes(),
    ...usageRoutes(services),
    ...mcp.routes,
    ...(options.routes?.(services) ?? []),
  ];
  routes.push(...openApiRoutes(() => routes));
  for (const route of routes) router.add(route.method, route.path, chainFor(route));

  let inFlight = 0;
  let drained: PromiseWithResolvers<void> | null = null;

  /** Once draining, refuses new requests; else counts the request in flight until answered. */
  function draining(_context: RequestContext, next: Next): Response | Promise<Response> {
    if (drained !== null) throw shuttingDown();
    inFlight++;
    return whileAnswering(next, settleDrain);
  }

  function settleDrain(): void {
    inFlight--;
    if (drained !== null && inFlight === 0) drained.resolve();
  }

  const chain = compose<RequestContext>([draining, routeRule(router)], { onError });

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

  /**
   * The one dispatch point. The chain answers synchronously when no rule had to wait (an
   * unauthenticated read, a refusal, a cached principal under the process's authority lease: see
   * `authenticator.ts`): such a request allocates no promise before its answer. (Deno.serve
   * settles the answer of a handler that read the request headers through a promise either way,
   * so answering with a plain Response would save nothing more.) Metrics and
   * the span annotations are decided here too, each by one check of an option that is fixed for
   * the server's life: off, they cost a comparison and load nothing.
   */
  function handler(request: Request, _info?: unknown): Promise<Response> {
    if (metrics !== undefined) metrics.inFlight.inc();
    try {
      const context = new RequestContext(request, now());
      maybeCleanup(context.receivedAt);
      const answer = chain(context);
      if (answer instanceof Promise) return answer.then((response) => complete(context, response));
      return Promise.resolve(complete(context, answer));
    } catch (error) {
      if (metrics !== undefined) metrics.inFlight.dec();
      return Promise.reject(error);
    }
  }

  function complete(context: RequestContext, answer: Response): Response {
    const response = finish(context, answer);
    // Every answer under /console, a refusal too, carries the console's security headers.
    if (isConsolePath(context.path)) setConsoleHeaders(response.headers);
    const request = context.request;
    // GET and HEAD requests have no body.
    if (
      context.method !== "GET" && context.method !== "HEAD" && request.body !== null &&
      !request.bodyUsed
    ) {
      // An unread body (refused before the body rule) is dropped rather than buffered.
      request.body.cancel().catch(() => {});
    }
    if (metrics !== undefined) {
      metrics.inFlight.dec();
      metrics.requestFinished(
        context.method,
        context.route,
        response.status,
        (performance.now() - context.startedAt) / 1000,
      );
    }
    if (tracer !== undefined) tracer.annotate(context, response.status);
    const durationMs = performance.now() - context.startedAt;
    logger.request({
      // What the request line holds is the client's to choose: both cut to a bound.
      method: boundedField(context.method, MAX_LOGGED_METHOD),
      path: boundedField(context.path, MAX_LOGGED_PATH),
      status: response.status,
      durationMs,
      correlationId: context.loggedCorrelationId,
      principalId: context.principal?.principalId ?? null,
      // The arrival time plus the duration: the answer's time with no second clock read.
      time: context.receivedAt + durationMs,
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
      store.idempotency.purgeExpired(at),
      // Expired principals' idle sessions give their slots back before their records may go.
      releaseIdleSlots(store, { now: at })
        .then(() => store.principals.purgeRetired({ now: at, retentionMs })),
      store.authority.purgeRetired({ now: at, retentionMs }),
      store.leases.purge({ now: at, graceMs: LEASE_GRACE_MS }),
      purgeRuns(store, new Date(at - RUN_EVENT_RETENTION_MS).toISOString()),
      store.trustPolicies.purgeTokenUses(at),
      store.activity.purge(new Date(at - ACTIVITY_RETENTION_MS).toISOString()),
      store.notifications.purge(at - ACTIVITY_RETENTION_MS),
      store.spend.purge(new Date(at - USAGE_RETENTION_MS).toISOString()),
    ]).then(
      () => {},
      (error) => logger.error("store cleanup failed", { errorName: error?.name }),
    ).finally(() => cleaning = null);
  }

  return {
    handler: options.cors === undefined ? handler : withCors(options.cors, handler),
    services,
    runActivity: runs.activity,
    routes,
    closeSessions: () => mcp.close(),
    drain(): Promise<void> {
      // Open event streams end with the drain (subscribers reconnect to another replica).
      events.close();
      activityFeed.close();
      if (drained === null) {
        drained = Promise.withResolvers<void>();
        if (inFlight === 0) drained.resolve();
      }
      return drained.promise;
    },
    async close(): Promise<void> {
      await answers.stop();
      await notifications.stop();
      await mcp.close();
      events.close();
      activityFeed.close();
      await tails?.close();
      closed = true;
      if (cleaning !== null) await cleaning;
      await authenticator.close();
      logger.flush();
    },
  };
}
