/**
 * Peak heap of `driveManagedAgentSession` over a 1,000,000-event session, against the vendor
 * SDK's `SessionToolRunner` (`@anthropic-ai/sdk` 1.12.0, `client.beta.sessions.events.toolRunner`)
 * tailing the same session in the same process.
 *
 * The session is generated lazily (event `i` is a pure function of `i`, so neither the server nor
 * the bench keeps the history): agent messages, thinking, spans, thread events and outcome
 * iterations, a custom tool call every 1,000 events that blocks until answered, two streams cut
 * mid-frame (so each client reconnects and re-lists history), and a final `terminated` status.
 * Both clients read the same SSE bytes; ours through its `ManagedAgentDriverClient`, the SDK's
 * through a `fetch` that serves the same routes.
 *
 * Heap is `Deno.memoryUsage().heapUsed`, sampled every 1,000 events; "peak above start" is the
 * largest sample minus the sample taken just before the drive started (after a forced GC).
 * "live" is the heap right after a forced GC, taken at every tenth of the session (those GCs also
 * cap how much garbage the peak can include). Flat means live growth from 10% to the end near 0.
 * Target: peak under 64 MiB above the start.
 *
 * Run: `deno run -A bench/driver_memory.ts` (`BENCH_EVENTS` changes the session length;
 * `--quick` or `BENCH_QUICK=1` runs 100,000 events). The script re-runs itself with
 * `--v8-flags=--expose-gc` so that it can also report the live heap after forced collections.
 *
 * @module
 */
import Anthropic from "@anthropic-ai/sdk";
import {
  driveManagedAgentSession,
  type ManagedAgentDriverClient,
} from "../client/managed_agents/driver.ts";
import type {
  ConfirmToolParams,
  ListSessionEventsParams,
  ManagedAgentEvent,
  RespondCustomToolParams,
} from "../client/managed_agents/types.ts";

const QUICK = Deno.args.includes("--quick") || Deno.env.get("BENCH_QUICK") === "1";
const EVENTS = Number(Deno.env.get("BENCH_EVENTS") ?? (QUICK ? 100_000 : 1_000_000));
const TOOL_EVERY = 1000;
const SAMPLE_EVERY = 1000;
const BASE_TIME = Date.UTC(2026, 4, 1);
const SESSION = "sesn_bench";
const MIB = 1024 * 1024;
const encoder = new TextEncoder();

/** Memory samples of one drive. */
interface Measure {
  name: string;
  seconds: number;
  events: number;
  startMiB: number;
  peakAboveStartMiB: number;
  /** Heap after a forced GC at 10% of the session (NaN without `--expose-gc`). */
  liveAt10PercentMiB: number;
  /** Heap after a forced GC at the last sample. */
  liveAtEndMiB: number;
}

/**
 * A session of `total` events generated on demand. Event `i` has id `sevt_<i>` and
 * `processed_at` `BASE_TIME + i` ms. Slots `k*1000+500` hold a custom tool call, then an idle
 * `requires_action`, then the answer (only once it arrives), then `status_running`.
 */
class LazySession {
  readonly total: number;
  /** Events the provider has produced so far. */
  frontier = 0;
  /** Answer events by slot (one per tool call; the answers are part of the history). */
  readonly answers = new Map<number, ManagedAgentEvent>();
  /** Positions at which the stream reaching them is cut mid-frame. */
  readonly cuts: number[];
  readonly #waiters = new Set<() => void>();
  #sampleHook: (() => void) | undefined;

  constructor(total: number) {
    this.total = total;
    this.cuts = [Math.floor(total / 3), Math.floor((2 * total) / 3)];
  }

  set onSample(hook: () => void) {
    this.#sampleHook = hook;
  }

