/**
 * Run event delivery on one replica.
 *
 * The runtime (Deno KV store in a temp file, the in-process fake provider, `Deno.serve`) runs in
 * a child process, so its memory is measured alone and the subscribers (in this process) do not
 * share its event loop. The child also serves the limit peer: `Deno.serve` writing precomputed
 * SSE frames, the same bytes the runtime sends, with no store, no auth and no framing work.
 *
 * 1. **Delivery** to 1, 100 and 1,000 subscribers of one finished run (a burst of messages, its
 *    whole log replayed from seq 0, as a reconnecting client does): events/s over all subscribers,
 *    runtime vs the peer, medians of 7 interleaved rounds (target: ≥ 0.5 of the peer at 100).
 * 2. **Added latency** from the provider's frame (the time the fake made it) to a subscriber's
 *    frame, 100 subscribers on a live run, after an uncounted warm-up run: medians of 3 rounds of
 *    150 frames (target: p99 < 10 ms); and, in rounds interleaved with those, the same from the
 *    peer writing each frame straight to 100 streams (the floor), and from the peer committing
 *    each frame to Deno KV first, as the runtime appends it to the run's log before anyone gets
 *    it (the floor of a durable log), and from a relay reading the fake provider's stream as the
 *    runtime does and committing each chunk's frames before writing them (a durable relay's
 *    floor: the same provider hop as the runtime's). The fake streams each message's preview
 *    too, so for each message the runtime's subscribers get two frames, the preview's
 *    `message.delta` and the `message.completed`; the floors write the same two (in one write,
 *    committed in one commit of two entries: the cheapest way to send and to keep them). Both
 *    ends are stamped with {@linkcode preciseNow}, to a microsecond, not with `Date.now()`: two
 *    stamps rounded down to the millisecond make each latency up to 1 ms off either way, and the
 *    p99 a whole number of ms.
 * 3. **Memory per idle subscriber**: what the child holds with 1,000 idle streams open, over what
 *    it held before, per stream, in a fresh child and after a full collection (the RSS growth
 *    less the heap room V8 keeps free after the burst); and the same for a bare `Deno.serve`
 *    streaming response in another fresh child, the floor no code of ours can go under. The
 *    target (< 32 KiB) is what ours holds above that floor.
 *
 * Run: `deno run -A bench/events_bench.ts [--quick]`.
 *
 * @module
 */
import { type BenchProviderAddress, serveBenchGateway, startBenchProvider } from "./_gateway.ts";
import { cpuPer, readThreadCpu, THREAD_GROUPS, type ThreadCpu } from "./_thread_cpu.ts";
import { SIMULATOR_MANAGED_AGENTS_BETA } from "../testing/mod.ts";
import { completeFrames } from "./_complete_frames.ts";

/** Latency percentiles of one live round, in ms, and its CPU per frame by thread. */
interface RoundFigures {
  p50: number;
  p99: number;
  /** Frames received. */
  samples: number;
  /**
   * The child's CPU per frame by thread, in ms: from the round's first frame made until every
   * subscriber's stream ended (the runtime, or the floor peer making the frames).
   */
  cpu: ThreadCpu;
  /** The same for this process (the 100 subscribers), from their connecting to their end. */
  clientCpu: ThreadCpu;
}

/** Latency percentiles in ms: medians over the rounds, and the worst round's p99. */
export interface LatencyFigures extends RoundFigures {
  /** The highest p99 of one round. */
  worstP99: number;
}

/** Delivery of one subscriber count: events/s over all subscribers, runtime and peer. */
export interface DeliveryRow {
  subscribers: number;
  runtime: number;
  peer: number;
  ratio: number;
}

/** What the child holds per idle subscriber (see `measureIdleMemory`). */
export interface IdleMemory {
  /** Resident bytes: RSS growth less the growth of the heap space V8 keeps free. */
  resident: number;
  /** Bytes of JavaScript heap still in use after a full collection. */
  heap: number;
}

/** The phases of the benchmark (`--only` picks some). */
export const PHASES = ["delivery", "latency", "memory"] as const;

/** A phase of the benchmark. */
export type Phase = typeof PHASES[number];

/** The result of one {@linkcode runEventsBench}: the figures of each phase that ran. */
export interface EventsBenchResult {
  /** Delivery of a finished run's log, by subscriber count. */
  delivery?: { logEvents: number; rows: DeliveryRow[] };
  /**
   * Provider frame (or the floor peer's frame) to subscriber frame at 100 subscribers, with the
   * CPU per frame: the runtime, the floor writing straight to the streams (`bare`), and the floor
   * committing each frame to Deno KV first (`commit`, a durable log's floor).
   */
  latency?: Partial<Record<LiveSource, LatencyFigures>>;
  /** Per idle subscriber: ours and a bare `Deno.serve` streaming response (the floor). */
  memory?: { ours: IdleMemory; floor: IdleMemory };
}

/** The three ratios of issue 39's targets, from one run (those whose phase ran). */
export interface EventsRatios {
  /** The runtime's p99 added latency / the durable floor's p99 (target ≤ 1.25). */
  latency?: number;
  /** Delivery at 100 subscribers / the precomputed SSE peer (target ≥ 0.7). */
  delivery?: number;
  /** CPU per frame on the child's JavaScript thread, runtime / durable floor (target ≤ 1.3). */
  cpu?: number;
  /**
   * The runtime's p99 added latency / the relay floor's (context, no target): both read the
   * fake provider's stream over HTTP, which the durable floor, making its own frames, does not.
   */
  relayLatency?: number;
  /** CPU per frame on the child's JavaScript thread, runtime / relay floor (context). */
  relayCpu?: number;
}

/** Targets of the three ratios. */
export const EVENTS_TARGETS = { latency: 1.25, delivery: 0.7, cpu: 1.3 } as const;

/**
 * The three ratios of one run.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { eventsRatios } from "./events_bench.ts";
 * assert.deepEqual(eventsRatios({}), {});
 * ```
 */
