/**
 * A bounded in-memory event store for one MCP session, so a client that lost an SSE stream can
 * resume it with `Last-Event-ID` and receive what it missed. Event ids are a per-session
 * sequence number; replay only ever sends events of the stream the given id belongs to.
 *
 * Bounded three ways: by count (512 events by default), by bytes per session (1 MiB by default)
 * and by bytes across every session of the endpoint (a shared {@linkcode ReplayBudget}, 64 MiB
 * by default). An event's size is the length of its JSON text. The oldest events are dropped
 * past a bound (across sessions, the oldest of the session holding the most bytes first), so a
 * client that comes back too late gets 400 from the transport and re-sends its request instead
 * of silently missing events; an event larger than a whole session's bound is not kept, and
 * empties its session's store, for the same reason.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import type { EventStore } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** Default number of events kept per session. */
export const DEFAULT_MAX_EVENTS = 512;
/** Default bytes of events kept per session (`--mcp-replay-bytes-per-session`): 1 MiB. */
export const DEFAULT_MAX_SESSION_REPLAY_BYTES = 1024 * 1024;
/** Default bytes of events kept across every session (`--mcp-replay-bytes`): 64 MiB. */
export const DEFAULT_MAX_REPLAY_BYTES = 64 * 1024 * 1024;

/** What one kept event costs beyond its JSON text (its id, stream id and entry), in bytes. */
const EVENT_OVERHEAD = 64;

interface StoredEvent {
  readonly streamId: string;
  readonly message: JSONRPCMessage;
  readonly bytes: number;
}

/**
 * The bytes of replay events every session of one endpoint keeps together. A store over the
 * budget after an append has the oldest events of the store holding the most dropped, until the
 * total fits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ReplayBudget, SessionEventStore } from "./event_store.ts";
 * const budget = new ReplayBudget(4096);
 * const a = new SessionEventStore({ budget });
 * const b = new SessionEventStore({ budget });
 * for (let i = 0; i < 40; i++) await a.storeEvent("s", { jsonrpc: "2.0", method: "x", params: { i } });
 * await b.storeEvent("s", { jsonrpc: "2.0", method: "y" });
 * assert.ok(budget.bytes <= 4096);
 * assert.equal(b.size, 1, "the smaller session keeps its event");
 * ```
 */
export class ReplayBudget {
  /** Most bytes kept across the stores sharing the budget. */
  readonly maxBytes: number;
  #bytes = 0;
  readonly #stores = new Set<SessionEventStore>();

  /** A budget of `maxBytes` (default {@linkcode DEFAULT_MAX_REPLAY_BYTES}). */
  constructor(maxBytes: number = DEFAULT_MAX_REPLAY_BYTES) {
    this.maxBytes = positiveInteger(maxBytes, "maxBytes");
  }

  /** Bytes kept now across the stores. */
  get bytes(): number {
    return this.#bytes;
  }

  /** A store joins (it is dropped from when over budget). */
  join(store: SessionEventStore): void {
    this.#stores.add(store);
  }

  /** A store leaves, giving back what it held. */
  leave(store: SessionEventStore): void {
    this.#stores.delete(store);
  }

  /** Adds `bytes` (negative: gives them back). */
  change(bytes: number): void {
    this.#bytes += bytes;
  }

  /** Drops the oldest events of the largest stores until the total fits. */
  enforce(): void {
    while (this.#bytes > this.maxBytes) {
      let largest: SessionEventStore | null = null;
      for (const store of this.#stores) {
        if (largest === null || store.bytes > largest.bytes) largest = store;
      }
      if (largest === null || !largest.dropOldest()) return;
    }
  }
}

/** Options of {@linkcode SessionEventStore}. */
export interface SessionEventStoreOptions {
  /** Most events kept (default {@linkcode DEFAULT_MAX_EVENTS}). */
  maxEvents?: number;
  /** Most bytes kept (default {@linkcode DEFAULT_MAX_SESSION_REPLAY_BYTES}). */
  maxBytes?: number;
  /** The budget shared with the endpoint's other sessions (default: one of its own). */
  budget?: ReplayBudget;
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
  /** Most bytes kept. */
  readonly maxBytes: number;
  readonly #budget: ReplayBudget;
  #events = new Map<string, StoredEvent>();
  #sequence = 0;
  #bytes = 0;
  #closed = false;

  /**
   * Creates an empty store (by default: 512 events, 1 MiB, a budget of its own).
   */
  constructor(options: SessionEventStoreOptions = {}) {
    this.maxEvents = positiveInteger(options.maxEvents ?? DEFAULT_MAX_EVENTS, "maxEvents");
    this.maxBytes = positiveInteger(
      options.maxBytes ?? DEFAULT_MAX_SESSION_REPLAY_BYTES,
      "maxBytes",
    );
    this.#budget = options.budget ?? new ReplayBudget();
    this.#budget.join(this);
  }

  /** Number of events held. */
  get size(): number {
    return this.#events.size;
  }

  /** Bytes held (the JSON text of the events, and a little for each). */
  get bytes(): number {
    return this.#bytes;
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
    if (this.#closed) return Promise.resolve(eventId);
    const bytes = EVENT_OVERHEAD + streamId.length + JSON.stringify(message).length;
    if (bytes > this.maxBytes) {
      // Kept, it would push out everything else; dropped alone, a resume before it would skip it.
      // Neither: nothing is kept, so any resume of this session is refused and re-sent.
      this.clear();
      return Promise.resolve(eventId);
    }
    this.#events.set(eventId, { streamId, message, bytes });
    this.#bytes += bytes;
    this.#budget.change(bytes);
    while (this.#events.size > this.maxEvents || this.#bytes > this.maxBytes) this.dropOldest();
    this.#budget.enforce();
    return Promise.resolve(eventId);
  }

  /** Drops the oldest event; whether there was one. */
  dropOldest(): boolean {
    const oldest = this.#events.entries().next();
    if (oldest.done) return false;
    const [eventId, event] = oldest.value;
    this.#events.delete(eventId);
    this.#bytes -= event.bytes;
    this.#budget.change(-event.bytes);
    return true;
  }

  /** Drops every event, giving their bytes back to the budget. */
  clear(): void {
    this.#budget.change(-this.#bytes);
    this.#bytes = 0;
    this.#events.clear();
  }

  /** Drops every event and leaves the budget; later events are not kept (the session ended). */
  close(): void {
    this.#closed = true;
    this.clear();
    this.#budget.leave(this);
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

function positiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`${name} must be a positive integer`);
  }
  return value;
}
