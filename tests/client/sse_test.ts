/**
 * The one SSE reader (`readSse`): WHATWG event-stream rules, and the same events whatever the
 * chunking (one byte at a time, every split point, random partitions), plus abort, breakage and
 * release of the body.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  parseSseJson,
  ProviderAbortError,
  ProviderConnectionError,
  readSse,
  type SseMessage,
  SseParseError,
} from "../../client/mod.ts";

const encoder = new TextEncoder();

/** A body that serves `chunks` and records whether it was cancelled. */
function body(
  chunks: Uint8Array[],
): { stream: ReadableStream<Uint8Array>; cancelled: () => boolean } {
  let index = 0;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (index < chunks.length) controller.enqueue(chunks[index++]);
      else controller.close();
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, cancelled: () => cancelled };
}

async function collect(chunks: Uint8Array[]): Promise<SseMessage[]> {
  const out: SseMessage[] = [];
  for await (const message of readSse(body(chunks).stream)) {
    out.push({ ...message });
  }
  return out.map((m) => {
    const clean: SseMessage = { data: m.data };
    if (m.event !== undefined) clean.event = m.event;
    if (m.id !== undefined) clean.id = m.id;
    return clean;
  });
}

function splitAt(bytes: Uint8Array, points: number[]): Uint8Array[] {
  const sorted = [...new Set(points)].filter((p) => p > 0 && p < bytes.length).sort((a, b) =>
    a - b
  );
  const out: Uint8Array[] = [];
  let start = 0;
  for (const point of sorted) {
    out.push(bytes.slice(start, point));
    start = point;
  }
  out.push(bytes.slice(start));
  return out;
}

function bytesOneByOne(bytes: Uint8Array): Uint8Array[] {
  return Array.from(bytes, (b) => Uint8Array.of(b));
}

/**
 * A stream exercising the edge cases: leading BOM, comments, LF / CR / CRLF line ends (mixed),
 * multi-line data, 2-, 3- and 4-byte UTF-8 characters, a field without a space, `data` without a
 * colon, an empty `data:`, `id` and bogus `retry`, unknown fields, a frame without `event:`, a
 * later BOM that spoils its line, and an unterminated last frame that must be dropped.
 */
const STREAM = "\uFEFF" +
  ": heartbeat comment\n" +
  "event: agent.message\n" +
  'data: {"type":"agent.message","text":"h\u00e9llo \u20ac \u{1F600}"}\n' +
  "\n" +
  "event: multi\r\n" +
  "data: line one\r\n" +
  "data:line two\r\n" +
  "id: 7\r\n" +
  "retry: 10x\r\n" +
  "\r\n" +
  "event: cr-only\r" +
  "data: carriage\r" +
  "\r" +
  "data\n" +
  "\n" +
  "data:\n" +
  "\n" +
  "unknown: field\n" +
  'data: {"type":"session.status_idle"}\n' +
  "\n" +
  "\uFEFFdata: spoiled by a later BOM\n" +
  "data: kept\n" +
  "\n" +
  "event: unterminated\n" +
  "data: never dispatched";

/** `id` is reported on the frame that carried it (the reader does not track the last id). */
const EXPECTED: SseMessage[] = [
  { event: "agent.message", data: '{"type":"agent.message","text":"h\u00e9llo \u20ac \u{1F600}"}' },
  { event: "multi", data: "line one\nline two", id: "7" },
  { event: "cr-only", data: "carriage" },
  { data: "" },
  { data: "" },
  { data: '{"type":"session.status_idle"}' },
  { data: "kept" },
];

Deno.test("readSse follows the WHATWG event-stream rules for a whole stream", async () => {
  assert.deepEqual(await collect([encoder.encode(STREAM)]), EXPECTED);
});

Deno.test("readSse gives the same events when fed one byte at a time", async () => {
  const bytes = encoder.encode(STREAM);
  assert.deepEqual(await collect(bytesOneByOne(bytes)), EXPECTED);
});

Deno.test("readSse gives the same events for a split at every byte offset", async () => {
  const bytes = encoder.encode(STREAM);
  for (let point = 1; point < bytes.length; point++) {
    assert.deepEqual(await collect(splitAt(bytes, [point])), EXPECTED, `split at ${point}`);
  }
});

Deno.test("readSse gives the same events for random partitions of the bytes", async () => {
  const bytes = encoder.encode(STREAM);
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 40 }),
      async (points) => {
        assert.deepEqual(await collect(splitAt(bytes, points)), EXPECTED);
      },
    ),
    { numRuns: 150 },
  );
});

