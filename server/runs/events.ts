/**
 * Run event delivery on one replica: SSE streams and JSON pages of a run's event log.
 *
 * Every subscriber of a run on this replica shares one {@linkcode RunFeed}: one store watch
 * (PostgreSQL `LISTEN/NOTIFY`, Deno KV `watch`), one 1 s poll as the fallback, one read of the
 * new entries per wake-up, and each entry's SSE frame encoded once. A subscriber that resumes
 * further back than the feed's window reads the store directly until it catches up.
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
 * @module
 */
import type { Authenticator } from "../authenticator.ts";
import { InterfaceError } from "../errors.ts";
import type { RunEventEntry, Store } from "../store/types.ts";
import { ACTIVE_RUN_STATES } from "../store/types.ts";

/** Default open event streams per replica (`--max-event-streams`). */
export const DEFAULT_MAX_EVENT_STREAMS = 10_000;
/** Idle time after which a stream gets a comment line, in ms. */
export const HEARTBEAT_MS = 15_000;
/** Longest wait between two reads of a watched run's log, in ms (the poll fallback). */
export const POLL_MS = 1_000;
/** How often open streams re-check their principal, in ms: a revocation ends them within 1 s. */
export const PRINCIPAL_CHECK_MS = 500;
/** Entries kept in a feed's window for subscribers to share. */
const WINDOW = 1_000;
/** Entries read from the store at once. */
const READ_BATCH = 500;

const TERMINAL = new Set(["run.completed", "run.failed", "run.cancelled"]);
const ENCODER = new TextEncoder();
const RETRY = ENCODER.encode("retry: 2000\n\n");
const HEARTBEAT = ENCODER.encode(": keep-alive\n\n");

/** The public form of a log entry: the run event with its `seq` and `at`. */
export type PublicRunEvent = Record<string, unknown> & { seq: number; at: string; type: string };

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
export function publicEvent(entry: RunEventEntry): PublicRunEvent {
  return { seq: entry.seq, at: entry.at, ...entry.event } as PublicRunEvent;
}

/** Whether an entry ends a turn. */
export function isTerminalEntry(entry: RunEventEntry | undefined): boolean {
  return entry !== undefined && TERMINAL.has(entry.event.type);
}

/** An entry with its SSE frame, encoded once for every subscriber. */
interface Framed {
  entry: RunEventEntry;
  frame: Uint8Array;
}

function frame(entry: RunEventEntry): Framed {
  const data = JSON.stringify(publicEvent(entry));
  return {
    entry,
    frame: ENCODER.encode(`id: ${entry.seq}\nevent: ${entry.event.type}\ndata: ${data}\n\n`),
  };
}

/**
 * The frames of a batch as one chunk: one write to the socket instead of one per event (a
 * 303-event replay to 100 subscribers went from about 10,000 to far more events/s, see
 * `bench/events_bench.ts`).
 */
function joinFrames(batch: readonly Framed[]): Uint8Array {
  if (batch.length === 1) return batch[0].frame;
  let length = 0;
  for (const item of batch) length += item.frame.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const item of batch) {
    out.set(item.frame, offset);
    offset += item.frame.length;
  }
  return out;
}

/** The shared reader of one run's log on this replica. */
class RunFeed {
  readonly #store: Store;
  readonly runId: string;
  /** The latest entries, in order, at most {@linkcode WINDOW}. */
  #window: Framed[] = [];
  /** The last seq read from the store. */
  #last = -1;
  #waiters: (() => void)[] = [];
  #reading: Promise<void> | null = null;
  #again = false;
  #stopped = false;
  #stopWatch: () => void;
  #timer: ReturnType<typeof setInterval>;
  subscribers = 0;

  constructor(store: Store, runId: string) {
    this.#store = store;
    this.runId = runId;
    this.#stopWatch = store.watchRunEvents(runId, () => this.refresh());
    this.#timer = setInterval(() => this.refresh(), POLL_MS);
  }

