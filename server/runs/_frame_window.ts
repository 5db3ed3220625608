/**
 * The SSE frames of a run's latest log entries, kept as bytes ready to send.
 *
 * All frames sit in one contiguous append-only byte buffer with a seq → offset index, so the
 * backlog after any seq in the window is one `subarray` of it (no copy), and the frame of an entry
 * is encoded once for every subscriber. Bytes once written are never changed: growing or trimming
 * the window copies into a new buffer, so a slice handed to a stream (still queued for the socket)
 * stays intact.
 *
 * A frame is whatever the log's {@linkcode FrameCodec} makes of an entry: for the run events
 * (the default) `id: <seq>\nevent: <type>\ndata: <JSON of the public event>\n\n`; the native log
 * has its own (`native_event.ts`). The window only needs an entry's `seq`.
 *
 * Speed tricks (all here; 1 to 4 measured on the 2-core development machine, under load):
 *
 * 1. One buffer, one `subarray` per backlog: no per-subscriber join of per-frame arrays (the join
 *    this replaces showed as 47 ms of self time in a `--cpu-prof` of `bench/events_bench.ts
 *    --quick`).
 * 2. `encodeInto` straight into the buffer: 663 frames encode in about 0.15 to 0.19 ms, against
 *    0.54 to 0.60 ms encoding each frame to its own array and joining them (a micro-benchmark of
 *    the bench's log shape).
 * 3. Terminal entries are indexed apart (`#terminals`): finding where an answer ends walks the few
 *    turn ends, not the window's up to 1,250 entries, on every request.
 * 4. Complete answers are kept by resume point ({@linkcode FrameWindow.answer}): subscribers
 *    replaying the same finished turn share one body. In a profile of the bench, building each
 *    answer took 254 ms of self time, about as much as `Response`'s own copy (294 ms); with
 *    answers kept it no longer shows, and the bench's ratio to the peer at 100 subscribers went
 *    from 0.50 to 0.58 (one run each). A kept answer is a string, not bytes: `Response` copies a
 *    byte body into a new buffer on the JavaScript heap (garbage for the collector, once per
 *    request), while Deno hands a string body to its HTTP layer, which encodes it outside the
 *    heap. A `Deno.serve` answering a 97 KB SSE body 500 times spent 48 to 57 µs of its
 *    JavaScript thread per request with bytes, 35 to 39 µs with the same text (a
 *    micro-benchmark, three rounds each); the bench's delivery at 100 subscribers went from 0.65
 *    to 0.83 of the peer (medians of three alternating runs).
 * 5. The last slice handed out is kept until the window changes ({@linkcode FrameWindow.after}):
 *    the subscribers of a live run all stand at the same seq when a frame comes, so the first
 *    one's slice (an object and a `subarray` view) serves the other 99 of the bench's 100, where
 *    each allocated its own before. Not measured apart: it removes two allocations per
 *    subscriber and frame, in a bench whose garbage collection is mostly the web streams' own.
 *
 * @module
 */
import type { RunEventEntry } from "../store/types.ts";
import { eventFrame, isTerminalEntry } from "./public_event.ts";

/** An entry with its place in its log (1, 2, 3 … without gaps). */
export interface Sequenced {
  /** Its place in the log. */
  readonly seq: number;
}

/** How a log's entries become SSE frames, and which ones end a stream. */
export interface FrameCodec<E extends Sequenced> {
  /** The frame of an entry, with the blank line that ends it. */
  frame(entry: E): string;
  /** Whether a stream ends after this entry. */
  terminal(entry: E): boolean;
}

/** The frames of the run events: `public_event.ts`. */
export const RUN_FRAMES: FrameCodec<RunEventEntry> = Object.freeze({
  frame: eventFrame,
  terminal: isTerminalEntry,
});

const ENCODER = new TextEncoder();
const DECODER = new TextDecoder();
/** A character past ASCII. */
const PAST_ASCII = /[\u0080-\uffff]/;

/** Complete answers kept per window (resume points: most replay from 0 or one turn's start). */
const MAX_ANSWERS = 4;
/** First buffer size: 64 KiB holds a few hundred typical frames. */
const INITIAL_BYTES = 64 * 1024;
/**
 * Default bytes of frames a window holds (4 MiB). Past it the oldest frames go, down to four
 * fifths of it, so trimming copies once per fifth of the bound, not on each append; the newest
 * frame always stays. The kept answers hold at most as much again.
 */
export const DEFAULT_WINDOW_BYTES = 4 * 1024 * 1024;

/**
 * The frames after a seq, up to and including the first terminal entry: read it, never change it
 * (it is shared between the subscribers that asked for the same seq).
 */