Deno.test("a CRLF split between chunks ends one line, not two", async () => {
  const events = await collect([
    encoder.encode("data: a\r"),
    encoder.encode("\ndata: b\r"),
    encoder.encode("\n\r"),
    encoder.encode("\n"),
  ]);
  assert.deepEqual(events, [{ data: "a\nb" }]);
});

Deno.test("a UTF-8 character split across chunks is decoded once, whole", async () => {
  const bytes = encoder.encode("data: \u{1F680}\u00e9\n\n");
  // The rocket is 4 bytes starting at offset 6: split inside it and inside the é.
  const events = await collect(splitAt(bytes, [7, 8, 9, 11]));
  assert.deepEqual(events, [{ data: "\u{1F680}\u00e9" }]);
});

Deno.test("two leading BOMs: only the first is stripped, so the first line is not data", async () => {
  const events = await collect([encoder.encode("\uFEFF\uFEFFdata: 1\n\ndata: 2\n\n")]);
  assert.deepEqual(events, [{ data: "2" }]);
});

Deno.test("frames keep their order when the consumer is slow", async () => {
  const text = Array.from({ length: 50 }, (_, i) => `data: ${i}\n\n`).join("");
  const seen: string[] = [];
  for await (const message of readSse(body([encoder.encode(text)]).stream)) {
    await new Promise((r) => setTimeout(r, 0));
    seen.push(message.data);
  }
  assert.deepEqual(seen, Array.from({ length: 50 }, (_, i) => String(i)));
});

/** A body that sends `text` and then stays open until cancelled. */
function hanging(
  text: string,
): { stream: ReadableStream<Uint8Array>; cancelled: Promise<unknown> } {
  let onCancel: (reason: unknown) => void = () => {};
  const cancelled = new Promise((resolve) => onCancel = resolve);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(text));
    },
    cancel(reason) {
      onCancel(reason);
    },
  });
  return { stream, cancelled };
}

Deno.test("breaking out of the loop cancels the body", async () => {
  const source = hanging("data: 1\n\ndata: 2\n\n");
  const seen: string[] = [];
  for await (const message of readSse(source.stream)) {
    seen.push(message.data);
    break;
  }
  await source.cancelled;
  assert.deepEqual(seen, ["1"]);
});

Deno.test("an abort stops reading, cancels the body and throws ProviderAbortError", async () => {
  const source = hanging("data: first\n\n");
  const controller = new AbortController();
  const seen: string[] = [];
  const error = await (async () => {
    for await (const message of readSse(source.stream, { signal: controller.signal })) {
      seen.push(message.data);
      setTimeout(() => controller.abort("user left"), 5);
    }
  })().catch((e) => e);
  assert.ok(error instanceof ProviderAbortError);
  assert.equal(error.cause, "user left");
  assert.deepEqual(seen, ["first"]);
  await source.cancelled;
});

Deno.test("an already aborted signal throws before reading", async () => {
  const source = body([encoder.encode("data: 1\n\n")]);
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(async () => {
    for await (const _ of readSse(source.stream, { signal: controller.signal })) {
      // never
    }
  }, ProviderAbortError);
  await source.stream.cancel();
});

Deno.test("a body that breaks mid-frame throws ProviderConnectionError after the whole frames", async () => {
  let pulls = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulls++ === 0) controller.enqueue(encoder.encode("data: whole\n\ndata: ha"));
      else controller.error(new TypeError("connection reset"));
    },
  });
  const seen: string[] = [];
  const error = await (async () => {
    for await (const message of readSse(stream)) seen.push(message.data);
  })().catch((e) => e);
  assert.ok(error instanceof ProviderConnectionError);
  assert.deepEqual(seen, ["whole"]);
});

Deno.test("a line over the buffer limit throws SseParseError", async () => {
  const source = body([encoder.encode("data: " + "x".repeat(5000))]);
  await assert.rejects(async () => {
    for await (const _ of readSse(source.stream, { maxBufferSize: 1024 })) {
      // never
    }
  }, SseParseError);
});

Deno.test("parseSseJson parses JSON data and returns undefined for empty or broken data", () => {
  assert.deepEqual(parseSseJson({ data: '{"type":"ping"}' }), { type: "ping" });
  assert.equal(parseSseJson({ data: "" }), undefined);
  assert.equal(parseSseJson({ data: "{not json" }), undefined);
});
