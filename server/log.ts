/**
 * Structured log lines: one JSON object a line on stderr. Request lines carry the time, method,
 * path without query, status, duration, correlation id and principal id, and nothing else: no
 * bearer, no header value, no body.
 *
 * @module
 */

/** One request line. */
export interface RequestLogRecord {
  /** HTTP method. */
  method: string;
  /** Path without the query string. */
  path: string;
  /** Response status. */
  status: number;
  /** Time to the response, in milliseconds. */
  durationMs: number;
  /** The request's correlation id (or the generated one), or null. */
  correlationId: string | null;
  /** The authenticated principal, or null. */
  principalId: string | null;
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
/**
 * JSON string literal of a value; printable ASCII without `"` and `\` (ids, paths, methods)
 * needs no escaping, so it skips the generic path.
 */
function quote(value: string | null): string {
  if (value === null) return "null";
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) return JSON.stringify(value);
  }
  return `"${value}"`;
}

function writeStderr(bytes: Uint8Array): void {
  let written = 0;
  while (written < bytes.length) written += Deno.stderr.writeSync(bytes.subarray(written));
}

const INITIAL_PENDING_BYTES = 64 * 1024;
/** A buffer a burst made larger than this is dropped once written. */
const KEPT_PENDING_BYTES = 1024 * 1024;

/**
 * Lines waiting for the next write, as UTF-8 bytes outside the JavaScript heap. Each line is
 * encoded as it is logged, so its string dies young: a batch kept as one growing string would
 * survive every young-generation collection until it is written, and V8 answers survivors by
 * growing the young generation, which made every collection of a busy server slower.
 */
class PendingLines {
  #bytes = new Uint8Array(INITIAL_PENDING_BYTES);
  #length = 0;

  get empty(): boolean {
    return this.#length === 0;
  }

  append(line: string): void {
    // n UTF-16 code units take at most 3n bytes of UTF-8.
    const needed = this.#length + line.length * 3;
    if (needed > this.#bytes.length) {
      const grown = new Uint8Array(Math.max(needed, this.#bytes.length * 2));
      grown.set(this.#bytes.subarray(0, this.#length));
      this.#bytes = grown;
    }
    this.#length += encoder.encodeInto(line, this.#bytes.subarray(this.#length)).written;
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

/**
 * Creates the JSON-lines logger. Request lines are batched per turn of the event loop so that
 * the hot path does not pay a write per request; lifecycle lines are written at once.
 *
 * @example
 * ```ts
 * import { createJsonLogger } from "./log.ts";
 * const lines: string[] = [];
 * const logger = createJsonLogger({ write: (text) => lines.push(text), batchMs: 0 });
 * logger.info("listening", { url: "http://127.0.0.1:7777" });
 * console.log(JSON.parse(lines[0]).msg); // "listening"
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
        if (fields[name] !== undefined) entry[name] = fields[name];
      }
    }
    return JSON.stringify(entry) + "\n";
  }

  // The time text is rebuilt at most once a millisecond.
  let clockMs = Number.NaN;
  let clockText = "";
  function time(): string {
    const ms = now();
    if (ms !== clockMs) {
      clockMs = ms;
      clockText = new Date(ms).toISOString();
    }
    return clockText;
  }

  return {
    request(record: RequestLogRecord): void {
      pending.append(
        `{"time":"${time()}","level":"info","msg":"request","method":` +
          `${quote(record.method)},"path":${quote(record.path)},"status":${record.status},` +
          `"durationMs":${Math.round(record.durationMs * 1000) / 1000},"correlationId":` +
          `${quote(record.correlationId)},"principalId":${quote(record.principalId)}}\n`,
      );
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
