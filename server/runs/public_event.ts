/**
 * The public form of a run's log entry, the one definition behind every way it leaves the server:
 * the objects of a JSON page ({@linkcode publicEvent}) and the SSE frame of a stream
 * ({@linkcode eventFrame}, whose `data:` line is the same object as JSON).
 *
 * @module
 */
import { isTerminalRunStreamEvent } from "../../client/contract.ts";
import type { RunEventEntry } from "../store/types.ts";
import type { RunEvent } from "../../wire/mod.ts";

/**
 * The public form of a log entry: the run event with its `seq` and `at` first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { publicEvent } from "./public_event.ts";
 * const event = publicEvent({
 *   seq: 3, at: "2026-01-01T00:00:00Z", sourceId: "sevt_1",
 *   event: { type: "run.cancelled", runId: "sesn_1" },
 * });
 * assert.deepEqual(event, { seq: 3, at: "2026-01-01T00:00:00Z", type: "run.cancelled", runId: "sesn_1" });
 * ```
 */
export function publicEvent(entry: RunEventEntry): RunEvent {
  return { seq: entry.seq, at: entry.at, ...entry.event };
}

/**
 * The SSE frame of a log entry: `id: <seq>`, `event: <type>`, `data: <JSON of its public form>`,
 * and the blank line that ends a frame.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { eventFrame } from "./public_event.ts";
 * const frame = eventFrame({
 *   seq: 3, at: "2026-01-01T00:00:00Z", sourceId: "sevt_1",
 *   event: { type: "run.cancelled", runId: "sesn_1" },
 * });
 * assert.equal(
 *   frame,
 *   'id: 3\nevent: run.cancelled\ndata: {"seq":3,"at":"2026-01-01T00:00:00Z","type":"run.cancelled","runId":"sesn_1"}\n\n',
 * );
 * ```
 */
export function eventFrame(entry: RunEventEntry): string {
  return `id: ${entry.seq}\nevent: ${entry.event.type}\ndata: ${
    JSON.stringify(publicEvent(entry))
  }\n\n`;
}

/** Whether an entry ends a turn (`run.completed`, `run.failed`, `run.cancelled`). */
export function isTerminalEntry(entry: RunEventEntry | undefined): boolean {
  return entry !== undefined && isTerminalRunStreamEvent(entry.event);
}