export function eventsRatios(result: EventsBenchResult): EventsRatios {
  const ratios: EventsRatios = {};
  const at100 = result.delivery?.rows.find((row) => row.subscribers === 100);
  if (at100 !== undefined) ratios.delivery = at100.ratio;
  const runtime = result.latency?.runtime;
  const commit = result.latency?.commit;
  if (runtime !== undefined && commit !== undefined) {
    ratios.latency = runtime.p99 / commit.p99;
    ratios.cpu = runtime.cpu.js.ran / commit.cpu.js.ran;
  }
  const relay = result.latency?.relay;
  if (runtime !== undefined && relay !== undefined) {
    ratios.relayLatency = runtime.p99 / relay.p99;
    ratios.relayCpu = runtime.cpu.js.ran / relay.cpu.js.ran;
  }
  return ratios;
}

// ---------------------------------------------------------------- child: the runtime and peer

const RETRY_LINE = new TextEncoder().encode("retry: 2000\n\n");

/**
 * The wall-clock time in ms, to a microsecond. Parent and child stamp with it, so a latency is
 * the difference of two of its readings in two processes: each reading is the process's start
 * time on the wall clock plus its monotonic clock since, which agree with each other as long as
 * neither process's clock drifted from the wall clock ({@linkcode checkClock}).
 */
function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Throws when this process's {@linkcode preciseNow} no longer agrees with the wall clock (an NTP
 * step since it started): latencies across the two processes would then be off.
 */
function checkClock(): void {
  // Date.now() is rounded down, so an exact clock reads 0 to 1 ms ahead of it.
  const drift = preciseNow() - Date.now();
  if (drift < -0.5 || drift > 1.5) throw new Error(`the clock drifted ${drift.toFixed(2)} ms`);
}

/**
 * The fake provider's process (`--provider`): the fake, scripted for the phases, and a control
 * server: `/made?run=<id>` says when the fake made each `agent.message` of a session (by its
 * text), and `/mark?url=<url>` names where to tell each live round's first frame (the runtime
 * child's `/mark`, so the child's CPU is counted from the same moment for the runtime as for the
 * floors). Its own process, as a real provider is: its work (timers, frames, its HTTP server)
 * is not the runtime's, and counted in the runtime's process it made up a sixth of the runtime's
 * CPU per frame.
 */
async function serveProvider(): Promise<void> {
  const provider = await startBenchProvider();
  const state = provider.fake.managedAgents!;
  state.deltaChunk = 1_000_000;
  // When the fake made each agent.message, by session and text.
  const made = new Map<string, Record<string, number>>();
  let markUrl: string | undefined;
  state.onEmit = (sessionId, event) => {
    if (event.type !== "agent.message") return;
    const text = (event.content as { text: string }[])[0].text;
    let times = made.get(sessionId);
    if (times === undefined) made.set(sessionId, times = {});
    times[text] = preciseNow();
    if (text === "m0" && markUrl !== undefined) {
      fetch(markUrl).then((answer) => answer.body?.cancel()).catch(() => {});
    }
  };
  // "burst:N:GAP": N messages GAP ms apart (after a 300 ms pause); "hold": a turn that lasts.
  state.script = ({ text }) => {
    if (text === "hold") return [{ delayMs: 3_600_000 }];
    const [, n, gap] = text.split(":").map(Number);
    const steps: ({ delayMs: number } | Record<string, unknown>)[] = [{ delayMs: 300 }];
    for (let i = 0; i < n; i++) {
      if (gap > 0) steps.push({ delayMs: gap });
      steps.push({ type: "agent.message", content: [{ type: "text", text: `m${i}` }] });
    }
    return steps;
  };
  const control = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const url = new URL(request.url);
    if (url.pathname === "/mark") {
      markUrl = url.searchParams.get("url") ?? undefined;
      return new Response(null, { status: 204 });
    }
    // `/made`: when the fake made each agent.message of a session, by its text.
    checkClock();
    return Response.json(made.get(url.searchParams.get("run")!) ?? {});
  });
  const { baseUrl, apiKey, agentId, environmentId } = provider;
  console.log(JSON.stringify({
    baseUrl,
    apiKey,
    agentId,
    environmentId,
    control: `http://127.0.0.1:${control.addr.port}`,
  }));
}

const frameEncoder = new TextEncoder();

/**
 * The two frames the floors write for their `seq`th message (0-based), as the runtime sends the
 * fake's messages: the preview's `message.delta` (`preview`, its data), then the
 * `message.completed` (`data`).
 */
function messageFrames(seq: number, preview: string, data: string): Uint8Array {
  return frameEncoder.encode(
    `id: ${2 * seq + 1}\nevent: message.delta\ndata: ${preview}\n\n` +
      `id: ${2 * seq + 2}\nevent: message.completed\ndata: ${data}\n\n`,
  );
}

/** What {@linkcode relayRound} does with the messages it relays. */
interface RelayTarget {
  /** The relay's store. */
  kv: Deno.Kv;
  /** Called once the session's stream is open, before the turn starts. */
  started(): void;
  /** Writes the `seq`th message (0-based) to every subscriber; `last` ends their streams. */
  write(seq: number, text: string, last: boolean): void;
}

/**
 * Starts a session of `n` messages 20 ms apart at the fake provider (the script the runtime's
 * rounds run), opens its event stream with message previews as the runtime's tail does, and
 * relays it in the background: each chunk's complete frames committed to `kv`, then each
 * `agent.message` in them written. Returns the session's id (the fake's `/made` key).
 */
