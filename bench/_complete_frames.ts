/**
 * The complete SSE frames of a byte stream, as the relays of the benchmarks read them.
 *
 * @module
 */

/**
 * Reads `reader` to its end, yielding the text of the complete frames each read finished (every
 * frame whole, with its blank line); a frame cut across reads waits for the read that ends it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { completeFrames } from "./_complete_frames.ts";
 * const bytes = new TextEncoder().encode("data: 1\n\ndata: 2\n\nda");
 * const reader = new Blob([bytes, new TextEncoder().encode("ta: 3\n\n")]).stream().getReader();
 * const texts: string[] = [];
 * for await (const text of completeFrames(reader)) texts.push(text);
 * assert.equal(texts.join(""), "data: 1\n\ndata: 2\n\ndata: 3\n\n");
 * ```
 */
export async function* completeFrames(
  reader: ReadableStreamDefaultReader<Uint8Array>,
): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    text += decoder.decode(value, { stream: true });
    const end = text.lastIndexOf("\n\n");
    if (end === -1) continue;
    yield text.slice(0, end + 2);
    text = text.slice(end + 2);
  }
}
