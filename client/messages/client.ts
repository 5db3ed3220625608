/**
 * {@linkcode ProviderApiClient}: the stateless run client of the provider's messages API. It
 * implements the universal {@linkcode RuntimeClient} contract on `POST /v1/messages` and the
 * message batches API.
 *
 * @module
 */
import { callFields, type FetchLike, HttpTransport, type ProviderTraceCallback } from "../http.ts";
import { providerCapabilities } from "../capabilities.ts";
import {
  isTerminalRunStreamEvent,
  type RunStreamEvent,
  type RunStreamHandlers,
  type RunStreamOptions,
  type RunStreamResult,
  type RuntimeBatchRequest,
  type RuntimeBatchResult,
  type RuntimeBatchStatus,
  type RuntimeCapabilities,
  type RuntimeClient,
  type RuntimeRunStartBody,
  type RuntimeRunStatus,
} from "../contract.ts";
import {
  ProviderAbortError,
  ProviderApiError,
  ProviderConnectionError,
  ProviderUnsupportedError,
} from "../errors.ts";
import { readSse, type SseMessage } from "../sse.ts";
import { type RunBodyDefaults, toCreateParams } from "./_body.ts";
import { batchToStatus, isProviderMessage, messageToRunStatus } from "./_convert.ts";
import { MessageBatches, type ProviderBatchResultsOptions } from "./batches.ts";
import { mapProviderStreamEvent, ProviderStreamState, readProviderRunId } from "./stream.ts";
import type { ProviderRunStatus } from "./types.ts";

/** Options of {@linkcode ProviderApiClient}. */
export interface ProviderApiClientOptions {
  /** API key, sent as `x-api-key`. Required. */
  apiKey: string;
  /** Model used when a run names none. */
  defaultModel?: string;
  /** Output token cap used when a run names none (the API requires one). */
  defaultMaxTokens?: number;
  /** Sent as `provider-version` (default `2026-10-21`). */
  providerVersion?: string;
  /**
   * Base URL of the provider API. Required when the client is built (a provider registry may
   * supply it); a missing or invalid one is a `TypeError`.
   */
  baseUrl?: string;
  /** The fetch to use (default `globalThis.fetch`). */
  fetchImpl?: FetchLike;
  /** Receives one trace per request attempt (never headers or bodies). */
  onTrace?: ProviderTraceCallback;
  /** Timeout of the batch calls, whole request, in ms (default 60000). */
  defaultTimeoutMs?: number;
  /** Timeout of a non-streaming `startRun`, whole request, in ms (default 600000). */
  runTimeoutMs?: number;
  /** Time allowed until a stream's response headers, in ms (default 600000); never caps a stream. */
  streamTimeoutMs?: number;
  /** Retries after a failed attempt (default 2); never once a stream has delivered events. */
  maxRetries?: number;
  /**
   * Beta values sent on every request, comma-joined in `provider-beta` (a call's own `betas`
   * come first). The stable messages API needs none.
   */
  betas?: readonly string[];
  /**
   * Extra headers sent on every request (a call's `headers` win over these). Headers the client
   * sets itself (`authorization`, `x-api-key`, `provider-version`, `provider-beta`,
   * `content-type`, `accept`) are a `TypeError`, so credentials never come from here.
   */
  headers?: Record<string, string>;
}

const MESSAGES_PATH = "/v1/messages";
const STATELESS = "the stateless messages API keeps no runs; use streamRun or startRun";

function streamFailure(error: unknown, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted) return new ProviderAbortError({ cause: signal.reason });
  if (error instanceof TypeError) {
    return new ProviderConnectionError("The provider stream ended early", { cause: error });
  }
  return error;
}

