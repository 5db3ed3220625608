/**
 * The SDK's one request path: the shared headers, the deadline, retries, idempotency keys and
 * the service's clock, for every call of {@linkcode RuntimeServiceClient} and its resource
 * groups, for the SSE streams they open, and for the one call made without a bearer
 * (`exchangeToken`). Web standards only.
 *
 * @module
 */
import { ServerClock } from "./_clock.ts";
import type { Answer, RequestSpec } from "./_request.ts";
import { backoffDelay, isRetryableAnswer, parseRetryAfter, sleep } from "./_retry.ts";
import { RuntimeServiceError } from "./errors.ts";
import { type CallOptions, RUNTIME_INTERFACE_VERSION } from "./types.ts";

/** Largest deadline of a call, in ms: what the service accepts ahead of its clock. */
export const MAX_DEADLINE_MS = 300_000;

/** What a {@linkcode Transport} needs. */
export interface TransportOptions {
  /** Base URL of the service (checked). */
  baseUrl: URL;
  /** The caller's bearer (checked), or null for calls made without one (the token exchange). */
  token: string | null;
  /** The fetch to use. */
  fetch: typeof fetch;
  /** Default deadline of a call in ms. */
  deadlineMs: number;
  /** Retries of a call after the first attempt. */
  maxRetries: number;
}

/**
 * The base URL of a service: an `http:` or `https:` URL without credentials, query or fragment,
 * else a `TypeError`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkBaseUrl } from "./_transport.ts";
 * assert.equal(checkBaseUrl("http://127.0.0.1:7777").port, "7777");
 * assert.throws(() => checkBaseUrl("https://user:secret@runtime.example"), TypeError);
 * ```
 */
export function checkBaseUrl(baseUrl: string | URL): URL {
  if (baseUrl === undefined || baseUrl === null || baseUrl === "") {
    throw new TypeError("RuntimeServiceClient needs a baseUrl");
  }
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError("baseUrl is not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError("baseUrl must be an http or https URL");
  }
  if (url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "") {
    throw new TypeError("baseUrl must not carry credentials, a query or a fragment");
  }
  return url;
}

/**
 * The retries of a call after its first attempt, 0 to 10, else a `RangeError`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkMaxRetries } from "./_transport.ts";
 * assert.equal(checkMaxRetries(2), 2);
 * assert.throws(() => checkMaxRetries(11), RangeError);
 * ```
 */
export function checkMaxRetries(maxRetries: number): number {
  if (!Number.isInteger(maxRetries) || maxRetries < 0 || maxRetries > 10) {
    throw new RangeError("maxRetries must be an integer from 0 to 10");
  }
  return maxRetries;
}

/**
 * Checks a deadline in ms: 1 to 300000, else a `RangeError`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkDeadline } from "./_transport.ts";
 * assert.equal(checkDeadline(60_000), 60_000);
 * assert.throws(() => checkDeadline(0), RangeError);
 * ```
 */
export function checkDeadline(deadlineMs: number): number {
  if (!Number.isFinite(deadlineMs) || deadlineMs < 1 || deadlineMs > MAX_DEADLINE_MS) {
    throw new RangeError("deadlineMs must be from 1 to 300000");
  }
  return deadlineMs;
}

/**
 * Sends calls to the service. {@linkcode Transport.exchange} answers any HTTP status after the
 * retries a call may get; {@linkcode Transport.request} rejects a non-2xx one with the service's
 * error; {@linkcode Transport.openStream} opens an SSE stream.
 *
 * Every call carries a fresh `x-correlation-id` and its `x-deadline` on the service's clock
 * (see `_clock.ts`): a deadline refusal that a clock offset explains teaches the offset and the
 * call is sent once more, whatever its method (the service refused it before acting on it).
 */
export class Transport {
  readonly #options: TransportOptions;
  readonly #clock = new ServerClock();

  constructor(options: TransportOptions) {
    this.#options = options;
  }

  /** The bearer of an authenticated call; a transport without one refuses to send it. */
  #bearer(): string {
    if (this.#options.token === null) throw new TypeError("This call needs a bearer token");
    return this.#options.token;
  }

  /** The service's clock minus this machine's, in ms, as learned so far. */
  get clockOffsetMs(): number {
    return this.#clock.offsetMs;
  }

  /** Sends `spec` and resolves with a 2xx answer, or rejects with the service's error. */
  async request(spec: RequestSpec): Promise<Answer> {
    const answer = await this.exchange(spec);
    if (answer.status >= 200 && answer.status < 300) return answer;
    throw RuntimeServiceError.fromAnswer(answer, answer.headers.get("x-correlation-id") ?? "");
  }

