/**
 * Run event delivery on one replica: SSE streams of a run's event log.
 *
 * A frame's way, once through each: this replica's tail hands the hub what it appended
 * ({@linkcode RunEventHub.publish}); the hub hands it to the run's feed (`_run_feed.ts`); the feed
 * appends it to its window (`_frame_window.ts`, the latest 1,000 entries, at most 4 MiB of them, as
 * SSE frames encoded once, in one buffer) and wakes its waiting subscribers; each subscriber (`_run_subscriber.ts`, one per
 * stream) takes the frames after its position from the window and enqueues them. Every subscriber
 * of a run on this replica shares that one feed: one store watch (PostgreSQL `LISTEN/NOTIFY`, Deno
 * KV `watch`), one 1 s poll as the fallback, one read of the new entries per wake-up, which is how
 * other replicas' appends arrive. A subscriber that resumes further back than the window reads the
 * store (through the feed) until it catches up.
 *
 * **Native streams** (the `/provider` interface) go the same way through a feed of the run's
 * native log ({@linkcode RunEventHub.nativeStream}, {@linkcode RunEventHub.publishNative}): the same
 * window, watch, poll, subscribers, stream limits and principal re-checks; their frames are the
 * provider's events as it sent them (`native_event.ts`), and they end only when the session is
 * gone. Without a resume point a native stream starts at the log's end, as the provider's own
 * stream starts at the moment it is opened. It may carry live previews (`_run_subscriber.ts`).
 * Streams the interface passes on from the provider (a thread's) are held the same way
 * ({@linkcode RunEventHub.relay}).
 *
 * The hub itself only routes runs to feeds, holds open streams to `--max-event-streams` (503
 * past it) and each principal's to `--max-event-streams-per-principal` (429 past it, so one
 * principal cannot take every slot), (`open_streams.ts` counts them and re-checks their
 * principals) and keeps the feeds that lost
 * their last subscriber within the lingering budget below. JSON pages of the log are
 * `event_page.ts`; the public form of an entry, in pages and frames alike, is `public_event.ts`.
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
 * terminal event of a finished run), {@linkcode RunEventHub.stream} returns that answer as one
 * string instead of a stream (`_frame_window.ts`, speed trick 4): the same text, ending at the same
 * place. Such an answer holds
 * nothing once written, so it takes no `--max-event-streams` slot (it is served even when the
 * replica has as many open streams as it allows) and is not re-checked for revocation. The
 * decision is made in one place, {@linkcode RunEventHub.stream}.
 *
 * **Lingering feeds.** A feed whose last subscriber left stays for 30 s (its watch and poll
 * stopped; a publish still extends its window), so the next subscriber of a finished run is
 * answered without reading the log, and one of a live run resumes the watch and reads only what was
 * appended meanwhile. Budget across all lingering feeds: at most 1,000 feeds and 64 MiB of windows
 * (a window holds at most 1,250 frames and 4 MiB of them, and its last 4 whole answers, at most
 * 4 MiB together); past either, the least recently used goes first. Feeds with subscribers are not counted (they are bounded by the stream
 * limit).
 *
 * @module
 */
import type { Authenticator } from "../authenticator.ts";
import { InterfaceError } from "../errors.ts";
import type { NativeEventEntry, RunEventEntry, Store, StoredRunRecord } from "../store/types.ts";
import type { Sequenced } from "./_frame_window.ts";
import { OpenStreams } from "./open_streams.ts";
import { RelayedStream } from "./_relayed_stream.ts";
import { RunFeed, WINDOW } from "./_run_feed.ts";
import { type PreviewSource, RETRY_TEXT, RunSubscriber } from "./_run_subscriber.ts";
import { endsFinishedRun } from "./event_page.ts";
import { runNotFound } from "./_run_access.ts";
import { nativeEventLog } from "./native_event.ts";

export { POLL_MS } from "./_run_feed.ts";
export type { PreviewSource } from "./_run_subscriber.ts";
export { PRINCIPAL_CHECK_MS } from "./open_streams.ts";

