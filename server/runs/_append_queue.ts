/**
 * A run tail's appends, grouped adaptively (`tail.ts`): the tail feeds the entries of each
 * provider event it reads into {@linkcode AppendQueue.events} and {@linkcode AppendQueue.native}
 * and calls {@linkcode AppendQueue.schedule}; one append runs at a time, and it takes everything
 * fed until it starts. So an event that comes alone is appended at once, and the events that come
 * while an append (a durable commit) is in flight go together in the next one: a burst costs a
 * commit per batch, not per event, and the tail reads and maps the next events while the store
 * commits the last ones. Measured (`bench/native_bench.ts`, `bench/HISTORY.md`): 2,000 messages
 * read from the provider's stream reach a `/provider` client at 0.11× to 0.15× the rate straight
 * from the provider, against 0.02× with one append per read (medians of alternating runs).
 *
 * The entries of one provider event always go in the same append (an append takes whole feeds),
 * the appends run in the order fed, and a failed append stops the queue: what was fed after it
 * is never appended, the tail is told at once, and the failure reaches it at its next
 * {@linkcode AppendQueue.room} or {@linkcode AppendQueue.drain} (it reconnects, and the store
 * skips what is already in the log).
 * What waits is bounded: past `maxPending` run entries (or native entries), or past `maxBytes`
 * characters of the provider events and text deltas fed ({@linkcode MAX_PENDING_CHARS} by
 * default: a few large events, such as long tool results, weigh as much as many small ones), the
 * tail waits for room before it reads on, and the provider's stream waits unread.
 *
 * What waits while an append is in flight is also compacted ({@linkcode AppendQueue.fed}): a
 * `message.delta` that continues the waiting delta before it (the same message, the next offset)
 * is merged into it, up to {@linkcode MAX_MERGED_DELTA} characters. The merged delta keeps the id
 * of its first character (`<message id>#d<offset>`), and a message's deltas still spell its text.
 * So a provider that streams a message in slices of a few characters costs the log an entry per
 * slice only while the store keeps up (then nothing changes: the log keeps the provider's
 * slices), not when they come faster than the store commits (in a burst of 2,000 messages
 * streamed in slices of 4 characters, 7 run entries a message became 2: `bench/native_bench.ts`).
 * Another tail of the run would join the same slices differently, and the store, which skips
 * only the ids it holds, would then log text twice: so only the tail that surely holds the run's
 * lease appends (`tail.ts`), and a connection logs no delta it cannot place (`_tail_mapper.ts`).
 *
 * @module
 */
import type { NativeEventInput, RunEventInput } from "../store/run_event_types.ts";

/** Most characters of text one merged `message.delta` holds (its log entry stays far under 64 KiB). */
export const MAX_MERGED_DELTA = 8_192;

/**
 * Default bound of what waits, in characters of the native events' JSON and the deltas' text fed
 * and not yet taken by an append (about 8 MiB of strings).
 */
export const MAX_PENDING_CHARS = 4 * 1024 * 1024;

/** The message id and offset of a delta's source id (`<message id>#d<offset>`), or null. */
function deltaPlace(entry: RunEventInput): { message: string; offset: number } | null {
  if (entry.event.type !== "message.delta") return null;
  const at = entry.sourceId.lastIndexOf("#d");
  if (at === -1) return null;
  const offset = Number(entry.sourceId.slice(at + 2));
  return Number.isSafeInteger(offset) ? { message: entry.sourceId.slice(0, at), offset } : null;
}

const NOOP = (): void => {};

/** Appends one batch, in order: the tail's `#append`. */
export type AppendBatch = (events: RunEventInput[], native: NativeEventInput[]) => Promise<void>;