export interface FrameSlice {
  /** The frames, back to back (a view of the window's buffer: never write to it). */
  readonly bytes: Uint8Array;
  /** The seq of the last frame in `bytes` (the `after` given when `bytes` is empty). */
  readonly last: number;
  /** Whether the last frame is a terminal entry (the stream ends there). */
  readonly terminal: boolean;
}

/**
 * Up to `max` of a run's latest entries as SSE frames (it may briefly hold a quarter more, so
 * trimming copies once per `max / 4` appends, not on each), and at most `maxBytes` of them (see
 * {@linkcode DEFAULT_WINDOW_BYTES}): a window's memory is bounded by bytes, not only by count,
 * however large the run's events are. Its buffer is at most about twice the frames it holds.
 */
export class FrameWindow<E extends Sequenced = RunEventEntry> {
  readonly #max: number;
  readonly #maxBytes: number;
  readonly #codec: FrameCodec<E>;
  #buffer: Uint8Array;
  /** `#offsets[i]` is where frame i starts; `#offsets[count]` is where the next one goes. */
  #offsets: number[] = [0];
  /** Indexes of terminal frames, ascending. */
  #terminals: number[] = [];
  /** The seq of frame 0 (the next entry's seq while the window is empty). */
  #first = 1;
  /** Complete answers by resume point (see {@linkcode FrameWindow.answer}), at most a few. */
  #answers = new Map<number, { text: string; bytes: number }>();
  #answerBytes = 0;
  /** The last slice {@linkcode FrameWindow.after} made, until the window changes. */
  #slice: FrameSlice | null = null;
  /** The `after` that `#slice` answers. */
  #sliceAfter = 0;

  /**
   * A window of at most about `max` entries and `maxBytes` bytes of frames, framed by `codec`
   * (default: the run events').
   */
  constructor(
    max: number,
    initialBytes: number = INITIAL_BYTES,
    maxBytes: number = DEFAULT_WINDOW_BYTES,
    codec: FrameCodec<E> = RUN_FRAMES as unknown as FrameCodec<E>,
  ) {
    this.#max = max;
    this.#maxBytes = maxBytes;
    this.#codec = codec;
    this.#buffer = new Uint8Array(Math.min(initialBytes, Math.max(maxBytes, 1024)));
  }

  /** Entries held. */
  get count(): number {
    return this.#offsets.length - 1;
  }

  /** The seq of the last entry appended (or the seq the window starts after, while empty). */
  get last(): number {
    return this.#first + this.count - 1;
  }

  /** The bytes of the frames held (the buffer may be larger). */
  get usedBytes(): number {
    return this.#offsets[this.#offsets.length - 1] - this.#offsets[0];
  }

  /** The bytes the window holds on to (its buffer, index and kept answers). */
  get byteLength(): number {
    return this.#buffer.byteLength + 8 * (this.#offsets.length + this.#terminals.length) +
      this.#answerBytes;
  }

  /** Empties the window; the next entry it takes is `after + 1`. */
  reset(after: number): void {
    this.#offsets = [0];
    this.#terminals = [];
    this.#first = after + 1;
    this.#answers.clear();
    this.#answerBytes = 0;
    this.#slice = null;
  }

