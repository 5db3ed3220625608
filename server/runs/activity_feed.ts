/**
 * The activity feed on one replica (`GET /v1/activity`): SSE streams of the store's activity log,
 * each filtered to what its caller may see (approvers and admins: every run; others: the runs
 * they own), and JSON pages of it.
 *
 * One shared reader per replica: while streams are open it watches the log (PostgreSQL
 * `LISTEN/NOTIFY`, Deno KV `watch`) and polls it once a second, reads what it gained once per
 * wake-up, writes each entry once as an SSE frame (`id: <seq>`, `event: <type>`,
 * `data: <JSON>`) into a window of the latest {@linkcode FEED_WINDOW} entries, and wakes the
 * streams. A change made on any replica reaches every stream within a second. A stream takes the
 * frames after its position that it may see; one that stands before the window (it resumed from
 * far back) reads the store, filtered, a page at a time, until it reaches the window.
 *
 * A stream, in order: `retry: 2000`; the events after its resume point (`Last-Event-ID`, else
 * `?after=`, else the log's newest seq when it opened: only what happens from then on); a
 * comment every 15 s while idle. It ends when its principal is revoked or expires (the shared
 * {@linkcode OpenStreams} re-checks it twice a second, so on every replica within a second), when
 * the replica drains or closes, or when the client goes. It counts against the stream limits of
 * the run event streams (`--max-event-streams`, `--max-event-streams-per-principal`): the same
 * set of open streams.
 *
 * @module
 */
import type { Authenticator } from "../authenticator.ts";
import type { AuthenticatedPrincipal } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import { type ActivityRecord, publicActivity, type Store } from "../store/types.ts";
import type { ActivityEventPage } from "../../wire/mod.ts";
import { type OpenStream, OpenStreams } from "./open_streams.ts";
import { readsEveryRun } from "./runs.ts";

/** Entries the shared window keeps. */
export const FEED_WINDOW = 1_000;
/** Longest wait between two reads of the log while streams are open, in ms. */
export const FEED_POLL_MS = 1_000;
/** Idle time after which a stream gets a comment line, in ms. */
export const FEED_HEARTBEAT_MS = 15_000;
/** Entries one store read takes. */
const READ_BATCH = 500;
/** Most entries of one JSON page. */
export const MAX_ACTIVITY_PAGE = 500;

const ENCODER = new TextEncoder();
const RETRY = ENCODER.encode("retry: 2000\n\n");
const HEARTBEAT = ENCODER.encode(": keep-alive\n\n");

/** One entry of the window: who may see it, and its frame. */
interface Frame {
  readonly seq: number;
  readonly owner: string;
  readonly text: string;
}

function frameOf(record: ActivityRecord): Frame {
  const event = publicActivity(record);
  return {
    seq: record.seq,
    owner: record.principalId,
    text: `id: ${record.seq}\nevent: ${record.type}\ndata: ${JSON.stringify(event)}\n\n`,
  };
}

/** The frames' bytes, or null for none. */
function bytesOf(texts: readonly string[]): Uint8Array | null {
  return texts.length === 0 ? null : ENCODER.encode(texts.join(""));
}

/** Options of {@linkcode ActivityFeed}. */
export interface ActivityFeedOptions {
  /** The store holding the log. */
  store: Store;
  /** Re-checks the principals of open streams (when `streams` is not given). */
  authenticator: Authenticator;
  /** The open streams of this replica, shared with the run event hub (their limits apply). */
  streams?: OpenStreams;
  /** The clock, ms since the epoch. */
  now?: () => number;
  /** Idle time after which a stream gets a comment line, in ms (default 15 s). */
  heartbeatMs?: number;
  /** Longest wait between two reads of the log, in ms (default 1 s). */
  pollMs?: number;
}

/** Options of {@linkcode ActivityFeed.stream}. */
export interface ActivityStreamOptions {
  /** The caller: what it may see follows from it. */
  principal: AuthenticatedPrincipal;
  /** The request's `Authorization`, re-checked twice a second. */
  authorization: string | null;
  /** Send the events after this seq; absent: from the log's newest seq on. */
  after?: number;
  /** Ends the stream when it fires (in-process callers). */
  signal?: AbortSignal;
}

/** The activity feed of this replica (see the module doc). */
export class ActivityFeed {
  readonly #store: Store;
  readonly #streams: OpenStreams;
  readonly #now: () => number;
  readonly #heartbeatMs: number;
  readonly #pollMs: number;
  /** The latest frames, oldest first; `#last` is the seq the window reaches. */
  #window: Frame[] = [];
  #last = 0;
  #ready = false;
  #subscribers = new Set<ActivitySubscriber>();
  #stopWatch: (() => void) | null = null;
  #timer: ReturnType<typeof setInterval> | undefined;
  #reading: Promise<void> | null = null;
  #again = false;
  #closed = false;