/** The appends of one tail connection (see the module doc). */
export class AppendQueue {
  /** Run entries fed and not yet taken by an append. */
  events: RunEventInput[] = [];
  /** Native entries fed and not yet taken by an append. */
  native: NativeEventInput[] = [];
  readonly #append: AppendBatch;
  readonly #maxPending: number;
  readonly #maxChars: number;
  /** Characters of the native JSON and delta text fed and not yet taken by an append. */
  #chars = 0;
  readonly #onFailure: (error: unknown) => void;
  /** The appends' loop while it runs (it ends when nothing is left to take), or null. */
  #running: Promise<void> | null = null;
  /** The append in flight (settled: it never rejects), or null. */
  #current: Promise<void> | null = null;
  /** The failure of an append; the queue appends nothing after it. */
  #failure: { error: unknown } | null = null;
  /** Set by {@linkcode AppendQueue.stop}: no append starts any more. */
  #stopped = false;
  /** An append's failure handler, made once rather than per append. */
  readonly #failed = (error: unknown): void => {
    this.#failure = { error };
    this.#onFailure(error);
  };

  /**
   * A queue over `append`; the tail waits for room past `maxPending` run entries fed and not yet
   * taken, and `onFailure` is told of a failed append at once (the tail stops reading, rather
   * than learn of it at its next event, which may be long in coming).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { AppendQueue } from "./_append_queue.ts";
   * const batches: number[] = [];
   * const queue = new AppendQueue(async (events) => {
   *   batches.push(events.length);
   *   await new Promise((resolve) => setTimeout(resolve, 5));
   * }, 100);
   * for (let i = 0; i < 5; i++) {
   *   queue.events.push({ sourceId: `e${i}`, at: "", event: { type: "run.started", runId: "r" } });
   *   queue.schedule();
   * }
   * await queue.drain();
   * // The first went alone; the four fed while it was in flight went in one append.
   * assert.deepEqual(batches, [1, 4]);
   * ```
   */
  constructor(
    append: AppendBatch,
    maxPending: number,
    onFailure: (error: unknown) => void = () => {},
    maxChars: number = MAX_PENDING_CHARS,
  ) {
    this.#append = append;
    this.#maxPending = maxPending;
    this.#onFailure = onFailure;
    this.#maxChars = maxChars;
  }

  /**
   * The run entries from index `from` of {@linkcode AppendQueue.events} (and the native entries
   * from `nativeFrom` of {@linkcode AppendQueue.native}) were just fed: their size counts against
   * the bound, and while an append is in flight, each `message.delta` among them that continues
   * the waiting delta before it is merged into that one (see the module doc) and leaves the queue.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { AppendQueue } from "./_append_queue.ts";
   * const commit = Promise.withResolvers<void>();
   * const queue = new AppendQueue(() => commit.promise, 100);
   * const delta = (offset: number, text: string) => ({
   *   sourceId: `sevt_m#d${offset}`,
   *   at: "2026-01-01T00:00:00Z",
   *   event: { type: "message.delta" as const, runId: "r", text },
   * });
   * const texts = () => queue.events.map((entry) => (entry.event as { text: string }).text);
   * queue.events.push(delta(0, "a"), delta(1, "b"));
   * queue.fed(1);
   * assert.deepEqual(texts(), ["a", "b"], "no append in flight: the provider's slices stay");
   * queue.schedule(); // an append takes them and is in flight
   * queue.events.push(delta(2, "hél"));
   * queue.fed(0);
   * queue.events.push(delta(5, "lo"), delta(9, "x"));
   * queue.fed(1);
   * assert.deepEqual(texts(), ["héllo", "x"]);
   * assert.equal(queue.events[0].sourceId, "sevt_m#d2");
   * commit.resolve();
   * await queue.drain();
   * ```
   */
  fed(from: number, nativeFrom: number = this.native.length): void {
    const events = this.events;
    const native = this.native;
    for (let i = nativeFrom; i < native.length; i++) this.#chars += native[i].json.length;
    for (let i = from; i < events.length; i++) {
      const event = events[i].event;
      if (event.type === "message.delta") this.#chars += event.text.length;
    }
    if (this.#current === null) return;
    for (let i = Math.max(from, 1); i < events.length; i++) {
      const place = deltaPlace(events[i]);
      if (place === null) continue;
      const before = events[i - 1];
      const waiting = deltaPlace(before);
      if (waiting === null || waiting.message !== place.message) continue;
      const text = (before.event as { text: string }).text;
      const more = (events[i].event as { text: string }).text;
      if (waiting.offset + text.length !== place.offset) continue;
      if (text.length + more.length > MAX_MERGED_DELTA) continue;
      // The waiting entry is the queue's own until an append takes it: changed in place.
      before.event = { ...before.event, text: text + more } as RunEventInput["event"];
      events.splice(i, 1);
      i--;
    }
  }

  /** Starts an append of everything fed, unless one is in flight (it starts the next itself). */
  schedule(): void {
    if (this.#running !== null || this.#failure !== null || this.#stopped) return;
    if (this.events.length === 0 && this.native.length === 0) return;
    this.#running = this.#run();
  }

  async #run(): Promise<void> {
    while (
      this.#failure === null && !this.#stopped &&
      (this.events.length > 0 || this.native.length > 0)
    ) {
      // Everything fed so far, in one append.
      const events = this.events;
      const native = this.native;
      this.events = [];
      this.native = [];
      this.#chars = 0;
      this.#current = this.#append(events, native).then(NOOP, this.#failed);
      await this.#current;
    }
    this.#current = null;
    this.#running = null;
  }

  #throwFailure(): void {
    if (this.#failure !== null) throw this.#failure.error;
  }

  /** Whether `maxPending` run entries or native entries, or `maxChars` characters, wait. */
  #full(): boolean {
    return this.events.length >= this.#maxPending || this.native.length >= this.#maxPending ||
      this.#chars >= this.#maxChars;
  }

  /**
   * Whether the tail may read on without waiting: fewer than `maxPending` run entries (and
   * native entries) wait and no append failed (else it awaits {@linkcode AppendQueue.room}).
   * Read before each wait, so a tail that has room pays no promise per event.
   */
  get roomy(): boolean {
    return this.#failure === null && !this.#full();
  }

  /**
   * Resolves when the tail may read on: at once while fewer than `maxPending` run entries (and
   * native entries) wait, else once the append in flight ended (the next one then takes them).
   * Throws an append's failure.
   */
  async room(): Promise<void> {
    this.#throwFailure();
    if (!this.#full()) return;
    this.schedule();
    // The append in flight ends, and the next one takes what waits.
    while (this.#full() && this.#current !== null) await this.#current;
    this.#throwFailure();
  }

  /**
   * No append starts any more (the one in flight ends as it will): the tail's connection ended,
   * or its tail was stopped (closing, or its lease lost), and what waits is dropped.
   */
  stop(): void {
    this.#stopped = true;
    this.events = [];
    this.native = [];
    this.#chars = 0;
  }

  /**
   * Resolves once everything fed so far is appended (after {@linkcode AppendQueue.stop}: once
   * the append in flight ended); throws an append's failure.
   */
  async drain(): Promise<void> {
    this.schedule();
    while (this.#running !== null) await this.#running;
    this.#throwFailure();
  }

  /** Waits for the append in flight, whatever its outcome (never throws). */
  async settle(): Promise<void> {
    while (this.#running !== null) await this.#running;
  }
}
