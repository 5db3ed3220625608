/**
 * One SSE stream of a run's events: where it stands in the log, what it sends, when it waits, and
 * how it ends (see `events.ts` for the stream's shape and the hub that opens it).
 *
 * It opens with `retry: 2000`, then sends the feed's frames after its resume point, one slice of
 * the feed's window per send; it reads the store itself (through the feed) while it stands before
 * the window. It is open from construction: it counts among the {@linkcode OpenStreams} (whose
 * re-check ends it when its principal is refused) until it ends, after a terminal frame, on
 * {@linkcode RunSubscriber.end} (revocation, drain, close), when its `signal` fires or when the
 * reader cancels the body, or with an error (a failed store read). Ending releases it once: it
 * leaves the open streams, takes back its wait on the feed, settles its parked pull and calls
 * `release` (the hub then lets the feed go).
 *
 * Delivery is pushed: a stream with nothing to send parks its pull (a pending promise) and waits on
 * the feed; when the window changes, the feed calls every waiting stream's wake-up, which enqueues
 * the new frames right there, in the publish's own loop, as the floor in `bench/events_bench.ts`
 * does. Waking each stream's pull to enqueue from there cost every stream two more promise turns
 * per frame. While the socket's reader takes each frame as it comes (the stream's queue stays
 * empty), the pull stays parked and the stream waits again at once; only a stream whose queue
 * filled (a slow client) settles its pull, and the stream pulls again once its reader caught up.
 *
 * Per frame and subscriber this costs one call of the wake-up, one window lookup (whose slice the
 * subscribers at the same seq share), one `enqueue`, one read of the clock and one `Set.add` to
 * wait again: on this pushed path, nothing allocated by this file.
 *
 * Previews: a stream of the native log may carry live previews that are not in any log (the
 * provider's `event_start` / `event_delta` frames). Its `previews` source is started with the
 * stream and stopped when it ends; each preview frame goes out only while the stream stands at
 * the end of the feed's window (never before events it has yet to send).
 *
 * @module
 */
import type { FrameSlice, Sequenced } from "./_frame_window.ts";
import type { OpenStream, OpenStreams } from "./open_streams.ts";
import type { RunFeed } from "./_run_feed.ts";

/**
 * A source of live previews for one stream: started with the stream, it calls `send` with each
 * preview frame (bytes of whole frames) until `signal` fires, when the stream ended.
 */
export type PreviewSource = (send: (frame: Uint8Array) => void, signal: AbortSignal) => void;

const ENCODER = new TextEncoder();
/** The first line of every stream and of every complete answer: reconnect after 2 s. */
export const RETRY_TEXT = "retry: 2000\n\n";
/** {@linkcode RETRY_TEXT} as bytes, the first chunk of every stream. */
export const RETRY: Uint8Array<ArrayBuffer> = ENCODER.encode(RETRY_TEXT);
const HEARTBEAT = ENCODER.encode(": keep-alive\n\n");

/** What the window had for a stream: frames sent (or the stream ended), nothing yet, or too old. */
type Offer = typeof SENT | typeof WAIT | typeof BEHIND;
const SENT = 0;
const WAIT = 1;
const BEHIND = 2;

/** Options of {@linkcode RunSubscriber}. */
export interface RunSubscriberOptions<E extends Sequenced = Sequenced> {
  /** The run's feed, joined for this stream (the stream's from now on: `release` leaves it). */
  feed: RunFeed<E>;
  /** Send the entries after this seq. */
  after: number;
  /** The request's `Authorization`, re-checked by `streams`. */
  authorization: string | null;
  /** The principal that opened the stream (counted against its own limit). */
  principalId?: string;
  /** This replica's open streams: the stream counts among them until it ends. */
  streams: OpenStreams;
  /** Idle time after which the stream gets a comment line, in ms. */
  heartbeatMs: number;
  /** The clock, ms since the epoch (heartbeats). */
  now: () => number;
  /** Ends the stream when it fires. */
  signal?: AbortSignal;
  /** Called once when the stream ends, after it let go of the feed's wait. */
  release: () => void;
  /** Live previews sent between the feed's frames (native streams that asked for them). */
  previews?: PreviewSource;
}

