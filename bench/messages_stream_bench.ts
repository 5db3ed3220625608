/**
 * Stream mapping throughput: a recorded 50,000-delta messages stream (with pings, as a real
 * stream has them) replayed from memory through
 *
 * - `ProviderApiClient.streamRun` (readSse + mapProviderStreamEvent + the run contract),
 * - the vendor SDK's own `messages.stream` (its MessageStream, counting `text` events),
 * - raw `eventsource-parser` (TextDecoderStream + createParser + JSON.parse, no mapping): the
 *   floor any SSE client pays,
 *
 * in the same process, rounds alternating. Each figure is the best round (the one least disturbed
 * by other work on the machine) with the median beside it, so the spread shows. The bytes are
 * served by a
 * `fetch` stand-in in 16 KiB chunks, so the network is out of the picture and only parsing and
 * mapping are measured. Target: `streamRun` at least 1.5x the vendor SDK (best rounds), printed
 * as a `target` line that `bench/main.ts` reads.
 *
 * Run: `deno run -A bench/messages_stream_bench.ts` (`--quick` for one short round). Exits 1
 * when the target is missed (not in quick mode).
 *
 * @module
 */
import Vendor from "@anthropic-ai/sdk";
import { createParser } from "eventsource-parser";
import { ProviderApiClient } from "../client/mod.ts";
import { textStreamFrames } from "../tests/support/fake_messages.ts";
import { sseFrame } from "../tests/support/fake_provider.ts";

const QUICK = Deno.args.includes("--quick") || Deno.env.get("BENCH_QUICK") === "1";
const DELTAS = 50_000;
const ROUNDS = Number(Deno.env.get("BENCH_ROUNDS") ?? (QUICK ? 1 : 7));
const CHUNK = 16 * 1024;
const TARGET = 1.5;

/** The recorded stream: the frames a 50,000-delta answer arrives as. */
function recordStream(): Uint8Array {
  const words = ["The ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "lazy ", "dog. "];
  const frames = textStreamFrames({
    id: "msg_01BenchRecordedStream",
    chunks: Array.from({ length: DELTAS }, (_, i) => words[i % words.length]),
    pingEvery: 500,
  });
  return new TextEncoder().encode(frames.map((frame) => sseFrame(frame)).join(""));
}

const RECORDED = recordStream();

function replayBody(): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= RECORDED.length) {
        controller.close();
        return;
      }
      controller.enqueue(RECORDED.subarray(offset, offset + CHUNK));
      offset += CHUNK;
    },
  });
}

/** A fetch stand-in that answers every request with the recorded stream. */
async function replayFetch(input: Request | URL | string, init?: RequestInit): Promise<Response> {
  // Read the request body like a server would, so both clients pay for sending it.
  await new Request(input, init).arrayBuffer();
  return new Response(replayBody(), {
    headers: { "content-type": "text/event-stream", "request-id": "req_bench" },
  });
}

const PARAMS = {
  model: "model-small",
  max_tokens: 64_000,
  messages: [{ role: "user" as const, content: "Write a long story" }],
};

const ours = new ProviderApiClient({
  apiKey: "bench-key",
  baseUrl: "http://bench.invalid",
  fetchImpl: replayFetch,
  maxRetries: 0,
});
const vendor = new Vendor({
  apiKey: "bench-key",
  baseURL: "http://bench.invalid",
  fetch: replayFetch,
  maxRetries: 0,
});

async function runOurs(): Promise<number> {
  let deltas = 0;
  await ours.streamRun(
    { input: PARAMS.messages, model: PARAMS.model, maxTokens: PARAMS.max_tokens },
    {
      onEvent(event) {
        if (event.type === "message.delta") deltas++;
      },
    },
  );
  return deltas;
}

async function runVendor(): Promise<number> {
  let deltas = 0;
  const stream = vendor.messages.stream(PARAMS);
  stream.on("text", () => {
    deltas++;
  });
  await stream.done();
  return deltas;
}