/**
 * The stateless run client of the messages API. A run is one `POST /v1/messages`: `streamRun`
 * sends it with `stream: true` and maps the event stream onto canonical run events, `startRun`
 * waits for the whole message. The run id is the message id, known only once `message_start`
 * arrives, so there is no subscribe-by-id; `getRun` and `cancelRun` reject with
 * {@linkcode ProviderUnsupportedError}. Message batches are served by `submitBatch`, `getBatch`,
 * `cancelBatch` and `getBatchResults`.
 *
 * A run body's `model` and `maxTokens` fall back to `defaultModel` and `defaultMaxTokens`; with
 * neither, the call throws a `TypeError` before any request. `instructions` become `system`,
 * `metadata.user_id` the wire `metadata.user_id`, and `metadata.params` carries further
 * messages-API fields (`tools`, `tool_choice`, `thinking`, …). No beta header is sent.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderApiClient } from "@automation/runtime/client";
 * // A stand-in for the provider: answers with the event stream of a short message.
 * const frames = [
 *   {
 *     type: "message_start",
 *     message: { id: "msg_1", type: "message", role: "assistant", content: [], usage: {} },
 *   },
 *   { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
 *   { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello" } },
 *   { type: "content_block_stop", index: 0 },
 *   { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 2 } },
 *   { type: "message_stop" },
 * ];
 * const sse = frames.map((frame) => `event: ${frame.type}\ndata: ${JSON.stringify(frame)}\n\n`);
 * const fetchImpl = () =>
 *   Promise.resolve(
 *     new Response(sse.join(""), { headers: { "content-type": "text/event-stream" } }),
 *   );
 * const client = new ProviderApiClient({
 *   apiKey: "<API_KEY>",
 *   baseUrl: "https://provider.example",
 *   defaultModel: "model-small",
 *   defaultMaxTokens: 1024,
 *   fetchImpl,
 * });
 * let text = "";
 * const { runId, terminal } = await client.streamRun({ input: "Say hello" }, {
 *   onEvent(event) {
 *     if (event.type === "message.delta") text += event.text;
 *   },
 * });
 * assert.equal(text, "Hello");
 * assert.equal(runId, "msg_1");
 * assert.equal(terminal?.type, "run.completed");
 * ```
 */
export class ProviderApiClient implements RuntimeClient {
  readonly #http: HttpTransport;
  readonly #defaults: RunBodyDefaults;
  readonly #runTimeoutMs: number;
  readonly #batches: MessageBatches;