/** Default open event streams per replica (`--max-event-streams`). */
export const DEFAULT_MAX_EVENT_STREAMS = 10_000;
/** Default open event streams of one principal per replica (`--max-event-streams-per-principal`). */
export const DEFAULT_MAX_EVENT_STREAMS_PER_PRINCIPAL = 16;
/** Idle time after which a stream gets a comment line, in ms. */
export const HEARTBEAT_MS = 15_000;
/** How long a feed without subscribers is kept, in ms. */
export const LINGER_MS = 30_000;
/** Most feeds kept without subscribers. */
export const MAX_LINGERING_FEEDS = 1_000;
/** Most bytes of windows kept in feeds without subscribers. */
export const MAX_LINGERING_BYTES = 64 * 1024 * 1024;

/** Options of {@linkcode RunEventHub}. */
export interface RunEventHubOptions {
  /** The store holding the logs. */
  store: Store;
  /** Re-checks the principals of open streams. */
  authenticator: Authenticator;
  /** The clock, ms since the epoch (default `Date.now`): heartbeats, re-checks, lingering. */
  now?: () => number;
  /** Open streams allowed on this replica (default 10000). */
  maxStreams?: number;
  /** Open streams one principal may hold on this replica (default 16). */
  maxStreamsPerPrincipal?: number;
  /**
   * The open streams this replica counts against the limits, shared with the activity feed;
   * given, its own limits apply and `maxStreams` and `maxStreamsPerPrincipal` are not read.
   */
  streams?: OpenStreams;
  /**
   * Idle time after which a stream gets a comment line, in ms (default {@linkcode HEARTBEAT_MS});
   * idle streams look at it once a poll (every second).
   */
  heartbeatMs?: number;
  /** Most bytes of frames one run's window holds (default 4 MiB; see `_frame_window.ts`). */
  windowBytes?: number;
  /**
   * How feeds without subscribers are kept (defaults: {@linkcode LINGER_MS},
   * {@linkcode MAX_LINGERING_FEEDS}, {@linkcode MAX_LINGERING_BYTES}); `ms: 0` drops them at once.
   */
  linger?: { ms?: number; maxFeeds?: number; maxBytes?: number };
}

/** Options of {@linkcode RunEventHub.stream}. */
export interface EventStreamOptions {
  /** The run (already checked as visible to the caller). */
  runId: string;
  /** Deliver entries after this seq. */
  after: number;
  /** The request's `Authorization`, re-checked twice a second. */
  authorization: string | null;
  /** The caller, whose open streams count against `maxStreamsPerPrincipal`; absent: none. */
  principalId?: string;
  /**
   * The run's record as read for this request (its visibility check): saves the hub reading it
   * again. Without it, the hub reads the record when it needs it (to start a new feed's window,
   * to tell whether a resume point ends the run).
   */
  record?: StoredRunRecord;
  /**
   * Ends the stream when it fires (in-process callers). Behind `Deno.serve`, a client that goes
   * cancels the response body, which ends and releases the stream the same way.
   */
  signal?: AbortSignal;
}

/** Options of {@linkcode RunEventHub.nativeStream}. */
export interface NativeStreamOptions {
  /** The run (already checked as visible to the caller). */
  runId: string;
  /** Deliver native entries after this seq; absent: from the log's end when the stream opens. */
  after?: number;
  /** The request's credential as an `Authorization` value, re-checked twice a second. */
  authorization: string | null;
  /** The caller, whose open streams count against `maxStreamsPerPrincipal`; absent: none. */
  principalId?: string;
  /** Ends the stream when it fires (in-process callers). */
  signal?: AbortSignal;
  /** Live previews to send between the log's frames. */
  previews?: PreviewSource;
}

/** The key of a run's native feed among the hub's feeds (run ids are provider ids: no space). */
function nativeKey(runId: string): string {
  return `native ${runId}`;
}

/**
 * The body of an event stream answer: the whole answer as text when it is known already (see the
 * module doc), else a stream of its bytes.
 */
export type EventStreamBody = string | ReadableStream<Uint8Array>;

