/**
 * Message batches for the stateless client: submit, read, cancel, and stream results. Results are
 * read line by line from the response body ({@linkcode readProviderBatchResults}), so memory stays
 * flat however large the results file is.
 *
 * @module
 */
import { callFields, type HttpTransport } from "../http.ts";
import type {
  RunStreamOptions,
  RuntimeBatchRequest,
  RuntimeBatchResult,
  RuntimeBatchStatus,
} from "../contract.ts";
import { ProviderAbortError, ProviderApiError, ProviderConnectionError } from "../errors.ts";
import { type RunBodyDefaults, toCreateParams } from "./_body.ts";
import { batchToStatus, isProviderBatch, lineToBatchResult } from "./_convert.ts";
import { type JsonLine, readJsonLines } from "./_jsonl.ts";
import { ProviderBatchLineError, ProviderBatchResultsError } from "./batch_errors.ts";
import type { ProviderBatchRequestParam, ProviderMessageBatch } from "./types.ts";

/** Options of {@linkcode readProviderBatchResults} and `getBatchResults`. */
export interface ProviderBatchResultsOptions extends RunStreamOptions {
  /**
   * Receives each rejected line (awaited) and lets reading go on. Without it, rejected lines are
   * gathered and, after every good line was yielded, the iterator throws one
   * {@linkcode ProviderBatchResultsError} (`invalidLines`) that lists them.
   */
  onInvalidLine?: (error: ProviderBatchLineError) => void | Promise<void>;
  /** Longest results line read, in bytes (default 32 MiB); a longer one is rejected. */
  maxLineBytes?: number;
}

const DEFAULT_MAX_LINE_BYTES = 32 * 1024 * 1024;
const KEPT_LINE_ERRORS = 100;

function lineResult(
  text: string,
  lineNumber: number,
): RuntimeBatchResult | ProviderBatchLineError {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    return new ProviderBatchLineError({
      lineNumber,
      problem: "invalidJson",
      detail: (cause as Error).message,
    });
  }
  try {
    return lineToBatchResult(value, lineNumber);
  } catch (error) {
    if (error instanceof ProviderBatchLineError) return error;
    throw error;
  }
}

/**
 * Reads a message batch results body (JSON Lines) as contract batch results, one line at a time.
 * Only the current line is held in memory. A malformed line becomes a
 * {@linkcode ProviderBatchLineError} carrying its line number and never stops the lines after
 * it (see {@linkcode ProviderBatchResultsOptions.onInvalidLine}). Breaking out of the loop or
 * aborting cancels the body.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readProviderBatchResults } from "@automation/runtime/client";
 * const body = new Response(
 *   '{"custom_id":"a","result":{"type":"expired"}}\nnot json\n',
 * ).body!;
 * const invalidLines: number[] = [];
 * const results = await Array.fromAsync(readProviderBatchResults(body, {
 *   onInvalidLine(error) {
 *     invalidLines.push(error.lineNumber);
 *   },
 * }));
 * assert.deepEqual(results, [{ customId: "a", type: "expired" }]);
 * assert.deepEqual(invalidLines, [2]);
 * ```
 */
export async function* readProviderBatchResults(
  body: ReadableStream<Uint8Array>,
  options: ProviderBatchResultsOptions = {},
): AsyncGenerator<RuntimeBatchResult, void, undefined> {
  const { signal, onInvalidLine } = options;
  const kept: ProviderBatchLineError[] = [];
  let invalid = 0;
  const lines = readJsonLines(body, {
    signal,
    maxLineBytes: options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
  });
  try {
    while (true) {
      let step: IteratorResult<JsonLine[], void>;
      try {
        step = await lines.next();
      } catch (error) {
        throw readFailure(error, signal);
      }
      if (step.done) break;
      for (const line of step.value) {
        const result = "text" in line
          ? lineResult(line.text, line.lineNumber)
          : new ProviderBatchLineError({
            lineNumber: line.lineNumber,
            problem: line.problem,
            detail: `${line.bytes} bytes`,
          });
        if (!(result instanceof ProviderBatchLineError)) {
          yield result;
          continue;
        }
        invalid++;
        if (onInvalidLine) await onInvalidLine(result);
        else if (kept.length < KEPT_LINE_ERRORS) kept.push(result);
      }
    }
  } finally {
    // Cancels the body when the caller stops early or a handler throws; a no-op once done.
    await lines.return();
  }
  if (invalid > 0 && !onInvalidLine) {
    const first = kept.map((error) => error.lineNumber).slice(0, 10).join(", ");
    throw new ProviderBatchResultsError({
      problem: "invalidLines",
      message: `${invalid} batch results line${invalid === 1 ? " was" : "s were"} rejected ` +
        `(line${kept.length === 1 ? "" : "s"} ${first}${invalid > 10 ? ", …" : ""})`,
      lineErrors: kept,
      invalidLineCount: invalid,
    });
  }
}

function readFailure(error: unknown, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted) return new ProviderAbortError({ cause: signal.reason });
  if (error instanceof TypeError) {
    return new ProviderConnectionError("The batch results download ended early", { cause: error });
  }
  return error;
}

