/**
 * Standard input for the CLI: a message piped in, or a secret typed without echo.
 *
 * @module
 */
import { printErr } from "./_output.ts";

/**
 * Reads standard input to its end as UTF-8, at most `maxBytes` bytes; more is an error (the
 * caller's data is never cut silently). Returns "" for an empty input.
 *
 * @example
 * ```ts ignore
 * import { readStdinText } from "./_stdin.ts";
 * const message = await readStdinText(1024 * 1024);
 * ```
 */
export async function readStdinText(maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const buffer = new Uint8Array(64 * 1024);
  while (true) {
    const read = await Deno.stdin.read(buffer);
    if (read === null) break;
    total += read;
    if (total > maxBytes) throw new Error(`Standard input is larger than ${maxBytes} bytes`);
    chunks.push(buffer.slice(0, read));
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new Error("Standard input is not UTF-8 text");
  }
}

/** Largest secret accepted on standard input, in bytes. */
const MAX_SECRET_BYTES = 16 * 1024;

/**
 * Reads one secret line from standard input. On a terminal the prompt goes to stderr and the
 * typed characters are not echoed (raw mode, restored afterwards, also on Ctrl-C); from a pipe
 * or file the whole input is read and one trailing line break removed. The secret is never
 * written anywhere.
 *
 * @example
 * ```ts ignore
 * import { readSecretFromStdin } from "./_stdin.ts";
 * const key = await readSecretFromStdin("Provider API key: ");
 * ```
 */
export async function readSecretFromStdin(prompt: string): Promise<string> {
  if (!Deno.stdin.isTerminal()) {
    const text = await readStdinText(MAX_SECRET_BYTES);
    return text.replace(/\r?\n$/, "");
  }
  // Raw mode before the prompt: nothing typed after the prompt appears can be echoed.
  Deno.stdin.setRaw(true);
  try {
    Deno.stderr.writeSync(new TextEncoder().encode(prompt));
    return await readHiddenLine();
  } finally {
    Deno.stdin.setRaw(false);
    printErr("");
  }
}

async function readHiddenLine(): Promise<string> {
  const bytes: number[] = [];
  const buffer = new Uint8Array(256);
  while (true) {
    const read = await Deno.stdin.read(buffer);
    if (read === null) break;
    for (const byte of buffer.subarray(0, read)) {
      if (byte === 0x0d || byte === 0x0a) return decodeSecret(bytes);
      if (byte === 0x03) throw new Error("Cancelled");
      if (byte === 0x04 && bytes.length === 0) return "";
      if (byte === 0x7f || byte === 0x08) {
        bytes.pop();
        continue;
      }
      if (bytes.length >= MAX_SECRET_BYTES) throw new Error("The input is too long");
      bytes.push(byte);
    }
  }
  return decodeSecret(bytes);
}

function decodeSecret(bytes: number[]): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(bytes));
  } catch {
    throw new Error("The input is not UTF-8 text");
  }
}
