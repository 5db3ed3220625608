/**
 * The shared reader of one run's log on this replica (see `events.ts` for how the hub uses it).
 * The log is the run events by default; the native log (`native_event.ts`) is read through the
 * same feed with its own {@linkcode LogSource}.
 *
 * A feed holds a {@linkcode FrameWindow} of the log's latest entries. It learns of new entries
 * two ways: this replica's tail hands it what it appended ({@linkcode RunFeed.publish}, no store
 * read), and, while it has subscribers, a store watch and a 1 s poll make it read what the log
 * gained (how other replicas' appends arrive). Both go through the window's seq check, so a
 * publish racing a store read appends each entry once, in order; a publish with a gap before it
 * makes the feed read the store instead. While this replica's tail appends to the run
 * ({@linkcode RunFeed.local}, told by the hub), the feed holds no watch: the tail's publishes bring
 * its appends, and the poll stays for the rest.
 *
 * The feed owns its window and counts its subscribers: the first to {@linkcode RunFeed.join}
 * starts the watch and the poll (and reads what the log gained meanwhile), the last to
 * {@linkcode RunFeed.leave} stops both. A feed without subscribers (it lingers in the hub) keeps its
 * window and still takes publishes; the hub decides whether to keep it or {@linkcode RunFeed.stop}
 * it. Subscribers take their frames from the window through {@linkcode RunFeed.after} (and
 * {@linkcode RunFeed.readAfter} when they resume before it); the hub answers complete requests with
 * {@linkcode RunFeed.answer}.
 *
 * Subscribers wait with {@linkcode RunFeed.wait} and are woken when the window changed, and once
 * a poll (so an idle stream can tell when its heartbeat is due). A read that found nothing new
 * wakes no one, nor does one whose entries a publish brought while it ran: the store's watch fires
 * for this replica's own appends too, which the publish delivered already (on a 100-subscriber
 * bench run, about one watch in ten fired before the publish), and waking 100 streams for nothing
 * cost each of them a turn per append. When the watch tells the log's last seq (Deno KV's does)
 * and the window holds it, the feed does not even read.
 *
 * @module
 */
import type { LogHead, RunEventEntry, Store } from "../store/types.ts";
import {
  DEFAULT_WINDOW_BYTES,
  type FrameCodec,
  type FrameSlice,
  FrameWindow,
  RUN_FRAMES,
  type Sequenced,
} from "./_frame_window.ts";

/** Longest wait between two reads of a watched run's log, in ms (the poll fallback). */
export const POLL_MS = 1_000;
/** Entries kept in a feed's window for subscribers to share. */
export const WINDOW = 1_000;
/** Entries read from the store at once. */
export const READ_BATCH = 500;

/** One of a run's logs, as a feed reads it: its entries, how they frame, what a watch tells. */
export interface LogSource<E extends Sequenced> extends FrameCodec<E> {
  /** Up to `limit` entries with `seq > after`, in order. */
  read(after: number, limit: number): Promise<E[]>;
  /** This log's last seq as a store watch reported it (`last`, `head`), when it did. */
  lastOf(last: number | undefined, head: LogHead | undefined): number | undefined;
}

/**
 * The run events of a run as a {@linkcode LogSource}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { Store } from "../store/types.ts";
 * import { runEventLog } from "./_run_feed.ts";
 * const store = { events: { list: () => Promise.resolve([]) } } as unknown as Store;
 * const log = runEventLog(store, "sesn_1");
 * assert.deepEqual(await log.read(0, 10), []);
 * assert.equal(log.lastOf(3, undefined), 3);
 * ```
 */
export function runEventLog(store: Store, runId: string): LogSource<RunEventEntry> {
  return {
    ...RUN_FRAMES,
    read: (after, limit) => store.events.list(runId, after, limit),
    lastOf: (last) => last,
  };
}

/** Options of {@linkcode RunFeed}. */
export interface RunFeedOptions<E extends Sequenced = RunEventEntry> {
  /** The store holding the log. */
  store: Store;
  /** The run. */
  runId: string;
  /** Which of the run's logs (default: its run events). */
  source?: LogSource<E>;
  /** The feed's key among the hub's feeds (default: the run id). */
  key?: string;
  /**
   * The seq the window starts after (default 0): a hint, such as the run record's `lastEventSeq`
   * less the window's length, so the first read skips the older entries.
   */
  startAfter?: number;
  /**
   * Most bytes of frames the window holds (default {@linkcode DEFAULT_WINDOW_BYTES}, 4 MiB); a
   * store read for a subscriber behind the window holds at most as much.
   */
  windowBytes?: number;
  /** Whether this replica's tail appends to the run now (default false; {@linkcode RunFeed.local}). */
  local?: boolean;
}