  /**
   * Appends entries in seq order. Entries it holds already are skipped (so a store read and a
   * publish racing over the same entries append each once); it stops at a gap (an entry past
   * `last + 1`) and returns false: the caller reads the store instead.
   */
  append(entries: readonly E[]): boolean {
    for (const entry of entries) {
      const next = this.last + 1;
      if (entry.seq < next) continue;
      if (entry.seq > next) return false;
      this.#appendOne(entry);
    }
    if (this.count > this.#max + (this.#max >> 2)) this.#trim();
    if (this.usedBytes > this.#maxBytes) this.#trimBytes();
    return true;
  }

  #appendOne(entry: E): void {
    const text = this.#codec.frame(entry);
    this.#slice = null;
    let at = this.#offsets[this.#offsets.length - 1];
    // At most 3 bytes per UTF-16 unit: make room for the worst case before encoding in place.
    if (at + text.length * 3 > this.#buffer.length) {
      this.#move(0, Math.max(this.#buffer.length * 2, at + text.length * 3));
      at = this.#offsets[this.#offsets.length - 1];
    }
    at += ENCODER.encodeInto(text, this.#buffer.subarray(at)).written;
    if (this.#codec.terminal(entry)) this.#terminals.push(this.count);
    this.#offsets.push(at);
  }

  /** Keeps the latest `max` entries. */
  #trim(): void {
    this.#keepFrom(this.count - this.#max);
  }

  /** Keeps the latest entries that fit four fifths of `maxBytes` (at least the newest). */
  #trimBytes(): void {
    const end = this.#offsets[this.#offsets.length - 1];
    const target = this.#maxBytes - this.#maxBytes / 5;
    let drop = 0;
    while (drop < this.count - 1 && end - this.#offsets[drop] > target) drop++;
    this.#keepFrom(drop);
  }

  /** Drops the frames before frame `drop`, into a buffer about twice what stays. */
  #keepFrom(drop: number): void {
    if (drop <= 0) return;
    const used = this.#offsets[this.#offsets.length - 1] - this.#offsets[drop];
    this.#move(drop, Math.max(Math.min(INITIAL_BYTES, this.#maxBytes), used * 2));
  }

  /**
   * Copies frames `from`… into a new buffer of `size` bytes. Never in place: slices of the old
   * buffer may still be queued for a socket.
   */
  #move(from: number, size: number): void {
    const start = this.#offsets[from];
    const end = this.#offsets[this.#offsets.length - 1];
    const buffer = new Uint8Array(size);
    buffer.set(this.#buffer.subarray(start, end));
    this.#buffer = buffer;
    this.#slice = null;
    if (from > 0) {
      this.#answers.clear();
      this.#answerBytes = 0;
      this.#offsets = this.#offsets.slice(from);
      this.#terminals = this.#terminals.filter((index) => index >= from).map((i) => i - from);
      this.#first += from;
    }
    if (start > 0) { for (let i = 0; i < this.#offsets.length; i++) this.#offsets[i] -= start; }
  }

  /**
   * Whether the entry `seq` is terminal; undefined when the window does not hold it.
   */
  isTerminal(seq: number): boolean | undefined {
    const index = seq - this.#first;
    if (index < 0 || index >= this.count) return undefined;
    for (const terminal of this.#terminals) {
      if (terminal === index) return true;
      if (terminal > index) break;
    }
    return false;
  }

  /**
   * The frames after `after`, up to and including the first terminal entry (no bytes when
   * `after` is at or past the last entry); null when `after` lies before the window (read the
   * store instead). Asking again for the same `after` before the window changes returns the same
   * slice (speed trick 5).
   */
  after(after: number): FrameSlice | null {
    const kept = this.#slice;
    if (kept !== null && this.#sliceAfter === after) return kept;
    const from = after - this.#first + 1;
    if (from < 0) return null;
    const count = this.count;
    let slice: FrameSlice;
    if (from >= count) {
      slice = { bytes: this.#buffer.subarray(0, 0), last: after, terminal: false };
    } else {
      let to = count;
      let terminal = false;
      for (const index of this.#terminals) {
        if (index >= from) {
          to = index + 1;
          terminal = true;
          break;
        }
      }
      slice = {
        bytes: this.#buffer.subarray(this.#offsets[from], this.#offsets[to]),
        last: this.#first + to - 1,
        terminal,
      };
    }
    this.#slice = slice;
    this.#sliceAfter = after;
    return slice;
  }

  /**
   * `prefix` and the frames after `after` up to and including the first terminal entry, as one
   * body (text: speed trick 4), when the window holds all of them (null otherwise). Log entries
   * never change, so a kept answer stays right; the last {@linkcode MAX_ANSWERS} are kept,
   * counted as V8 holds them: an ASCII body at one byte a character, any other at two (what a
   * string holding any character past Latin-1 takes).
   */
  answer(after: number, prefix: string): string | null {
    const kept = this.#answers.get(after);
    if (kept !== undefined) return kept.text;
    const slice = this.after(after);
    if (slice === null || !slice.terminal) return null;
    // The window's bytes are what `encodeInto` wrote: valid UTF-8, decoded back exactly.
    const decoded = DECODER.decode(slice.bytes);
    const body = prefix + decoded;
    // As many characters as UTF-8 bytes: every one ASCII.
    const oneByte = decoded.length === slice.bytes.length && !PAST_ASCII.test(prefix);
    const bytes = oneByte ? body.length : 2 * body.length;
    // Kept answers hold at most `maxBytes` together: one that alone is larger is not kept.
    if (bytes > this.#maxBytes) return body;
    while (this.#answers.size >= MAX_ANSWERS || this.#answerBytes + bytes > this.#maxBytes) {
      const [oldest, answer] = this.#answers.entries().next().value!;
      this.#answers.delete(oldest);
      this.#answerBytes -= answer.bytes;
    }
    this.#answers.set(after, { text: body, bytes });
    this.#answerBytes += bytes;
    return body;
  }
}
