/**
 * Request spans through Deno's built-in OpenTelemetry support.
 *
 * With `OTEL_DENO=true` (and the standard `OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME` variables)
 * Deno itself creates a server span for each request `Deno.serve` answers and a client span for
 * each `fetch`, whose W3C `traceparent` header it sets, so every provider call is a child span of
 * the request that made it and the provider sees the trace. This module only names the request
 * span after its route pattern and adds what Deno cannot know:
 *
 * | attribute | value |
 * |---|---|
 * | `http.route` | the route pattern, such as `/v1/runs/:runId` (never the raw path) |
 * | `http.response.status_code` | the status answered |
 * | `automation_runtime.principal_id` | the authenticated caller's id, when authenticated |
 * | `automation_runtime.run_id` | the run of a `/v1/runs/:runId...` route |
 *
 * Never a bearer, a key, a header value or a body. `@opentelemetry/api` is loaded by
 * {@linkcode loadRequestTracer} only, which `serve` calls only when tracing is on: with it off,
 * the package is not even loaded and the server does nothing more per request.
 *
 * @module
 */
import type { RequestContext } from "./context.ts";

/** Annotates the active request span of one request. */
export interface RequestTracer {
  /** Names the request's span after its route and sets the attributes above. */
  annotate(context: RequestContext, status: number): void;
}

/**
 * Whether Deno's OpenTelemetry support is on for this process (`OTEL_DENO` is `true` or `1`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tracingEnabled } from "./tracing.ts";
 * assert.equal(tracingEnabled({ OTEL_DENO: "true" }), true);
 * assert.equal(tracingEnabled({}), false);
 * ```
 */
export function tracingEnabled(env: Record<string, string | undefined>): boolean {
  const value = env.OTEL_DENO?.toLowerCase();
  return value === "true" || value === "1";
}

/**
 * Loads `@opentelemetry/api` (Deno registers its tracer provider with it) and returns the
 * request tracer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RequestContext } from "./context.ts";
 * import { loadRequestTracer } from "./tracing.ts";
 * const tracer = await loadRequestTracer();
 * // Outside a traced request there is no active span: nothing happens.
 * tracer.annotate(new RequestContext(new Request("http://localhost/healthz"), Date.now()), 200);
 * assert.equal(typeof tracer.annotate, "function");
 * ```
 */
export async function loadRequestTracer(): Promise<RequestTracer> {
  const { trace } = await import("@opentelemetry/api");
  return {
    annotate(context: RequestContext, status: number): void {
      const span = trace.getActiveSpan();
      if (span === undefined || !span.isRecording()) return;
      const route = context.route;
      if (route !== null) {
        span.updateName(`${context.method} ${route}`);
        span.setAttribute("http.route", route);
      }
      span.setAttribute("http.response.status_code", status);
      const principal = context.principal;
      if (principal !== null) {
        span.setAttribute("automation_runtime.principal_id", principal.principalId);
      }
      const runId = context.params.runId;
      if (runId !== undefined) span.setAttribute("automation_runtime.run_id", runId);
    },
  };
}