  /** The slot kind of index `i`. */
  #toolBase(i: number): number | undefined {
    const offset = i % TOOL_EVERY;
    if (offset >= 500 && offset <= 503 && i + (503 - offset) < this.total - 1) {
      return i - offset + 500;
    }
    return undefined;
  }

  event(i: number): ManagedAgentEvent {
    const processed_at = new Date(BASE_TIME + i).toISOString();
    const id = `sevt_${i}`;
    if (i === 0) {
      return { type: "user.message", id, processed_at, content: [{ type: "text", text: "go" }] };
    }
    if (i === this.total - 1) return { type: "session.status_terminated", id, processed_at };
    const base = this.#toolBase(i);
    if (base !== undefined) {
      switch (i - base) {
        case 0:
          return { type: "agent.custom_tool_use", id, processed_at, name: "lookup", input: { i } };
        case 1:
          return {
            type: "session.status_idle",
            id,
            processed_at,
            stop_reason: { type: "requires_action", event_ids: [`sevt_${base}`] },
          };
        case 2:
          return { ...this.answers.get(base)!, id, processed_at };
        default:
          return { type: "session.status_running", id, processed_at };
      }
    }
    if (i % 100 === 7) {
      return {
        type: "span.outcome_evaluation_end",
        id,
        processed_at,
        outcome_id: "outc_1",
        iteration: i % 20,
        result: "needs_revision",
        explanation: "More detail needed",
      };
    }
    if (i % 50 === 3) {
      return {
        type: "agent.thread_message_sent",
        id,
        processed_at,
        to_session_thread_id: "sthr_2",
        to_agent_name: "researcher",
        content: [{ type: "text", text: "Please look into the second half of the list." }],
      };
    }
    if (i % 10 < 6) {
      return {
        type: "agent.message",
        id,
        processed_at,
        content: [{ type: "text", text: `Step ${i}: reading the next file and summarising it ✓` }],
      };
    }
    if (i % 10 < 8) return { type: "agent.thinking", id, processed_at };
    return { type: "span.model_request_start", id, processed_at };
  }

  /** Whether index `i` may be produced now (an answer slot waits for its answer). */
  #ready(i: number): boolean {
    if (i >= this.total) return false;
    const base = this.#toolBase(i);
    return base === undefined || i - base !== 2 || this.answers.has(base);
  }

  /** Produces events up to `i` inclusive when possible; returns whether `i` exists. */
  #produce(i: number): boolean {
    while (this.frontier <= i && this.#ready(this.frontier)) {
      this.frontier++;
      if (this.frontier % SAMPLE_EVERY === 0) this.#sampleHook?.();
    }
    return i < this.frontier;
  }

  answer(toolUseId: string, event: ManagedAgentEvent): void {
    const base = Number(toolUseId.slice(5));
    if (this.#toolBase(base) !== base || this.answers.has(base)) {
      throw Object.assign(new Error(`Tool use ${toolUseId} is not awaiting an answer`), {
        status: 400,
        retryable: false,
      });
    }
    this.answers.set(base, event);
    for (const wake of [...this.#waiters]) wake();
  }

  /** An SSE body from the current frontier, cut mid-frame at the next planned cut. */
  stream(signal?: AbortSignal): ReadableStream<Uint8Array> {
    let position = this.frontier;
    let cancelled = false;
    let wake: (() => void) | undefined;
    const stop = (): void => {
      cancelled = true;
      wake?.();
    };
    signal?.addEventListener("abort", stop, { once: true });
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        const parts: string[] = [];
        while (parts.length < 64) {
          if (cancelled) return;
          if (!this.#produce(position)) {
            if (parts.length > 0) break;
            if (position >= this.total) {
              controller.close();
              return;
            }
            await new Promise<void>((resolve) => {
              wake = resolve;
              this.#waiters.add(resolve);
            });
            this.#waiters.delete(wake!);
            wake = undefined;
            continue;
          }
          const event = this.event(position++);
          const frame = `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
          if (this.cuts.length > 0 && position >= this.cuts[0]) {
            this.cuts.shift();
            parts.push(frame.slice(0, frame.length >> 1));
            controller.enqueue(encoder.encode(parts.join("")));
            controller.error(new TypeError("terminated"));
            signal?.removeEventListener("abort", stop);
            return;
          }
          parts.push(frame);
        }
        controller.enqueue(encoder.encode(parts.join("")));
      },
      cancel: () => {
        signal?.removeEventListener("abort", stop);
        stop();
      },
    }, { highWaterMark: 0 });
  }

  /** History from index `from`, at most `limit` events, up to the frontier. */
  history(from: number, limit: number): ManagedAgentEvent[] {
    const events: ManagedAgentEvent[] = [];
    for (let i = Math.max(0, from); i < this.frontier && events.length < limit; i++) {
      events.push(this.event(i));
    }
    return events;
  }
}

/** Our driver's client onto the lazy session. */
function driverClient(session: LazySession): ManagedAgentDriverClient {
  return {
    openEventStream: (_id, signal) => Promise.resolve(session.stream(signal)),
    listEvents(_id, params?: ListSessionEventsParams) {
      const gte = params?.createdAt?.gte;
      const from = gte === undefined ? 0 : Date.parse(gte) - BASE_TIME;
      return Promise.resolve(session.history(from, Number.MAX_SAFE_INTEGER));
    },
    confirmTool(_id, params: ConfirmToolParams) {
      return Promise.reject(new Error(`unexpected confirmation of ${params.toolUseId}`));
    },
    respondCustomTool(_id, params: RespondCustomToolParams) {
      session.answer(params.toolUseId, {
        type: "user.custom_tool_result",
        custom_tool_use_id: params.toolUseId,
        content: params.content,
      });
      return Promise.resolve([]);
    },
  };
}

/** A fetch serving the vendor SDK the same session. */
function sdkFetch(session: LazySession): typeof fetch {
  const json = (body: unknown): Response =>
    new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
  return (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    if (url.pathname === `/v1/sessions/${SESSION}/events/stream`) {
      return Promise.resolve(
        new Response(session.stream(request.signal), {
          headers: { "content-type": "text/event-stream" },
        }),
      );
    }
    if (url.pathname === `/v1/sessions/${SESSION}/events` && request.method === "GET") {
      const limit = Number(url.searchParams.get("limit") ?? 1000);
      const from = Number(url.searchParams.get("page") ?? 0);
      const data = session.history(from, limit);
      const next = from + data.length;
      return Promise.resolve(
        json({ data, next_page: next < session.frontier ? String(next) : null }),
      );
    }
    if (url.pathname === `/v1/sessions/${SESSION}/events` && request.method === "POST") {
      return request.json().then((body: { events: ManagedAgentEvent[] }) => {
        for (const event of body.events) {
          session.answer(event.custom_tool_use_id as string, event);
        }
        return json({ data: body.events });
      });
    }
    return Promise.resolve(new Response("not found", { status: 404 }));
  };
}

const forceGc = (globalThis as { gc?: () => void }).gc;

async function measure(
  name: string,
  drive: (session: LazySession) => Promise<number>,
): Promise<Measure> {
  const session = new LazySession(EVENTS);
  await new Promise((resolve) => setTimeout(resolve, 50));
  forceGc?.();
  const start = Deno.memoryUsage().heapUsed;
  let peak = start;
  const liveEvery = Math.max(SAMPLE_EVERY, Math.floor(EVENTS / 10 / SAMPLE_EVERY) * SAMPLE_EVERY);
  const live: number[] = [];
  session.onSample = () => {
    const used = Deno.memoryUsage().heapUsed;
    if (used > peak) peak = used;
    if (forceGc && session.frontier % liveEvery === 0) {
      forceGc();
      live.push(Deno.memoryUsage().heapUsed);
    }
  };
  const started = performance.now();
  const handled = await drive(session);
  const seconds = (performance.now() - started) / 1000;
  return {
    name,
    seconds,
    events: handled,
    startMiB: start / MIB,
    peakAboveStartMiB: (peak - start) / MIB,
    liveAt10PercentMiB: live.length > 0 ? live[0] / MIB : NaN,
    liveAtEndMiB: live.length > 0 ? live[live.length - 1] / MIB : NaN,
  };
}

async function driveOurs(session: LazySession): Promise<number> {
  let handled = 0;
  let answered = 0;
  const result = await driveManagedAgentSession(driverClient(session), SESSION, {
    onEvent() {
      handled++;
    },
    onCustomTool({ input }) {
      answered++;
      return { content: [{ type: "text", text: `looked up ${JSON.stringify(input)}` }] };
    },
  }, { minReconnectDelayMs: 1, maxReconnectDelayMs: 10 });
  if (result.outcome !== "terminal") throw new Error(`Drive ended with ${result.outcome}`);
  if (handled !== EVENTS) throw new Error(`Handled ${handled} of ${EVENTS} events`);
  if (answered !== session.answers.size) throw new Error("Answers differ");
  return handled;
}

async function driveSdk(session: LazySession): Promise<number> {
  const client = new Anthropic({
    apiKey: "bench",
    baseURL: "http://provider.invalid",
    fetch: sdkFetch(session),
    maxRetries: 0,
  });
  const runner = client.beta.sessions.events.toolRunner(SESSION, {
    maxIdleMs: 0,
    tools: [{
      name: "lookup",
      description: "Looks something up",
      input_schema: { type: "object", properties: {} },
      parse: (input: unknown) => input,
      run: (input: unknown) => `looked up ${JSON.stringify(input)}`,
    }],
  });
  let calls = 0;
  for await (const _call of runner) calls++;
  if (calls !== session.answers.size) throw new Error(`SDK answered ${calls} calls`);
  return session.frontier;
}

/** Runs the benchmark and returns its rows (used by `bench/main.ts`). */
export async function runDriverMemoryBench(): Promise<Measure[]> {
  // Quiet the SDK's reconnect warnings (the cuts are planned).
  const warn = console.warn;
  console.warn = () => {};
  try {
    const ours = await measure("driveManagedAgentSession", driveOurs);
    const peer = await measure("SDK SessionToolRunner", driveSdk);
    return [ours, peer];
  } finally {
    console.warn = warn;
  }
}

if (import.meta.main) {
  if (forceGc === undefined && !Deno.env.get("BENCH_NO_REEXEC")) {
    // Live-heap samples need `gc()`: run again with it exposed.
    const { code } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--v8-flags=--expose-gc", new URL(import.meta.url).pathname],
      env: { BENCH_NO_REEXEC: "1", ...(QUICK ? { BENCH_QUICK: "1" } : {}) },
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    Deno.exit(code);
  }
  const rows = await runDriverMemoryBench();
  const [ours, peer] = rows;
  const mib = (n: number, width: number): string => n.toFixed(1).padStart(width);
  console.log(
    `driver memory over a ${EVENTS.toLocaleString("en")}-event session (2 dropped streams)`,
  );
  console.log(
    "client".padEnd(26) + "events/s".padStart(10) + "start MiB".padStart(11) +
      "peak above start".padStart(18) + "live at 10%".padStart(13) + "live at end".padStart(13),
  );
  for (const row of rows) {
    console.log(
      row.name.padEnd(26) + (row.events / row.seconds).toFixed(0).padStart(10) +
        mib(row.startMiB, 11) + mib(row.peakAboveStartMiB, 18) + mib(row.liveAt10PercentMiB, 13) +
        mib(row.liveAtEndMiB, 13),
    );
  }
  console.log(
    `ratio ours/SDK: peak above start ${
      (ours.peakAboveStartMiB / peer.peakAboveStartMiB).toFixed(2)
    }x, live growth 10%->end ${(ours.liveAtEndMiB - ours.liveAt10PercentMiB).toFixed(1)} vs ${
      (peer.liveAtEndMiB - peer.liveAt10PercentMiB).toFixed(1)
    } MiB, events/s ${((ours.events / ours.seconds) / (peer.events / peer.seconds)).toFixed(2)}x`,
  );
  console.log(
    `target: ours under 64 MiB above start: ${ours.peakAboveStartMiB < 64 ? "met" : "missed"}`,
  );
}