  /**
   * Reads what the log gained since the last read, then wakes the subscribers. A call during a
   * read makes one more read after it (the read under way may have started before the append).
   */
  refresh(): Promise<void> {
    if (this.#reading !== null) {
      this.#again = true;
      return this.#reading;
    }
    this.#reading = (async () => {
      do {
        this.#again = false;
        try {
          await this.#read();
        } catch {
          // A store hiccup: the next wake-up or poll tries again.
        }
        const waiters = this.#waiters;
        this.#waiters = [];
        for (const wake of waiters) wake();
      } while (this.#again && !this.#stopped);
      this.#reading = null;
    })();
    return this.#reading;
  }

  async #read(): Promise<void> {
    if (this.#last < 0) {
      // First read: start the window at the log's current end (subscribers behind it read the
      // store themselves).
      let after = 0;
      for (;;) {
        const page = await this.#store.listRunEvents(this.runId, after, READ_BATCH);
        if (page.length < READ_BATCH) {
          this.#push(page.map(frame));
          this.#last = page.at(-1)?.seq ?? after;
          return;
        }
        after = page.at(-1)!.seq;
      }
    }
    for (;;) {
      const page = await this.#store.listRunEvents(this.runId, this.#last, READ_BATCH);
      if (page.length === 0) return;
      this.#push(page.map(frame));
      this.#last = page.at(-1)!.seq;
      if (page.length < READ_BATCH) return;
    }
  }

  #push(framed: Framed[]): void {
    if (framed.length === 0) return;
    this.#window.push(...framed);
    if (this.#window.length > WINDOW) this.#window = this.#window.slice(-WINDOW);
  }

  /** Whether the feed has read the log at least once. */
  get ready(): boolean {
    return this.#last >= 0;
  }

  /**
   * The window's entries after `after`, or null when `after` lies before the window (read the
   * store instead).
   */
  after(after: number): Framed[] | null {
    const window = this.#window;
    if (window.length === 0) return after >= this.#last ? [] : null;
    const first = window[0].entry.seq;
    if (after < first - 1) return null;
    return window.slice(Math.max(after - first + 1, 0));
  }

  /** Resolves at the next read's end (a wake-up, the poll) or when `signal` fires. */
  next(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.#waiters.push(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  stop(): void {
    this.#stopped = true;
    this.#stopWatch();
    clearInterval(this.#timer);
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}

/** Options of {@linkcode RunEventHub}. */
export interface RunEventHubOptions {
  /** The store holding the logs. */
  store: Store;
  /** Re-checks the principals of open streams. */
  authenticator: Authenticator;
  /** Open streams allowed on this replica (default 10000). */
  maxStreams?: number;
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
   * Ends the stream when it fires (in-process callers). Behind `Deno.serve`, a client that goes
   * cancels the response body, which ends and releases the stream the same way.
   */
  signal?: AbortSignal;
}

/** A JSON page of a run's log. */
export interface EventPage {
  /** The entries, in order. */
  events: PublicRunEvent[];
  /** The seq to pass as `after` for the next page. */
  nextAfter: number;
  /** Whether the page reaches the log's end and the run has ended there. */
  terminal: boolean;
}

/** Delivers run events to this replica's subscribers. */
export class RunEventHub {
  readonly #store: Store;
  readonly #authenticator: Authenticator;
  readonly #maxStreams: number;
  readonly #feeds = new Map<string, RunFeed>();
  readonly #streams = new Set<OpenStream>();
  #checker: ReturnType<typeof setInterval> | undefined;
  #checking = false;
  #closed = false;

  /** Creates the hub. */
  constructor(options: RunEventHubOptions) {
    this.#store = options.store;
    this.#authenticator = options.authenticator;
    this.#maxStreams = options.maxStreams ?? DEFAULT_MAX_EVENT_STREAMS;
  }

  /** Open streams on this replica. */
  get openStreams(): number {
    return this.#streams.size;
  }

  /** A JSON page: up to `limit` entries after `after`. */
  async page(runId: string, after: number, limit: number): Promise<EventPage> {
    const entries = await this.#store.listRunEvents(runId, after, limit);
    let terminal = false;
    if (entries.length < limit) {
      const last = entries.at(-1) ?? (after > 0 ? await this.#entryAt(runId, after) : undefined);
      if (isTerminalEntry(last)) terminal = await this.#runEnded(runId);
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

  /** Opens an SSE stream (see the module doc); 503 `resourceExhausted` past the limit. */
  async stream(options: EventStreamOptions): Promise<ReadableStream<Uint8Array>> {
    if (this.#closed) {
      throw new InterfaceError("shuttingDown", "The runtime is shutting down", {
        headers: { "retry-after": "1" },
      });
    }
    if (this.#streams.size >= this.#maxStreams) {
      throw new InterfaceError(
        "resourceExhausted",
        "This replica has as many open event streams as it allows",
        { status: 503, headers: { "retry-after": "1" } },
      );
    }
    const { runId, signal } = options;
    let after = options.after;
    // Resuming after the terminal event of a run that is still finished: nothing will come.
    let finished = false;
    if (after > 0 && isTerminalEntry(await this.#entryAt(runId, after))) {
      finished = await this.#runEnded(runId);
    }
    const stop = new AbortController();
    const feed = this.#subscribe(runId);
    let controllerRef: ReadableStreamDefaultController<Uint8Array> | null = null;
    let closed = false;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      stop.abort();
      this.#streams.delete(open);
      signal?.removeEventListener("abort", finish);
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
    let idleSince = Date.now();
    return new ReadableStream<Uint8Array>({
      start(controller) {
        controllerRef = controller;
        controller.enqueue(RETRY);
        if (finished || signal?.aborted || stop.signal.aborted) finish();
      },
      async pull(controller) {
        try {
          while (!closed) {
            let batch = feed.ready ? feed.after(after) : [];
            if (batch === null) {
              batch = (await store.listRunEvents(runId, after, READ_BATCH)).map(frame);
            }
            if (closed) return;
            if (batch.length > 0) {
              let end = -1;
              for (let i = 0; i < batch.length; i++) {
                if (TERMINAL.has(batch[i].entry.event.type)) {
                  end = i;
                  break;
                }
              }
              const chunk = end === -1 ? batch : batch.slice(0, end + 1);
              controller.enqueue(joinFrames(chunk));
              after = chunk.at(-1)!.entry.seq;
              idleSince = Date.now();
              if (end !== -1) finish();
              return;
            }
            if (Date.now() - idleSince >= HEARTBEAT_MS) {
              idleSince = Date.now();
              controller.enqueue(HEARTBEAT);
              return;
            }
            await feed.next(stop.signal);
          }
        } catch (error) {
          release();
          if (!closed) {
            closed = true;
            controller.error(error);
          }
        }
      },
      cancel() {
        closed = true;
        release();
      },
    }, { highWaterMark: 1 });
  }

  #subscribe(runId: string): RunFeed {
    let feed = this.#feeds.get(runId);
    if (feed === undefined) {
      feed = new RunFeed(this.#store, runId);
      this.#feeds.set(runId, feed);
      feed.refresh();
    }
    feed.subscribers++;
    return feed;
  }

  #unsubscribe(feed: RunFeed): void {
    feed.subscribers--;
    if (feed.subscribers === 0 && this.#feeds.get(feed.runId) === feed) {
      this.#feeds.delete(feed.runId);
      feed.stop();
    }
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
   * This replica appended to a run's log: its subscribers here read at once, without waiting for
   * the store's notification (which wakes the other replicas).
   */
  wake(runId: string): void {
    this.#feeds.get(runId)?.refresh();
  }

  /** Ends every open stream and refuses new ones (drain, close). */
  close(): void {
    this.#closed = true;
    for (const open of [...this.#streams]) open.end();
    if (this.#checker !== undefined) clearInterval(this.#checker);
    this.#checker = undefined;
  }
}