/** One SSE stream of a run's events (see the module doc). */
export class RunSubscriber<E extends Sequenced = Sequenced> implements OpenStream {
  readonly authorization: string | null;
  readonly principalId: string | undefined;
  /** The stream's bytes, for a `Response` (cancelling it ends the stream). */
  readonly body: ReadableStream<Uint8Array>;
  readonly #feed: RunFeed<E>;
  readonly #streams: OpenStreams;
  readonly #heartbeatMs: number;
  readonly #now: () => number;
  readonly #signal: AbortSignal | undefined;
  readonly #release: () => void;
  #after: number;
  #idleSince: number;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  /** No more bytes go out (ended, failed, or cancelled by the reader). */
  #closed = false;
  #released = false;
  /** Stops the preview source, when there is one. */
  #previews: AbortController | null = null;
  /** Settles the parked pull, if any. */
  #parked: (() => void) | null = null;
  // One function each per stream, made once: the feed's wait, the signal's listener and the
  // parked pull's executor take them as they are.
  readonly #wake = (): void => this.#onWake();
  readonly #end = (): void => this.end();
  readonly #park = (resolve: () => void): void => {
    this.#parked = resolve;
    this.#feed.wait(this.#wake);
  };

  /** Opens the stream: it counts among the open streams at once. */
  constructor(options: RunSubscriberOptions<E>) {
    this.#feed = options.feed;
    this.#after = options.after;
    this.authorization = options.authorization;
    this.principalId = options.principalId;
    this.#streams = options.streams;
    this.#heartbeatMs = options.heartbeatMs;
    this.#now = options.now;
    this.#signal = options.signal;
    this.#release = options.release;
    this.#idleSince = this.#now();
    this.#streams.add(this);
    this.#signal?.addEventListener("abort", this.#end, { once: true });
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
        controller.enqueue(RETRY);
        if (this.#signal?.aborted || this.#released) this.end();
      },
      pull: () => this.#pull(),
      cancel: () => {
        this.#closed = true;
        this.#letGo();
      },
    }, { highWaterMark: 1 });
    if (options.previews !== undefined && !this.#released) {
      this.#previews = new AbortController();
      options.previews((frame) => this.#preview(frame), this.#previews.signal);
    }
  }

  /** Sends a preview frame now, when the stream stands at the end of the window. */
  #preview(frame: Uint8Array): void {
    if (this.#closed || !this.#feed.ready || this.#after < this.#feed.last) return;
    try {
      this.#controller.enqueue(frame);
      this.#idleSince = this.#now();
    } catch {
      // The reader went away: the stream ends through its cancel.
    }
  }

  /** Ends the stream (terminal frame, revocation, drain, client gone) and releases it. */
  end(): void {
    this.#letGo();
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#controller.close();
    } catch {
      // Already closed or errored by the reader going away.
    }
  }

  /** Ends the stream with an error (a failed store read, a refused enqueue) and releases it. */
  #fail(error: unknown): void {
    this.#letGo();
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#controller.error(error);
    } catch {
      // Already errored.
    }
  }

  /** Lets go of everything the stream holds, once. */
  #letGo(): void {
    if (this.#released) return;
    this.#released = true;
    this.#previews?.abort();
    this.#streams.delete(this);
    this.#signal?.removeEventListener("abort", this.#end);
    this.#feed.forget(this.#wake);
    this.#unpark();
    this.#release();
  }

  #unpark(): void {
    const resolve = this.#parked;
    this.#parked = null;
    resolve?.();
  }

  /** Enqueues frames, ending the stream after a terminal one. */
  #send(slice: FrameSlice): void {
    // A view of the window's buffer, which never rewrites bytes it handed out.
    this.#controller.enqueue(slice.bytes);
    this.#after = slice.last;
    this.#idleSince = this.#now();
    if (slice.terminal) this.end();
  }

  /** What the window has for this stream: SENT (or ended), WAIT, or BEHIND (read the store). */
  #offer(): Offer {
    if (this.#closed) return SENT;
    const feed = this.#feed;
    if (!feed.ready) return WAIT;
    const slice = feed.after(this.#after);
    if (slice === null) return BEHIND;
    if (slice.bytes.length > 0) {
      this.#send(slice);
      return SENT;
    }
    const now = this.#now();
    if (now - this.#idleSince >= this.#heartbeatMs) {
      this.#idleSince = now;
      this.#controller.enqueue(HEARTBEAT);
      return SENT;
    }
    return WAIT;
  }

  #pull(): Promise<void> | undefined {
    const offered = this.#offer();
    if (offered === SENT) return;
    if (offered === WAIT) return this.#released ? undefined : new Promise<void>(this.#park);
    // Behind the window: this stream reads the store until it catches up.
    return this.#feed.readAfter(this.#after).then((slice) => {
      if (this.#closed) return;
      if (slice.bytes.length > 0) this.#send(slice);
      else if (!this.#released) return new Promise<void>(this.#park); // nothing there yet: wait
    }).catch((error) => this.#fail(error));
  }

  /**
   * Called by the feed (a change, the poll, a stop) while the pull is parked. It runs inside the
   * feed's publish: whatever goes wrong ends this stream, never the publish.
   */
  #onWake(): void {
    if (this.#parked === null) return;
    try {
      const offered = this.#offer();
      // Nothing yet, or sent and already taken by the reader: the pull stays parked. Settling
      // it cost a promise turn and a second `offer` per stream and frame: the time in Deno's
      // streams code (callees included) in a `--cpu-prof` of bench/events_bench.ts's live rounds
      // fell from 482 to 268 ms without it.
      if (
        offered === WAIT ||
        (offered === SENT && !this.#closed && this.#controller.desiredSize! > 0)
      ) {
        this.#feed.wait(this.#wake);
        return;
      }
    } catch (error) {
      this.#fail(error);
    }
    this.#unpark(); // ended, failed, behind the window, or a full queue: the next pull carries on
  }
}