function batchPath(batchId: string): string {
  if (typeof batchId !== "string" || batchId === "") {
    throw new TypeError("Batch id must be a non-empty string");
  }
  return `/v1/messages/batches/${encodeURIComponent(batchId)}`;
}

function checkBatch(value: unknown): ProviderMessageBatch {
  if (!isProviderBatch(value)) {
    throw new ProviderApiError({
      type: "invalid_response",
      message: "The provider answered with something that is not a message batch",
      retryable: false,
    });
  }
  return value;
}

/** Settings of {@linkcode MessageBatches}. */
export interface MessageBatchesInit {
  /** The client's transport. */
  http: HttpTransport;
  /** The base URL, normalized without a trailing slash. */
  baseHref: string;
  /** The run defaults each request falls back to. */
  defaults: RunBodyDefaults;
  /** Timeout of the unary batch calls, when set. */
  timeoutMs?: number;
}

/** The batch calls of the stateless client. Internal; the client exposes them. */
export class MessageBatches {
  readonly #init: MessageBatchesInit;

  /** Keeps the transport and defaults. */
  constructor(init: MessageBatchesInit) {
    this.#init = init;
  }

  /** `POST /v1/messages/batches`; every request's body is validated before anything is sent. */
  async submit(
    requests: RuntimeBatchRequest[],
    options: RunStreamOptions = {},
  ): Promise<RuntimeBatchStatus> {
    if (!Array.isArray(requests) || requests.length === 0) {
      throw new TypeError("A batch needs at least one request");
    }
    const seen = new Set<string>();
    const wire: ProviderBatchRequestParam[] = requests.map((request, index) => {
      if (typeof request?.customId !== "string" || request.customId === "") {
        throw new TypeError(`Batch request ${index} needs a non-empty customId`);
      }
      if (seen.has(request.customId)) {
        throw new TypeError(`Batch request ${index} repeats customId ${request.customId}`);
      }
      seen.add(request.customId);
      return {
        custom_id: request.customId,
        params: toCreateParams(request.body, this.#init.defaults, false),
      };
    });
    const batch = await this.#init.http.json<unknown>({
      method: "POST",
      path: "/v1/messages/batches",
      body: { requests: wire },
      ...callFields(options),
      timeoutMs: this.#init.timeoutMs,
    });
    return batchToStatus(checkBatch(batch));
  }

  /** `GET /v1/messages/batches/{id}`, as the wire record. */
  async retrieve(batchId: string, options: RunStreamOptions = {}): Promise<ProviderMessageBatch> {
    const batch = await this.#init.http.json<unknown>({
      method: "GET",
      path: batchPath(batchId),
      ...callFields(options),
      timeoutMs: this.#init.timeoutMs,
    });
    return checkBatch(batch);
  }

  /** `POST /v1/messages/batches/{id}/cancel` with no body. */
  async cancel(batchId: string, options: RunStreamOptions = {}): Promise<RuntimeBatchStatus> {
    const batch = await this.#init.http.json<unknown>({
      method: "POST",
      path: `${batchPath(batchId)}/cancel`,
      ...callFields(options),
      timeoutMs: this.#init.timeoutMs,
    });
    return batchToStatus(checkBatch(batch));
  }

  /**
   * Reads the batch, then streams its `results_url` (`Accept: application/binary`) through
   * {@linkcode readProviderBatchResults}. A `results_url` outside the base URL is refused, so the
   * API key only ever goes to the configured provider.
   */
  async *results(
    batchId: string,
    options: ProviderBatchResultsOptions = {},
  ): AsyncGenerator<RuntimeBatchResult, void, undefined> {
    const batch = await this.retrieve(batchId, options);
    if (!batch.results_url) {
      throw new ProviderBatchResultsError({
        problem: "notReady",
        batchId: batch.id,
        message: `Batch ${batch.id} has no results yet (${batch.processing_status})`,
      });
    }
    const path = this.#resultsPath(batch.results_url, batch.id);
    const response = await this.#init.http.send({
      method: "GET",
      path,
      accept: "application/binary",
      stream: true,
      ...callFields(options),
    });
    if (!response.body) {
      throw new ProviderConnectionError("The batch results response has no body");
    }
    yield* readProviderBatchResults(response.body, options);
  }

  #resultsPath(resultsUrl: string, batchId: string): string {
    if (resultsUrl.startsWith("/") && !resultsUrl.startsWith("//")) return resultsUrl;
    let url: URL;
    try {
      url = new URL(resultsUrl);
    } catch {
      throw new ProviderBatchResultsError({
        problem: "foreignResultsUrl",
        batchId,
        message: `Batch ${batchId} has a results_url that is not a URL or a path`,
      });
    }
    const base = this.#init.baseHref;
    const href = url.href;
    if (href.startsWith(`${base}/`)) return href.slice(base.length);
    throw new ProviderBatchResultsError({
      problem: "foreignResultsUrl",
      batchId,
      message: `Batch ${batchId} has results on ${url.origin}, outside the client's base URL; ` +
        "the API key is not sent there",
    });
  }
}
