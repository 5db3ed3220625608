/**
 * {@linkcode ProviderApiClient}: the stateless run client of the provider's messages API. It
 * implements the universal {@linkcode RuntimeClient} contract on `POST /v1/messages` and the
 * message batches API.
 *
 * @module
 */
import { callFields, type FetchLike, HttpTransport, type ProviderTraceCallback } from "../_http.ts";
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
 * import { ProviderApiClient } from "@automation/runtime/client";
 * const client = new ProviderApiClient({
 *   apiKey: "<API_KEY>",
 *   baseUrl: "https://provider.example",
 *   defaultModel: "model-small",
 *   defaultMaxTokens: 1024,
 * });
 * const { runId, terminal } = await client.streamRun({ input: "Say hello" }, {
 *   onEvent(event) {
 *     if (event.type === "message.delta") console.log(event.text);
 *   },
 * });
 * console.log(runId, terminal?.type); // "msg_…" "run.completed"
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
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const client = new ProviderApiClient({ apiKey: "<API_KEY>", baseUrl: "http://127.0.0.1:9" });
   * console.log(client.getRuntimeCapabilities().batch); // true
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
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const client = new ProviderApiClient({ apiKey: "<API_KEY>", baseUrl: "http://127.0.0.1:9" });
   * console.log(client.getRuntimeCapabilities().teams); // false
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
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const client = new ProviderApiClient({
   *   apiKey: "<API_KEY>",
   *   baseUrl: "https://provider.example",
   * });
   * const run = await client.startRun({ input: "2 + 2?", model: "model-small", maxTokens: 64 });
   * console.log(run.status, run.output); // "completed" "4"
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
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const client = new ProviderApiClient({
   *   apiKey: "<API_KEY>",
   *   baseUrl: "https://provider.example",
   *   defaultModel: "model-small",
   *   defaultMaxTokens: 1024,
   * });
   * const controller = new AbortController();
   * await client.streamRun({ input: "Use the weather tool" }, {
   *   onEvent(event) {
   *     if (event.type === "tool.call") console.log(event.name, event.input);
   *   },
   * }, { signal: controller.signal });
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
   * import { ProviderApiClient, ProviderUnsupportedError } from "@automation/runtime/client";
   * const client = new ProviderApiClient({ apiKey: "<API_KEY>", baseUrl: "http://127.0.0.1:9" });
   * await client.getRun("msg_1").catch((e) => console.log(e instanceof ProviderUnsupportedError));
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
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const client = new ProviderApiClient({ apiKey: "<API_KEY>", baseUrl: "http://127.0.0.1:9" });
   * await client.cancelRun("msg_1").catch((e) => console.log(e.code)); // "providerUnsupported"
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
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const client = new ProviderApiClient({
   *   apiKey: "<API_KEY>",
   *   baseUrl: "https://provider.example",
   *   defaultModel: "model-small",
   *   defaultMaxTokens: 256,
   * });
   * const batch = await client.submitBatch([
   *   { customId: "q1", body: { input: "First question" } },
   *   { customId: "q2", body: { input: "Second question" } },
   * ]);
   * console.log(batch.batchId, batch.status); // "msgbatch_…" "in_progress"
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
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const client = new ProviderApiClient({ apiKey: "<API_KEY>", baseUrl: "https://provider.example" });
   * const batch = await client.getBatch("msgbatch_01");
   * console.log(batch.counts.succeeded);
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
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const client = new ProviderApiClient({ apiKey: "<API_KEY>", baseUrl: "https://provider.example" });
   * console.log((await client.cancelBatch("msgbatch_01")).status); // "canceling"
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
   * import { ProviderApiClient } from "@automation/runtime/client";
   * const client = new ProviderApiClient({ apiKey: "<API_KEY>", baseUrl: "https://provider.example" });
   * for await (const result of client.getBatchResults("msgbatch_01")) {
   *   if (result.type === "succeeded") console.log(result.customId, result.run.output);
   * }
   * ```
   */
  getBatchResults(
    batchId: string,
    options?: ProviderBatchResultsOptions,
  ): AsyncGenerator<RuntimeBatchResult, void, undefined> {
    return this.#batches.results(batchId, options);
  }
}
