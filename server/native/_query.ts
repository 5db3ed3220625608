/**
 * What the `/provider` lists (sessions, events) share in reading their query: the refusal of a
 * malformed request, `limit`, `created_at[gt|gte|lt|lte]` ranges, and the refusal of any
 * parameter the gateway cannot apply (refused, never ignored).
 *
 * @module
 */
import { InterfaceError } from "../errors.ts";

/**
 * The refusal of a malformed request (400 `invalid_request_error` on this interface).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { invalid } from "./_query.ts";
 * assert.equal(invalid("limit must be a number").code, "invalidRequest");
 * ```
 */
export function invalid(message: string): InterfaceError {
  return new InterfaceError("invalidRequest", message, {
    extra: { details: [{ path: "", message }] },
  });
}

/** One `created_at[op]` bound, in ms since the epoch. */
export interface TimeRange {
  readonly op: "gt" | "gte" | "lt" | "lte";
  readonly at: number;
}

/** What a list's query shares: its page size and its time ranges. */
export interface ListParams {
  readonly limit: number;
  readonly createdAt: readonly TimeRange[];
}

const CREATED_AT = /^created_at\[(gt|gte|lt|lte)\]$/;

/**
 * Reads `limit` (1 to `maxLimit`, else `defaultLimit`) and the `created_at` ranges of a list
 * query, and refuses a parameter that is neither of those nor in `known` (`what`: the listed
 * things, for the message).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listParams } from "./_query.ts";
 * const options = { known: new Set(["limit"]), what: "events", maxLimit: 100, defaultLimit: 20 };
 * const params = new URLSearchParams("limit=5&created_at[gte]=2026-01-01T00:00:00Z");
 * assert.deepEqual(listParams(params, options), {
 *   limit: 5,
 *   createdAt: [{ op: "gte", at: Date.parse("2026-01-01T00:00:00Z") }],
 * });
 * assert.throws(() => listParams(new URLSearchParams("sort=x"), options), /by sort/);
 * assert.throws(() => listParams(new URLSearchParams("limit=101"), options), /1 to 100/);
 * ```
 */
export function listParams(
  params: URLSearchParams,
  options: {
    known: ReadonlySet<string>;
    what: string;
    maxLimit: number;
    defaultLimit: number;
  },
): ListParams {
  const createdAt: TimeRange[] = [];
  for (const [name, value] of params) {
    const range = CREATED_AT.exec(name);
    if (range !== null) {
      const at = Date.parse(value);
      if (Number.isNaN(at)) throw invalid(`${name} must be an RFC 3339 time`);
      createdAt.push({ op: range[1] as TimeRange["op"], at });
    } else if (name !== "limit" && !options.known.has(name)) {
      throw invalid(`The gateway does not filter ${options.what} by ${name}`);
    }
  }
  const text = params.get("limit");
  if (text === null) return { limit: options.defaultLimit, createdAt };
  const limit = /^[0-9]{1,6}$/.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= options.maxLimit)) {
    throw invalid(`limit must be a whole number from 1 to ${options.maxLimit}`);
  }
  return { limit, createdAt };
}

/**
 * Whether a time (an RFC 3339 text) lies in every range; a missing or unreadable time is in none
 * (unless there are no ranges).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { inRanges } from "./_query.ts";
 * const ranges = [{ op: "lt" as const, at: Date.parse("2026-01-02T00:00:00Z") }];
 * assert.equal(inRanges("2026-01-01T00:00:00Z", ranges), true);
 * assert.equal(inRanges("2026-01-03T00:00:00Z", ranges), false);
 * assert.equal(inRanges(undefined, []), true);
 * ```
 */
export function inRanges(time: unknown, ranges: readonly TimeRange[]): boolean {
  if (ranges.length === 0) return true;
  const at = typeof time === "string" ? Date.parse(time) : Number.NaN;
  if (Number.isNaN(at)) return false;
  return ranges.every(({ op, at: bound }) =>
    op === "gt" ? at > bound : op === "gte" ? at >= bound : op === "lt" ? at < bound : at <= bound
  );
}
