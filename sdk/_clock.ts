/**
 * The service's clock as the SDK knows it: the offset between the service's clock and this
 * machine's, learned from the `Date` header of a deadline refusal, and the `x-deadline` text a
 * call sends. Web standards only.
 *
 * The service checks `x-deadline` against its own clock: a deadline already past there is 408
 * `deadlineExceeded`, one more than 300 s ahead 400 `invalidHeader`. A client whose clock is a
 * minute off meets one of the two although its own deadline is sound. The refusal carries the
 * service's `Date` (second resolution); the offset learned from it is applied to every later
 * call of the client, and the refused call is sent again once.
 *
 * @module
 */
import type { Answer } from "./_request.ts";

/** How far ahead the service accepts an `x-deadline`, in ms. */
export const MAX_DEADLINE_AHEAD_MS = 300_000;
/**
 * What a corrected deadline keeps below {@linkcode MAX_DEADLINE_AHEAD_MS}: the `Date` header's
 * resolution (1 s) and a round trip.
 */
const AHEAD_MARGIN_MS = 2_000;
/** Half the `Date` header's resolution: the service's time is anywhere in its second. */
const HALF_SECOND_MS = 500;

/**
 * Whether `answer` is the service refusing the `x-deadline` header: 408 `deadlineExceeded`, or
 * 400 `invalidHeader` naming `x-deadline`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isDeadlineRefusal } from "./_clock.ts";
 * const body = { error: { code: "deadlineExceeded", header: "x-deadline" } };
 * assert.equal(isDeadlineRefusal({ status: 408, headers: new Headers(), body }), true);
 * assert.equal(isDeadlineRefusal({ status: 404, headers: new Headers(), body: null }), false);
 * ```
 */
export function isDeadlineRefusal(answer: Answer): boolean {
  const error = (answer.body as { error?: { code?: unknown; header?: unknown } } | null)?.error;
  if (error === null || typeof error !== "object") return false;
  if (answer.status === 408) return error.code === "deadlineExceeded";
  return answer.status === 400 && error.code === "invalidHeader" && error.header === "x-deadline";
}

/**
 * The offset of the service's clock from this machine's, in ms (0 until a refusal taught
 * otherwise), and the `x-deadline` of a call under it.
 *
 * @example A service whose clock is 90 s ahead
 * ```ts
 * import assert from "node:assert/strict";
 * import { ServerClock } from "./_clock.ts";
 * const clock = new ServerClock();
 * const now = Date.parse("2030-01-01T00:00:00Z");
 * const refusal = {
 *   status: 408,
 *   headers: new Headers({ date: new Date(now + 90_000).toUTCString() }),
 *   body: { error: { code: "deadlineExceeded", header: "x-deadline" } },
 * };
 * // The call sent a deadline 60 s ahead by this machine's clock: past by the service's.
 * assert.equal(clock.learn(refusal, { sentMs: now + 60_000, deadlineMs: now + 60_000, now }), true);
 * assert.equal(clock.offsetMs, 90_500);
 * assert.equal(clock.deadlineHeader(now + 60_000, now), new Date(now + 150_500).toISOString());
 * ```
 */
export class ServerClock {
  #offsetMs = 0;

  /** The service's clock minus this machine's, in ms. */
  get offsetMs(): number {
    return this.#offsetMs;
  }

  /**
   * The `x-deadline` text of a call whose deadline is `deadlineMs` by this machine's clock: the
   * same instant on the service's clock, never more than 298 s ahead of it once an offset was
   * learned (the offset is known to about a second).
   */
  deadlineHeader(deadlineMs: number, now: number = Date.now()): string {
    let at = deadlineMs + this.#offsetMs;
    if (this.#offsetMs !== 0) {
      at = Math.min(at, now + this.#offsetMs + MAX_DEADLINE_AHEAD_MS - AHEAD_MARGIN_MS);
    }
    return new Date(at).toISOString();
  }

  /**
   * Learns the offset from a refusal of the call's `x-deadline` and says whether sending the
   * call again with a corrected deadline can succeed: the refusal is a deadline refusal with a
   * `Date` header, and by that date the header sent (`sentMs`, on the service's clock as the
   * client believed it) was past (408) or too far ahead (400), while the call's own deadline
   * (`deadlineMs`, this machine's clock) still leaves more than a second. Otherwise nothing
   * changes and the refusal stands.
   */
  learn(answer: Answer, call: { sentMs: number; deadlineMs: number; now: number }): boolean {
    if (!isDeadlineRefusal(answer)) return false;
    const date = Date.parse(answer.headers.get("date") ?? "");
    if (Number.isNaN(date)) return false;
    const serverNow = date + HALF_SECOND_MS;
    const remaining = call.deadlineMs - call.now;
    const explained = answer.status === 408
      ? call.sentMs <= serverNow + HALF_SECOND_MS && remaining > 1_000
      : call.sentMs - serverNow > MAX_DEADLINE_AHEAD_MS - 2 * HALF_SECOND_MS;
    if (!explained) return false;
    this.#offsetMs = serverNow - call.now;
    return true;
  }
}
