/**
 * The provider's own session events as the `/provider` interface serves them, the one definition
 * behind every way a native log entry leaves the server: the SSE frame of a stream
 * ({@linkcode nativeFrame}: `id: <seq>`, `event: <type>`, `data: <the event's JSON text>`), the
 * objects of a page (the same JSON text, unchanged), and the {@linkcode LogSource} through which
 * the event hub's feeds read the native log ({@linkcode nativeEventLog}).
 *
 * A native stream ends after the session is gone for good: `session.deleted` or
 * `session.status_terminated` (a terminated session takes no more events).
 *
 * @module
 */
import type { NativeEventEntry, Store } from "../store/types.ts";
import type { LogSource } from "./_run_feed.ts";

/** The event types after which a native stream ends. */
export const NATIVE_TERMINAL_TYPES: ReadonlySet<string> = new Set([
  "session.deleted",
  "session.status_terminated",
]);

/**
 * The SSE frame of a native entry: its seq as `id` (what `Last-Event-ID` resumes after), its type
 * as `event`, its JSON text as `data`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeFrame } from "./native_event.ts";
 * const json = '{"type":"agent.message","id":"sevt_1","content":[]}';
 * assert.equal(
 *   nativeFrame({ seq: 4, id: "sevt_1", type: "agent.message", json }),
 *   `id: 4\nevent: agent.message\ndata: ${json}\n\n`,
 * );
 * ```
 */
export function nativeFrame(entry: NativeEventEntry): string {
  // A type can only hold what JSON text allowed: never let it break the frame's lines.
  const type = /[\r\n]/.test(entry.type) ? entry.type.replace(/[\r\n]/g, "") : entry.type;
  return `id: ${entry.seq}\nevent: ${type}\ndata: ${oneLine(entry.json)}\n\n`;
}

/** JSON text on one line (JSON allows line breaks only as white space between tokens). */
function oneLine(json: string): string {
  return /[\r\n]/.test(json) ? json.replace(/[\r\n]+/g, " ") : json;
}

/**
 * Whether a native stream ends after this entry.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isNativeTerminal } from "./native_event.ts";
 * assert.equal(isNativeTerminal({ seq: 1, id: "e", type: "session.deleted", json: "{}" }), true);
 * assert.equal(isNativeTerminal({ seq: 1, id: "e", type: "session.status_idle", json: "{}" }), false);
 * ```
 */
export function isNativeTerminal(entry: NativeEventEntry): boolean {
  return NATIVE_TERMINAL_TYPES.has(entry.type);
}

/**
 * A run's native log as a {@linkcode LogSource} for the event hub's feeds.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { Store } from "../store/types.ts";
 * import { nativeEventLog } from "./native_event.ts";
 * const store = { events: { listNative: () => Promise.resolve([]) } } as unknown as Store;
 * const log = nativeEventLog(store, "sesn_1");
 * assert.deepEqual(await log.read(0, 10), []);
 * assert.equal(log.lastOf(3, { seq: 3, native: 7 }), 7);
 * assert.equal(log.lastOf(3, undefined), undefined);
 * ```
 */
export function nativeEventLog(store: Store, runId: string): LogSource<NativeEventEntry> {
  return {
    frame: nativeFrame,
    terminal: isNativeTerminal,
    read: (after, limit) => store.events.listNative(runId, { order: "asc", after, limit }),
    lastOf: (_last, head) => head?.native,
  };
}