  /**
   * Sends `spec` and resolves with its last answer, whatever its status (a refused answer's body
   * is the service's error body), after the retries it may get: reads, `DELETE` and calls with
   * an idempotency key on connection errors, 408, 409 `idempotencyInFlight`, 429 and 503 (not
   * the lasting `runQuotaExceeded` and `providerNotConfigured`), within the deadline. Rejects
   * when no answer arrived (`connectionFailed`, `deadlineExceeded`), with `invalidResponse` for
   * a 2xx answer that is not JSON, or with the signal's reason.
   */
  async exchange(spec: RequestSpec): Promise<Answer> {
    const { signal } = spec.options;
    signal?.throwIfAborted();
    const deadlineMs = checkDeadline(spec.options.deadlineMs ?? this.#options.deadlineMs);
    const correlationId = crypto.randomUUID();
    const deadline = Date.now() + deadlineMs;
    const headers = new Headers({
      accept: "application/json",
      "x-interface-version": RUNTIME_INTERFACE_VERSION,
      "x-correlation-id": correlationId,
    });
    if (spec.authenticated) headers.set("authorization", `Bearer ${this.#bearer()}`);
    if (spec.idempotencyKey !== undefined) headers.set("idempotency-key", spec.idempotencyKey);
    let payload: string | undefined;
    if (spec.body !== undefined) {
      headers.set("content-type", "application/json");
      payload = JSON.stringify(spec.body);
    }
    const url = this.#url(spec.path);

    // Only requests that are safe to send twice are retried: reads, DELETE (idempotent) and
    // anything carrying an idempotency key, which the service deduplicates.
    const retrySafe = spec.method === "GET" || spec.method === "DELETE" ||
      spec.idempotencyKey !== undefined;
    let corrected = false;
    for (let attempt = 0;;) {
      const canRetry = retrySafe && attempt < this.#options.maxRetries;
      let failure: RuntimeServiceError;
      let refused: Answer | null = null;
      let waitMs: number | null = null;
      const sent = this.#clock.deadlineHeader(deadline);
      headers.set("x-deadline", sent);
      try {
        const answer = await this.#attempt(url, spec.method, headers, payload, deadline, signal);
        if (answer.status >= 200 && answer.status < 300) {
          if (answer.body === NO_BODY) {
            throw new RuntimeServiceError({
              status: answer.status,
              code: "invalidResponse",
              layer: "transport",
              message:
                `The runtime service answered HTTP ${answer.status} with a body that is not JSON`,
              correlationId,
            });
          }
          return answer;
        }
        const result = answer.body === NO_BODY ? { ...answer, body: null } : answer;
        // Once a call: a deadline refusal explained by the service's clock is sent again at
        // once with the corrected deadline; it does not count as a retry.
        const sentMs = Date.parse(sent);
        if (
          !corrected && this.#clock.learn(result, { sentMs, deadlineMs: deadline, now: Date.now() })
        ) {
          corrected = true;
          continue;
        }
        failure = RuntimeServiceError.fromAnswer(result, correlationId);
        if (!canRetry || !isRetryableAnswer(answer.status, failure.code)) return result;
        refused = result;
        waitMs = parseRetryAfter(answer.headers.get("retry-after"));
      } catch (error) {
        if (!(error instanceof RetryableFailure)) throw error;
        if (!canRetry) throw error.failure;
        failure = error.failure;
      }
      const delay = waitMs ?? backoffDelay(attempt);
      if (Date.now() + delay >= deadline) {
        if (refused !== null) return refused;
        throw failure;
      }
      await sleep(delay, signal);
      attempt++;
    }
  }

  /**
   * Opens an SSE stream (`GET` with `accept: text/event-stream`): the deadline bounds the wait for
   * the response headers only; the caller's signal ends the stream. A refusal rejects with the
   * service's error (a deadline refusal explained by the service's clock is sent once more); a
   * connection failure with code `connectionFailed`.
   */
  async openStream(
    path: string,
    lastEventId: string | undefined,
    options: CallOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const { signal } = options;
    signal?.throwIfAborted();
    const deadlineMs = checkDeadline(options.deadlineMs ?? this.#options.deadlineMs);
    const correlationId = crypto.randomUUID();
    const deadline = Date.now() + deadlineMs;
    const headers = new Headers({
      accept: "text/event-stream",
      authorization: `Bearer ${this.#bearer()}`,
      "x-interface-version": RUNTIME_INTERFACE_VERSION,
      "x-correlation-id": correlationId,
    });
    if (lastEventId !== undefined) headers.set("last-event-id", lastEventId);
    const url = this.#url(path);
    for (let corrected = false;; corrected = true) {
      const sent = this.#clock.deadlineHeader(deadline);
      headers.set("x-deadline", sent);
      const response = await this.#fetchHead(url, headers, deadline, signal, correlationId);
      if (response.status === 200 && response.body !== null) return response.body;
      const text = await response.text().catch(() => "");
      const body = parseBody(text);
      const answer = {
        status: response.status,
        headers: response.headers,
        body: body === NO_BODY ? null : body,
      };
      const call = { sentMs: Date.parse(sent), deadlineMs: deadline, now: Date.now() };
      if (!corrected && this.#clock.learn(answer, call)) continue;
      throw RuntimeServiceError.fromAnswer(answer, correlationId);
    }
  }

  #url(path: string): URL {
    const base = this.#options.baseUrl;
    return new URL(base.pathname.replace(/\/$/, "") + path, base);
  }

  /**
   * Runs `run` with a signal that aborts at the deadline or with the caller's `signal`: rejects
   * with the caller's reason, `deadlineExceeded`, or a {@linkcode RetryableFailure} holding
   * `connectionFailed`. When `keep` says so of the result, the caller's signal keeps aborting
   * (a stream's body); the deadline never outlives `run`.
   */
  async #within<T>(
    url: URL,
    deadline: number,
    signal: AbortSignal | undefined,
    correlationId: string,
    run: (abort: AbortSignal) => Promise<T>,
    keep: (result: T) => boolean = () => false,
  ): Promise<T> {
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw deadlineError(correlationId);
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, remaining);
    try {
      const result = await run(controller.signal);
      if (!keep(result)) signal?.removeEventListener("abort", onAbort);
      return result;
    } catch (error) {
      signal?.removeEventListener("abort", onAbort);
      if (signal?.aborted) throw signal.reason;
      if (timedOut) throw deadlineError(correlationId);
      throw new RetryableFailure(connectionFailed(url, correlationId, error));
    } finally {
      clearTimeout(timer);
    }
  }

