/**
 * The service's error family: {@linkcode InterfaceError}, the table of stable codes with their
 * HTTP status and layer, and {@linkcode toResponse} which renders the JSON error body.
 *
 * Anything thrown while a request is answered becomes its answer in one place,
 * {@linkcode errorResponse} (through {@linkcode refusalFor}): the server's chains, the MCP
 * endpoint and the MCP tools all go through it.
 *
 * @module
 */
import type { RequestContext } from "./context.ts";
import {
  boundedField,
  type LogFields,
  MAX_LOGGED_METHOD,
  MAX_LOGGED_PATH,
  type RuntimeLogger,
} from "./log.ts";
import { StoreUnavailableError } from "./store/types.ts";

/** Which part of the service refused the request. */
export type ErrorLayer = "interface" | "auth" | "authority" | "idempotency" | "internal";

/** Default HTTP status and layer of one error code. */
export interface ErrorCodeInfo {
  /** HTTP status. */
  readonly status: number;
  /** Layer reported in the body. */
  readonly layer: ErrorLayer;
}

/** A stable error code of the service. */
export type ErrorCode =
  | "notFound"
  | "methodNotAllowed"
  | "duplicateHeader"
  | "authenticationFailed"
  | "tokenExpired"
  | "missingHeader"
  | "invalidHeader"
  | "unsupportedInterfaceVersion"
  | "deadlineExceeded"
  | "missingCapability"
  | "unsupportedMediaType"
  | "payloadTooLarge"
  | "invalidJson"
  | "invalidRequest"
  | "resourceExhausted"
  | "originNotAllowed"
  | "principalExists"
  | "idempotencyInFlight"
  | "idempotencyConflict"
  | "idempotencyUnsettled"
  | "storeUnavailable"
  | "shuttingDown"
  | "providerNotConfigured"
  | "providerError"
  | "providerUnavailable"
  | "runNotFound"
  | "agentNotAllowed"
  | "resourceNotAllowed"
  | "agentOverrideNotAllowed"
  | "runQuotaExceeded"
  | "budgetExceeded"
  | "modelNotBudgetable"
  | "toolUseNotFound"
  | "alreadyAnswered"
  | "webhookVerificationFailed"
  | "webhookTargetNotAllowed"
  | "webhookSubscriptionDisabled"
  | "trustPolicyExists"
  | "policyMismatch"
  | "internal";

/** Every stable error code the service answers with, its default status and layer. */
export const ERROR_CODES: Readonly<Record<ErrorCode, ErrorCodeInfo>> = Object.freeze(
  {
    notFound: { status: 404, layer: "interface" },
    methodNotAllowed: { status: 405, layer: "interface" },
    duplicateHeader: { status: 400, layer: "interface" },
    authenticationFailed: { status: 401, layer: "auth" },
    tokenExpired: { status: 401, layer: "auth" },
    missingHeader: { status: 400, layer: "interface" },
    invalidHeader: { status: 400, layer: "interface" },
    unsupportedInterfaceVersion: { status: 422, layer: "interface" },
    deadlineExceeded: { status: 408, layer: "interface" },
    missingCapability: { status: 403, layer: "auth" },
    unsupportedMediaType: { status: 415, layer: "interface" },
    payloadTooLarge: { status: 413, layer: "interface" },
    invalidJson: { status: 400, layer: "interface" },
    invalidRequest: { status: 422, layer: "interface" },
    resourceExhausted: { status: 429, layer: "interface" },
    originNotAllowed: { status: 403, layer: "interface" },
    principalExists: { status: 409, layer: "authority" },
    idempotencyInFlight: { status: 409, layer: "idempotency" },
    idempotencyConflict: { status: 422, layer: "idempotency" },
    idempotencyUnsettled: { status: 409, layer: "idempotency" },
    storeUnavailable: { status: 503, layer: "internal" },
    shuttingDown: { status: 503, layer: "internal" },
    providerNotConfigured: { status: 503, layer: "internal" },
    providerError: { status: 502, layer: "internal" },
    providerUnavailable: { status: 503, layer: "internal" },
    runNotFound: { status: 404, layer: "authority" },
    agentNotAllowed: { status: 403, layer: "authority" },
    resourceNotAllowed: { status: 403, layer: "authority" },
    agentOverrideNotAllowed: { status: 403, layer: "authority" },
    runQuotaExceeded: { status: 429, layer: "authority" },
    budgetExceeded: { status: 429, layer: "authority" },
    modelNotBudgetable: { status: 422, layer: "authority" },
    toolUseNotFound: { status: 404, layer: "authority" },
    alreadyAnswered: { status: 409, layer: "authority" },
    webhookVerificationFailed: { status: 401, layer: "auth" },
    webhookTargetNotAllowed: { status: 422, layer: "authority" },
    webhookSubscriptionDisabled: { status: 409, layer: "authority" },
    trustPolicyExists: { status: 409, layer: "authority" },
    policyMismatch: { status: 403, layer: "authority" },
    internal: { status: 500, layer: "internal" },
  },
);

