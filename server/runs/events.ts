/**
 * Run event delivery on one replica: SSE streams and JSON pages of a run's event log.
 *
 * Every subscriber of a run on this replica shares one feed (`_run_feed.ts`): one store watch
 * (PostgreSQL `LISTEN/NOTIFY`, Deno KV `watch`), one 1 s poll as the fallback, one read of the new
 * entries per wake-up, and a window of the latest 1,000 entries as SSE frames encoded once, in one
 * buffer (`_frame_window.ts`). This replica's tail hands the feed what it appends
 * ({@linkcode RunEventHub.publish}), so its subscribers get it without a store read; other
 * replicas' appends arrive through the watch or the poll. A subscriber that resumes further back
 * than the window reads the store directly until it catches up.
 *
 * A stream, in order: `retry: 2000`; the entries after the resume point, one frame each
 * (`id: <seq>`, `event: <type>`, `data: <JSON>`); a comment every 15 s while idle. It ends after a
 * terminal event (`run.completed`, `run.failed`, `run.cancelled`), when it resumed after the
 * terminal event of a run that is still finished, when its principal is revoked or expires
 * (checked twice a second through the authenticator's shared authority read, so on every replica
 * within a second), when the replica drains or closes, or when the client goes (the body is
 * cancelled, or the caller's `AbortSignal` fires). Ending always releases the stream's slot and
 * its subscription.
 *
 * **Complete answers.** When the whole answer is known when the request comes (the window holds
 * every entry after the resume point up to a terminal event, or the stream resumed after the
 * terminal event of a finished run), {@linkcode RunEventHub.stream} returns those bytes as one
 * `Uint8Array` instead of a stream: the same bytes, ending at the same place. Such an answer holds
 * nothing once written, so it takes no `--max-event-streams` slot (it is served even when the
 * replica has as many open streams as it allows) and is not re-checked for revocation. The
 * decision is made in one place, {@linkcode RunEventHub.stream}.
 *
 * **Lingering feeds.** A feed whose last subscriber left stays for 30 s (its watch and poll
 * stopped; a publish still extends its window), so the next subscriber of a finished run is
 * answered without reading the log, and one of a live run resumes the watch and reads only what was
 * appended meanwhile. Budget across all lingering feeds: at most 1,000 feeds and 64 MiB of windows
 * (a window holds at most 1,250 frames and its last 4 whole answers); past either, the least
 * recently used goes first. Feeds with subscribers are not counted (they are bounded by the stream
 * limit).
 *
 * @module
 */
import type { Authenticator } from "../authenticator.ts";
import { InterfaceError } from "../errors.ts";
import type { RunEventEntry, Store, StoredRunRecord } from "../store/types.ts";
import { ACTIVE_RUN_STATES } from "../store/types.ts";
import { isTerminalRunStreamEvent } from "../../client/contract.ts";
import type { RunEvent, RunEventPage } from "../../wire/mod.ts";
import { type FrameSlice, FrameWindow } from "./_frame_window.ts";
import { READ_BATCH, RunFeed, WINDOW } from "./_run_feed.ts";

export { POLL_MS } from "./_run_feed.ts";

/** Default open event streams per replica (`--max-event-streams`). */
export const DEFAULT_MAX_EVENT_STREAMS = 10_000;
/** Idle time after which a stream gets a comment line, in ms. */
export const HEARTBEAT_MS = 15_000;
/** How often open streams re-check their principal, in ms: a revocation ends them within 1 s. */
export const PRINCIPAL_CHECK_MS = 500;
/** How long a feed without subscribers is kept, in ms. */
export const LINGER_MS = 30_000;
/** Most feeds kept without subscribers. */
export const MAX_LINGERING_FEEDS = 1_000;
/** Most bytes of windows kept in feeds without subscribers. */
export const MAX_LINGERING_BYTES = 64 * 1024 * 1024;

const ENCODER = new TextEncoder();
const RETRY: Uint8Array<ArrayBuffer> = ENCODER.encode("retry: 2000\n\n");
const HEARTBEAT = ENCODER.encode(": keep-alive\n\n");

/** What a stream's window had for it: frames sent (or the stream ended), nothing yet, or too old. */
type Offer = typeof SENT | typeof WAIT | typeof BEHIND;
const SENT = 0;
const WAIT = 1;
const BEHIND = 2;

