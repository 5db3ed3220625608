/**
 * What the SDK's resource groups (`client.runs`, `client.audit`) share with
 * {@linkcode RuntimeServiceClient}: the shape of one call, its answer, the request function the
 * client lends them, and the checks of ids, keys and answers. Web standards only.
 *
 * @module
 */
import { RuntimeServiceError } from "./errors.ts";
import type { CallOptions, MutatingCallOptions } from "./types.ts";

/** One call to the service, before the shared headers are added. */
export interface RequestSpec {
  /** HTTP method. */
  method: "GET" | "POST" | "DELETE";
  /** Path under the base URL, query included (`/v1/runs?limit=5`). */
  path: string;
  /** JSON body; absent: no body and no `content-type`. */
  body?: unknown;
  /** Whether the bearer is sent. */
  authenticated: boolean;
  /** The `idempotency-key`; a call carrying one is safe to retry. */
  idempotencyKey?: string;
  /** Signal and deadline of the call. */
  options: CallOptions;
}

/** A 2xx answer with its parsed JSON body. */
export interface Answer {
  /** HTTP status. */
  status: number;
  /** Response headers. */
  headers: Headers;
  /** Parsed JSON body (null when empty). */
  body: unknown;
}

/** The client's request function, lent to its resource groups. */
export type SendRequest = (spec: RequestSpec) => Promise<Answer>;

const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,128}$/;

/**
 * The call's idempotency key: the caller's, checked, or a random UUID generated once per call
 * (the client sends the same one on each retry).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { idempotencyKeyOf } from "./_request.ts";
 * assert.equal(idempotencyKeyOf({ idempotencyKey: "nightly-42" }), "nightly-42");
 * assert.equal(idempotencyKeyOf({}).length, 36);
 * assert.throws(() => idempotencyKeyOf({ idempotencyKey: "" }), TypeError);
 * ```
 */
export function idempotencyKeyOf(options: MutatingCallOptions): string {
  const key = options.idempotencyKey ?? crypto.randomUUID();
  if (typeof key !== "string" || !IDEMPOTENCY_KEY.test(key)) {
    throw new TypeError("idempotencyKey must be 1 to 128 printable ASCII characters");
  }
  return key;
}

/**
 * A path segment for an id the caller passed: 1 to 256 printable ASCII characters without
 * spaces, never `.` or `..` (which a URL would resolve into another path), percent-encoded.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { idSegment } from "./_request.ts";
 * assert.equal(idSegment("sesn_01", "runId"), "sesn_01");
 * assert.equal(idSegment("a/b", "runId"), "a%2Fb");
 * assert.throws(() => idSegment("..", "runId"), TypeError);
 * ```
 */
export function idSegment(id: string, name: string): string {
  if (typeof id !== "string" || !/^[\x21-\x7e]{1,256}$/.test(id) || id === "." || id === "..") {
    throw new TypeError(`${name} must be 1 to 256 printable ASCII characters without spaces`);
  }
  return encodeURIComponent(id);
}

/**
 * The error of a 2xx answer whose body is not what the endpoint promises.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { invalidAnswer } from "./_request.ts";
 * const error = invalidAnswer({ status: 200, headers: new Headers(), body: null }, "no runs");
 * assert.equal(error.code, "invalidResponse");
 * ```
 */
export function invalidAnswer(answer: Answer, message: string): RuntimeServiceError {
  return new RuntimeServiceError({
    status: answer.status,
    code: "invalidResponse",
    layer: "transport",
    message,
    correlationId: answer.headers.get("x-correlation-id") ?? "",
  });
}

/**
 * Whether `value` is a plain JSON object (not null, not an array).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isObject } from "./_request.ts";
 * assert.equal(isObject({ a: 1 }), true);
 * assert.equal(isObject([1]), false);
 * ```
 */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The page size a caller asked for, checked: an integer from 1 to `max`, or absent.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkedLimit } from "./_request.ts";
 * assert.equal(checkedLimit(50, 500), 50);
 * assert.equal(checkedLimit(undefined, 500), undefined);
 * assert.throws(() => checkedLimit(501, 500), RangeError);
 * ```
 */
export function checkedLimit(limit: number | undefined, max: number): number | undefined {
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > max)) {
    throw new RangeError(`limit must be an integer from 1 to ${max}`);
  }
  return limit;
}

/**
 * The page cursor a caller passed, checked: a non-empty string, or absent.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkedCursor } from "./_request.ts";
 * assert.equal(checkedCursor("c1"), "c1");
 * assert.throws(() => checkedCursor(""), TypeError);
 * ```
 */
export function checkedCursor(cursor: string | undefined): string | undefined {
  if (cursor !== undefined && (typeof cursor !== "string" || cursor === "")) {
    throw new TypeError("cursor must be a non-empty string");
  }
  return cursor;
}

/**
 * The seq a caller resumes after, checked: a whole number of at least 0.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkedSeq } from "./_request.ts";
 * assert.equal(checkedSeq(0), 0);
 * assert.throws(() => checkedSeq(-1), RangeError);
 * ```
 */
export function checkedSeq(after: number): number {
  if (!Number.isSafeInteger(after) || after < 0) {
    throw new RangeError("after must be a whole number of at least 0");
  }
  return after;
}

/**
 * A query string from the defined entries of `params` (`""` when none), in their order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { queryOf } from "./_request.ts";
 * assert.equal(queryOf({ limit: 5, cursor: undefined, state: "running" }), "?limit=5&state=running");
 * assert.equal(queryOf({}), "");
 * ```
 */
export function queryOf(params: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined) query.set(name, String(value));
  }
  const text = query.toString();
  return text === "" ? "" : `?${text}`;
}

/**
 * An environment variable when the runtime has an environment: Deno's (`Deno.env`) or Node's
 * (`process.env`); a browser has neither. A permission refusal counts as absent, as does "".
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { environmentValue } from "./_request.ts";
 * assert.equal(environmentValue("AUTOMATION_RUNTIME_SURELY_UNSET_VARIABLE"), undefined);
 * ```
 */
export function environmentValue(name: string): string | undefined {
  const runtime = globalThis as {
    Deno?: { env?: { get?(name: string): string | undefined } };
    process?: { env?: Record<string, string | undefined> };
  };
  try {
    const value = runtime.Deno?.env?.get?.(name) ?? runtime.process?.env?.[name];
    return value === "" ? undefined : value;
  } catch {
    return undefined;
  }
}