/** Options of the {@linkcode InterfaceError} constructor. */
export interface InterfaceErrorOptions extends ErrorOptions {
  /** Overrides the code's default layer. */
  layer?: ErrorLayer;
  /** Overrides the code's default status. */
  status?: number;
  /** Further camelCase fields of the error body, such as `header` or `requiredCapability`. */
  extra?: Record<string, unknown>;
  /** Response headers that belong to the error, such as `allow` or `retry-after`. */
  headers?: Record<string, string>;
}

/**
 * A request refused with a stable `code`. The message is shown to the caller, so it never holds
 * a secret, a header value or part of the body.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InterfaceError } from "./errors.ts";
 * const error = new InterfaceError("missingHeader", "Header x-deadline is required", {
 *   extra: { header: "x-deadline" },
 * });
 * assert.equal(error.status, 400);
 * assert.equal(error.layer, "interface");
 * ```
 */
export class InterfaceError extends Error {
  /** Stable error code. */
  readonly code: ErrorCode;
  /** Layer that refused the request. */
  readonly layer: ErrorLayer;
  /** HTTP status of the response. */
  readonly status: number;
  /** Further fields of the error body. */
  readonly extra: Readonly<Record<string, unknown>> | undefined;
  /** Response headers of the error. */
  readonly headers: Readonly<Record<string, string>> | undefined;

  /**
   * Creates the error with the code's default status and layer unless overridden.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { InterfaceError } from "./errors.ts";
   * const error = new InterfaceError("notFound", "Principal not found", { layer: "authority" });
   * assert.equal(error.status, 404);
   * assert.equal(error.layer, "authority");
   * ```
   */
  constructor(code: ErrorCode, message: string, options?: InterfaceErrorOptions) {
    super(message, options);
    this.name = "InterfaceError";
    this.code = code;
    const info = ERROR_CODES[code];
    this.layer = options?.layer ?? info.layer;
    this.status = options?.status ?? info.status;
    this.extra = options?.extra;
    this.headers = options?.headers;
  }
}

/** One violation reported in the `details` of a 422 `invalidRequest`. */
export interface ValidationDetail {
  /** Dotted path of the offending field (empty for the whole body). */
  path: string;
  /** What is wrong with it. */
  message: string;
}

/**
 * The 422 `invalidRequest` error listing what is wrong with a request.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { invalidRequest } from "./errors.ts";
 * const error = invalidRequest([{ path: "expiresAt", message: "Must be in the future" }]);
 * assert.equal(error.status, 422);
 * assert.equal(error.message, "Invalid request: expiresAt: Must be in the future");
 * ```
 */
export function invalidRequest(
  details: readonly ValidationDetail[],
  options?: { layer?: "interface" | "authority" },
): InterfaceError {
  const first = details[0];
  const message = first === undefined
    ? "The request body is invalid"
    : `Invalid request: ${first.path === "" ? "" : `${first.path}: `}${first.message}`;
  return new InterfaceError("invalidRequest", message, {
    layer: options?.layer,
    extra: { details },
  });
}

/** The JSON error body of every refused request. */
export interface ErrorBody {
  /** The error. */
  error: {
    /** Stable code. */
    code: string;
    /** Layer that refused the request. */
    layer: ErrorLayer;
    /** Human-readable message. */
    message: string;
    /** The request's correlation id when valid, else one generated by the server. */
    correlationId: string;
    /** Further fields. */
    [field: string]: unknown;
  };
}

