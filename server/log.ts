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
   * loop are written together when it ends (no timer: the first timer of a process loads Deno's
   * timer module, 10 to 25 ms, which would delay the first answer); 0 writes each at once.
   */
  batchMs?: number;
  /** Clock for the `time` field (default `Date.now`). */
  now?: () => number;
}

const encoder = new TextEncoder();
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** JSON string literal of a value; plain ASCII (ids, paths, methods) skips the generic path. */
function quote(value: string | null): string {
  if (value === null) return "null";
  return PLAIN.test(value) ? `"${value}"` : JSON.stringify(value);
}

function writeStderr(text: string): void {
  const bytes = encoder.encode(text);
  let written = 0;
  while (written < bytes.length) written += Deno.stderr.writeSync(bytes.subarray(written));
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
  const write = options.write ?? writeStderr;
  const batchMs = options.batchMs ?? 10;
  const now = options.now ?? Date.now;
  let pending = "";
  let scheduled = false;

  function flush(): void {
    scheduled = false;
    if (pending === "") return;
    const text = pending;
    pending = "";
    try {
      write(text);
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
      pending += `{"time":"${time()}","level":"info","msg":"request","method":` +
        `${quote(record.method)},"path":${quote(record.path)},"status":${record.status},` +
        `"durationMs":${Math.round(record.durationMs * 1000) / 1000},"correlationId":` +
        `${quote(record.correlationId)},"principalId":${quote(record.principalId)}}\n`;
      if (batchMs <= 0) {
        flush();
      } else if (!scheduled) {
        scheduled = true;
        queueMicrotask(flush);
      }
    },
    info(message: string, fields?: LogFields): void {
      pending += line("info", message, fields);
      flush();
    },
    error(message: string, fields?: LogFields): void {
      pending += line("error", message, fields);
      flush();
    },
    flush,
  };
}