  /** A feed that reads nothing until its first stream opens. */
  constructor(options: ActivityFeedOptions) {
    this.#store = options.store;
    this.#now = options.now ?? Date.now;
    this.#streams = options.streams ??
      new OpenStreams({ authenticator: options.authenticator, now: this.#now });
    this.#heartbeatMs = options.heartbeatMs ?? FEED_HEARTBEAT_MS;
    this.#pollMs = options.pollMs ?? FEED_POLL_MS;
  }

  /** Streams open on this feed. */
  get openStreams(): number {
    return this.#subscribers.size;
  }

  /**
   * A JSON page of the events `principal` may see after `after` (at most `limit`).
   *
   * @example
   * ```ts ignore
   * const page = await feed.page(principal, { after: 0, limit: 100 });
   * ```
   */
  async page(
    principal: AuthenticatedPrincipal,
    params: { after: number; limit: number },
  ): Promise<ActivityEventPage> {
    const page = await this.#store.activity.list({
      after: params.after,
      limit: params.limit,
      ...(readsEveryRun(principal) ? {} : { principalId: principal.principalId }),
    });
    return { events: page.entries.map(publicActivity), nextAfter: page.last };
  }

  /** Opens an SSE stream (see the module doc); past the stream limits, 429 or 503. */
  async stream(options: ActivityStreamOptions): Promise<ReadableStream<Uint8Array>> {
    this.#refuseWhenClosed();
    const principalId = options.principal.principalId;
    this.#streams.admit(principalId);
    const after = options.after ?? await this.#store.activity.head();
    this.#refuseWhenClosed();
    this.#streams.admit(principalId);
    const subscriber = new ActivitySubscriber({
      feed: this,
      after,
      owner: readsEveryRun(options.principal) ? null : principalId,
      authorization: options.authorization,
      principalId,
      heartbeatMs: this.#heartbeatMs,
      now: this.#now,
      signal: options.signal,
    });
    this.#streams.add(subscriber);
    this.#join(subscriber);
    return subscriber.body;
  }

