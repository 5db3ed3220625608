/**
 * Structured log lines: one JSON object a line on stderr. Request lines carry the time, method,
 * path without query, status, duration, correlation id and principal id, and nothing else: no
 * bearer, no header value, no body. What a request controls is cut to a bound ({@linkcode
 * boundedField}): its method to 32 characters, its path to 256, any other text field of a line to
 * 1,024.
 *
 * @module
 */

/**
 * One request line. The server hands its method and path over cut to {@linkcode
 * MAX_LOGGED_METHOD} and {@linkcode MAX_LOGGED_PATH} characters ({@linkcode boundedField}).
 */
export interface RequestLogRecord {
  /** HTTP method, at most {@linkcode MAX_LOGGED_METHOD} characters. */
  method: string;
  /** Path without the query string, at most {@linkcode MAX_LOGGED_PATH} characters. */
  path: string;
  /** Response status. */
  status: number;
  /** Time to the response, in milliseconds. */
  durationMs: number;
  /** The request's correlation id (or the generated one), or null. */
  correlationId: string | null;
  /** The authenticated principal, or null. */
  principalId: string | null;
  /**
   * When the answer was made, ms since the epoch (default: the logger's clock, read then). The
   * server passes its arrival time plus the duration, which saves a clock read per request.
   */
  time?: number;
}

/** Longest HTTP method a log line carries, in characters; a longer one is cut. */
export const MAX_LOGGED_METHOD = 32;
/** Longest path a request line carries, in characters; a longer one is cut. */
export const MAX_LOGGED_PATH = 256;
/** Longest text value of any other field of a line, in characters; a longer one is cut. */
export const MAX_LOGGED_TEXT = 1024;

/**
 * `text` cut to `max` characters, with `…` in place of what was cut: how every field a request
 * controls (its method, its path) enters a log line, so that no request makes a long line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { boundedField } from "./log.ts";
 * assert.equal(boundedField("GET", 32), "GET");
 * assert.equal(boundedField("X".repeat(60_000), 32).length, 32);
 * ```
 */
