/**
 * The one reader of session event streams: {@linkcode readSessionEventBatches} frames the SSE body
 * with the shared reader and parses each frame into the session event model of `events.ts`;
 * {@linkcode readSessionEvents} yields the same events one by one. The driver,
 * `streamRun` and `streamSession` all read through it.
 *
 * @module
 */
import { readSseBatches } from "../sse.ts";
import { deferredSessionEvent } from "./_deferred_event.ts";
import { judgeFrame } from "./_peek.ts";
import { type ManagedAgentSessionEvent, parseSessionEventData } from "./events.ts";

/** Options of {@linkcode readSessionEvents} and {@linkcode readSessionEventBatches}. */
export interface ReadSessionEventsOptions {
  /** Stops reading and releases the connection when aborted. */
  signal?: AbortSignal;
  /**
   * Wire types to pass over unparsed: a frame whose type this returns true for is neither parsed
   * nor yielded. The type is read from the data text only when that is provably the type a
   * parse would give; any other frame is parsed and yielded as usual.
   *
   * `"defer"` yields the frame unparsed instead, as a kind `other` event whose `raw`, `id` and
   * `processedAt` are parsed when first read (a text that is not JSON after all then reads as
   * `{ type }`), for types the parser always reads as kind `other` (`session.usage`,
   * `user.message`, `agent.thinking`, spans, …); a frame of any other type is parsed now. Such an
   * event's fields are getters: spreading or serializing it shows only `kind` and `type`.
   */
  skip?: (type: string) => boolean | "defer";
}

/**
 * Reads a session event stream (for example the body from `openEventStream`) and yields each
 * parsed event in order. Frames that are not JSON objects with a `type` are skipped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readSessionEvents } from "@automation/runtime/client";
 * const body = new Response(
 *   'event: agent.message\ndata: {"type":"agent.message","content":[{"type":"text","text":"hi"}]}\n\n',
 * ).body!;
 * const kinds = [];
 * for await (const event of readSessionEvents(body)) kinds.push(event.kind);
 * assert.deepEqual(kinds, ["message"]);
 * ```
 */
export async function* readSessionEvents(
  body: ReadableStream<Uint8Array>,
  options: ReadSessionEventsOptions = {},
): AsyncGenerator<ManagedAgentSessionEvent, void, undefined> {
  for await (const batch of readSessionEventBatches(body, options)) yield* batch;
}

/**
 * The one session stream reader: {@linkcode readSessionEvents}, yielding the parsed events of
 * each body chunk together (never an empty array), so a hot loop pays one asynchronous step per
 * chunk. The driver and `streamRun` / `streamSession` both read through it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readSessionEventBatches } from "@automation/runtime/client";
 * const body = new Response(
 *   'data: {"type":"session.status_running"}\n\ndata: {"type":"session.status_idle"}\n\n',
 * ).body!;
 * const statuses = [];
 * for await (const batch of readSessionEventBatches(body)) {
 *   for (const event of batch) if (event.kind === "status") statuses.push(event.status);
 * }
 * assert.deepEqual(statuses, ["running", "idle"]);
 * ```
 */
export async function* readSessionEventBatches(
  body: ReadableStream<Uint8Array>,
  options: ReadSessionEventsOptions = {},
): AsyncGenerator<ManagedAgentSessionEvent[], void, undefined> {
  const skip = options.skip;
  for await (const frames of readSseBatches(body, { signal: options.signal })) {
    const events: ManagedAgentSessionEvent[] = [];
    for (let i = 0; i < frames.length; i++) {
      const frame = frames[i];
      if (skip !== undefined) {
        const verdict = judgeFrame(frame.data, skip);
        if (verdict === true) continue;
        if (verdict === "defer") {
          const deferred = deferredSessionEvent(frame.data);
          if (deferred !== undefined) {
            events.push(deferred);
            continue;
          }
        }
      }
      const event = parseSessionEventData(frame);
      if (event !== null) events.push(event);
    }
    if (events.length > 0) yield events;
  }
}
