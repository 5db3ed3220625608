/**
 * Rule 7: `x-deadline` is required (400 `missingHeader`), must be an RFC 3339 timestamp at most
 * 300 s ahead (400 `invalidHeader`) and not already past (408 `deadlineExceeded`).
 *
 * Both refusals of a deadline out of range carry the service's own time in `Date` (from the
 * server's clock, the `now` option): a client whose clock is off learns the offset from it and
 * sends the request again with a corrected deadline (the SDK does, once per call).
 *
 * @module
 */
import { checkRule, type Rule } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import { parseRfc3339 } from "../time.ts";

/** How far ahead a deadline may be, in ms. */
export const MAX_DEADLINE_AHEAD_MS = 300_000;

/**
 * The error answered when a request's deadline passes; given the server's time `now`, it also
 * carries that time as the answer's `Date` (else Deno's HTTP server writes its own).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deadlineExceeded } from "./deadline.ts";
 * assert.equal(deadlineExceeded().status, 408);
 * assert.equal(deadlineExceeded(0).headers?.date, "Thu, 01 Jan 1970 00:00:00 GMT");
 * ```
 */
export function deadlineExceeded(now?: number): InterfaceError {
  return new InterfaceError("deadlineExceeded", "The request deadline has passed", {
    extra: { header: "x-deadline" },
    headers: now === undefined ? undefined : { date: new Date(now).toUTCString() },
  });
}

/** The deadline rule; sets `context.deadline`. */
export function deadlineRule(): Rule<RequestContext> {
  // Clients send the same deadline text for many requests (one computed per second, say), so
  // the last text parsed is remembered; parsing is a pure function of the text.
  let lastText: string | null = null;
  let lastAt: number | null = null;
  return checkRule(function deadline(context: RequestContext): void {
    const raw = context.deadlineHeader;
    if (raw === null) {
      throw new InterfaceError("missingHeader", "Header x-deadline is required", {
        extra: { header: "x-deadline" },
      });
    }
    let at: number | null;
    if (raw === lastText) {
      at = lastAt;
    } else {
      at = parseRfc3339(raw);
      lastText = raw;
      lastAt = at;
    }
    if (at === null) {
      throw new InterfaceError("invalidHeader", "Header x-deadline must be an RFC 3339 timestamp", {
        extra: { header: "x-deadline" },
      });
    }
    const now = context.receivedAt;
    if (at <= now) throw deadlineExceeded(now);
    if (at - now > MAX_DEADLINE_AHEAD_MS) {
      throw new InterfaceError(
        "invalidHeader",
        "Header x-deadline must be at most 300 seconds ahead",
        { extra: { header: "x-deadline" }, headers: { date: new Date(now).toUTCString() } },
      );
    }
    context.deadline = at;
  });
}