/** Routes this replica's run event subscribers to one feed per run (see the module doc). */
export class RunEventHub {
  readonly #store: Store;
  readonly #now: () => number;
  readonly #heartbeatMs: number;
  readonly #windowBytes: number | undefined;
  readonly #lingerMs: number;
  readonly #maxLingering: number;
  readonly #maxLingeringBytes: number;
  /** Every feed, with or without subscribers, by key (see `RunFeed.key`). */
  readonly #feeds = new Map<string, RunFeed<Sequenced>>();
  /**
   * The record reads under way for new feeds, by run: subscribers that arrive together share one
   * (an entry lives until its read settles, so there are at most as many as runs being opened).
   */
  readonly #recordReads = new Map<string, Promise<StoredRunRecord | null>>();
  /** Feeds without subscribers, least recently used first, with when each expires. */
  readonly #lingering = new Map<RunFeed<Sequenced>, number>();
  #sweeper: ReturnType<typeof setTimeout> | undefined;
  readonly #streams: OpenStreams;
  /** The runs this replica's tails append to now (at most one entry per tail it runs). */
  readonly #tailed = new Set<string>();
  #closed = false;

  /** Creates the hub. */
  constructor(options: RunEventHubOptions) {
    this.#store = options.store;
    this.#now = options.now ?? Date.now;
    this.#heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
    this.#windowBytes = options.windowBytes;
    this.#lingerMs = options.linger?.ms ?? LINGER_MS;
    this.#maxLingering = options.linger?.maxFeeds ?? MAX_LINGERING_FEEDS;
    this.#maxLingeringBytes = options.linger?.maxBytes ?? MAX_LINGERING_BYTES;
    this.#streams = options.streams ?? new OpenStreams({
      authenticator: options.authenticator,
      now: this.#now,
      maxStreams: options.maxStreams ?? DEFAULT_MAX_EVENT_STREAMS,
      maxStreamsPerPrincipal: options.maxStreamsPerPrincipal ??
        DEFAULT_MAX_EVENT_STREAMS_PER_PRINCIPAL,
    });
  }

  /** Open streams on this replica. */
  get openStreams(): number {
    return this.#streams.size;
  }

  /** Feeds kept without subscribers (see the module doc). */
  get lingeringFeeds(): number {
    return this.#lingering.size;
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
    if (signal?.aborted) return RETRY_TEXT;
    // The one dispatch point: a known answer is one text body, anything else a stream.
    const known = this.#feeds.get(runId) as RunFeed<RunEventEntry> | undefined;
    const checked = known?.ready === true;
    if (checked) {
      const body = await this.#completeBody(known!, options);
      if (body !== null) {
        this.#touch(known!);
        return body;
      }
    }
    // A new feed starts its window from the record's end. When the caller had no record (the
    // run's visibility was known without a read: `RunGateway.streamableRun`) and no feed is open,
    // it is read here, right before the join: nothing runs between the two, so no feed made
    // meanwhile goes without it. A run gone meanwhile (purged) is 404, as its read would be.
    let record = options.record;
    if (record === undefined && !this.#feeds.has(runId)) {
      record = await this.#readRecord(runId) ?? undefined;
      if (record === undefined) throw runNotFound();
    }
    const feed = this.#join(runId, record);
    if (!checked) {
      try {
        await feed.firstRead();
        const body = await this.#completeBody(
          feed,
          record === undefined ? options : { ...options, record },
        );
        if (body !== null) {
          this.#leave(feed);
          return body;
        }
      } catch (error) {
        this.#leave(feed);
        throw error;
      }
    }
    return this.#subscribe(feed, options.after, options);
  }

  /**
   * Answers a native SSE request (see the module doc): the whole answer as bytes when it is known
   * now (it resumed after the session's end), else a stream; 503 or 429 `resourceExhausted` when
   * a stream would pass a limit.
   */
  async nativeStream(options: NativeStreamOptions): Promise<EventStreamBody> {
    this.#refuseWhenClosed();
    const { runId, signal } = options;
    if (signal?.aborted) return RETRY_TEXT;
    const feed = this.#joinFeed(nativeKey(runId), () => {
      const source = nativeEventLog(this.#store, runId);
      return new RunFeed({
        store: this.#store,
        runId,
        source,
        key: nativeKey(runId),
        local: this.#tailed.has(runId),
        ...(this.#windowBytes !== undefined ? { windowBytes: this.#windowBytes } : {}),
      });
    });
    let after: number;
    try {
      if (!feed.ready) await feed.firstRead();
      // Without a resume point: where the provider's own stream would start, the log's end.
      after = options.after ?? feed.last;
      const body = !feed.ready
        ? null
        : feed.isTerminal(after) === true
        ? RETRY_TEXT
        : feed.answer(after, RETRY_TEXT);
      if (body !== null) {
        this.#leave(feed);
        return body;
      }
    } catch (error) {
      this.#leave(feed);
      throw error;
    }
    return this.#subscribe(feed, after, options);
  }

  /**
   * Refuses one more stream: 503 `shuttingDown` when closed; 429 `resourceExhausted` when its
   * principal has as many as `--max-event-streams-per-principal`, 503 when the replica has as
   * many as `--max-event-streams`.
   */
  #admit(principalId: string | undefined): void {
    this.#refuseWhenClosed();
    this.#streams.admit(principalId);
  }

  /**
   * Holds a stream relayed from the provider like this replica's own streams
   * (`_relayed_stream.ts`): counted against the limits (429 or 503 `resourceExhausted` past
   * them, the provider's stream cancelled), its principal re-checked, ended on drain and close,
   * or when `signal` fires.
   */
  relay(
    source: ReadableStream<Uint8Array>,
    options: { authorization: string | null; principalId?: string; signal?: AbortSignal },
  ): ReadableStream<Uint8Array> {
    try {
      this.#admit(options.principalId);
    } catch (error) {
      source.cancel().catch(() => {});
      throw error;
    }
    return new RelayedStream({ source, ...options, streams: this.#streams }).body;
  }

  /**
   * Opens a stream on a feed already joined for it (503 `resourceExhausted` past the limit, the
   * feed left): the feed's subscription is the stream's from now on, which leaves it when it ends.
   */
  #subscribe<E extends Sequenced>(
    feed: RunFeed<E>,
    after: number,
    options: {
      authorization: string | null;
      principalId?: string;
      signal?: AbortSignal;
      previews?: PreviewSource;
    },
  ): ReadableStream<Uint8Array> {
    const release = () => this.#leave(feed);
    try {
      this.#admit(options.principalId);
    } catch (error) {
      release();
      throw error;
    }
    return new RunSubscriber({
      feed,
      after,
      authorization: options.authorization,
      ...(options.principalId !== undefined ? { principalId: options.principalId } : {}),
      streams: this.#streams,
      heartbeatMs: this.#heartbeatMs,
      now: this.#now,
      signal: options.signal,
      release,
      ...(options.previews !== undefined ? { previews: options.previews } : {}),
    }).body;
  }

  /** The run's record, read once for the subscribers that need it at the same time. */
  #readRecord(runId: string): Promise<StoredRunRecord | null> {
    let read = this.#recordReads.get(runId);
    if (read === undefined) {
      read = this.#store.runs.get(runId).finally(() => this.#recordReads.delete(runId));
      this.#recordReads.set(runId, read);
    }
    return read;
  }

  /** The whole answer when the feed's window (or the resume point) settles it, else null. */
  async #completeBody(
    feed: RunFeed<RunEventEntry>,
    options: EventStreamOptions,
  ): Promise<string | null> {
    const { runId, after, record } = options;
    // The window answers whether the resume point is terminal when it holds it.
    const terminal = feed.ready ? feed.isTerminal(after) : undefined;
    if (await endsFinishedRun({ store: this.#store, runId, seq: after, record, terminal })) {
      return RETRY_TEXT;
    }
    return feed.ready ? feed.answer(after, RETRY_TEXT) : null;
  }

  /** The run's feed, made if needed, with one more subscriber (matched by one `#leave`). */
  #join(runId: string, record: StoredRunRecord | undefined): RunFeed<RunEventEntry> {
    return this.#joinFeed(runId, () => {
      // Start the window a window's length before the record's end: the first read then skips
      // older entries (a subscriber resuming before the window reads the store).
      const startAfter = (record?.lastEventSeq ?? 0) - WINDOW;
      return new RunFeed({
        store: this.#store,
        runId,
        startAfter,
        local: this.#tailed.has(runId),
        ...(this.#windowBytes !== undefined ? { windowBytes: this.#windowBytes } : {}),
      });
    });
  }

  /** The feed under `key`, made by `make` if needed, with one more subscriber. */
  #joinFeed<E extends Sequenced>(key: string, make: () => RunFeed<E>): RunFeed<E> {
    let feed = this.#feeds.get(key) as RunFeed<E> | undefined;
    if (feed === undefined) {
      feed = make();
      this.#feeds.set(key, feed);
    }
    this.#lingering.delete(feed);
    feed.join();
    return feed;
  }

  /** One subscriber of the feed went: the last one leaves it lingering (or drops it). */
  #leave(feed: RunFeed<Sequenced>): void {
    if (!feed.leave()) return;
    if (this.#closed || this.#lingerMs <= 0 || this.#feeds.get(feed.key) !== feed) {
      this.#drop(feed);
      return;
    }
    this.#lingering.set(feed, this.#now() + this.#lingerMs);
    this.#scheduleSweep();
    this.#enforceBudget();
  }

  /** A lingering feed just answered a request: it becomes the most recently used. */
  #touch(feed: RunFeed<Sequenced>): void {
    if (!this.#lingering.has(feed)) return;
    this.#lingering.delete(feed);
    this.#lingering.set(feed, this.#now() + this.#lingerMs);
  }

  #drop(feed: RunFeed<Sequenced>): void {
    this.#lingering.delete(feed);
    if (this.#feeds.get(feed.key) === feed) this.#feeds.delete(feed.key);
    feed.stop();
  }

  /** Evicts the least recently used lingering feeds until the budget holds. */
  #enforceBudget(): void {
    let bytes = 0;
    for (const feed of this.#lingering.keys()) bytes += feed.byteLength;
    for (const feed of this.#lingering.keys()) {
      if (this.#lingering.size <= this.#maxLingering && bytes <= this.#maxLingeringBytes) return;
      bytes -= feed.byteLength;
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
      const now = this.#now();
      for (const [feed, until] of this.#lingering) {
        if (until > now) break;
        this.#drop(feed);
      }
      this.#scheduleSweep();
    }, Math.max(first.value - this.#now(), 0));
  }

  /**
   * This replica appended `entries` to a run's log: its feed here takes them as they are, without
   * a store read (other replicas learn of them through the store's notification or their poll).
   */
  publish(runId: string, entries: readonly RunEventEntry[]): void {
    this.#publishTo(runId, entries);
  }

  /**
   * This replica's tail of a run started (`tailing`) or ended: while it runs, the run's feeds here
   * take its appends from {@linkcode RunEventHub.publish} and hold no store watch (`_run_feed.ts`).
   */
  tailing(runId: string, tailing: boolean): void {
    if (tailing) this.#tailed.add(runId);
    else this.#tailed.delete(runId);
    for (const key of [runId, nativeKey(runId)]) {
      const feed = this.#feeds.get(key);
      if (feed !== undefined) feed.local = tailing;
    }
  }

  /** This replica appended `entries` to a run's native log: as {@linkcode RunEventHub.publish}. */
  publishNative(runId: string, entries: readonly NativeEventEntry[]): void {
    this.#publishTo(nativeKey(runId), entries);
  }

  #publishTo<E extends Sequenced>(key: string, entries: readonly E[]): void {
    const feed = this.#feeds.get(key) as RunFeed<E> | undefined;
    if (feed === undefined || entries.length === 0) return;
    feed.publish(entries);
    // A lingering feed's window grew: it may no longer fit the budget.
    if (this.#lingering.has(feed)) this.#enforceBudget();
  }

  /** Ends every open stream, drops every feed and refuses new streams (drain, close). */
  close(): void {
    this.#closed = true;
    this.#streams.endAll();
    for (const feed of [...this.#lingering.keys()]) this.#drop(feed);
    clearTimeout(this.#sweeper);
    this.#sweeper = undefined;
  }
}
