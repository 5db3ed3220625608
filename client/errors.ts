/**
 * Errors of the provider clients. Each failure family has one class with a stable `code`:
 * the provider answered with an error ({@linkcode ProviderApiError}), the connection failed
 * ({@linkcode ProviderConnectionError}), a timeout fired ({@linkcode ProviderTimeoutError}), the
 * caller aborted ({@linkcode ProviderAbortError}), or the client cannot do what was asked
 * ({@linkcode ProviderUnsupportedError}).
 *
 * @module
 */

/** Fields of a {@linkcode ProviderApiError}. */
export interface ProviderApiErrorInit {
  /** HTTP status, or undefined for an `event: error` frame inside a stream. */
  status?: number;
  /** The provider's `error.type` (for example `rate_limit_error`). */
  type: string;
  /** The provider's message. */
  message: string;
  /** The `request-id` response header (or `request_id` of the body). */
  requestId?: string;
  /** Whether repeating the request could succeed. */
  retryable: boolean;
  /** `error.details.error_code`, when the provider refines the type. */
  errorCode?: string;
  /** The provider's `error` object as sent (type, message and any further fields). */
  providerError?: Record<string, unknown>;
}

/** The provider answered with an error status or an error frame. */
export class ProviderApiError extends Error {
  /** Stable error code. */
  readonly code = "providerApiError" as const;
  /** HTTP status, or undefined for an error frame inside a stream. */
  readonly status: number | undefined;
  /** The provider's `error.type`. */
  readonly type: string;
  /** The `request-id` of the failed response. */
  readonly requestId: string | undefined;
  /** Whether repeating the request could succeed. */
  readonly retryable: boolean;
  /** `error.details.error_code`, when present. */
  readonly errorCode: string | undefined;
  /** The provider's `error` object as sent, when the body had one. */
  readonly providerError: Record<string, unknown> | undefined;
  /**
   * Creates the error from what the provider sent.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderApiError } from "@automation/runtime/client";
   * const error = new ProviderApiError({
   *   status: 409,
   *   type: "memory_path_conflict_error",
   *   message: "path is occupied",
   *   retryable: false,
   * });
   * assert.equal(error.type, "memory_path_conflict_error");
   * assert.equal(error.status, 409);
   * assert.equal(error.retryable, false);
   * ```
   */
  constructor(init: ProviderApiErrorInit) {
    super(init.message);
    this.name = "ProviderApiError";
    this.status = init.status;
    this.type = init.type;
    this.requestId = init.requestId;
    this.retryable = init.retryable;
    this.errorCode = init.errorCode;
    this.providerError = init.providerError;
  }
}

/** The request never got an answer (DNS, refused, reset before the response headers). */
export class ProviderConnectionError extends Error {
  /** Stable error code. */
  readonly code = "providerConnectionError" as const;
  /** Always true: a connection failure may succeed when repeated. */
  readonly retryable = true as const;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderConnectionError } from "@automation/runtime/client";
   * const error = new ProviderConnectionError("connection refused");
   * assert.equal(error.code, "providerConnectionError");
   * assert.equal(error.message, "connection refused");
   * ```
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ProviderConnectionError";
  }
}

/** A client timeout fired: `defaultTimeoutMs` for unary calls, `streamTimeoutMs` before a stream's first byte. */
export class ProviderTimeoutError extends Error {
  /** Stable error code. */
  readonly code = "providerTimeout" as const;
  /** The timeout that fired, in ms. */
  readonly timeoutMs: number;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderTimeoutError } from "@automation/runtime/client";
   * const error = new ProviderTimeoutError(60_000);
   * assert.equal(error.message, "Request timed out after 60000 ms");
   * assert.equal(error.timeoutMs, 60_000);
   * ```
   */
  constructor(timeoutMs: number, options?: ErrorOptions) {
    super(`Request timed out after ${timeoutMs} ms`, options);
    this.name = "ProviderTimeoutError";
    this.timeoutMs = timeoutMs;
  }
}

/** The caller's `AbortSignal` fired. `cause` holds the signal's reason. */
export class ProviderAbortError extends Error {
  /** Stable error code. */
  readonly code = "providerAborted" as const;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderAbortError } from "@automation/runtime/client";
   * const error = new ProviderAbortError({ cause: "user left" });
   * assert.equal(error.code, "providerAborted");
   * assert.equal(error.cause, "user left");
   * ```
   */
  constructor(options?: ErrorOptions) {
    super("Request aborted by the caller", options);
    this.name = "ProviderAbortError";
  }
}

/** The client cannot serve this operation (for example `getRun` on the stateless client). */
export class ProviderUnsupportedError extends Error {
  /** Stable error code. */
  readonly code = "providerUnsupported" as const;
  /** The operation that was asked for. */
  readonly operation: string;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderUnsupportedError } from "@automation/runtime/client";
   * const error = new ProviderUnsupportedError("getRun", "a stateless client keeps no runs");
   * assert.equal(error.message, "getRun is not supported: a stateless client keeps no runs");
   * assert.equal(error.operation, "getRun");
   * ```
   */
  constructor(operation: string, reason: string) {
    super(`${operation} is not supported: ${reason}`);
    this.name = "ProviderUnsupportedError";
    this.operation = operation;
  }
}
