/**
 * The automation runtime service (Deno): the HTTP API, its chain of request rules, the bootstrap
 * credential and the store backends. It also exports the API's wire contract (the same bindings
 * as `@automation/runtime/sdk`) and the client library the service is built on (the same as
 * `@automation/runtime/client`).
 *
 * @module
 */
// The wire contract: every request and answer shape of the API, the same bindings the SDK
// exports.
export * from "../wire/mod.ts";
// The client library the server is built on: its types appear in the server's own signatures
// (the run gateway's provider client, the run contract's events), so this entry point documents
// itself. The same bindings as `@automation/runtime/client`'s.
export * from "../client/mod.ts";
export * from "./store/types.ts";
export * from "./bootstrap/credential.ts";
export {
  createRuntimeServer,
  DEFAULT_RETENTION_MS,
  type RuntimeServer,
  type RuntimeServerOptions,
} from "./server.ts";
export { type CorsOptions, parseCorsOrigins, withCors } from "./cors.ts";
export {
  formatBaseUrl,
  type RunningRuntime,
  serveRuntime,
  type ServeRuntimeOptions,
} from "./serve.ts";
export type { RuntimeServices } from "./services.ts";
export {
  Gauge,
  LabeledCounter,
  LabeledHistogram,
  measuredStore,
  PROMETHEUS_CONTENT_TYPE,
  RuntimeMetrics,
  type RuntimeMetricsOptions,
} from "./metrics.ts";
export { loadRequestTracer, type RequestTracer, tracingEnabled } from "./tracing.ts";
export {
  type Chain,
  type Check,
  checkRule,
  compose,
  type ComposeOptions,
  type ErrorHandler,
  type Next,
  type Rule,
} from "./chain.ts";
export {
  type AuthenticatedPrincipal,
  type IdempotencyRecord,
  isValidCorrelationId,
  RequestContext,
} from "./context.ts";
export {
  ERROR_CODES,
  type ErrorBody,
  errorBody,
  type ErrorCode,
  type ErrorCodeInfo,
  type ErrorLayer,
  InterfaceError,
  type InterfaceErrorOptions,
  internalError,
  toResponse,
} from "./errors.ts";
export {
  createJsonLogger,
  type JsonLoggerOptions,
  type LogFields,
  type RequestLogRecord,
  type RuntimeLogger,
} from "./log.ts";
export {
  type BodySchema,
  type IdempotencyMode,
  type RouteDefinition,
  type RouteKind,
  type RouteMatch,
  Router,
} from "./router.ts";
export { Authenticator, type AuthenticatorOptions, bearerDigest } from "./authenticator.ts";
export { SUPPORTED_INTERFACE_VERSIONS } from "./rules/interface_version.ts";
export {
  DEFAULT_MAX_BODY_BYTES,
  readLimitedBody,
  type ReadLimitedBodyOptions,
} from "./rules/body.ts";
export { DEFAULT_IN_FLIGHT_QUOTA, InFlightQuota } from "./rules/quota.ts";
export {
  Idempotency,
  IDEMPOTENCY_TTL_MS,
  type IdempotencyOptions,
  type IdempotencyRuleOptions,
} from "./rules/idempotency.ts";
export { derivePrincipalBearer, MAX_PRINCIPAL_TTL_MS } from "./issuance.ts";
export type { TokenExchangeOptions } from "./oidc/exchange.ts";
export type { NotificationSettings } from "./notifications/mod.ts";
export {
  type KvStoreOptions,
  openKvStore,
  openStore,
  type OpenStoreOptions,
  StoreLocationError,
} from "./store/mod.ts";
export { parseRfc3339 } from "./time.ts";
export * from "./mcp/mod.ts";
export * from "./runs/mod.ts";