/**
 * The public form of a log entry.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { publicEvent } from "./events.ts";
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

/** Whether an entry ends a turn. */
export function isTerminalEntry(entry: RunEventEntry | undefined): boolean {
  return entry !== undefined && isTerminalRunStreamEvent(entry.event);
}

/** The store entries after `after` (one read) as frames, up to the first terminal entry. */
async function readFrames(store: Store, runId: string, after: number): Promise<FrameSlice> {
  const page = new FrameWindow(READ_BATCH);
  page.reset(after);
  page.append(await store.listRunEvents(runId, after, READ_BATCH));
  return page.after(after)!;
}

/** Options of {@linkcode RunEventHub}. */
export interface RunEventHubOptions {
  /** The store holding the logs. */
  store: Store;
  /** Re-checks the principals of open streams. */
  authenticator: Authenticator;
  /** Open streams allowed on this replica (default 10000). */
  maxStreams?: number;
  /**
   * Idle time after which a stream gets a comment line, in ms (default {@linkcode HEARTBEAT_MS});
   * idle streams look at it once a poll (every second).
   */
  heartbeatMs?: number;
  /**
   * How feeds without subscribers are kept (defaults: {@linkcode LINGER_MS},
   * {@linkcode MAX_LINGERING_FEEDS}, {@linkcode MAX_LINGERING_BYTES}); `ms: 0` drops them at once.
   */
  linger?: { ms?: number; maxFeeds?: number; maxBytes?: number };
}

/** What an open stream needs to re-check its principal. */
interface OpenStream {
  authorization: string | null;
  end: () => void;
}

/** Options of {@linkcode RunEventHub.stream}. */
export interface EventStreamOptions {
  /** The run (already checked as visible to the caller). */
  runId: string;
  /** Deliver entries after this seq. */
  after: number;
  /** The request's `Authorization`, re-checked twice a second. */
  authorization: string | null;
  /**
   * The run's record as read for this request (its visibility check): saves the hub reading it
   * again. Without it, the hub reads the record when it needs it.
   */
  record?: StoredRunRecord;
  /**
   * Ends the stream when it fires (in-process callers). Behind `Deno.serve`, a client that goes
   * cancels the response body, which ends and releases the stream the same way.
   */
  signal?: AbortSignal;
}

/**
 * The body of an event stream answer: the whole answer as bytes when it is known already (see
 * the module doc), else a stream. The bytes may be shared with other answers: read them or hand
 * them to a `Response` (which copies them), never write to them.
 */
export type EventStreamBody = Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>;

/** Delivers run events to this replica's subscribers. */
export class RunEventHub {
  readonly #store: Store;
  readonly #authenticator: Authenticator;
  readonly #maxStreams: number;
  readonly #heartbeatMs: number;
  readonly #lingerMs: number;
  readonly #maxLingering: number;
  readonly #maxLingeringBytes: number;
  /** Every feed, with or without subscribers. */
  readonly #feeds = new Map<string, RunFeed>();
  /** Feeds without subscribers, least recently used first, with when each expires. */
  readonly #lingering = new Map<RunFeed, number>();
  #sweeper: ReturnType<typeof setTimeout> | undefined;
  readonly #streams = new Set<OpenStream>();
  #checker: ReturnType<typeof setInterval> | undefined;
  #checking = false;
  #closed = false;

  /** Creates the hub. */
  constructor(options: RunEventHubOptions) {
    this.#store = options.store;
    this.#authenticator = options.authenticator;
    this.#maxStreams = options.maxStreams ?? DEFAULT_MAX_EVENT_STREAMS;
    this.#heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
    this.#lingerMs = options.linger?.ms ?? LINGER_MS;
    this.#maxLingering = options.linger?.maxFeeds ?? MAX_LINGERING_FEEDS;
    this.#maxLingeringBytes = options.linger?.maxBytes ?? MAX_LINGERING_BYTES;
  }

  /** Open streams on this replica. */
  get openStreams(): number {
    return this.#streams.size;
  }

  /** Feeds kept without subscribers (see the module doc). */
  get lingeringFeeds(): number {
    return this.#lingering.size;
  }

