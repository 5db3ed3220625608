/**
 * The SDK's error family: one class, {@linkcode RuntimeServiceError}, with the service's stable
 * `code`. The codes of the runs gateway and the token exchange, besides the shared ones:
 *
 * | status | `code` | fields on the error |
 * |---|---|---|
 * | 503 | `providerNotConfigured` | – (the service has no provider credential; not retried) |
 * | 502 | `providerError` | `providerStatus`, `providerErrorType` |
 * | 503 | `providerUnavailable` | `retryAfterMs` (retried within the call's deadline) |
 * | 404 | `runNotFound` | – (unknown run, or another principal's) |
 * | 403 | `agentNotAllowed` | – |
 * | 403 | `resourceNotAllowed` | `details.field`, `details.policyField` (what the run policy refused) |
 * | 429 | `runQuotaExceeded` | `retryAfterMs` (not retried: it lasts until one of your runs ends) |
 * | 422 | `invalidRequest` | `details` |
 * | 409 | `idempotencyUnsettled` | – (an earlier attempt with the key may have reached the provider and never finished: not retried, never repeated) |
 * | 401 | `authenticationFailed` (exchange) | `details.reason`: why the ID token was refused |
 * | 403 | `policyMismatch` | `details.claim`: the first claim the trust policy did not match |
 * | 409 | `trustPolicyExists` | – |
 * | 0 | `idTokenUnavailable` (layer `client`) | – (no CI ID token could be fetched) |
 *
 * @module
 */

import { parseRetryAfter } from "./_retry.ts";

/** Fields of a {@linkcode RuntimeServiceError}. */
export interface RuntimeServiceErrorInit {
  /** HTTP status; 0 when no response arrived. */
  status: number;
  /** Stable code: the service's (such as `authenticationFailed`) or the SDK's own. */
  code: string;
  /** The service's layer, or `client` / `transport` for failures before an answer. */
  layer: string;
  /** Human-readable message (never holds a bearer). */
  message: string;
  /** Correlation id of the call. */
  correlationId: string;
  /** Further fields of the error body, such as `requiredCapability` or `details`. */
  details?: Readonly<Record<string, unknown>>;
  /** The answer's `Retry-After`, in ms, when it carried one. */
  retryAfterMs?: number;
  /** The underlying failure, for connection errors. */
  cause?: unknown;
}

/**
 * A call to the runtime service failed. Carries the HTTP `status` (0 when no response arrived),
 * the stable `code`, the `layer` and the call's `correlationId`.
 *
 * SDK codes besides the service's: `connectionFailed` (layer `transport`), `invalidResponse`
 * (layer `transport`), `deadlineExceeded` (layer `client`, status 0, when the call's own deadline
 * passed before an answer).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RuntimeServiceClient } from "./client.ts";
 * import { RuntimeServiceError } from "./errors.ts";
 * const client = new RuntimeServiceClient({
 *   baseUrl: "http://127.0.0.1:7777",
 *   token: "art_" + "x".repeat(43),
 *   // A stand-in for the service answering 404, so that the example runs anywhere.
 *   fetch: () =>
 *     Promise.resolve(Response.json({
 *       error: { code: "notFound", layer: "authority", message: "No principal with this id" },
 *     }, { status: 404 })),
 * });
 * const error = await client.revokePrincipal("0b7a2f6e-2c56-4d1c-9a41-6a4b8b9fb0c1").then(
 *   () => null,
 *   (error) => error,
 * );
 * assert.ok(error instanceof RuntimeServiceError);
 * assert.equal(error.code, "notFound");
 * assert.equal(error.status, 404);
 * ```
 */