async function runRaw(): Promise<number> {
  let deltas = 0;
  const parser = createParser({
    onEvent(message) {
      const data = JSON.parse(message.data) as { type?: string; delta?: { type?: string } };
      if (data.type === "content_block_delta" && data.delta?.type === "text_delta") deltas++;
    },
  });
  const response = await replayFetch("http://bench.invalid/v1/messages", {
    method: "POST",
    body: JSON.stringify({ ...PARAMS, stream: true }),
  });
  for await (const text of response.body!.pipeThrough(new TextDecoderStream())) {
    parser.feed(text);
  }
  return deltas;
}

async function deltasPerSecond(run: () => Promise<number>): Promise<number> {
  const start = performance.now();
  const deltas = await run();
  const seconds = (performance.now() - start) / 1000;
  if (deltas !== DELTAS) throw new Error(`expected ${DELTAS} deltas, counted ${deltas}`);
  return deltas / seconds;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Deltas per second of one reader: its best round and its median round. */
export interface MessagesStreamFigure {
  /** The best round. */
  best: number;
  /** The median round. */
  median: number;
}

/** Deltas per second for each reader. */
export interface MessagesStreamBenchResult {
  /** `ProviderApiClient.streamRun`. */
  ours: MessagesStreamFigure;
  /** The vendor SDK's `messages.stream`. */
  vendor: MessagesStreamFigure;
  /** Raw `eventsource-parser` with `JSON.parse`. */
  raw: MessagesStreamFigure;
}

function figure(rounds: number[]): MessagesStreamFigure {
  return { best: Math.max(...rounds), median: median(rounds) };
}

/**
 * Runs the benchmark: one warm-up pass each, then alternating rounds.
 *
 * @example
 * ```ts ignore
 * const result = await runMessagesStreamBench();
 * console.log(result.ours.best / result.vendor.best);
 * ```
 */
export async function runMessagesStreamBench(): Promise<MessagesStreamBenchResult> {
  for (const run of [runOurs, runVendor, runRaw]) await deltasPerSecond(run);
  const rounds = { ours: [] as number[], vendor: [] as number[], raw: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    rounds.vendor.push(await deltasPerSecond(runVendor));
    rounds.ours.push(await deltasPerSecond(runOurs));
    rounds.raw.push(await deltasPerSecond(runRaw));
  }
  return { ours: figure(rounds.ours), vendor: figure(rounds.vendor), raw: figure(rounds.raw) };
}

if (import.meta.main) {
  const result = await runMessagesStreamBench();
  const mib = (RECORDED.length / 1024 / 1024).toFixed(1);
  const count = (n: number): string => Math.round(n).toLocaleString("en-US");
  const row = (name: string, value: MessagesStreamFigure): string =>
    name.padEnd(34) + count(value.best).padStart(12) +
    `(median ${count(value.median)})`.padStart(22);
  console.log(
    `messages stream mapping, ${DELTAS.toLocaleString("en-US")} deltas (${mib} MiB), ` +
      `deltas/s, best round (median) of ${ROUNDS} round${ROUNDS === 1 ? "" : "s"}`,
  );
  console.log(row("raw eventsource-parser + JSON", result.raw));
  console.log(row("vendor SDK messages.stream", result.vendor));
  console.log(row("ProviderApiClient.streamRun", result.ours));
  const ratio = result.ours.best / result.vendor.best;
  const met = ratio >= TARGET;
  console.log(
    `streamRun / vendor SDK = ${ratio.toFixed(2)}x, median ` +
      `${(result.ours.median / result.vendor.median).toFixed(2)}x ` +
      `(target >= ${TARGET.toFixed(1)}x: ${met ? "ok" : "BELOW TARGET"})`,
  );
  console.log(
    `streamRun / raw parser = ${(result.ours.best / result.raw.best).toFixed(2)}x, median ` +
      `${(result.ours.median / result.raw.median).toFixed(2)}x (no target)`,
  );
  if (!met && !QUICK) Deno.exit(1);
}
