/**
 * The client defaults users rely on, observed through behaviour rather than read from constants:
 * a unary call times out after 60 000 ms (`defaultTimeoutMs`), a stream waits 600 000 ms for its
 * response and no longer limits it once the first byte arrived (`streamTimeoutMs`), and a session
 * drive gives up after 2 reconnects without progress (`maxReconnects`). Timeouts run on a fake
 * clock that replaces `setTimeout` for the duration of a test; fetches are stand-ins that answer
 * only when the test says so.
 */
import assert from "node:assert/strict";
import {
  driveManagedAgentSession,
  type ManagedAgentDriverClient,
  ProviderApiClient,
  ProviderManagedAgentClient,
  ProviderTimeoutError,
} from "../../client/mod.ts";
import { textStreamFrames } from "../support/fake_messages.ts";
import { sseFrame } from "../support/fake_provider.ts";

const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;

/** Lets every pending promise job and real zero-delay task run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => realSetTimeout(resolve, 0));
}

/** A clock that owns `setTimeout` while installed; time moves only through `advance`. */
class FakeClock implements Disposable {
  #now = 0;
  #nextId = 1;
  readonly #timers = new Map<number, { at: number; run: () => void }>();

  constructor() {
    globalThis.setTimeout =
      ((callback: (...args: unknown[]) => void, ms = 0, ...args: unknown[]) => {
        const id = this.#nextId++;
        this.#timers.set(id, {
          at: this.#now + Math.max(0, Number(ms)),
          run: () => callback(...args),
        });
        return id;
      }) as unknown as typeof setTimeout;
    globalThis.clearTimeout = ((id?: number) => {
      if (id !== undefined) this.#timers.delete(id);
    }) as unknown as typeof clearTimeout;
  }

  /** Moves the clock forward by `ms`, firing due timers in order and letting their work run. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    while (true) {
      let next: [number, { at: number; run: () => void }] | undefined;
      for (const entry of this.#timers) {
        if (entry[1].at <= target && (next === undefined || entry[1].at < next[1].at)) next = entry;
      }
      if (next === undefined) break;
      this.#timers.delete(next[0]);
      this.#now = next[1].at;
      next[1].run();
      await settle();
    }
    this.#now = target;
    await settle();
  }

  [Symbol.dispose](): void {
    globalThis.setTimeout = realSetTimeout;
    globalThis.clearTimeout = realClearTimeout;
  }
}

/** A fetch that never answers on its own; it records each request's signal and honours it. */
function hangingFetch(): {
  fetchImpl: (input: Request | URL | string, init?: RequestInit) => Promise<Response>;
  signals: AbortSignal[];
} {
  const signals: AbortSignal[] = [];
  const fetchImpl = (_input: Request | URL | string, init?: RequestInit): Promise<Response> => {
    const signal = init!.signal!;
    signals.push(signal);
    return new Promise<Response>((_resolve, reject) => {
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
  };
  return { fetchImpl, signals };
}

/** Tracks whether a promise settled, without letting a rejection go unhandled. */
function watch<T>(promise: Promise<T>): { settled: () => boolean; result: Promise<T> } {
  let settled = false;
  const result = promise.finally(() => {
    settled = true;
  });
  result.catch(() => {});
  return { settled: () => settled, result };
}

Deno.test("defaultTimeoutMs: a unary call is aborted at 60 000 ms, not at 59 999", async () => {
  using clock = new FakeClock();
  const { fetchImpl, signals } = hangingFetch();
  const client = new ProviderManagedAgentClient({
    apiKey: "test-key",
    baseUrl: "http://provider.invalid",
    fetchImpl,
  });
  const caller = new AbortController();
  const call = watch(client.getAgent("agent_1", { signal: caller.signal }));
  await clock.advance(59_999);
  assert.equal(signals.length, 1);
  assert.equal(signals[0].aborted, false, "aborted before 60 000 ms");
  await clock.advance(1);
  assert.equal(signals[0].aborted, true, "still waiting at 60 000 ms");
  assert.ok(signals[0].reason instanceof ProviderTimeoutError);
  assert.equal(signals[0].reason.timeoutMs, 60_000);
  // The call retries; end it through the caller's signal.
  caller.abort();
  await clock.advance(120_000);
  await assert.rejects(call.result);
});

Deno.test("defaultTimeoutMs: a batch call fails with ProviderTimeoutError at 60 000 ms", async () => {
  using clock = new FakeClock();
  const { fetchImpl } = hangingFetch();
  const client = new ProviderApiClient({
    apiKey: "test-key",
    baseUrl: "http://provider.invalid",
    fetchImpl,
    maxRetries: 0,
  });
  const call = watch(client.getBatch("msgbatch_1"));
  await clock.advance(59_999);
  assert.equal(call.settled(), false, "settled before 60 000 ms");
  await clock.advance(1);
  assert.equal(call.settled(), true, "still pending at 60 000 ms");
  await assert.rejects(call.result, (error: unknown) => {
    assert.ok(error instanceof ProviderTimeoutError);
    assert.equal(error.timeoutMs, 60_000);
    return true;
  });
});

Deno.test("streamTimeoutMs: an event stream's response is awaited 600 000 ms, not 599 999", async () => {
  using clock = new FakeClock();
  const { fetchImpl, signals } = hangingFetch();
  const client = new ProviderManagedAgentClient({
    apiKey: "test-key",
    baseUrl: "http://provider.invalid",
    fetchImpl,
  });
  const caller = new AbortController();
  const open = watch(client.openEventStream("sesn_1", caller.signal));
  await clock.advance(599_999);
  assert.equal(signals[0].aborted, false, "aborted before 600 000 ms");
  await clock.advance(1);
  assert.equal(signals[0].aborted, true, "still waiting at 600 000 ms");
  assert.ok(signals[0].reason instanceof ProviderTimeoutError);
  assert.equal(signals[0].reason.timeoutMs, 600_000);
  caller.abort();
  await clock.advance(1_200_000);
  await assert.rejects(open.result);
});

Deno.test("streamTimeoutMs: a streamed run fails with ProviderTimeoutError at 600 000 ms", async () => {
  using clock = new FakeClock();
  const { fetchImpl } = hangingFetch();
  const client = new ProviderApiClient({
    apiKey: "test-key",
    baseUrl: "http://provider.invalid",
    fetchImpl,
    maxRetries: 0,
  });
  const run = watch(client.streamRun({ input: "hi", model: "model-small", maxTokens: 64 }, {}));
  await clock.advance(599_999);
  assert.equal(run.settled(), false, "settled before 600 000 ms");
  await clock.advance(1);
  assert.equal(run.settled(), true, "still pending at 600 000 ms");
  await assert.rejects(run.result, (error: unknown) => {
    assert.ok(error instanceof ProviderTimeoutError);
    assert.equal(error.timeoutMs, 600_000);
    return true;
  });
});

/** A fetch that answers at once with an event stream the test writes into. */
function openStreamFetch(): {
  fetchImpl: (input: Request | URL | string, init?: RequestInit) => Promise<Response>;
  write: (text: string) => void;
  close: () => void;
  signals: AbortSignal[];
} {
  const encoder = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
  });
  const signals: AbortSignal[] = [];
  return {
    fetchImpl: (_input, init) => {
      signals.push(init!.signal!);
      return Promise.resolve(
        new Response(body, { headers: { "content-type": "text/event-stream" } }),
      );
    },
    write: (text) => controller.enqueue(encoder.encode(text)),
    close: () => controller.close(),
    signals,
  };
}