/** The shared reader of one run's log on this replica. */
export class RunFeed<E extends Sequenced = RunEventEntry> {
  readonly #store: Store;
  readonly runId: string;
  /** The feed's key among the hub's feeds: the run id, or another for another of its logs. */
  readonly key: string;
  readonly #source: LogSource<E>;
  /** The latest entries as frames. */
  readonly #window: FrameWindow<E>;
  readonly #windowBytes: number;
  #ready = false;
  #readyWaiters: (() => void)[] = [];
  #waiters = new Set<() => void>();
  #reading: Promise<void> | null = null;
  #again = false;
  #wakeAnyway = false;
  #stopped = false;
  #stopWatch: (() => void) | null = null;
  /** This replica's tail appends to the run now (see {@linkcode RunFeed.local}). */
  #local: boolean;
  #timer: ReturnType<typeof setInterval> | undefined;
  /** Streams and requests reading this feed. */
  #subscribers = 0;

  /** A feed of one run's log; it reads nothing until its first subscriber joins. */
  constructor(options: RunFeedOptions<E>) {
    this.#store = options.store;
    this.runId = options.runId;
    this.key = options.key ?? options.runId;
    this.#source = options.source ??
      runEventLog(options.store, options.runId) as unknown as LogSource<E>;
    this.#windowBytes = options.windowBytes ?? DEFAULT_WINDOW_BYTES;
    this.#window = new FrameWindow<E>(WINDOW, undefined, this.#windowBytes, this.#source);
    this.#window.reset(Math.max(options.startAfter ?? 0, 0));
    this.#local = options.local ?? false;
  }

  /** Whether the feed has read the log at least once. */
  get ready(): boolean {
    return this.#ready;
  }

  /** The seq of the window's last entry (or the seq it starts after, while empty). */
  get last(): number {
    return this.#window.last;
  }

  /** The bytes the window holds on to (what a lingering feed costs). */
  get byteLength(): number {
    return this.#window.byteLength;
  }

  /** A subscriber comes: the first one starts the watch and the poll, and reads what is new. */
  join(): void {
    this.#subscribers++;
    this.#resume();
  }

