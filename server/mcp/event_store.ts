/**
 * A bounded in-memory event store for one MCP session, so a client that lost an SSE stream can
 * resume it with `Last-Event-ID` and receive what it missed. Event ids are a per-session
 * sequence number; replay only ever sends events of the stream the given id belongs to.
 * The oldest events are dropped past the bound, so a client that comes back too late gets
 * 400 from the transport and re-sends its request instead of silently missing events.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import type { EventStore } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** Default number of events kept per session. */
export const DEFAULT_MAX_EVENTS = 512;

interface StoredEvent {
  readonly streamId: string;
  readonly message: JSONRPCMessage;
}

/**
 * Keeps the latest events of one session's SSE streams.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SessionEventStore } from "./event_store.ts";
 * const store = new SessionEventStore();
 * const first = await store.storeEvent("s1", { jsonrpc: "2.0", method: "notifications/ping" });
 * await store.storeEvent("s1", { jsonrpc: "2.0", id: 1, result: {} });
 * const replayed: string[] = [];
 * await store.replayEventsAfter(first, { send: (id) => Promise.resolve(void replayed.push(id)) });
 * assert.equal(replayed.length, 1);
 * ```
 */
export class SessionEventStore implements EventStore {
  /** Most events kept. */
  readonly maxEvents: number;
  #events = new Map<string, StoredEvent>();
  #sequence = 0;

  /**
   * Creates an empty store keeping at most `maxEvents` events (default 512).
   */
  constructor(options: { maxEvents?: number } = {}) {
    const maxEvents = options.maxEvents ?? DEFAULT_MAX_EVENTS;
    if (!Number.isInteger(maxEvents) || maxEvents < 1) {
      throw new RangeError("maxEvents must be a positive integer");
    }
    this.maxEvents = maxEvents;
  }

  /** Number of events held. */
  get size(): number {
    return this.#events.size;
  }

  /**
   * Stores an event and returns its id.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { SessionEventStore } from "./event_store.ts";
   * const id = await new SessionEventStore().storeEvent("s1", { jsonrpc: "2.0", method: "x" });
   * assert.equal(id, "1");
   * ```
   */
  storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const eventId = String(++this.#sequence);
    this.#events.set(eventId, { streamId, message });
    if (this.#events.size > this.maxEvents) {
      const oldest = this.#events.keys().next().value;
      if (oldest !== undefined) this.#events.delete(oldest);
    }
    return Promise.resolve(eventId);
  }

  /**
   * The stream an event belongs to, or undefined when the id is unknown or was dropped.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { SessionEventStore } from "./event_store.ts";
   * const store = new SessionEventStore();
   * const id = await store.storeEvent("s1", { jsonrpc: "2.0", method: "x" });
   * assert.equal(await store.getStreamIdForEventId(id), "s1");
   * ```
   */
  getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return Promise.resolve(this.#events.get(eventId)?.streamId);
  }

  /**
   * Sends, in order, every event of `lastEventId`'s stream stored after it; returns the stream
   * id, or the empty string when the id is unknown.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { SessionEventStore } from "./event_store.ts";
   * const store = new SessionEventStore();
   * assert.equal(await store.replayEventsAfter("42", { send: () => Promise.resolve() }), "");
   * ```
   */
  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const last = this.#events.get(lastEventId);
    if (last === undefined) return "";
    const after = Number(lastEventId);
    const pending: [string, JSONRPCMessage][] = [];
    for (const [eventId, event] of this.#events) {
      if (Number(eventId) > after && event.streamId === last.streamId) {
        pending.push([eventId, event.message]);
      }
    }
    for (const [eventId, message] of pending) await send(eventId, message);
    return last.streamId;
  }
}