async function relayRound(
  provider: BenchProviderAddress,
  n: number,
  target: RelayTarget,
): Promise<string> {
  const headers = {
    "x-api-key": provider.apiKey,
    "provider-beta": SIMULATOR_MANAGED_AGENTS_BETA,
    "content-type": "application/json",
  };
  const created = await fetch(`${provider.baseUrl}/v1/sessions`, {
    method: "POST",
    headers,
    body: JSON.stringify({ agent: provider.agentId, environment_id: provider.environmentId }),
  });
  const session = (await created.json()).id as string;
  const stream = await fetch(
    `${provider.baseUrl}/v1/sessions/${session}/events/stream?event_deltas%5B%5D=agent.message`,
    { headers: { ...headers, accept: "text/event-stream" } },
  );
  const reader = stream.body!.getReader();
  target.started();
  const sent = await fetch(`${provider.baseUrl}/v1/sessions/${session}/events`, {
    method: "POST",
    headers,
    body: JSON.stringify({
      events: [{ type: "user.message", content: [{ type: "text", text: `burst:${n}:20` }] }],
    }),
  });
  await sent.body?.cancel();
  const log = `relay-${session}`;
  let key = 0;
  let messages = 0;
  // Complete frames read and not yet committed; the commit under way, if any.
  let pending = "";
  let committing: Promise<void> | undefined;
  const flush = async (): Promise<void> => {
    while (pending !== "") {
      const frames = pending.split("\n\n");
      pending = "";
      frames.pop();
      const operation = target.kv.atomic();
      for (const frame of frames) operation.set([log, ++key], frame);
      if (!(await operation.commit()).ok) throw new Error("the relay's commit failed");
      for (const frame of frames) {
        const data = frame.indexOf("data: ");
        if (data === -1) continue;
        const event = JSON.parse(frame.slice(data + 6));
        if (event.type !== "agent.message") continue;
        const seq = messages++;
        target.write(seq, event.content[0].text, messages === n);
        // The round's last message: the rest of the session's stream is not the round's.
        if (messages === n) await reader.cancel();
      }
    }
    committing = undefined;
  };
  (async () => {
    // Ends when the round's last message cancels the reader.
    for await (const complete of completeFrames(reader)) {
      pending += complete;
      committing ??= flush();
    }
  })().catch((error) => console.error("relay floor:", error));
  return session;
}

async function serveChild(): Promise<void> {
  // The parent's folder for this child, removed by the parent (the child is killed, not closed).
  const dir = Deno.env.get("EVENTS_BENCH_DIR");
  const provider = JSON.parse(Deno.env.get("EVENTS_BENCH_PROVIDER")!) as BenchProviderAddress;
  const gateway = await serveBenchGateway({
    prefix: "events-bench-",
    dir,
    provider,
    server: {
      maxActiveRuns: 100_000,
      maxEventStreams: 100_000,
      // A thousand subscribers of one principal connect at once.
      maxEventStreamsPerPrincipal: 100_000,
      inFlightQuota: 100_000,
    },
  });
  // This process's CPU by thread when the current live round's first frame was made.
  let cpuMark = readThreadCpu();
  // With `--profile`: each measured round's window in the profile's time (ms since this process
  // started, as `performance.now()`), by who made its frames, so a profile reads round by round.
  const roundsLog = Deno.env.get("EVENTS_BENCH_ROUNDS_LOG");
  let round = { source: "", start: 0 };
  // Who reads the fake's stream in the current live round: the runtime, or the relay floor.
  let providerSource: LiveSource = "runtime";
  const markRound = (source: LiveSource) => {
    cpuMark = readThreadCpu();
    round = { source, start: performance.now() };
  };

  let frames = new Uint8Array();
  // The commit floor's store: a file beside the runtime's, on the same disk.
  const kv = await Deno.openKv(`${await Deno.makeTempDir({ dir, prefix: "floor-" })}/floor.kv`);
  const live = new Set<ReadableStreamDefaultController<Uint8Array>>();
  const peer = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const path = new URL(request.url).pathname;
    if (request.method === "POST" && path === "/frames") {
      frames = new Uint8Array(await request.arrayBuffer());
      return new Response(null, { status: 204 });
    }
    if (path === "/mark") {
      // The fake provider made a live round's first frame.
      markRound(providerSource);
      return new Response(null, { status: 204 });
    }
    if (path === "/exit") {
      // A profiled child ends this way, which writes its profile (a killed one writes none).
      setTimeout(() => Deno.exit(0), 10);
      return new Response(null, { status: 204 });
    }
    if (path === "/cpu") {
      // CPU by thread when the current live round's first frame was made, and now.
      const now = readThreadCpu();
      if (roundsLog !== undefined) {
        const line = `${round.source} ${round.start.toFixed(1)} ${performance.now().toFixed(1)}\n`;
        await Deno.writeTextFile(roundsLog, line, { append: true });
      }
      return Response.json({ mark: cpuMark, now });
    }
    if (path === "/memory") {
      // After a full collection, so garbage a burst left behind does not count as held.
      (globalThis as { gc?: () => void }).gc?.();
      const status = await Deno.readTextFile("/proc/self/status");
      const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      const { heapTotal, heapUsed } = Deno.memoryUsage();
      return Response.json({ rss: kib * 1024, heapTotal, heapUsed });
    }
    if (path === "/live") {
      // The latency floor: frames written straight to every open stream, no store, no auth.
      let mine: ReadableStreamDefaultController<Uint8Array>;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          mine = controller;
          live.add(controller);
          controller.enqueue(RETRY_LINE);
        },
        cancel: () => void live.delete(mine),
      });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    }
    if (path === "/live/go") {
      // N frames GAP ms apart, like the fake provider's burst, each stamped when made and
      // written at once or (`commit=1`) once committed to Deno KV, in order.
      const query = new URL(request.url).searchParams;
      const n = Number(query.get("n"));
      const commit = query.get("commit") === "1";
      let made = 0;
      let written = Promise.resolve();
      const write = (seq: number, frame: Uint8Array) => {
        for (const controller of live) controller.enqueue(frame);
        if (seq + 1 < n) return;
        for (const controller of live) controller.close();
        live.clear();
      };
      const timer = setInterval(() => {
        const seq = made;
        if (seq === 0) markRound(commit ? "commit" : "bare");
        // What the runtime sends its subscribers for each of the fake's messages, which the
        // fake also streams as a preview: the preview's `message.delta`, then the message.
        const at = new Date().toISOString();
        const preview = JSON.stringify({
          seq: 2 * seq + 1,
          at,
          type: "message.delta",
          runId: "floor",
          text: `m${seq}`,
        });
        const data = JSON.stringify({ text: `m${seq}`, at: preciseNow() });
        const frame = messageFrames(seq, preview, data);
        if (++made === n) clearInterval(timer);
        if (!commit) return write(seq, frame);
        // The cheapest durable log of the two: one commit, an entry each.
        const committed = kv.atomic()
          .set(["run-event", 2 * seq + 1], preview)
          .set(["run-event", 2 * seq + 2], data)
          .commit();
        written = Promise.all([written, committed]).then(() => write(seq, frame));
      }, 20);
      return new Response(null, { status: 204 });
    }
    if (path === "/live/relay") {
      // The floor of a durable gateway: a live round of the fake provider read as the runtime's
      // tail reads it (its own session, the same script), each chunk's complete frames committed
      // to Deno KV (raw text, one key each; what came during a commit waits for the next one),
      // then each message written to every open stream as the other floors write it. What it
      // leaves out of the runtime's work: auth, the run record, mapping to the public events.
      const n = Number(new URL(request.url).searchParams.get("n"));
      const session = await relayRound(provider, n, {
        started: () => providerSource = "relay",
        write(seq, text, last) {
          const frame = messageFrames(
            seq,
            JSON.stringify({ seq: 2 * seq + 1, type: "message.delta", runId: "relay", text }),
            JSON.stringify({ text }),
          );
          for (const controller of live) controller.enqueue(frame);
          if (!last) return;
          for (const controller of live) controller.close();
          live.clear();
          providerSource = "runtime";
        },
        kv,
      });
      return Response.json({ session });
    }
    if (path === "/idle") {
      // The floor of an idle subscriber: an open streaming response and nothing else.
      const body = new ReadableStream<Uint8Array>({
        start: (controller) => controller.enqueue(RETRY_LINE),
        pull: () => new Promise<void>(() => {}),
      }, { highWaterMark: 1 });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    }
    return new Response(frames, { headers: { "content-type": "text/event-stream" } });
  });
  console.log(JSON.stringify({
    url: gateway.url,
    peer: `http://127.0.0.1:${peer.addr.port}`,
    token: gateway.token,
  }));
}