  /** Fetches the head of a stream within the deadline; the signal keeps governing the body. */
  async #fetchHead(
    url: URL,
    headers: Headers,
    deadline: number,
    signal: AbortSignal | undefined,
    correlationId: string,
  ): Promise<Response> {
    try {
      return await this.#within(
        url,
        deadline,
        signal,
        correlationId,
        (abort) => this.#options.fetch(url, { headers, signal: abort, redirect: "manual" }),
        (response) => response.status === 200 && response.body !== null,
      );
    } catch (error) {
      throw error instanceof RetryableFailure ? error.failure : error;
    }
  }

  #attempt(
    url: URL,
    method: string,
    headers: Headers,
    payload: string | undefined,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<Answer> {
    const correlationId = headers.get("x-correlation-id") ?? "";
    return this.#within(url, deadline, signal, correlationId, async (abort) => {
      const response = await this.#options.fetch(url, {
        method,
        headers,
        body: payload,
        signal: abort,
        redirect: "manual",
      });
      const text = await response.text();
      return { status: response.status, headers: response.headers, body: parseBody(text) };
    });
  }
}

/** A failure before any answer that a retry may cure (connection errors). */
class RetryableFailure extends Error {
  readonly failure: RuntimeServiceError;
  constructor(failure: RuntimeServiceError) {
    super(failure.message);
    this.failure = failure;
  }
}

/** The body of an answer that is not JSON. */
const NO_BODY = Symbol("no body");

function parseBody(text: string): unknown {
  if (text === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return NO_BODY;
  }
}

/** The service could not be reached (status 0, `connectionFailed`). */
function connectionFailed(url: URL, correlationId: string, cause: unknown): RuntimeServiceError {
  return new RuntimeServiceError({
    status: 0,
    code: "connectionFailed",
    layer: "transport",
    message: `Cannot reach the runtime service at ${url.origin}`,
    correlationId,
    cause,
  });
}

function deadlineError(correlationId: string): RuntimeServiceError {
  return new RuntimeServiceError({
    status: 0,
    code: "deadlineExceeded",
    layer: "client",
    message: "The call's deadline passed before the runtime service answered",
    correlationId,
  });
}