export class RuntimeServiceError extends Error {
  /** HTTP status; 0 when no response arrived. */
  readonly status: number;
  /** Stable error code. */
  readonly code: string;
  /** Layer that refused the call. */
  readonly layer: string;
  /** Correlation id of the call, as the service reported it. */
  readonly correlationId: string;
  /** Further fields of the error body. */
  readonly details: Readonly<Record<string, unknown>>;
  /** The answer's `Retry-After` in ms (429 and 503 answers), or undefined. */
  readonly retryAfterMs: number | undefined;

  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceError } from "./errors.ts";
   * const error = new RuntimeServiceError({
   *   status: 403,
   *   code: "missingCapability",
   *   layer: "auth",
   *   message: "Capability authority:admin required",
   *   correlationId: crypto.randomUUID(),
   * });
   * assert.equal(error.status, 403);
   * assert.equal(error.code, "missingCapability");
   * ```
   */
  constructor(init: RuntimeServiceErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "RuntimeServiceError";
    this.status = init.status;
    this.code = init.code;
    this.layer = init.layer;
    this.correlationId = init.correlationId;
    this.details = Object.freeze({ ...init.details });
    this.retryAfterMs = init.retryAfterMs;
  }

  /**
   * The error a refused answer stands for: the service's error body (`{"error": {code, layer,
   * message, correlationId, ...}}`) with the answer's status and `Retry-After`; an answer without
   * such a body is `invalidResponse`. `correlationId` is used when neither the body nor the
   * answer's `x-correlation-id` names one.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceError } from "./errors.ts";
   * const error = RuntimeServiceError.fromAnswer({
   *   status: 429,
   *   headers: new Headers({ "retry-after": "2" }),
   *   body: { error: { code: "resourceExhausted", layer: "interface", message: "Too many" } },
   * });
   * assert.equal(error.code, "resourceExhausted");
   * assert.equal(error.retryAfterMs, 2000);
   * ```
   */
  static fromAnswer(
    answer: { status: number; headers: Headers; body: unknown },
    correlationId: string = "",
  ): RuntimeServiceError {
    const error = (answer.body as { error?: Record<string, unknown> } | null)?.error;
    const echoed = answer.headers.get("x-correlation-id") ?? correlationId;
    if (error === null || typeof error !== "object" || typeof error.code !== "string") {
      return new RuntimeServiceError({
        status: answer.status,
        code: "invalidResponse",
        layer: "transport",
        message: `The runtime service answered HTTP ${answer.status} without an error body`,
        correlationId: echoed,
      });
    }
    const { code, layer, message, correlationId: reported, ...details } = error;
    return new RuntimeServiceError({
      status: answer.status,
      code,
      layer: typeof layer === "string" ? layer : "interface",
      message: typeof message === "string" ? message : `HTTP ${answer.status}`,
      correlationId: typeof reported === "string" ? reported : echoed,
      details,
      retryAfterMs: parseRetryAfter(answer.headers.get("retry-after")) ?? undefined,
    });
  }

  /**
   * The provider's HTTP status, on a 502 `providerError` (the provider refused the call).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceError } from "./errors.ts";
   * const error = new RuntimeServiceError({
   *   status: 502,
   *   code: "providerError",
   *   layer: "provider",
   *   message: "The provider refused the call",
   *   correlationId: crypto.randomUUID(),
   *   details: { providerStatus: 529, providerErrorType: "overloaded_error" },
   * });
   * assert.equal(error.providerStatus, 529);
   * assert.equal(error.providerErrorType, "overloaded_error");
   * ```
   */
  get providerStatus(): number | undefined {
    const value = this.details.providerStatus;
    return typeof value === "number" ? value : undefined;
  }

  /**
   * The provider's `error.type`, on a 502 `providerError` (such as `rate_limit_error`).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceError } from "./errors.ts";
   * const error = new RuntimeServiceError({
   *   status: 404,
   *   code: "runNotFound",
   *   layer: "interface",
   *   message: "No such run",
   *   correlationId: crypto.randomUUID(),
   * });
   * assert.equal(error.providerErrorType, undefined);
   * ```
   */
  get providerErrorType(): string | undefined {
    const value = this.details.providerErrorType;
    return typeof value === "string" ? value : undefined;
  }
}