// ---------------------------------------------------------------- parent: the subscribers

function headers(token: string, extra: Record<string, string> = {}): Headers {
  return new Headers({
    authorization: `Bearer ${token}`,
    "x-interface-version": "2026-07-23",
    "x-correlation-id": crypto.randomUUID(),
    "x-deadline": new Date(Date.now() + 60_000).toISOString(),
    ...extra,
  });
}

/** Reads a whole SSE response; returns how many event frames (`\nid: ` lines) it held. */
async function drain(response: Response): Promise<number> {
  let count = 0;
  // The last three bytes seen, so a match split across chunks is still found.
  let b1 = 0, b2 = 0, b3 = 0;
  for await (const chunk of response.body!) {
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      // "\nid:" ends here: 0x0a 0x69 0x64 0x3a.
      if (byte === 0x3a && b3 === 0x64 && b2 === 0x69 && b1 === 0x0a) count++;
      b1 = b2;
      b2 = b3;
      b3 = byte;
    }
  }
  return count;
}

function median(values: number[]): number {
  return percentile(values, 0.5);
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

/** The runtime child of one phase, and what the phases do with it. */
interface BenchChild {
  /** The peer's base URL (precomputed frames, the floors, CPU, RSS). */
  peer: string;
  /** When the fake provider made each `agent.message` of a run, by its text. */
  made(runId: string): Promise<Record<string, number>>;
  /** Starts a run with `input` (see the fake's script); returns its id. */
  start(input: string): Promise<string>;
  /** Opens a run's event stream. */
  open(runId: string): Promise<Response>;
  /** Follows a run's event stream on a raw connection until it ends (see `rawFollow`). */
  follow(runId: string): Promise<Reads>;
}

/** What a raw subscriber read: each read's arrival time and bytes. */
type Reads = [number, Uint8Array][];

const CHUNKED_END = [0x0d, 0x0a, 0x30, 0x0d, 0x0a, 0x0d, 0x0a]; // "\r\n0\r\n\r\n"

/**
 * Follows an SSE answer over a raw TCP connection (HTTP/1.1, one request) until its chunked body
 * ends, keeping each read's arrival time and bytes. The latency phase subscribes this way rather
 * than through `fetch`: 100 `fetch` bodies read in one process spent a quarter of that process in
 * the streams machinery and, in some runs, fell behind the server by up to 850 ms (a profile of
 * the bench process), which measured the client rather than the server.
 */
async function rawFollow(url: string, head: Record<string, string>): Promise<Reads> {
  const target = new URL(url);
  const connection = await Deno.connect({
    hostname: target.hostname,
    port: Number(target.port),
  });
  try {
    let request = `GET ${target.pathname}${target.search} HTTP/1.1\r\nhost: ${target.host}\r\n`;
    for (const [name, value] of Object.entries(head)) request += `${name}: ${value}\r\n`;
    await connection.write(new TextEncoder().encode(request + "\r\n"));
    const reads: Reads = [];
    const buffer = new Uint8Array(64 * 1024);
    // The last bytes seen, to find the chunked body's end across reads.
    const tail: number[] = [];
    for (;;) {
      const count = await connection.read(buffer);
      if (count === null) return reads;
      const time = preciseNow();
      const bytes = buffer.slice(0, count);
      reads.push([time, bytes]);
      for (const byte of bytes.subarray(Math.max(count - CHUNKED_END.length, 0))) tail.push(byte);
      tail.splice(0, Math.max(tail.length - CHUNKED_END.length, 0));
      if (tail.every((byte, i) => byte === CHUNKED_END[i]) && tail.length === CHUNKED_END.length) {
        return reads;
      }
    }
  } finally {
    connection.close();
  }
}

/**
 * The `message.completed` frames of what a raw subscriber read: each frame's `data` and the
 * arrival time of the read that completed it. Each HTTP chunk of both servers holds whole SSE
 * frames, so chunk-size lines never fall inside a frame.
 */
function completedFrames(reads: Reads): { data: Record<string, unknown>; time: number }[] {
  const ends: number[] = [];
  let length = 0;
  for (const [, bytes] of reads) ends.push(length += bytes.length);
  const all = new Uint8Array(length);
  let at = 0;
  for (const [, bytes] of reads) {
    all.set(bytes, at);
    at += bytes.length;
  }
  // One character per byte, so string offsets are byte offsets.
  const text = new TextDecoder("latin1").decode(all);
  const frames: { data: Record<string, unknown>; time: number }[] = [];
  let read = 0;
  for (const match of text.matchAll(/event: message\.completed\ndata: (.*)\n\n/g)) {
    const end = match.index + match[0].length;
    while (ends[read] < end) read++;
    frames.push({ data: JSON.parse(match[1]), time: reads[read][0] });
  }
  return frames;
}

/** A process of the benchmark: started with `mode`, answering with one JSON line. */
interface BenchProcess {
  /** Its JSON line. */
  listening: Record<string, string>;
  /** Stops it (kills it, or lets a profiled child exit through `exit`). */
  stop(exit?: () => Promise<void>): Promise<void>;
}

/** Starts this script as `--provider` or `--child`, and reads its first line. */
async function spawnBench(
  mode: "--provider" | "--child",
  env: Record<string, string>,
  flags: string[] = [],
): Promise<BenchProcess> {
  const process = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...flags, new URL(import.meta.url).pathname, mode],
    env,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = process.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stop = async (exit?: () => Promise<void>) => {
    if (exit !== undefined) await exit();
    else process.kill("SIGKILL");
    await process.status;
    await reader.cancel().catch(() => {});
  };
  try {
    let first = "";
    while (!first.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the bench's ${mode.slice(2)} exited before listening`);
      first += value;
    }
    return { listening: JSON.parse(first.split("\n")[0]), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Runs `phase` against a fresh child process (and a fresh fake provider in a process of its own),
 * then stops both. Each phase gets its own child: what one phase leaves in the heap (a delivery
 * burst's garbage, collected later) must not land in the next phase's figures.
 */
async function withChild<T>(
  phase: (child: BenchChild) => Promise<T>,
  profileDir?: string,
): Promise<T> {
  const directory = await Deno.makeTempDir({ prefix: "events-bench-" });
  if (profileDir !== undefined) await Deno.mkdir(profileDir, { recursive: true });
  const provider = await spawnBench("--provider", {});
  let child: BenchProcess | undefined;
  try {
    const { control, ...address } = provider.listening;
    child = await spawnBench(
      "--child",
      {
        EVENTS_BENCH_DIR: directory,
        EVENTS_BENCH_PROVIDER: JSON.stringify(address),
        ...(profileDir === undefined
          ? {}
          : { EVENTS_BENCH_ROUNDS_LOG: `${profileDir}/rounds.txt` }),
      },
      // `gc` for the memory phase's full collections.
      [
        "--v8-flags=--expose-gc",
        ...(profileDir === undefined
          ? []
          : ["--cpu-prof", "--cpu-prof-interval=100", `--cpu-prof-dir=${profileDir}`]),
      ],
    );
    const { url, peer, token } = child.listening;
    await (await fetch(`${control}/mark?url=${encodeURIComponent(`${peer}/mark`)}`)).body?.cancel();
    return await phase({
      peer,
      made: async (runId: string) => await (await fetch(`${control}/made?run=${runId}`)).json(),
      async start(input: string): Promise<string> {
        const response = await fetch(`${url}/v1/runs`, {
          method: "POST",
          headers: headers(token, {
            "content-type": "application/json",
            "idempotency-key": crypto.randomUUID(),
          }),
          body: JSON.stringify({ input }),
        });
        const run = await response.json();
        if (response.status !== 201) throw new Error(`start answered ${response.status}`);
        return run.runId;
      },
      open: (runId: string) =>
        fetch(`${url}/v1/runs/${runId}/events`, {
          headers: headers(token, { accept: "text/event-stream" }),
        }),
      follow: (runId: string) =>
        rawFollow(
          `${url}/v1/runs/${runId}/events`,
          Object.fromEntries(headers(token, { accept: "text/event-stream" })),
        ),
    });
  } finally {
    // A profiled child exits on its own, which writes its profile; any other is killed.
    const peer = child?.listening.peer;
    await child?.stop(
      profileDir === undefined ? undefined : async () => {
        await fetch(`${peer}/exit`).then((answer) => answer.body?.cancel()).catch(() => {});
      },
    );
    await provider.stop();
    await Deno.remove(directory, { recursive: true }).catch(() => {});
  }
}

/** Phase 1: delivery of a finished run's log to 1, 100 and 1,000 subscribers. */
async function measureDelivery(
  { peer, start, open }: BenchChild,
  quick: boolean,
): Promise<NonNullable<EventsBenchResult["delivery"]>> {
  const messages = quick ? 150 : 330;
  const replayed = await start(`burst:${messages}:0`);
  const whole = await (await open(replayed)).arrayBuffer();
  const logEvents = await drain(new Response(whole));
  await fetch(`${peer}/frames`, { method: "POST", body: whole });
  const delivery: DeliveryRow[] = [];
  for (const subscribers of [1, 100, 1000]) {
    const time = async (get: () => Promise<Response>): Promise<number> => {
      const began = performance.now();
      const counts = await Promise.all(
        Array.from({ length: subscribers }, async () => drain(await get())),
      );
      const elapsed = (performance.now() - began) / 1000;
      const short = counts.filter((count) => count !== logEvents);
      if (short.length > 0) {
        throw new Error(`${short.length} subscribers got ${short[0]} of ${logEvents} events`);
      }
      return subscribers * logEvents / elapsed;
    };
    // Interleaved rounds, medians: one round is a burst of tens of milliseconds, so a single
    // one says more about the machine's moment than about either server.
    const runtimes: number[] = [];
    const limits: number[] = [];
    for (let round = 0; round < (quick ? 2 : 7); round++) {
      runtimes.push(await time(() => open(replayed)));
      limits.push(await time(() => fetch(`${peer}/stream`)));
    }
    const runtime = median(runtimes);
    const limit = median(limits);
    delivery.push({ subscribers, runtime, peer: limit, ratio: runtime / limit });
  }

  return { logEvents, rows: delivery };
}

/** Who makes the frames of a live round: the runtime, or one of the two floor peers. */
export const LIVE_SOURCES = ["runtime", "bare", "commit", "relay"] as const;

/** Who makes the frames of a live round. */
export type LiveSource = typeof LIVE_SOURCES[number];

/**
 * Phase 2: added latency on a live run, 100 subscribers: from the provider's frame (the fake's
 * time it made it) to each subscriber's frame; and, in the same child and interleaved with it round
 * by round, from the peer making a frame to each subscriber's frame, the peer writing it straight
 * to 100 open streams (`bare`: the floor of this runtime and of this client) or after committing
 * it to Deno KV (`commit`: the floor of a durable log). Interleaved, so a pause of the machine
 * lands on all three alike rather than on whichever ran in that minute.
 */
async function measureLatency(
  child: BenchChild,
  options: { quick: boolean; sources: readonly LiveSource[]; rounds: number },
): Promise<Partial<Record<LiveSource, LatencyFigures>>> {
  const { quick, sources } = options;
  // A warm-up round each first, not counted: the child is fresh, and the first frames through
  // cold code (the tail's first connection, the first append, compilation) took 13 to 40 ms,
  // which alone is the p99 of 100 frames. The figure is about a runtime that is already serving.
  for (const source of sources) await liveRound(child, 20, source);
  // Then rounds of 150 frames, medians: like the delivery rounds, one round says as much about
  // the machine's moment (a stall of tens of ms on this 2-core VM, the floors' included) as
  // about the server. The worst round's p99 is reported beside them.
  const rounds: Record<LiveSource, RoundFigures[]> = {
    runtime: [],
    bare: [],
    commit: [],
    relay: [],
  };
  for (let round = 0; round < options.rounds; round++) {
    for (let i = 0; i < sources.length; i++) {
      const source = sources[(round + i) % sources.length];
      rounds[source].push(await liveRound(child, quick ? 40 : 150, source));
    }
  }
  const cpuMedian = (cpus: ThreadCpu[]): ThreadCpu =>
    Object.fromEntries(THREAD_GROUPS.map((group) => [group, {
      ran: median(cpus.map((cpu) => cpu[group].ran)),
      waited: median(cpus.map((cpu) => cpu[group].waited)),
    }])) as ThreadCpu;
  const summary = (figures: RoundFigures[]): LatencyFigures => ({
    p50: median(figures.map((round) => round.p50)),
    p99: median(figures.map((round) => round.p99)),
    samples: figures.reduce((sum, round) => sum + round.samples, 0),
    worstP99: Math.max(...figures.map((round) => round.p99)),
    cpu: cpuMedian(figures.map((round) => round.cpu)),
    clientCpu: cpuMedian(figures.map((round) => round.clientCpu)),
  });
  return Object.fromEntries(sources.map((source) => [source, summary(rounds[source])]));
}

/** One live run of `messages` frames 20 ms apart to 100 subscribers; its latency percentiles. */
async function liveRound(
  { peer, start, follow, made }: BenchChild,
  messages: number,
  source: LiveSource,
): Promise<RoundFigures> {
  // The bare and commit floors make their frames and stamp them; the runtime and the relay read
  // the fake provider's, stamped by the fake.
  const floor = source === "bare" || source === "commit";
  const clientBefore = readThreadCpu();
  // Only the arrival times are taken while the streams run; parsing waits until every stream
  // ended, so one subscriber's parsing does not delay another's timestamp (the bench is one
  // thread): parsed as each stream ended, the floors' last frame reached the later subscribers
  // after the earlier ones' parsing.
  let live = "";
  if (source === "runtime") live = await start(`burst:${messages}:20`);
  const subscribers = Array.from(
    { length: 100 },
    () => source === "runtime" ? follow(live) : rawFollow(`${peer}/live`, {}),
  );
  if (source === "relay") {
    // The fake's script pauses 300 ms before its first message, as for the runtime's rounds.
    live = (await (await fetch(`${peer}/live/relay?n=${messages}`)).json()).session;
  } else if (floor) {
    // The same head start the fake provider's script gives the runtime's subscribers.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await fetch(`${peer}/live/go?n=${messages}&commit=${source === "commit" ? 1 : 0}`);
  }
  const allReads = await Promise.all(subscribers);
  const clientAfter = readThreadCpu();
  const { mark, now } = await (await fetch(`${peer}/cpu`)).json() as {
    mark: ThreadCpu;
    now: ThreadCpu;
  };
  const received: Record<string, number[]> = {};
  const stamped: Record<string, number> = {};
  let lastConnected = 0;
  for (const reads of allReads) {
    lastConnected = Math.max(lastConnected, reads[0]?.[0] ?? 0);
    for (const { data, time } of completedFrames(reads)) {
      (received[data.text as string] ??= []).push(time);
      if (floor) stamped[data.text as string] = data.at as number;
    }
  }
  if (!floor) Object.assign(stamped, await made(live));
  checkClock();
  const latencies: number[] = [];
  for (const [text, times] of Object.entries(received)) {
    for (const time of times) latencies.push(time - stamped[text]);
  }
  // Every subscriber must be connected before the first message, or its backlog would count
  // as latency.
  if (lastConnected >= Math.min(...Object.values(stamped))) {
    throw new Error("a subscriber connected after the live run's first message");
  }
  return {
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    samples: latencies.length,
    cpu: cpuPer(mark, now, messages),
    clientCpu: cpuPer(clientBefore, clientAfter, messages),
  };
}

/**
 * Phase 3: what the child holds per idle subscriber, of the runtime or (`floor`) of the peer's
 * bare streaming response, each in a fresh child, measured after a full collection. Setting up
 * 1,000 streams at once grows V8's heap (its young generation doubles under the burst) and V8
 * keeps that room once the garbage is gone; counting it would charge each subscriber for the
 * burst rather than for what it holds, and it differs from run to run by megabytes. So the
 * resident figure is the RSS growth less the growth of the heap's free space.
 */
async function measureIdleMemory(
  { peer, start, open }: BenchChild,
  quick: boolean,
  floor: boolean,
): Promise<IdleMemory> {
  const held = floor ? "" : await start("hold");
  const subscribe = floor ? () => fetch(`${peer}/idle`) : () => open(held);
  const memory = async () =>
    (await (await fetch(`${peer}/memory`)).json()) as {
      rss: number;
      heapTotal: number;
      heapUsed: number;
    };
  // Warm up one stream so lazily loaded code is in before the baseline.
  const warm = await subscribe();
  const warmReader = warm.body!.getReader();
  await warmReader.read();
  await new Promise((resolve) => setTimeout(resolve, 500));
  const before = await memory();
  const idle = quick ? 300 : 1000;
  const readers = await Promise.all(Array.from({ length: idle }, async () => {
    const reader = (await subscribe()).body!.getReader();
    await reader.read(); // the `retry` line: the stream is open
    return reader;
  }));
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const after = await memory();
  await Promise.all(readers.map((reader) => reader.cancel()));
  await warmReader.cancel();

  const freeGrowth = (after.heapTotal - after.heapUsed) - (before.heapTotal - before.heapUsed);
  return {
    resident: Math.max(after.rss - before.rss - freeGrowth, 0) / idle,
    heap: Math.max(after.heapUsed - before.heapUsed, 0) / idle,
  };
}

/**
 * Runs the benchmark's phases (all by default), each against a child process it starts and
 * stops.
 */
export async function runEventsBench(
  options: {
    quick?: boolean;
    phases?: readonly Phase[];
    /**
     * A folder for a CPU profile of the latency phase's child (`--cpu-prof`), and of the delivery
     * phase's child in its `delivery` folder.
     */
    profile?: string;
    /** Who makes the latency phase's frames (default: the runtime and both floors). */
    sources?: readonly LiveSource[];
    /** Measured rounds of each source in the latency phase (default 3; `quick`: 1). */
    rounds?: number;
  } = {},
): Promise<EventsBenchResult> {
  const quick = options.quick ?? false;
  const phases = new Set(options.phases ?? PHASES);
  const result: EventsBenchResult = {};
  if (phases.has("delivery")) {
    result.delivery = await withChild(
      (child) => measureDelivery(child, quick),
      options.profile === undefined ? undefined : `${options.profile}/delivery`,
    );
  }
  if (phases.has("latency")) {
    const sources = options.sources ?? LIVE_SOURCES;
    const rounds = options.rounds ?? (quick ? 1 : 3);
    result.latency = await withChild(
      (child) => measureLatency(child, { quick, sources, rounds }),
      options.profile,
    );
  }
  if (phases.has("memory")) {
    const ours = await withChild((child) => measureIdleMemory(child, quick, false));
    const floor = await withChild((child) => measureIdleMemory(child, quick, true));
    result.memory = { ours, floor };
  }
  return result;
}

const ms = (value: number) => `${value.toFixed(1)} ms`;

/** A CPU figure in ms, to a hundredth. */
const cpuMs = (value: number) => value.toFixed(2);

/** The CPU per frame table of a latency phase: ran and waited, by thread and source. */
function cpuTable(latency: Partial<Record<LiveSource, LatencyFigures>>): string[] {
  const names: Record<LiveSource, string> = {
    runtime: "ours",
    commit: "durable floor",
    bare: "bare floor",
    relay: "relay floor",
  };
  const sources = (["runtime", "commit", "bare", "relay"] as const).filter((source) =>
    latency[source] !== undefined
  ).map((source) => [source, names[source]] as const);
  const rows: [string, (figures: LatencyFigures) => { ran: number; waited: number }][] = [
    ["the child's JavaScript thread", (figures) => figures.cpu.js],
    ["Deno KV's SQLite thread (sw-*)", (figures) => figures.cpu.kv],
    ["V8's helper threads", (figures) => figures.cpu.v8],
    ["the child's other threads", (figures) => figures.cpu.other],
    ["the subscribers' thread (parent)", (figures) => figures.clientCpu.js],
  ];
  const width = 38;
  const column = 16;
  const lines = [
    "  CPU per frame, ms (ran on a core, waited for one; medians of rounds):",
    "".padEnd(width) + sources.map(([, name]) => name.padStart(column)).join(""),
  ];
  for (const [name, pick] of rows) {
    lines.push(
      `    ${name}`.padEnd(width) + sources.map(([source]) => {
        const time = pick(latency[source]!);
        return `${cpuMs(time.ran)}, ${cpuMs(time.waited)}`.padStart(column);
      }).join(""),
    );
  }
  return lines;
}

/**
 * Formats one run's figures, with the target lines of its ratios (the ones `bench/main.ts`
 * reads).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatEventsBench } from "./events_bench.ts";
 * const zero = { ran: 0, waited: 0 };
 * const cpu = (js: number) => ({ js: { ran: js, waited: 0 }, kv: zero, v8: zero, other: zero });
 * const figures = (p99: number, js: number) => ({
 *   p50: 1, p99, samples: 10, worstP99: p99, cpu: cpu(js), clientCpu: cpu(1),
 * });
 * const text = formatEventsBench({
 *   delivery: { logEvents: 10, rows: [{ subscribers: 100, runtime: 80, peer: 100, ratio: 0.8 }] },
 *   latency: { runtime: figures(5, 3), bare: figures(3, 2), commit: figures(4, 2.5) },
 *   memory: { ours: { resident: 20_000, heap: 5_000 }, floor: { resident: 10_000, heap: 4_000 } },
 * });
 * assert.match(text, /durable log's floor\): p50 1\.0 ms, p99 4\.0 ms \(worst round 4\.0 ms\)/);
 * assert.match(text, /p99 added latency \/ the durable floor's p99 = 1\.25x \(target <= 1\.25x: met\)/);
 * assert.match(text, /delivery at 100 subscribers \/ precomputed SSE = 0\.80x \(target >= 0\.7x: met\)/);
 * assert.match(text, /JavaScript thread \/ the durable floor's = 1\.20x \(target <= 1\.3x: met\)/);
 * ```
 */
export function formatEventsBench(result: EventsBenchResult): string {
  const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
  // A floor's percentiles, as both floors print them.
  const floor = (figures: LatencyFigures) =>
    `p50 ${ms(figures.p50)}, p99 ${ms(figures.p99)} (worst round ${ms(figures.worstP99)})`;
  const lines: string[] = [];
  if (result.delivery !== undefined) {
    lines.push(`Run events: delivery of a ${result.delivery.logEvents}-event log`);
    for (const row of result.delivery.rows) {
      lines.push(
        `  ${String(row.subscribers).padStart(5)} subscribers: runtime ${
          Math.round(row.runtime).toLocaleString("en")
        } events/s, peer ${Math.round(row.peer).toLocaleString("en")} events/s, ratio ${
          row.ratio.toFixed(2)
        }`,
      );
    }
  }
  if (result.latency !== undefined) {
    const { runtime, bare, commit, relay } = result.latency;
    const parts: string[] = [];
    if (runtime !== undefined) {
      parts.push(
        `p50 ${ms(runtime.p50)}, p99 ${ms(runtime.p99)} (medians of rounds, ${runtime.samples} ` +
          `frames, worst round p99 ${ms(runtime.worstP99)})`,
      );
    }
    if (bare !== undefined) {
      parts.push(`the floor, frames written straight to 100 streams: ${floor(bare)}`);
    }
    if (commit !== undefined) {
      parts.push(
        `the same after one Deno KV commit per frame (a durable log's floor): ${floor(commit)}`,
      );
    }
    if (relay !== undefined) {
      parts.push(
        `the fake provider's stream relayed, each chunk committed first (a durable relay's ` +
          `floor): ${floor(relay)}`,
      );
    }
    lines.push(
      `Run events: added latency at 100 subscribers: ${parts.join("; ")}`,
      ...cpuTable(result.latency),
    );
  }
  if (result.memory !== undefined) {
    const { ours, floor } = result.memory;
    lines.push(
      `Run events: memory per idle subscriber (resident, after a full GC): ${
        kib(ours.resident)
      }; a bare Deno.serve streaming response: ${kib(floor.resident)} (the floor); ours above ` +
        `it: ${kib(ours.resident - floor.resident)} (target < 32 KiB)`,
      `  of which JavaScript heap: ours ${kib(ours.heap)}, the floor ${kib(floor.heap)}`,
    );
  }
  lines.push(...targetLines([eventsRatios(result)]));
  return lines.join("\n");
}

/** Whether a ratio meets its target. */
function meets(name: keyof typeof EVENTS_TARGETS, ratio: number): boolean {
  return name === "delivery" ? ratio >= EVENTS_TARGETS[name] : ratio <= EVENTS_TARGETS[name];
}

/**
 * The target lines of the three ratios: one run's, or the medians of several with their spread.
 */
function targetLines(runs: EventsRatios[]): string[] {
  const names: [keyof EventsRatios, string][] = [
    ["latency", "run events: p99 added latency / the durable floor's p99"],
    ["delivery", "run events: delivery at 100 subscribers / precomputed SSE"],
    ["cpu", "run events: CPU per frame on the JavaScript thread / the durable floor's"],
    ["relayLatency", "context: p99 added latency / the relay floor's p99"],
    ["relayCpu", "context: CPU per frame on the JavaScript thread / the relay floor's"],
  ];
  const lines: string[] = [];
  for (const [name, label] of names) {
    const values = runs.map((run) => run[name]).filter((value) => value !== undefined);
    if (values.length === 0) continue;
    const value = median(values);
    const spread = values.length > 1
      ? `${values.length} runs: ${values.map((v) => v.toFixed(2)).join(", ")}`
      : "";
    if (!(name in EVENTS_TARGETS)) {
      lines.push(`${label} = ${value.toFixed(2)}x${spread === "" ? "" : ` (${spread})`}`);
      continue;
    }
    const targeted = name as keyof typeof EVENTS_TARGETS;
    const operator = targeted === "delivery" ? ">=" : "<=";
    lines.push(
      `${label} = ${value.toFixed(2)}x (target ${operator} ${EVENTS_TARGETS[targeted]}x: ${
        meets(targeted, value) ? "met" : "missed"
      }${spread === "" ? "" : `; ${spread}`})`,
    );
  }
  return lines;
}

/**
 * Formats several runs: each run's three ratios, then their medians as the target lines.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatEventsRuns } from "./events_bench.ts";
 * const text = formatEventsRuns([{ latency: 1.1, cpu: 1.2 }, { latency: 1.3, cpu: 1.4 }, {
 *   latency: 1.2,
 *   cpu: 1.25,
 * }]);
 * assert.match(text, /p99 = 1\.20x \(target <= 1\.25x: met; 3 runs: 1\.10, 1\.30, 1\.20\)/);
 * ```
 */
export function formatEventsRuns(runs: EventsRatios[]): string {
  return [`Run events: medians of ${runs.length} runs`, ...targetLines(runs)].join("\n");
}

if (import.meta.main) {
  if (Deno.args.includes("--child")) {
    await serveChild();
  } else if (Deno.args.includes("--provider")) {
    await serveProvider();
  } else {
    const quick = Deno.args.includes("--quick") || Deno.env.get("BENCH_QUICK") === "1";
    const only = Deno.args.indexOf("--only");
    const phases = only === -1 ? PHASES : Deno.args[only + 1].split(",").map((name) => {
      if (!(PHASES as readonly string[]).includes(name)) throw new Error(`no phase ${name}`);
      return name as Phase;
    });
    const at = Deno.args.indexOf("--runs");
    const runs = at === -1 ? 1 : Number(Deno.args[at + 1]);
    const profileAt = Deno.args.indexOf("--profile");
    const profile = profileAt === -1 ? undefined : Deno.args[profileAt + 1];
    const sourcesAt = Deno.args.indexOf("--sources");
    const sources = sourcesAt === -1 ? undefined : Deno.args[sourcesAt + 1].split(",").map(
      (name) => {
        if (!(LIVE_SOURCES as readonly string[]).includes(name)) {
          throw new Error(`no source ${name}`);
        }
        return name as LiveSource;
      },
    );
    const roundsAt = Deno.args.indexOf("--rounds");
    const rounds = roundsAt === -1 ? undefined : Number(Deno.args[roundsAt + 1]);
    const ratios: EventsRatios[] = [];
    for (let run = 0; run < runs; run++) {
      const result = await runEventsBench({ quick, phases, profile, sources, rounds });
      if (runs > 1) console.log(`-- run ${run + 1} of ${runs}`);
      console.log(formatEventsBench(result));
      ratios.push(eventsRatios(result));
    }
    if (runs > 1) console.log(formatEventsRuns(ratios));
    Deno.exit(0);
  }
}
