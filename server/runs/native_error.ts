/**
 * The provider's error shape: how the `/provider` interface renders every refusal, the one
 * renderer beside `provider_failure.ts` (which says what failed; this says how it looks to a
 * client of the provider's own API).
 *
 * Every refusal answers `{"type":"error","error":{"type","message","details"?},"request_id"}`
 * with a `request-id` header:
 *
 * - a failure of the provider itself (`ProviderFailure`, also inside the service's
 *   `providerError`): the provider's status and error type when it answered, its text scrubbed of
 *   the provider's secrets; 502 `api_error` when it was unreachable, 504 `timeout_error` when it
 *   did not answer in time;
 * - a refusal of the service ({@linkcode InterfaceError}): the provider's type for its status
 *   (`invalid_request_error`, `authentication_error`, `permission_error`, `not_found_error`,
 *   `conflict_error`, `request_too_large`, `rate_limit_error`, `timeout_error`, `api_error`,
 *   `overloaded_error`), a 422 of the request's shape as 400 (as the provider answers it), and the
 *   service's code in `details.error_code`;
 * - `x-should-retry: false` on every refusal a retry cannot change: any 4xx but 408 and 409, a
 *   429 for a quota or budget (`runQuotaExceeded`, `budgetExceeded`), and the 409s `alreadyAnswered` and
 *   `idempotencyUnsettled`; the vendor SDK then does not repeat it. A busy in-flight quota (429
 *   `resourceExhausted`) or a request still in flight under its idempotency key (409
 *   `idempotencyInFlight`) may be retried.
 *
 * @module
 */
import { type ErrorCode, type InterfaceError, refusalFor } from "../errors.ts";
import type { RuntimeLogger } from "../log.ts";
import { type ProviderFailure, providerFailureOf } from "./provider_failure.ts";

/** The provider's error type for each status the service answers with. */
const TYPE_OF_STATUS: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  405: "invalid_request_error",
  408: "timeout_error",
  409: "conflict_error",
  413: "request_too_large",
  415: "invalid_request_error",
  422: "invalid_request_error",
  429: "rate_limit_error",
  500: "api_error",
  502: "api_error",
  503: "overloaded_error",
  504: "timeout_error",
  529: "overloaded_error",
};

/** Refusals of the request's shape: the provider answers those 400. */
const SHAPE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>(["invalidRequest"]);

/** Refusals a retry can change although their status says otherwise. */
const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "resourceExhausted",
  "idempotencyInFlight",
  "deadlineExceeded",
]);

/** Refusals a retry cannot change although their status says otherwise. */
const FINAL_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "alreadyAnswered",
  "idempotencyUnsettled",
  "runQuotaExceeded",
]);

/** The provider's 409s that are verdicts on the request, not races. */
const FINAL_CONFLICTS: ReadonlySet<string> = new Set([
  "memory_path_conflict_error",
  "memory_precondition_failed_error",
]);

/** The body of a refusal in the provider's shape. */
export interface NativeErrorBody {
  /** Always `error`. */
  type: "error";
  /** What failed. */
  error: {
    /** The provider's error type, such as `not_found_error`. */
    type: string;
    /** What to say about it (never a secret). */
    message: string;
    /** The service's own code, for refusals of the service. */
    details?: { error_code: string };
  };
  /** The request's id (also the `request-id` header). */
  request_id: string;
}

/** A refusal as the provider's shape renders it: status, body, headers. */
export interface NativeRefusal {
  /** HTTP status. */
  status: number;
  /** The body. */
  body: NativeErrorBody;
  /** Whether a retry could change the answer (`x-should-retry` when not). */
  retryable: boolean;
  /** Further headers (`retry-after`, `allow`). */
  headers: Record<string, string>;
}