export function boundedField(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Fields of a lifecycle line; values must never be secrets. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

/** Where the service writes its log lines. */
export interface RuntimeLogger {
  /** Logs one finished request. */
  request(record: RequestLogRecord): void;
  /** Logs a lifecycle event (startup, shutdown) at level `info`. */
  info(message: string, fields?: LogFields): void;
  /** Logs a failure at level `error`. */
  error(message: string, fields?: LogFields): void;
  /** Writes out anything buffered. */
  flush(): void;
}

/** Options of {@linkcode createJsonLogger}. */
export interface JsonLoggerOptions {
  /** Receives batches of complete lines, each ending in `\n` (default: stderr). */
  write?: (text: string) => void;
  /**
   * Batching of request lines: above 0 (the default, 10) the lines of one turn of the event
   * loop are written together when it ends; once lines come faster than one turn a millisecond
   * (a server under load), those of up to `batchMs` ms are written together. 0 writes each at
   * once. The first answers of a process never wait for a timer: the first timer loads Deno's
   * timer module (several ms), so timers are used only once the load has begun.
   */
  batchMs?: number;
  /** Clock for the `time` field (default `Date.now`). */
  now?: () => number;
}

const encoder = new TextEncoder();

function writeStderr(bytes: Uint8Array): void {
  let written = 0;
  while (written < bytes.length) written += Deno.stderr.writeSync(bytes.subarray(written));
}

const INITIAL_PENDING_BYTES = 64 * 1024;
/** A buffer a burst made larger than this is dropped once written. */
const KEPT_PENDING_BYTES = 1024 * 1024;
/** The most UTF-8 bytes one UTF-16 code unit of a JSON string literal can take (`\u001f`). */
const MAX_BYTES_PER_UNIT = 6;

/**
 * Lines waiting for the next write, as UTF-8 bytes outside the JavaScript heap. Request lines
 * are written into the bytes field by field, so a busy server builds no line string at all: a
 * batch kept as one growing string would survive every young-generation collection until it is
 * written, and V8 answers survivors by growing the young generation, which made every
 * collection of a busy server slower.
 */
class PendingLines {
  #bytes = new Uint8Array(INITIAL_PENDING_BYTES);
  #length = 0;

  get empty(): boolean {
    return this.#length === 0;
  }

  /** Makes room for `count` more bytes. */
  reserve(count: number): void {
    const needed = this.#length + count;
    if (needed > this.#bytes.length) {
      const grown = new Uint8Array(Math.max(needed, this.#bytes.length * 2));
      grown.set(this.#bytes.subarray(0, this.#length));
      this.#bytes = grown;
    }
  }

  /** Appends a line of any text. */
  append(line: string): void {
    // n UTF-16 code units take at most 3n bytes of UTF-8.
    this.reserve(line.length * 3);
    this.#length += encoder.encodeInto(line, this.#bytes.subarray(this.#length)).written;
  }

  /** Appends bytes; room must be reserved. */
  bytes(bytes: Uint8Array): void {
    this.#bytes.set(bytes, this.#length);
    this.#length += bytes.length;
  }

  /**
   * Appends a number as `String` would write it. A whole number of thousandths from 0 to 2^31
   * (a status, a duration rounded to microseconds) is written digit by digit with no string made:
   * -40 ns a line against `String` twice (a loop, 2-core development machine). Anything else goes
   * through `String`. Room must be reserved.
   */
  number(value: number): void {
    const thousandths = Math.round(value * 1000);
    if (!(thousandths >= 0 && thousandths < 0x8000_0000 && thousandths / 1000 === value)) {
      this.ascii(String(value));
      return;
    }
    const bytes = this.#bytes;
    let at = this.#length;
    const whole = Math.floor(thousandths / 1000);
    let digits = 1;
    for (let bound = 10; whole >= bound; bound *= 10) digits++;
    at += digits;
    for (let rest = whole, i = at - 1; i >= at - digits; i--) {
      bytes[i] = 0x30 + rest % 10;
      rest = Math.floor(rest / 10);
    }
    const fraction = thousandths - whole * 1000;
    if (fraction !== 0) {
      bytes[at++] = 0x2e;
      bytes[at++] = 0x30 + Math.floor(fraction / 100);
      if (fraction % 100 !== 0) {
        bytes[at++] = 0x30 + Math.floor(fraction / 10) % 10;
        if (fraction % 10 !== 0) bytes[at++] = 0x30 + fraction % 10;
      }
    }
    this.#length = at;
  }

  /** Appends text known to be ASCII (constants, numbers, timestamps); room must be reserved. */
  ascii(text: string): void {
    const bytes = this.#bytes;
    let at = this.#length;
    for (let i = 0; i < text.length; i++) bytes[at++] = text.charCodeAt(i);
    this.#length = at;
  }

  /**
   * Appends `value` as a JSON string literal, or `null`; room must be reserved
   * ({@linkcode MAX_BYTES_PER_UNIT} a code unit, plus 2). Printable ASCII without `"` and `\`
   * (ids, paths, methods) is copied as it is; anything else goes through `JSON.stringify`.
   */
  json(value: string | null): void {
    if (value === null) {
      this.ascii("null");
      return;
    }
    const bytes = this.#bytes;
    let at = this.#length;
    bytes[at++] = 0x22;
    for (let i = 0; i < value.length; i++) {
      const code = value.charCodeAt(i);
      if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) {
        const rest = bytes.subarray(this.#length);
        this.#length += encoder.encodeInto(JSON.stringify(value), rest).written;
        return;
      }
      bytes[at++] = code;
    }
    bytes[at++] = 0x22;
    this.#length = at;
  }

  /** The pending bytes, valid until the next append; the buffer is then empty. */
  take(): Uint8Array {
    const taken = this.#bytes.subarray(0, this.#length);
    this.#length = 0;
    if (this.#bytes.length > KEPT_PENDING_BYTES) {
      this.#bytes = new Uint8Array(INITIAL_PENDING_BYTES);
    }
    return taken;
  }
}

/** Room for a request line's constant text, its timestamp and its two numbers. */
const REQUEST_LINE_FIXED_BYTES = 256;

/**
 * Creates the JSON-lines logger. Request lines are batched per turn of the event loop so that
 * the hot path does not pay a write per request; lifecycle lines are written at once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createJsonLogger } from "./log.ts";
 * const lines: string[] = [];
 * const logger = createJsonLogger({ write: (text) => lines.push(text), batchMs: 0 });
 * logger.info("listening", { url: "http://127.0.0.1:7777" });
 * assert.equal(JSON.parse(lines[0]).msg, "listening");
 * ```
 */
export function createJsonLogger(options: JsonLoggerOptions = {}): RuntimeLogger {
  const writeText = options.write;
  const decoder = new TextDecoder();
  const write = writeText === undefined
    ? writeStderr
    : (bytes: Uint8Array) => writeText(decoder.decode(bytes));
  const batchMs = options.batchMs ?? 10;
  const now = options.now ?? Date.now;
  const pending = new PendingLines();
  let scheduled = false;
  // Under load every request would otherwise end its own turn of the event loop with a write.
  let underLoad = false;
  let lastFlushMs = Number.NaN;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function flushTurn(): void {
    lastFlushMs = clockMs;
    flush();
  }

  function schedule(): void {
    scheduled = true;
    if (!underLoad && clockMs === lastFlushMs) underLoad = true;
    if (underLoad) {
      const id = setTimeout(flush, batchMs);
      // Pending lines never hold the process open; closing the server flushes them.
      Deno.unrefTimer(id);
      timer = id;
    } else {
      queueMicrotask(flushTurn);
    }
  }

  function flush(): void {
    scheduled = false;
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (pending.empty) return;
    try {
      write(pending.take());
    } catch {
      // A closed stderr must not take requests down with it.
    }
  }

  function line(level: string, message: string, fields?: LogFields): string {
    const entry: Record<string, unknown> = {
      time: new Date(now()).toISOString(),
      level,
      msg: message,
    };
    if (fields !== undefined) {
      for (const name in fields) {
        const value = fields[name];
        if (value === undefined) continue;
        entry[name] = typeof value === "string" ? boundedField(value, MAX_LOGGED_TEXT) : value;
      }
    }
    return JSON.stringify(entry) + "\n";
  }

  // A request line's opening, up to its method: rebuilt at most once a millisecond, then copied
  // in one `set` (-100 ns a line against writing it character by character, in a loop).
  let clockMs = Number.NaN;
  let opening = new Uint8Array(0);
  function openingAt(time: number): Uint8Array {
    // A `Date` holds whole milliseconds: so does the key.
    const ms = Math.floor(time);
    if (ms !== clockMs) {
      clockMs = ms;
      opening = encoder.encode(
        `{"time":"${new Date(ms).toISOString()}","level":"info","msg":"request","method":`,
      );
    }
    return opening;
  }

  return {
    request(record: RequestLogRecord): void {
      const { method, path, correlationId, principalId } = record;
      pending.reserve(
        REQUEST_LINE_FIXED_BYTES + MAX_BYTES_PER_UNIT * (method.length + path.length +
              (correlationId?.length ?? 0) + (principalId?.length ?? 0)),
      );
      pending.bytes(openingAt(record.time ?? now()));
      pending.json(method);
      pending.ascii(',"path":');
      pending.json(path);
      pending.ascii(',"status":');
      pending.number(record.status);
      pending.ascii(',"durationMs":');
      pending.number(Math.round(record.durationMs * 1000) / 1000);
      pending.ascii(',"correlationId":');
      pending.json(correlationId);
      pending.ascii(',"principalId":');
      pending.json(principalId);
      pending.ascii("}\n");
      if (batchMs <= 0) {
        flush();
      } else if (!scheduled) {
        schedule();
      }
    },
    info(message: string, fields?: LogFields): void {
      pending.append(line("info", message, fields));
      flush();
    },
    error(message: string, fields?: LogFields): void {
      pending.append(line("error", message, fields));
      flush();
    },
    flush,
  };
}