Deno.test("streamTimeoutMs bounds only the first byte: a stream quiet for longer is not cut", async () => {
  using clock = new FakeClock();
  const stream = openStreamFetch();
  const client = new ProviderApiClient({
    apiKey: "test-key",
    baseUrl: "http://provider.invalid",
    fetchImpl: stream.fetchImpl,
    maxRetries: 0,
  });
  const frames = textStreamFrames({ id: "msg_quiet", chunks: ["Hello", " after", " a pause"] });
  const texts: string[] = [];
  const run = watch(client.streamRun({ input: "hi", model: "model-small", maxTokens: 64 }, {
    onEvent(event) {
      if (event.type === "message.delta") texts.push(event.text);
    },
  }));
  // The first frames arrive, then the provider stays quiet for far longer than the timeout.
  stream.write(frames.slice(0, 3).map((frame) => sseFrame(frame)).join(""));
  await clock.advance(1);
  await clock.advance(3 * 600_000);
  assert.equal(run.settled(), false, "the quiet stream was ended");
  assert.equal(stream.signals[0].aborted, false, "the quiet stream was aborted");
  for (const frame of frames.slice(3)) stream.write(sseFrame(frame));
  stream.close();
  await clock.advance(1);
  const result = await run.result;
  assert.equal(texts.join(""), "Hello after a pause");
  assert.equal(result.terminal?.type, "run.completed");
});

Deno.test("streamTimeoutMs bounds only the first byte: an event stream body outlives it", async () => {
  using clock = new FakeClock();
  const stream = openStreamFetch();
  const client = new ProviderManagedAgentClient({
    apiKey: "test-key",
    baseUrl: "http://provider.invalid",
    fetchImpl: stream.fetchImpl,
  });
  const body = await client.openEventStream("sesn_1");
  const reader = body.getReader();
  stream.write('data: {"type":"session.status_running","id":"sevt_1"}\n\n');
  await clock.advance(3 * 600_000);
  assert.equal(stream.signals[0].aborted, false, "the quiet stream was aborted");
  stream.write('data: {"type":"agent.message","id":"sevt_2","content":[]}\n\n');
  stream.close();
  let text = "";
  const decoder = new TextDecoder();
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  assert.match(text, /sevt_1[\s\S]*sevt_2/);
});

Deno.test("maxReconnects: a session stream that keeps dropping is given up after 2 reconnects", async () => {
  let opens = 0;
  const dropping: ManagedAgentDriverClient = {
    openEventStream() {
      opens++;
      // Delivers nothing and then fails, as a connection reset does.
      return Promise.resolve(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            controller.error(new TypeError("connection reset"));
          },
        }),
      );
    },
    listEvents: () => Promise.resolve([]),
    confirmTool: () => Promise.reject(new Error("not expected")),
    respondCustomTool: () => Promise.reject(new Error("not expected")),
  };
  const errors: string[] = [];
  const result = await driveManagedAgentSession(dropping, "sesn_1", {
    onError(error) {
      errors.push(error.reason);
    },
  }, { minReconnectDelayMs: 1, maxReconnectDelayMs: 1 });
  assert.equal(result.outcome, "error");
  assert.equal(result.error?.reason, "reconnectsExhausted");
  // The first connection and 2 reconnects: three drops in a row.
  assert.equal(opens, 3);
  assert.deepEqual(errors, ["reconnectsExhausted"]);
});