/** The refusal of a failure of the provider. */
function ofFailure(failure: ProviderFailure, requestId: string): NativeRefusal {
  let status: number;
  let type: string;
  if (failure.kind === "refused" || failure.kind === "busy") {
    status = failure.providerStatus ?? 502;
    type = failure.providerErrorType ?? TYPE_OF_STATUS[status] ?? "api_error";
  } else if (failure.kind === "unreachable") {
    status = 502;
    type = "api_error";
  } else {
    status = 504;
    type = "timeout_error";
  }
  return {
    status,
    body: { type: "error", error: { type, message: failure.message }, request_id: requestId },
    retryable: status === 408 || status === 429 || status >= 500 ||
      (status === 409 && !FINAL_CONFLICTS.has(type)),
    headers: failure.retryable && status >= 500 ? { "retry-after": "1" } : {},
  };
}

/**
 * The refusal of anything thrown while a `/provider` request was answered: its status, its body
 * in the provider's shape and whether a retry could change it (see the module doc). Unexpected
 * errors are logged by name and answered 500 `api_error`, like everywhere else.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InterfaceError } from "../errors.ts";
 * import { createJsonLogger } from "../log.ts";
 * import { nativeRefusal } from "./native_error.ts";
 * const logger = createJsonLogger({ write() {} });
 * const missing = nativeRefusal(new InterfaceError("runNotFound", "No run"), "req_1", logger, {});
 * assert.equal(missing.status, 404);
 * assert.equal(missing.body.error.type, "not_found_error");
 * assert.equal(missing.body.error.details?.error_code, "runNotFound");
 * assert.equal(missing.retryable, false);
 * const busy = nativeRefusal(new InterfaceError("resourceExhausted", "Busy"), "req_2", logger, {});
 * assert.deepEqual([busy.status, busy.body.error.type, busy.retryable], [429, "rate_limit_error", true]);
 * ```
 */
export function nativeRefusal(
  error: unknown,
  requestId: string,
  logger: RuntimeLogger,
  fields: Record<string, string>,
): NativeRefusal {
  const failure = providerFailureOf(error);
  if (failure !== null) return ofFailure(failure, requestId);
  const refusal: InterfaceError = refusalFor(error, logger, fields);
  const status = SHAPE_CODES.has(refusal.code) ? 400 : refusal.status;
  const type = TYPE_OF_STATUS[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
  const retryable = RETRYABLE_CODES.has(refusal.code) ||
    (!FINAL_CODES.has(refusal.code) && (status === 408 || status === 409 || status >= 500));
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(refusal.headers ?? {})) {
    if (name === "retry-after" || name === "allow") headers[name] = value;
  }
  return {
    status,
    body: {
      type: "error",
      error: { type, message: refusal.message, details: { error_code: refusal.code } },
      request_id: requestId,
    },
    retryable,
    headers,
  };
}

/**
 * The response of {@linkcode nativeRefusal}: the body, the `request-id` header, and
 * `x-should-retry: false` when a retry cannot change it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InterfaceError } from "../errors.ts";
 * import { createJsonLogger } from "../log.ts";
 * import { nativeErrorResponse } from "./native_error.ts";
 * const logger = createJsonLogger({ write() {} });
 * const response = nativeErrorResponse(
 *   new InterfaceError("alreadyAnswered", "Answered before"),
 *   "req_1",
 *   logger,
 *   {},
 * );
 * assert.equal(response.status, 409);
 * assert.equal(response.headers.get("x-should-retry"), "false");
 * assert.equal(response.headers.get("request-id"), "req_1");
 * assert.equal((await response.json()).error.type, "conflict_error");
 * ```
 */
export function nativeErrorResponse(
  error: unknown,
  requestId: string,
  logger: RuntimeLogger,
  fields: Record<string, string>,
): Response {
  const refusal = nativeRefusal(error, requestId, logger, fields);
  const headers = new Headers({
    "content-type": "application/json",
    "request-id": requestId,
    ...refusal.headers,
  });
  if (!refusal.retryable) headers.set("x-should-retry", "false");
  return new Response(JSON.stringify(refusal.body), { status: refusal.status, headers });
}

/**
 * The provider error types the `/provider` interface answers with (for the OpenAPI document).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NATIVE_ERROR_TYPES } from "./native_error.ts";
 * assert.ok(NATIVE_ERROR_TYPES.includes("permission_error"));
 * ```
 */
export const NATIVE_ERROR_TYPES: readonly string[] = Object.freeze([
  ...new Set(Object.values(TYPE_OF_STATUS)),
]);