  #refuseWhenClosed(): void {
    if (this.#closed) {
      throw new InterfaceError("shuttingDown", "The runtime is shutting down", {
        headers: { "retry-after": "1" },
      });
    }
  }

  #join(subscriber: ActivitySubscriber): void {
    this.#subscribers.add(subscriber);
    if (this.#stopWatch !== null) return;
    this.#stopWatch = this.#store.activity.watch((last) => {
      if (this.#ready && last !== undefined && last <= this.#last) return;
      this.refresh();
    });
    this.#timer = setInterval(() => this.refresh(true), this.#pollMs);
    this.refresh();
  }

  /** A stream ended: it leaves the open streams; the last one stops the watch and the poll. */
  leave(subscriber: ActivitySubscriber): void {
    this.#streams.delete(subscriber);
    if (!this.#subscribers.delete(subscriber) || this.#subscribers.size > 0) return;
    this.#stopWatch?.();
    this.#stopWatch = null;
    clearInterval(this.#timer);
    this.#timer = undefined;
    // The window is dropped with the last stream: the next one starts from a fresh read.
    this.#window = [];
    this.#ready = false;
  }

  /** The window's frames after `seq` a stream with `owner` may see; null: `seq` is before it. */
  framesAfter(
    seq: number,
    owner: string | null,
  ): { bytes: Uint8Array | null; last: number } | null {
    if (!this.#ready) return { bytes: null, last: seq };
    const first = this.#window.length === 0 ? this.#last + 1 : this.#window[0].seq;
    if (seq < first - 1) return null;
    const texts: string[] = [];
    for (const frame of this.#window) {
      if (frame.seq <= seq) continue;
      if (owner === null || frame.owner === owner) texts.push(frame.text);
    }
    return { bytes: bytesOf(texts), last: Math.max(seq, this.#last) };
  }

  /** Reads from the store what a stream standing before the window may see, one page. */
  async readAfter(
    seq: number,
    owner: string | null,
  ): Promise<{ bytes: Uint8Array | null; last: number }> {
    const page = await this.#store.activity.list({
      after: seq,
      limit: READ_BATCH,
      ...(owner === null ? {} : { principalId: owner }),
    });
    return { bytes: bytesOf(page.entries.map((entry) => frameOf(entry).text)), last: page.last };
  }

  /**
   * Reads what the log gained since the window's end and wakes the streams (when it found
   * something, on the first read, or for the poll, `always`: their heartbeats).
   */
  refresh(always = false): Promise<void> {
    if (this.#reading !== null) {
      this.#again = true;
      return this.#reading;
    }
    this.#reading = (async () => {
      do {
        this.#again = false;
        let found = false;
        try {
          found = await this.#read();
        } catch {
          // A store hiccup: the next wake-up or poll tries again.
        }
        if (found || always) this.#wake();
      } while (this.#again && !this.#closed);
      this.#reading = null;
    })();
    return this.#reading;
  }

  async #read(): Promise<boolean> {
    if (!this.#ready) {
      this.#last = await this.#store.activity.head();
      this.#window = [];
      this.#ready = true;
      return true;
    }
    let found = false;
    for (;;) {
      const page = await this.#store.activity.list({ after: this.#last, limit: READ_BATCH });
      for (const entry of page.entries) {
        if (entry.seq <= this.#last) continue;
        this.#window.push(frameOf(entry));
        this.#last = entry.seq;
        found = true;
      }
      if (this.#window.length > FEED_WINDOW) {
        this.#window = this.#window.slice(this.#window.length - FEED_WINDOW);
      }
      if (page.entries.length < READ_BATCH) return found;
    }
  }

  #wake(): void {
    for (const subscriber of this.#subscribers) subscriber.wake();
  }

  /** Ends every stream and refuses new ones (drain, close). */
  close(): void {
    this.#closed = true;
    for (const subscriber of [...this.#subscribers]) subscriber.end();
  }
}

/** Options of {@linkcode ActivitySubscriber}. */
interface ActivitySubscriberOptions {
  feed: ActivityFeed;
  after: number;
  /** Whose runs it may see; null: every run. */
  owner: string | null;
  authorization: string | null;
  principalId: string;
  heartbeatMs: number;
  now: () => number;
  signal?: AbortSignal;
}

/** One SSE stream of the activity feed (pulled: at most one chunk waits in its queue). */
class ActivitySubscriber implements OpenStream {
  readonly authorization: string | null;
  readonly principalId: string;
  readonly body: ReadableStream<Uint8Array>;
  readonly #feed: ActivityFeed;
  readonly #owner: string | null;
  readonly #heartbeatMs: number;
  readonly #now: () => number;
  readonly #signal: AbortSignal | undefined;
  #after: number;
  #idleSince: number;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #parked: (() => void) | null = null;
  #ended = false;
  readonly #end = (): void => this.end();

  constructor(options: ActivitySubscriberOptions) {
    this.#feed = options.feed;
    this.#after = options.after;
    this.#owner = options.owner;
    this.authorization = options.authorization;
    this.principalId = options.principalId;
    this.#heartbeatMs = options.heartbeatMs;
    this.#now = options.now;
    this.#signal = options.signal;
    this.#idleSince = this.#now();
    this.#signal?.addEventListener("abort", this.#end, { once: true });
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
        controller.enqueue(RETRY);
        if (this.#signal?.aborted) this.end();
      },
      pull: () => this.#pull(),
      cancel: () => this.#release(),
    }, { highWaterMark: 1 });
  }

  /** The feed changed (or polled): a parked pull looks again. */
  wake(): void {
    const resolve = this.#parked;
    this.#parked = null;
    resolve?.();
  }

  /** Ends the stream (revocation, drain, close, client gone) and releases it. */
  end(): void {
    if (this.#ended) return;
    this.#release();
    try {
      this.#controller.close();
    } catch {
      // Already closed or errored by the reader going away.
    }
  }

  #release(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#signal?.removeEventListener("abort", this.#end);
    this.#feed.leave(this);
    this.wake();
  }

  async #pull(): Promise<void> {
    while (!this.#ended) {
      let slice = this.#feed.framesAfter(this.#after, this.#owner);
      if (slice === null) {
        try {
          slice = await this.#feed.readAfter(this.#after, this.#owner);
        } catch (error) {
          this.#release();
          this.#controller.error(error);
          return;
        }
        if (this.#ended) return;
      }
      this.#after = Math.max(this.#after, slice.last);
      if (slice.bytes !== null) {
        this.#idleSince = this.#now();
        this.#controller.enqueue(slice.bytes);
        return;
      }
      if (this.#now() - this.#idleSince >= this.#heartbeatMs) {
        this.#idleSince = this.#now();
        this.#controller.enqueue(HEARTBEAT);
        return;
      }
      await new Promise<void>((resolve) => this.#parked = resolve);
    }
  }
}