  /**
   * Validates the options. A missing `apiKey` or `baseUrl` is a `TypeError`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const client = new ProviderApiClient({ apiKey: "<API_KEY>", baseUrl: "http://127.0.0.1:9" });
   * assert.equal(client.getRuntimeCapabilities().batch, true);
   * assert.throws(() => new ProviderApiClient({ apiKey: "", baseUrl: "http://x" }), TypeError);
   * ```
   */
  constructor(options: ProviderApiClientOptions) {
    if (typeof options?.apiKey !== "string" || options.apiKey === "") {
      throw new TypeError("apiKey is required: pass the provider API key");
    }
    const { defaultModel, defaultMaxTokens } = options;
    if (defaultModel !== undefined && (typeof defaultModel !== "string" || defaultModel === "")) {
      throw new TypeError("defaultModel must be a non-empty string");
    }
    if (
      defaultMaxTokens !== undefined &&
      (!Number.isInteger(defaultMaxTokens) || defaultMaxTokens < 1)
    ) {
      throw new TypeError("defaultMaxTokens must be a positive integer");
    }
    this.#http = new HttpTransport({
      baseUrl: options.baseUrl,
      apiKey: options.apiKey,
      providerVersion: options.providerVersion,
      defaultTimeoutMs: options.defaultTimeoutMs,
      streamTimeoutMs: options.streamTimeoutMs,
      maxRetries: options.maxRetries,
      fetchImpl: options.fetchImpl,
      onTrace: options.onTrace,
      betas: options.betas,
      headers: options.headers,
    });
    this.#defaults = { defaultModel, defaultMaxTokens };
    this.#runTimeoutMs = options.runTimeoutMs ?? 600_000;
    this.#batches = new MessageBatches({
      http: this.#http,
      baseHref: new URL(options.baseUrl as string).href.replace(/\/+$/, ""),
      defaults: this.#defaults,
      timeoutMs: options.defaultTimeoutMs,
    });
  }

  /**
   * What this client supports, from the capability declaration: `runs`, `streaming` and
   * `batch` (the same frozen map as `PROVIDER_RUNTIME_SUPPORT`).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { PROVIDER_RUNTIME_SUPPORT, ProviderApiClient } from "@automation/runtime/client";
   * const client = new ProviderApiClient({ apiKey: "<API_KEY>", baseUrl: "http://127.0.0.1:9" });
   * assert.equal(client.getRuntimeCapabilities().teams, false);
   * assert.equal(client.getRuntimeCapabilities(), PROVIDER_RUNTIME_SUPPORT);
   * ```
   */
  getRuntimeCapabilities(): RuntimeCapabilities {
    return providerCapabilities("provider-sdk");
  }

  /**
   * Runs to completion without streaming (`POST /v1/messages`) and returns the finished run:
   * the message id as `runId`, the joined text as `output`, `requires_action` when the model
   * stopped to call tools and `completed` otherwise, and the provider's whole `message`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderApiClient } from "@automation/runtime/client";
   * // A stand-in for the provider: answers with a finished message.
   * const fetchImpl = () =>
   *   Promise.resolve(Response.json({
   *     id: "msg_1",
   *     type: "message",
   *     role: "assistant",
   *     content: [{ type: "text", text: "4" }],
   *     stop_reason: "end_turn",
   *     usage: { input_tokens: 5, output_tokens: 1 },
   *   }));
   * const client = new ProviderApiClient({
   *   apiKey: "<API_KEY>",
   *   baseUrl: "https://provider.example",
   *   fetchImpl,
   * });
   * const run = await client.startRun({ input: "2 + 2?", model: "model-small", maxTokens: 64 });
   * assert.equal(run.runId, "msg_1");
   * assert.equal(run.status, "completed");
   * assert.equal(run.output, "4");
   * ```
   */
  async startRun(
    body: RuntimeRunStartBody,
    options: RunStreamOptions = {},
  ): Promise<ProviderRunStatus> {
    const params = toCreateParams(body, this.#defaults, false);
    const message = await this.#http.json<unknown>({
      method: "POST",
      path: MESSAGES_PATH,
      body: params,
      ...callFields(options),
      timeoutMs: this.#runTimeoutMs,
    });
    if (!isProviderMessage(message)) {
      throw new ProviderApiError({
        type: "invalid_response",
        message: "The provider answered with something that is not a message",
        retryable: false,
      });
    }
    return messageToRunStatus(message);
  }

  /**
   * Starts a run with one `POST /v1/messages` (`stream: true`) and delivers its canonical events
   * to `handlers.onEvent`, awaiting each. The run id comes from `message_start`, which also
   * emits `run.started`; every frame then goes through {@linkcode mapProviderStreamEvent}.
   * Resolves after the terminal event (`run.completed` or `run.failed`, for an `error` frame)
   * or when the stream ends (then `terminal` is null); the connection is released either way.
   * An `error` frame sent before `message_start` gives a `run.failed` with an empty `runId`.
   * Aborting `signal` cancels the stream and rejects with {@linkcode ProviderAbortError}; a
   * stream that breaks off rejects with {@linkcode ProviderConnectionError}, and an answer that
   * is not an event stream with {@linkcode ProviderApiError} (`invalid_response`).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderApiClient, type RunStreamEvent } from "@automation/runtime/client";
   * // A stand-in for the provider: the model calls a tool, its input arriving in two parts.
   * const frames = [
   *   {
   *     type: "message_start",
   *     message: { id: "msg_2", type: "message", role: "assistant", content: [], usage: {} },
   *   },
   *   {
   *     type: "content_block_start",
   *     index: 0,
   *     content_block: { type: "tool_use", id: "toolu_1", name: "weather", input: {} },
   *   },
   *   {
   *     type: "content_block_delta",
   *     index: 0,
   *     delta: { type: "input_json_delta", partial_json: '{"city":' },
   *   },
   *   {
   *     type: "content_block_delta",
   *     index: 0,
   *     delta: { type: "input_json_delta", partial_json: '"Paris"}' },
   *   },
   *   { type: "content_block_stop", index: 0 },
   *   { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 9 } },
   *   { type: "message_stop" },
   * ];
   * const sse = frames.map((frame) => `event: ${frame.type}\ndata: ${JSON.stringify(frame)}\n\n`)
   *   .join("");
   * const client = new ProviderApiClient({
   *   apiKey: "<API_KEY>",
   *   baseUrl: "https://provider.example",
   *   defaultModel: "model-small",
   *   defaultMaxTokens: 1024,
   *   fetchImpl: () =>
   *     Promise.resolve(new Response(sse, { headers: { "content-type": "text/event-stream" } })),
   * });
   * const controller = new AbortController();
   * const calls: RunStreamEvent[] = [];
   * await client.streamRun({ input: "Use the weather tool" }, {
   *   onEvent(event) {
   *     if (event.type === "tool.call") calls.push(event);
   *   },
   * }, { signal: controller.signal });
   * assert.equal(calls.length, 1);
   * assert.deepEqual(
   *   calls.map((call) => call.type === "tool.call" && [call.name, call.input]),
   *   [["weather", { city: "Paris" }]],
   * );
   * ```
   */
  async streamRun(
    body: RuntimeRunStartBody,
    handlers: RunStreamHandlers,
    options: RunStreamOptions = {},
  ): Promise<RunStreamResult> {
    const params = toCreateParams(body, this.#defaults, true);
    const { signal } = options;
    const response = await this.#http.send({
      method: "POST",
      path: MESSAGES_PATH,
      body: params,
      stream: true,
      ...callFields(options),
    });
    if (!response.body) throw new ProviderConnectionError("The provider stream has no body");
    const contentType = response.headers.get("content-type") ?? "";
    if (!contentType.toLowerCase().startsWith("text/event-stream")) {
      await response.body.cancel().catch(() => {});
      throw new ProviderApiError({
        status: response.status,
        type: "invalid_response",
        message: `The provider answered a streamed run with ${contentType || "no content type"} ` +
          "instead of an event stream",
        requestId: response.headers.get("request-id") ?? undefined,
        retryable: false,
      });
    }
    const onEvent = handlers?.onEvent;
    const state = new ProviderStreamState();
    let runId: string | null = null;
    let terminal: RunStreamEvent | null = null;
    const frames = readSse(response.body, { signal });
    try {
      while (true) {
        let step: IteratorResult<SseMessage, void>;
        try {
          step = await frames.next();
        } catch (error) {
          throw streamFailure(error, signal);
        }
        if (step.done) break;
        const sse = step.value;
        if (runId === null) {
          runId = readProviderRunId(sse);
          if (runId !== null && onEvent) {
            const pending = onEvent({ type: "run.started", runId });
            if (pending) await pending;
          }
        }
        const event = mapProviderStreamEvent(sse, runId ?? "", state);
        if (event === null) continue;
        if (onEvent) {
          const pending = onEvent(event);
          if (pending) await pending;
        }
        if (isTerminalRunStreamEvent(event)) {
          terminal = event;
          break;
        }
      }
    } finally {
      // Releases the connection after a terminal event, a handler error or an abort.
      await frames.return();
    }
    return { runId, terminal };
  }

  /**
   * Not supported: the stateless API keeps no runs. Always rejects with
   * {@linkcode ProviderUnsupportedError}.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderApiClient, ProviderUnsupportedError } from "@automation/runtime/client";
   * const client = new ProviderApiClient({ apiKey: "<API_KEY>", baseUrl: "http://127.0.0.1:9" });
   * await assert.rejects(client.getRun("msg_1"), ProviderUnsupportedError);
   * ```
   */
  getRun(_runId: string, _options?: RunStreamOptions): Promise<RuntimeRunStatus> {
    return Promise.reject(new ProviderUnsupportedError("getRun", STATELESS));
  }

  /**
   * Not supported: the stateless API keeps no runs (abort `streamRun`'s signal to stop one).
   * Always rejects with {@linkcode ProviderUnsupportedError}.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const client = new ProviderApiClient({ apiKey: "<API_KEY>", baseUrl: "http://127.0.0.1:9" });
   * await assert.rejects(client.cancelRun("msg_1"), { code: "providerUnsupported" });
   * ```
   */
  cancelRun(_runId: string, _options?: RunStreamOptions): Promise<RuntimeRunStatus> {
    return Promise.reject(new ProviderUnsupportedError("cancelRun", STATELESS));
  }

  /**
   * Submits a message batch (`POST /v1/messages/batches`). Each request's body is checked and
   * given the client defaults first; a bad one throws before anything is sent.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderApiClient } from "@automation/runtime/client";
   * // A stand-in for the provider: keeps the request body and answers with a new batch.
   * let sent: { requests: { custom_id: string; params: Record<string, unknown> }[] } | undefined;
   * const fetchImpl = async (_url: string | URL | Request, init?: RequestInit) => {
   *   sent = JSON.parse(String(init?.body));
   *   return Response.json({
   *     id: "msgbatch_01",
   *     type: "message_batch",
   *     processing_status: "in_progress",
   *     request_counts: { processing: 2, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
   *     results_url: null,
   *   });
   * };
   * const client = new ProviderApiClient({
   *   apiKey: "<API_KEY>",
   *   baseUrl: "https://provider.example",
   *   defaultModel: "model-small",
   *   defaultMaxTokens: 256,
   *   fetchImpl,
   * });
   * const batch = await client.submitBatch([
   *   { customId: "q1", body: { input: "First question" } },
   *   { customId: "q2", body: { input: "Second question" } },
   * ]);
   * assert.equal(batch.batchId, "msgbatch_01");
   * assert.equal(batch.status, "in_progress");
   * // The client defaults went into every request.
   * assert.deepEqual(
   *   sent?.requests.map((r) => [r.custom_id, r.params.model, r.params.max_tokens]),
   *   [["q1", "model-small", 256], ["q2", "model-small", 256]],
   * );
   * ```
   */
  submitBatch(
    requests: RuntimeBatchRequest[],
    options?: RunStreamOptions,
  ): Promise<RuntimeBatchStatus> {
    return this.#batches.submit(requests, options);
  }

  /**
   * Reads a batch's state (`GET /v1/messages/batches/{id}`).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const client = new ProviderApiClient({
   *   apiKey: "<API_KEY>",
   *   baseUrl: "https://provider.example",
   *   fetchImpl: () =>
   *     Promise.resolve(Response.json({
   *       id: "msgbatch_01",
   *       type: "message_batch",
   *       processing_status: "in_progress",
   *       request_counts: { processing: 1, succeeded: 2, errored: 0, canceled: 0, expired: 0 },
   *       results_url: null,
   *     })),
   * });
   * const batch = await client.getBatch("msgbatch_01");
   * assert.equal(batch.status, "in_progress");
   * assert.deepEqual(batch.counts, {
   *   processing: 1,
   *   succeeded: 2,
   *   errored: 0,
   *   canceled: 0,
   *   expired: 0,
   * });
   * ```
   */
  async getBatch(batchId: string, options?: RunStreamOptions): Promise<RuntimeBatchStatus> {
    return batchToStatus(await this.#batches.retrieve(batchId, options));
  }

  /**
   * Asks the provider to cancel a batch (`POST /v1/messages/batches/{id}/cancel`); the answer
   * is usually `canceling`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const requests: string[] = [];
   * const client = new ProviderApiClient({
   *   apiKey: "<API_KEY>",
   *   baseUrl: "https://provider.example",
   *   fetchImpl: (url, init) => {
   *     requests.push(`${init?.method} ${url}`);
   *     return Promise.resolve(Response.json({
   *       id: "msgbatch_01",
   *       type: "message_batch",
   *       processing_status: "canceling",
   *       request_counts: { processing: 3, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
   *       results_url: null,
   *     }));
   *   },
   * });
   * assert.equal((await client.cancelBatch("msgbatch_01")).status, "canceling");
   * assert.deepEqual(requests, ["POST https://provider.example/v1/messages/batches/msgbatch_01/cancel"]);
   * ```
   */
  cancelBatch(batchId: string, options?: RunStreamOptions): Promise<RuntimeBatchStatus> {
    return this.#batches.cancel(batchId, options);
  }

  /**
   * Streams a batch's results: reads the batch, then its JSONL `results_url`, one line at a time
   * (constant memory however large the file). Each line becomes a contract batch result; a
   * malformed line becomes a {@linkcode ProviderBatchLineError} with its line number, handed to
   * `options.onInvalidLine` or, without one, reported together after the last good line (see
   * {@linkcode ProviderBatchResultsOptions}). A batch without results yet throws
   * `ProviderBatchResultsError` (`notReady`).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const resultsUrl = "https://provider.example/v1/messages/batches/msgbatch_01/results";
   * const message = (text: string) => ({
   *   id: "msg_b1",
   *   type: "message",
   *   role: "assistant",
   *   content: [{ type: "text", text }],
   *   stop_reason: "end_turn",
   * });
   * // A stand-in for the provider: an ended batch, and its results as JSON lines.
   * const fetchImpl = (url: string | URL | Request) =>
   *   Promise.resolve(
   *     String(url) === resultsUrl
   *       ? new Response(
   *         JSON.stringify({ custom_id: "q1", result: { type: "succeeded", message: message("4") } }) +
   *           "\n" + JSON.stringify({ custom_id: "q2", result: { type: "expired" } }) + "\n",
   *       )
   *       : Response.json({
   *         id: "msgbatch_01",
   *         type: "message_batch",
   *         processing_status: "ended",
   *         request_counts: { processing: 0, succeeded: 1, errored: 0, canceled: 0, expired: 1 },
   *         results_url: resultsUrl,
   *       }),
   *   );
   * const client = new ProviderApiClient({
   *   apiKey: "<API_KEY>",
   *   baseUrl: "https://provider.example",
   *   fetchImpl,
   * });
   * const seen: string[] = [];
   * for await (const result of client.getBatchResults("msgbatch_01")) {
   *   seen.push(result.type === "succeeded" ? `${result.customId}: ${result.run.output}` : result.type);
   * }
   * assert.deepEqual(seen, ["q1: 4", "expired"]);
   * ```
   */
  getBatchResults(
    batchId: string,
    options?: ProviderBatchResultsOptions,
  ): AsyncGenerator<RuntimeBatchResult, void, undefined> {
    return this.#batches.results(batchId, options);
  }
}
