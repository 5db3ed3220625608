/**
 * A constant-memory JSON Lines reader: splits a byte stream on `\n` without ever holding more
 * than the current line and the current chunk, whatever the size of the whole body. Internal to
 * the batch results reader.
 *
 * @module
 */

/** One non-blank line of the body, or why it could not be read. */
export type JsonLine =
  | { lineNumber: number; text: string }
  | { lineNumber: number; problem: "invalidUtf8" | "lineTooLong"; bytes: number };

/** Options of {@linkcode readJsonLines}. */
export interface ReadJsonLinesOptions {
  /** Cancels the body; the iterator then throws the signal's reason. */
  signal?: AbortSignal;
  /** Longest line kept, in bytes; a longer one is reported and skipped. */
  maxLineBytes: number;
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const BLANK = /^[ \t\r]*$/;

function concat(pieces: Uint8Array[], total: number): Uint8Array {
  if (pieces.length === 1) return pieces[0];
  const out = new Uint8Array(total);
  let offset = 0;
  for (const piece of pieces) {
    out.set(piece, offset);
    offset += piece.length;
  }
  return out;
}

function isBlank(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte !== 0x20 && byte !== 0x09 && byte !== CARRIAGE_RETURN) return false;
  }
  return true;
}

/**
 * Yields the lines of a JSONL body with their 1-based line numbers, in batches: the lines
 * completed by each chunk read (batching keeps the per-line cost low). Blank lines are counted
 * but not yielded; a trailing `\r` is dropped; a last line without `\n` is still read. Lines
 * that are not UTF-8 or exceed `maxLineBytes` are yielded as problems, and reading goes on.
 */
export async function* readJsonLines(
  body: ReadableStream<Uint8Array>,
  options: ReadJsonLinesOptions,
): AsyncGenerator<JsonLine[], void, undefined> {
  const { signal, maxLineBytes } = options;
  signal?.throwIfAborted();
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
  let pieces: Uint8Array[] = [];
  let pending = 0;
  let overflow = false;
  let lineNumber = 0;
  const onAbort = (): void => {
    reader.cancel(signal?.reason).catch(() => {});
  };
  signal?.addEventListener("abort", onAbort, { once: true });

  // Ends the current line (its last piece given) and says what to yield, if anything.
  const finish = (last: Uint8Array): JsonLine | undefined => {
    lineNumber++;
    const total = pending + last.length;
    const wasOverflow = overflow;
    const line = wasOverflow || total > maxLineBytes ? undefined : concat([...pieces, last], total);
    pieces = [];
    pending = 0;
    overflow = false;
    if (line === undefined) return { lineNumber, problem: "lineTooLong", bytes: total };
    if (isBlank(line)) return undefined;
    const end = line[line.length - 1] === CARRIAGE_RETURN ? line.length - 1 : line.length;
    try {
      return { lineNumber, text: decoder.decode(line.subarray(0, end)) };
    } catch {
      return { lineNumber, problem: "invalidUtf8", bytes: total };
    }
  };

  // Fast path for the common case: the chunk's complete lines from `from` on, decoded in one call.
  // Returns where the per-line path goes on (`from` itself when the bytes are not valid UTF-8).
  const bulk = (value: Uint8Array, from: number, batch: JsonLine[]): number => {
    const last = value.lastIndexOf(NEWLINE);
    if (last <= from || last - from > maxLineBytes) return from;
    let text: string;
    try {
      text = decoder.decode(value.subarray(from, last));
    } catch {
      return from;
    }
    for (const raw of text.split("\n")) {
      lineNumber++;
      const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
      if (line === "" || (line.charCodeAt(0) <= 0x20 && BLANK.test(line))) continue;
      batch.push({ lineNumber, text: line });
    }
    return last + 1;
  };

  let finished = false;
  try {
    while (true) {
      const { value, done } = await reader.read();
      signal?.throwIfAborted();
      if (done) break;
      const batch: JsonLine[] = [];
      let start = 0;
      if (pending > 0 || overflow) {
        // The line started in an earlier chunk: end it on the per-line path first.
        const newline = value.indexOf(NEWLINE);
        if (newline !== -1) {
          const line = finish(value.subarray(0, newline));
          if (line) batch.push(line);
          start = newline + 1;
        }
      }
      if (pending === 0 && !overflow) start = bulk(value, start, batch);
      while (start <= value.length) {
        const newline = value.indexOf(NEWLINE, start);
        if (newline === -1) {
          const rest = value.subarray(start);
          if (rest.length > 0) {
            if (overflow || pending + rest.length > maxLineBytes) {
              // Keep counting the line's size, but drop its bytes.
              overflow = true;
              pieces = [];
            } else {
              pieces.push(rest);
            }
            pending += rest.length;
          }
          break;
        }
        const line = finish(value.subarray(start, newline));
        if (line) batch.push(line);
        start = newline + 1;
      }
      if (batch.length > 0) yield batch;
    }
    if (pending > 0 || overflow) {
      const line = finish(new Uint8Array(0));
      if (line) yield [line];
    }
    finished = true;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
