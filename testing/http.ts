/**
 * The wire helpers of the provider simulator's route handlers: JSON answers, the provider's error
 * body, SSE frames, the error a handler throws to answer a refusal, and the subscriber of an
 * event stream. Plain web standards: they run in Deno, Node and browsers.
 *
 * @module
 */

/** A JSON object, as the simulator reads and writes them. */
export type Json = Record<string, unknown>;

/** The provider's error `type` for each status the simulator answers with. */
const DEFAULT_ERROR_TYPES: Readonly<Record<number, string>> = Object.freeze({
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  405: "invalid_request_error",
  408: "timeout_error",
  409: "conflict_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  503: "overloaded_error",
  529: "overloaded_error",
});

/**
 * The provider's error `type` for an HTTP status (`api_error` for one it has no name for).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { errorTypeOf } from "./http.ts";
 * assert.equal(errorTypeOf(429), "rate_limit_error");
 * assert.equal(errorTypeOf(599), "api_error");
 * ```
 */
export function errorTypeOf(status: number): string {
  return DEFAULT_ERROR_TYPES[status] ?? "api_error";
}

/** Options of {@linkcode SimulatorHttpError}. */
export interface SimulatorHttpErrorOptions {
  /** Extra response headers (such as `retry-after-ms` or `x-should-retry`). */
  headers?: Record<string, string>;
  /** Extra fields of the body's `error` object. */
  extra?: Json;
}

/**
 * Thrown by a route handler to answer with the provider's error body
 * (`{type: "error", error: {type, message, ...extra}, request_id}`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SimulatorHttpError } from "./http.ts";
 * const error = new SimulatorHttpError(404, "not_found_error", "Agent agent_1 not found");
 * assert.equal(error.status, 404);
 * ```
 */
export class SimulatorHttpError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** Provider error type. */
  readonly type: string;
  /** Extra response headers. */
  readonly headers: Record<string, string>;
  /** Extra fields of the `error` object. */
  readonly extra: Json;

  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { SimulatorHttpError } from "./http.ts";
   * const error = new SimulatorHttpError(409, "conflict_error", "Busy", {
   *   headers: { "x-should-retry": "false" },
   * });
   * assert.equal(error.headers["x-should-retry"], "false");
   * ```
   */
  constructor(
    status: number,
    type: string,
    message: string,
    options: SimulatorHttpErrorOptions = {},
  ) {
    super(message);
    this.name = "SimulatorHttpError";
    this.status = status;
    this.type = type;
    this.headers = options.headers ?? {};
    this.extra = options.extra ?? {};
  }
}

/**
 * A JSON answer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonResponse } from "./http.ts";
 * const response = jsonResponse({ ok: true }, 201);
 * assert.equal(response.status, 201);
 * assert.deepEqual(await response.json(), { ok: true });
 * ```
 */
export function jsonResponse(
  body: unknown,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** Options of {@linkcode errorResponse}. */
export interface ErrorResponseOptions extends SimulatorHttpErrorOptions {
  /** The body's `request_id` (default `null`). */
  requestId?: string;
}

/**
 * The provider's error answer: `{type: "error", error: {type, message, ...extra}, request_id}`.
 * Without a `type`, the one of the status is used (`rate_limit_error` for 429 …).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { errorResponse } from "./http.ts";
 * const response = errorResponse(529, undefined, "Overloaded", { requestId: "req_1" });
 * const body = await response.json();
 * assert.equal(body.error.type, "overloaded_error");
 * assert.equal(body.request_id, "req_1");
 * ```
 */
export function errorResponse(
  status: number,
  type: string | undefined,
  message: string,
  options: ErrorResponseOptions = {},
): Response {
  return jsonResponse(
    {
      type: "error",
      error: { type: type ?? errorTypeOf(status), message, ...options.extra },
      request_id: options.requestId ?? null,
    },
    status,
    options.headers,
  );
}

/**
 * One SSE frame of an event: `event: <type>` and `data: <json>` (without the `event:` line when
 * `withEventLine` is false).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sseFrame } from "./http.ts";
 * assert.equal(sseFrame({ type: "ping" }), 'event: ping\ndata: {"type":"ping"}\n\n');
 * ```
 */
export function sseFrame(event: Json, options: { withEventLine?: boolean } = {}): string {
  const data = `data: ${JSON.stringify(event)}\n\n`;
  return options.withEventLine === false ? data : `event: ${String(event.type)}\n${data}`;
}

/**
 * The writing end of one open event stream, handed to the `attach` callback of
 * `ProviderSimulator.sseResponse`. Writes honour the stream fault switches (a dropped stream, a
 * duplicated delivery).
 */
export interface SimulatorStreamSubscriber {
  /** Writes one frame (or several, back to back). */
  write(frame: string): void;
  /** Ends the stream. */
  close(): void;
  /** Whether the stream is over (closed, dropped or cancelled by the client). */
  readonly closed: boolean;
}