  /**
   * A JSON page: up to `limit` entries after `after`. `record`, the run's record as read for
   * this request, saves reading it again.
   */
  async page(
    runId: string,
    after: number,
    limit: number,
    record?: StoredRunRecord,
  ): Promise<RunEventPage> {
    const entries = await this.#store.listRunEvents(runId, after, limit);
    let terminal = false;
    if (entries.length < limit) {
      const last = entries.at(-1) ?? (after > 0 ? await this.#entryAt(runId, after) : undefined);
      if (isTerminalEntry(last)) {
        terminal = record !== undefined
          ? !ACTIVE_RUN_STATES.has(record.state)
          : await this.#runEnded(runId);
      }
    }
    return {
      events: entries.map(publicEvent),
      nextAfter: entries.at(-1)?.seq ?? after,
      terminal,
    };
  }

  async #entryAt(runId: string, seq: number): Promise<RunEventEntry | undefined> {
    return (await this.#store.listRunEvents(runId, seq - 1, 1))[0];
  }

  async #runEnded(runId: string): Promise<boolean> {
    const record = await this.#store.getRun(runId);
    return record !== null && !ACTIVE_RUN_STATES.has(record.state);
  }

  /**
   * Whether a stream resuming after `after` has nothing to wait for: the entry there is terminal
   * (the window answers when it holds it; log entries never change) and the run is still finished.
   */
  async #resumesAfterEnd(
    feed: RunFeed | undefined,
    options: EventStreamOptions,
  ): Promise<boolean> {
    const { runId, after, record } = options;
    if (after <= 0) return false;
    let terminal = feed?.ready ? feed.window.isTerminal(after) : undefined;
    terminal ??= isTerminalEntry(await this.#entryAt(runId, after));
    if (!terminal) return false;
    return record !== undefined ? !ACTIVE_RUN_STATES.has(record.state) : this.#runEnded(runId);
  }

  #refuseWhenClosed(): void {
    if (this.#closed) {
      throw new InterfaceError("shuttingDown", "The runtime is shutting down", {
        headers: { "retry-after": "1" },
      });
    }
  }

  /**
   * Answers an SSE request (see the module doc): the whole answer as bytes when it is known now,
   * else a stream; 503 `resourceExhausted` when a stream would pass the limit.
   */
  async stream(options: EventStreamOptions): Promise<EventStreamBody> {
    this.#refuseWhenClosed();
    const { runId, signal } = options;
    // A caller that has gone already gets what a stream would give it: the `retry` line.
    if (signal?.aborted) return RETRY;
    // The one dispatch point: a known answer is one byte body, anything else a stream.
    const known = this.#feeds.get(runId);
    const checked = known?.ready === true;
    if (checked) {
      const body = await this.#completeBody(known!, options);
      if (body !== null) {
        this.#touch(known!);
        return body;
      }
    }
    const feed = this.#subscribe(runId, options.record);
    try {
      if (!checked) {
        await feed.firstRead();
        const body = await this.#completeBody(feed, options);
        if (body !== null) {
          this.#unsubscribe(feed);
          return body;
        }
      }
      this.#refuseWhenClosed();
      if (this.#streams.size >= this.#maxStreams) {
        throw new InterfaceError(
          "resourceExhausted",
          "This replica has as many open event streams as it allows",
          { status: 503, headers: { "retry-after": "1" } },
        );
      }
    } catch (error) {
      this.#unsubscribe(feed);
      throw error;
    }
    return this.#open(feed, options);
  }

  /**
   * The whole answer when the window (or the resume point) settles it, else null. The bytes may
   * be shared with other answers: `Response` copies them.
   */
  async #completeBody(
    feed: RunFeed,
    options: EventStreamOptions,
  ): Promise<Uint8Array<ArrayBuffer> | null> {
    if (await this.#resumesAfterEnd(feed, options)) return RETRY;
    return feed.ready ? feed.window.answer(options.after, RETRY) : null;
  }

  /**
   * A stream of a subscribed feed (the subscription is the stream's from now on).
   *
   * Delivery is pushed: a stream with nothing to send parks its pull (a pending promise) and
   * leaves `wake` with the feed; when the window changes, the feed calls every parked stream's
   * `wake`, which enqueues the new frames right there, in the publish's own loop, as the floor
   * in `bench/events_bench.ts` does. Waking each stream's pull to enqueue from there cost every
   * stream two more promise turns per frame. While the socket's reader takes each frame as it
   * comes (the stream's queue stays empty), the pull stays parked and `wake` waits again at
   * once; only a stream whose queue filled (a slow client) settles its pull, and the stream
   * pulls again once its reader caught up.
   */
  #open(feed: RunFeed, options: EventStreamOptions): ReadableStream<Uint8Array> {
    const { runId, signal } = options;
    let after = options.after;
    let controllerRef: ReadableStreamDefaultController<Uint8Array> | null = null;
    let closed = false;
    let released = false;
    /** Settles the parked pull, if any. */
    let parked: (() => void) | null = null;
    const unpark = () => {
      const resolve = parked;
      parked = null;
      resolve?.();
    };
    const release = () => {
      if (released) return;
      released = true;
      this.#streams.delete(open);
      signal?.removeEventListener("abort", finish);
      feed.forget(wake);
      unpark();
      this.#unsubscribe(feed);
    };
    /** Ends the stream (terminal event, revocation, drain, client gone) and releases it. */
    const finish = () => {
      release();
      if (closed || controllerRef === null) return;
      closed = true;
      try {
        controllerRef.close();
      } catch {
        // Already closed or errored by the reader going away.
      }
    };
    const open: OpenStream = { authorization: options.authorization, end: finish };
    this.#streams.add(open);
    this.#startChecker();
    signal?.addEventListener("abort", finish, { once: true });
    const store = this.#store;
    const heartbeatMs = this.#heartbeatMs;
    let idleSince = Date.now();
    /** Enqueues frames (ending the stream after a terminal one). */
    const send = (slice: FrameSlice) => {
      // A view of the window's buffer, which never rewrites bytes it handed out.
      controllerRef!.enqueue(slice.bytes);
      after = slice.last;
      idleSince = Date.now();
      if (slice.terminal) finish();
    };
    /** What the window has for this stream: SENT (or ended), WAIT, or BEHIND (read the store). */
    const offer = (): Offer => {
      if (closed) return SENT;
      if (!feed.ready) return WAIT;
      const slice = feed.window.after(after);
      if (slice === null) return BEHIND;
      if (slice.bytes.length > 0) {
        send(slice);
        return SENT;
      }
      if (Date.now() - idleSince >= heartbeatMs) {
        idleSince = Date.now();
        controllerRef!.enqueue(HEARTBEAT);
        return SENT;
      }
      return WAIT;
    };
    /** Ends the stream with an error (a failed store read, a refused enqueue). */
    const fail = (error: unknown) => {
      release();
      if (closed) return;
      closed = true;
      try {
        controllerRef?.error(error);
      } catch {
        // Already errored.
      }
    };
    /**
     * Called by the feed (a change, the poll, a stop) while the pull is parked. It runs inside
     * the feed's publish: whatever goes wrong ends this stream, never the publish.
     */
    function wake(): void {
      if (parked === null) return;
      try {
        const offered = offer();
        // Nothing yet, or sent and already taken by the reader: the pull stays parked. Settling
        // it cost a promise turn and a second `offer` per stream and frame: the time in Deno's
        // streams code (callees included) in a `--cpu-prof` of bench/events_bench.ts's live rounds
        // fell from 482 to 268 ms without it.
        if (offered === WAIT || (offered === SENT && !closed && controllerRef!.desiredSize! > 0)) {
          feed.wait(wake);
          return;
        }
      } catch (error) {
        fail(error);
      }
      unpark(); // ended, failed, behind the window, or a full queue: the next pull carries on
    }
    const park = (resolve: () => void) => {
      parked = resolve;
      feed.wait(wake);
    };
    return new ReadableStream<Uint8Array>({
      start(controller) {
        controllerRef = controller;
        controller.enqueue(RETRY);
        if (signal?.aborted || released) finish();
      },
      pull(): Promise<void> | undefined {
        const offered = offer();
        if (offered === SENT) return;
        if (offered === WAIT) return released ? undefined : new Promise<void>(park);
        // Behind the window: this subscriber reads the store until it catches up.
        return readFrames(store, runId, after).then((slice) => {
          if (closed) return;
          if (slice.bytes.length > 0) send(slice);
          else if (!released) return new Promise<void>(park); // nothing there yet: wait
        }).catch(fail);
      },
      cancel() {
        closed = true;
        release();
      },
    }, { highWaterMark: 1 });
  }

  #subscribe(runId: string, record: StoredRunRecord | undefined): RunFeed {
    let feed = this.#feeds.get(runId);
    if (feed === undefined) {
      // Start the window a window's length before the record's end: the first read then skips
      // older entries (a subscriber resuming before the window reads the store).
      feed = new RunFeed(this.#store, runId, (record?.lastEventSeq ?? 0) - WINDOW);
      this.#feeds.set(runId, feed);
    }
    this.#lingering.delete(feed);
    feed.subscribers++;
    feed.resume();
    return feed;
  }

  #unsubscribe(feed: RunFeed): void {
    feed.subscribers--;
    if (feed.subscribers > 0) return;
    if (this.#closed || this.#lingerMs <= 0 || this.#feeds.get(feed.runId) !== feed) {
      this.#drop(feed);
      return;
    }
    feed.pause();
    this.#lingering.set(feed, Date.now() + this.#lingerMs);
    this.#scheduleSweep();
    this.#enforceBudget();
  }

  /** A lingering feed just answered a request: it becomes the most recently used. */
  #touch(feed: RunFeed): void {
    if (!this.#lingering.has(feed)) return;
    this.#lingering.delete(feed);
    this.#lingering.set(feed, Date.now() + this.#lingerMs);
  }

  #drop(feed: RunFeed): void {
    this.#lingering.delete(feed);
    if (this.#feeds.get(feed.runId) === feed) this.#feeds.delete(feed.runId);
    feed.stop();
  }

  /** Evicts the least recently used lingering feeds until the budget holds. */
  #enforceBudget(): void {
    let bytes = 0;
    for (const feed of this.#lingering.keys()) bytes += feed.window.byteLength;
    for (const feed of this.#lingering.keys()) {
      if (this.#lingering.size <= this.#maxLingering && bytes <= this.#maxLingeringBytes) return;
      bytes -= feed.window.byteLength;
      this.#drop(feed);
    }
  }

  /** One timer for every lingering feed: it fires when the least recently used expires. */
  #scheduleSweep(): void {
    if (this.#sweeper !== undefined) return;
    const first = this.#lingering.values().next();
    if (first.done) return;
    this.#sweeper = setTimeout(() => {
      this.#sweeper = undefined;
      const now = Date.now();
      for (const [feed, until] of this.#lingering) {
        if (until > now) break;
        this.#drop(feed);
      }
      this.#scheduleSweep();
    }, Math.max(first.value - Date.now(), 0));
  }

  /** Re-checks every open stream's principal once a second while streams are open. */
  #startChecker(): void {
    if (this.#checker !== undefined) return;
    this.#checker = setInterval(() => this.#checkPrincipals(), PRINCIPAL_CHECK_MS);
  }

  async #checkPrincipals(): Promise<void> {
    if (this.#streams.size === 0) {
      clearInterval(this.#checker);
      this.#checker = undefined;
      return;
    }
    if (this.#checking) return;
    this.#checking = true;
    try {
      // One check per distinct credential; the authenticator shares one authority read.
      const byCredential = new Map<string | null, OpenStream[]>();
      for (const open of this.#streams) {
        const list = byCredential.get(open.authorization);
        if (list === undefined) byCredential.set(open.authorization, [open]);
        else list.push(open);
      }
      const now = Date.now();
      await Promise.all([...byCredential].map(async ([authorization, streams]) => {
        try {
          await this.#authenticator.authenticate(authorization, now);
        } catch {
          // Revoked, expired, superseded, or the authority cannot be read: fail closed. The
          // client reconnects and resumes; its next request meets the same checks.
          for (const open of streams) open.end();
        }
      }));
    } finally {
      this.#checking = false;
    }
  }

  /**
   * This replica appended `entries` to a run's log: its feed here takes them as they are, without
   * a store read (other replicas learn of them through the store's notification or their poll).
   */
  publish(runId: string, entries: readonly RunEventEntry[]): void {
    const feed = this.#feeds.get(runId);
    if (feed === undefined || entries.length === 0) return;
    feed.publish(entries);
    if (feed.subscribers === 0) this.#enforceBudget();
  }

  /** Ends every open stream, drops every feed and refuses new streams (drain, close). */
  close(): void {
    this.#closed = true;
    for (const open of [...this.#streams]) open.end();
    if (this.#checker !== undefined) clearInterval(this.#checker);
    this.#checker = undefined;
    for (const feed of [...this.#lingering.keys()]) this.#drop(feed);
    clearTimeout(this.#sweeper);
    this.#sweeper = undefined;
  }
}