/**
 * Builds the error body of an {@linkcode InterfaceError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { errorBody, InterfaceError } from "./errors.ts";
 * const body = errorBody(new InterfaceError("internal", "Internal error"), crypto.randomUUID());
 * assert.equal(body.error.code, "internal");
 * ```
 */
export function errorBody(error: InterfaceError, correlationId: string): ErrorBody {
  return {
    error: {
      code: error.code,
      layer: error.layer,
      message: error.message,
      correlationId,
      ...error.extra,
    },
  };
}

/**
 * Renders an {@linkcode InterfaceError} as a JSON response with its status and headers. The
 * server adds `x-content-type-options` and the echoed request headers on top.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InterfaceError, toResponse } from "./errors.ts";
 * const response = toResponse(new InterfaceError("notFound", "No route"), crypto.randomUUID());
 * assert.equal(response.status, 404);
 * ```
 */
export function toResponse(error: InterfaceError, correlationId: string): Response {
  const headers = new Headers({ "content-type": "application/json" });
  if (error.headers !== undefined) {
    for (const name in error.headers) headers.set(name, error.headers[name]);
  }
  return new Response(JSON.stringify(errorBody(error, correlationId)), {
    status: error.status,
    headers,
  });
}

/**
 * The error answered for anything unexpected: 500 `internal`, no internals in the message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { internalError } from "./errors.ts";
 * assert.equal(internalError().status, 500);
 * ```
 */
export function internalError(): InterfaceError {
  return new InterfaceError("internal", "Internal error");
}

/**
 * The refusal answered for anything thrown while a request was answered: an
 * {@linkcode InterfaceError} as it is; a {@linkcode StoreUnavailableError} as 503
 * `storeUnavailable` with `Retry-After: 1`; anything else as 500 `internal`. The last two are
 * logged with `fields` (the error's name, never its message for an unexpected one, which may
 * quote a secret); the caller sees no internals.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { refusalFor } from "./errors.ts";
 * import { createJsonLogger } from "./log.ts";
 * const lines: string[] = [];
 * const logger = createJsonLogger({ write: (text) => lines.push(text) });
 * const refusal = refusalFor(new TypeError("secret detail"), logger, { path: "/v1/x" });
 * assert.equal(refusal.code, "internal");
 * assert.equal(JSON.parse(lines[0]).msg, "unexpected failure");
 * assert.ok(!lines[0].includes("secret detail"));
 * ```
 */
export function refusalFor(
  error: unknown,
  logger: RuntimeLogger,
  fields: LogFields,
): InterfaceError {
  if (error instanceof InterfaceError) return error;
  if (error instanceof StoreUnavailableError) {
    logger.error("store unavailable", {
      errorName: error.name,
      message: error.message,
      ...fields,
    });
    return new InterfaceError("storeUnavailable", "The authority store is unavailable", {
      headers: { "retry-after": "1" },
    });
  }
  logger.error("unexpected failure", {
    errorName: error instanceof Error ? error.name : typeof error,
    ...fields,
  });
  return internalError();
}

/**
 * The response for anything thrown while `context`'s request was answered: the error body of
 * {@linkcode refusalFor}'s refusal, under the request's correlation id. This is the error
 * handler every chain is composed with.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RequestContext } from "./context.ts";
 * import { errorResponse, InterfaceError } from "./errors.ts";
 * import { createJsonLogger } from "./log.ts";
 * const context = new RequestContext(new Request("http://localhost/v1/x"), Date.now());
 * const logger = createJsonLogger({ write: () => {} });
 * const response = errorResponse(new InterfaceError("notFound", "No route"), context, logger);
 * assert.equal(response.status, 404);
 * assert.equal((await response.json()).error.code, "notFound");
 * ```
 */
export function errorResponse(
  error: unknown,
  context: RequestContext,
  logger: RuntimeLogger,
): Response {
  const refusal = refusalFor(error, logger, {
    method: boundedField(context.method, MAX_LOGGED_METHOD),
    path: boundedField(context.path, MAX_LOGGED_PATH),
    correlationId: context.responseCorrelationId,
  });
  // The error replaces any answer the handler built (its recording failed, say): the common
  // headers are added to this one.
  context.finished = false;
  return toResponse(refusal, context.responseCorrelationId);
}