  /**
   * A subscriber goes (each {@linkcode RunFeed.join} is matched by one leave). Whether it was the
   * last: the watch and the poll are then stopped, and the window stays.
   */
  leave(): boolean {
    if (--this.#subscribers > 0) return false;
    this.#pause();
    return true;
  }

  /** The window's frames after `seq`: see {@linkcode FrameWindow.after}. */
  after(seq: number): FrameSlice | null {
    return this.#window.after(seq);
  }

  /** `prefix` and the frames after `seq` as one body: see {@linkcode FrameWindow.answer}. */
  answer(seq: number, prefix: string): string | null {
    return this.#window.answer(seq, prefix);
  }

  /** Whether the entry `seq` is terminal; undefined when the window does not hold it. */
  isTerminal(seq: number): boolean | undefined {
    return this.#window.isTerminal(seq);
  }

  /**
   * The log's entries after `seq` read from the store (one read, outside the window), as frames up
   * to the first terminal entry: how a subscriber resuming before the window catches up.
   */
  async readAfter(seq: number): Promise<FrameSlice> {
    // Never trimmed (the subscriber needs its first frames); filled up to the window's bytes.
    const page = new FrameWindow<E>(
      READ_BATCH,
      undefined,
      Number.POSITIVE_INFINITY,
      this.#source,
    );
    page.reset(seq);
    for (const entry of await this.#source.read(seq, READ_BATCH)) {
      page.append([entry]);
      if (page.usedBytes >= this.#windowBytes) break;
    }
    return page.after(seq)!;
  }

  /** Resolves once the first read ended (whether or not it succeeded). */
  firstRead(): Promise<void> {
    if (this.#ready || this.#stopped) return Promise.resolve();
    return new Promise((resolve) => this.#readyWaiters.push(resolve));
  }

  /**
   * Whether this replica's tail appends to the run now: its appends then reach the feed by
   * {@linkcode RunFeed.publish}, and the feed holds no store watch (the poll stays, for an append
   * of another replica that took the lease meanwhile; a publish after a gap reads the store too).
   * Why: the watch fired after each of the tail's own commits, before the publish of a state
   * change (which waits for the run record), and the read it made delivered the change before the
   * record showed it. And the firing was work for nothing otherwise (a store read per commit):
   * CPU per frame 1.96 against 2.15 ms on the JavaScript thread and 0.68 against 0.79 ms on
   * Deno KV's (medians of four alternating runs of `bench/events_bench.ts`; in five runs on an
   * earlier `main`, 1.76 against 1.78 ms: `bench/HISTORY.md`).
   */
  set local(local: boolean) {
    if (this.#local === local) return;
    this.#local = local;
    if (this.#timer === undefined) return; // not watching: no subscribers, or stopped
    if (local) {
      this.#stopWatch?.();
      this.#stopWatch = null;
    } else {
      this.#watch();
      this.refresh();
    }
  }

  /** Starts (again) watching and polling the store, and reads what the log gained meanwhile. */
  #resume(): void {
    if (this.#stopped || this.#timer !== undefined) return;
    if (!this.#local) this.#watch();
    this.#timer = setInterval(() => this.refresh(true), POLL_MS);
    this.refresh();
  }

  #watch(): void {
    this.#stopWatch = this.#store.events.watch(this.runId, (reported, head) => {
      // This replica's own appends fire the watch too, after their publish: nothing to read.
      const last = this.#source.lastOf(reported, head);
      if (this.#ready && last !== undefined && last <= this.#window.last) return;
      this.refresh();
    });
  }

  /** Stops watching and polling (no subscribers); the window stays. */
  #pause(): void {
    this.#stopWatch?.();
    this.#stopWatch = null;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Entries this replica just appended. Appended to the window when they follow its last entry
   * (those it holds already are skipped); after a gap, a watching feed reads the store.
   */
  publish(entries: readonly E[]): void {
    if (this.#stopped) return;
    if (this.#ready && this.#window.append(entries)) {
      this.#wake();
      return;
    }
    if (this.#timer !== undefined) this.refresh();
  }

  /**
   * Reads what the log gained since the window's last entry, then wakes the subscribers when the
   * read added entries (or, for the poll, `always`). A call during a read makes one more read
   * after it (the read under way may have started before the append).
   */
  refresh(always = false): Promise<void> {
    if (always) this.#wakeAnyway = true;
    if (this.#reading !== null) {
      this.#again = true;
      return this.#reading;
    }
    this.#reading = (async () => {
      do {
        this.#again = false;
        const wasReady = this.#ready;
        let found = false;
        try {
          found = await this.#read();
          this.#ready = true;
        } catch {
          // A store hiccup: the next wake-up or poll tries again.
        }
        const ready = this.#readyWaiters;
        this.#readyWaiters = [];
        for (const resolve of ready) resolve();
        if (this.#wakeAnyway || !wasReady || found) {
          this.#wakeAnyway = false;
          this.#wake();
        }
      } while (this.#again && !this.#stopped);
      this.#reading = null;
    })();
    return this.#reading;
  }

  /**
   * Appends what the log gained to the window. Whether the read itself changed the window:
   * entries a publish appended while it ran were woken for by that publish, and waking the
   * streams again for them cost each a turn for nothing.
   */
  async #read(): Promise<boolean> {
    let found = false;
    for (;;) {
      const page = await this.#source.read(this.#window.last, READ_BATCH);
      const last = this.#window.last;
      // Entries a publish appended meanwhile are skipped. A page starts right after the window
      // (the log has no gaps); were it not so, the window restarts there rather than loop (past
      // `last`, so the change counts as found).
      if (!this.#window.append(page)) {
        this.#window.reset(page[0].seq - 1);
        this.#window.append(page);
      }
      if (this.#window.last !== last) found = true;
      if (page.length < READ_BATCH) return found;
    }
  }

  #wake(): void {
    if (this.#waiters.size === 0) return;
    const waiters = this.#waiters;
    this.#waiters = new Set();
    for (const wake of waiters) wake();
  }

  /**
   * Calls `wake` once, at the window's next change (a publish, or a read that found entries), at
   * the next poll, or when the feed stops; {@linkcode RunFeed.forget} takes it back. A subscriber's
   * one pending wait is a function in a set rather than an `AbortSignal` listener: nothing to add
   * and remove per wait, and no `AbortController` per stream.
   */
  wait(wake: () => void): void {
    this.#waiters.add(wake);
  }

  /** Takes back a `wake` given to {@linkcode RunFeed.wait} that has not been called. */
  forget(wake: () => void): void {
    this.#waiters.delete(wake);
  }

  /** Stops for good: no watch, no poll, every waiter woken. */
  stop(): void {
    this.#stopped = true;
    this.#pause();
    this.#wake();
    const ready = this.#readyWaiters;
    this.#readyWaiters = [];
    for (const resolve of ready) resolve();
  }
}
