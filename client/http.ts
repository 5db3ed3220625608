/**
 * The request layer shared by the provider clients: auth and version headers, query encoding,
 * timeouts, retries with backoff, typed errors and per-request traces. Internal to the package:
 * the clients in `messages/` and `managed_agents/` build on it and expose its options; only its
 * option types (`FetchLike`, `ProviderTrace`, `ProviderTraceCallback`) are exported, from
 * `client/mod.ts`.
 *
 * @module
 */
import { backoffDelayMs, sleep } from "./backoff.ts";
import {
  ProviderAbortError,
  ProviderApiError,
  ProviderConnectionError,
  ProviderTimeoutError,
} from "./errors.ts";

/** The provider API version sent by default (the value the vendor's current SDK sends). */
export const DEFAULT_PROVIDER_VERSION = "2026-10-21";

/** One finished request attempt, as reported to `onTrace`. Never headers or bodies. */
export interface ProviderTrace {
  /** HTTP method. */
  method: string;
  /** Path without the base URL or query. */
  path: string;
  /** HTTP status, or undefined when no response arrived. */
  status?: number;
  /** Time from sending to the response headers (or failure), in ms. */
  durationMs: number;
  /** 0 for the first attempt, then 1, 2, … */
  attempt: number;
  /** The `request-id` response header. */
  requestId?: string;
  /** The error code when the attempt failed without a response. */
  error?: string;
}

/** Receives one {@linkcode ProviderTrace} per request attempt. */
export type ProviderTraceCallback = (trace: ProviderTrace) => void;

/** A `fetch`-compatible function. */
export type FetchLike = (input: Request | URL | string, init?: RequestInit) => Promise<Response>;

/** Settings of a {@linkcode HttpTransport}. */
export interface HttpTransportOptions {
  /** Base URL of the provider API (required). */
  baseUrl: string | undefined;
  /** Sent as `x-api-key`. */
  apiKey?: string;
  /** Sent as `Authorization: Bearer`; wins over `apiKey`. */
  authToken?: string;
  /** Sent as `provider-version`. */
  providerVersion?: string;
  /**
   * Beta values sent on every request: the caller's client-level betas, then the API group's own
   * (comma-joined into `provider-beta`, after per-call betas).
   */
  betas?: readonly string[];
  /** Extra headers sent on every request (checked by {@linkcode checkExtraHeaders}). */
  headers?: Record<string, string>;
  /** Unary timeout in ms (whole request). Default 60000. */
  defaultTimeoutMs?: number;
  /** Stream timeout to the first byte in ms. Default 600000. */
  streamTimeoutMs?: number;
  /** Retries after the first attempt. Default 2. */
  maxRetries?: number;
  /** The fetch to use. Default `globalThis.fetch`. */
  fetchImpl?: FetchLike;
  /** Trace callback. */
  onTrace?: ProviderTraceCallback;
}

/** Query values: scalars, arrays (bracket form) and one level of range objects. */
export type QueryValue =
  | string
  | number
  | boolean
  | undefined
  | null
  | readonly (string | number | boolean)[]
  | Record<string, string | number | boolean | undefined>;

/** One request. */
export interface HttpRequest {
  /** HTTP method. */
  method: "GET" | "POST" | "DELETE" | "PATCH" | "PUT";
  /** Path beginning with `/`. */
  path: string;
  /** Query parameters. */
  query?: Record<string, QueryValue>;
  /**
   * A query string sent as it is (without `?`), after `query`'s parameters: a request passed on
   * from elsewhere. Checked by {@linkcode checkRawQuery}.
   */
  rawQuery?: string;
  /** The `provider-version` of this call, instead of the client's. */
  providerVersion?: string;
  /** JSON body; omitted means no body and no content type. */
  body?: unknown;
  /** A body of another type, sent byte for byte with its `content-type` (instead of `body`). */
  rawBody?: { bytes: Uint8Array; contentType: string };
  /** Extra headers of this call (checked by {@linkcode checkExtraHeaders}; betas go in `betas`). */
  headers?: Record<string, string>;
  /** Betas placed before the transport's own. */
  betas?: readonly string[];
  /** `application/json` unless set. */
  accept?: string;
  /** Caller abort. */
  signal?: AbortSignal;
  /** Treat as a stream: the timeout covers only the wait for the first byte. */
  stream?: boolean;
  /** Override of the unary timeout. */
  timeoutMs?: number;
}

const SECOND = 1000;

/**
 * Headers the client itself sets. A caller's extra headers may not name them: credentials come
 * only from `apiKey` / `authToken`, the version from `providerVersion`, betas from `betas` (so
 * the API group's beta is always sent), and the body and answer types from the request itself.
 */
const CLIENT_HEADERS: ReadonlySet<string> = new Set([
  "authorization",
  "x-api-key",
  "provider-version",
  "provider-beta",
  "content-type",
  "accept",
]);

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const BETA_VALUE = /^[A-Za-z0-9._-]+$/;

/**
 * Checks a caller's extra headers and returns them with lower-case names. A name that is not an
 * HTTP token, a value that is not a string or holds CR, LF or NUL, or a header the client sets
 * itself (`authorization`, `x-api-key`, `provider-version`, `provider-beta`, `content-type`,
 * `accept`) is a `TypeError` naming the header, never its value.
 */
export function checkExtraHeaders(
  headers: Record<string, string> | undefined,
): Record<string, string> | undefined {
  if (headers === undefined) return undefined;
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) {
    throw new TypeError("headers must be an object of header names to string values");
  }
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) throw new TypeError(`"${name}" is not a valid header name`);
    const lower = name.toLowerCase();
    if (CLIENT_HEADERS.has(lower)) {
      throw new TypeError(
        `header ${lower} is set by the client; use its option (apiKey, authToken, ` +
          "providerVersion or betas) instead",
      );
    }
    if (typeof value !== "string" || /[\r\n\0]/.test(value)) {
      throw new TypeError(`header ${lower} must be a string without line breaks`);
    }
    out[lower] = value;
  }
  return out;
}

const VERSION_VALUE = /^[A-Za-z0-9._-]{1,64}$/;
const RAW_QUERY = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%/?[\]]*$/;

/** Checks a version value: a token of at most 64 characters (a date such as `2026-10-21`). */
export function checkProviderVersion(version: string | undefined): string | undefined {
  if (version === undefined) return undefined;
  if (typeof version !== "string" || !VERSION_VALUE.test(version)) {
    throw new TypeError("providerVersion must be a token of at most 64 characters");
  }
  return version;
}

/**
 * Checks a query string passed on as it is: only the characters a URL's query may hold
 * (percent-encoded otherwise), no `#`, no white space; at most 8 KiB.
 */
export function checkRawQuery(query: string | undefined): string | undefined {
  if (query === undefined || query === "") return undefined;
  if (typeof query !== "string" || query.length > 8192 || !RAW_QUERY.test(query)) {
    throw new TypeError("rawQuery must be an encoded query string without # or white space");
  }
  return query;
}

/** Checks beta values: non-empty tokens without commas or spaces (they are comma-joined). */
export function checkBetas(betas: readonly string[] | undefined): readonly string[] | undefined {
  if (betas === undefined) return undefined;
  if (!Array.isArray(betas)) throw new TypeError("betas must be an array of strings");
  for (const beta of betas) {
    if (typeof beta !== "string" || !BETA_VALUE.test(beta)) {
      throw new TypeError(`beta ${JSON.stringify(beta)} must be a token without commas or spaces`);
    }
  }
  return betas;
}

/**
 * The per-call options a client passes through to a request: abort, betas, extra headers and the
 * version.
 */
export interface CallOptions {
  /** Caller abort. */
  signal?: AbortSignal;
  /** Betas of this call, sent before the client's. */
  betas?: readonly string[];
  /** Extra headers of this call. */
  headers?: Record<string, string>;
  /** The `provider-version` of this call, instead of the client's. */
  providerVersion?: string;
}

/** The request fields of a call's options. */
export function callFields(options: CallOptions | undefined): CallOptions {
  if (options === undefined) return {};
  return {
    signal: options.signal,
    betas: options.betas,
    headers: options.headers,
    providerVersion: options.providerVersion,
  };
}

/**
 * Encodes query parameters the way the provider expects: arrays as repeated `key[]=v`, range
 * objects as `key[op]=v`, undefined and null skipped.
 */
export function encodeQuery(query: Record<string, QueryValue> | undefined): string {
  if (!query) return "";
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) {
      for (const item of value) params.append(`${key}[]`, String(item));
    } else if (typeof value === "object") {
      for (const [op, inner] of Object.entries(value)) {
        if (inner !== undefined) params.append(`${key}[${op}]`, String(inner));
      }
    } else {
      params.append(key, String(value));
    }
  }
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}

/** Parses `retry-after-ms` / `retry-after` into ms, or undefined when absent or unusable. */
export function retryAfterMs(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null) {
    const value = Number.parseFloat(ms);
    if (Number.isFinite(value) && value > 0 && value <= 2 ** 31 - 1) return value;
  }
  const after = headers.get("retry-after");
  if (after === null) return undefined;
  const seconds = Number.parseFloat(after);
  let value = Number.isFinite(seconds) ? seconds * SECOND : Date.parse(after) - now;
  if (!Number.isFinite(value)) return undefined;
  value = Math.max(0, value);
  return value <= 2 ** 31 - 1 ? value : undefined;
}

/** The default backoff before retry number `retriesDone + 1`, in ms: 0.5 s doubling to 8 s. */
export function backoffMs(retriesDone: number): number {
  return backoffDelayMs(retriesDone, 0.5 * SECOND, 8 * SECOND);
}

/**
 * Error types whose 409 is a verdict on the request, not a race: repeating it cannot succeed, so
 * they are not retried even when the provider omits `x-should-retry: false`.
 */
const FINAL_CONFLICT_TYPES: ReadonlySet<string> = new Set([
  "memory_path_conflict_error",
  "memory_precondition_failed_error",
]);

function isRetryableStatus(response: Response, type?: string): boolean {
  const override = response.headers.get("x-should-retry");
  if (override === "true") return true;
  if (override === "false") return false;
  const { status } = response;
  if (status === 409 && type !== undefined && FINAL_CONFLICT_TYPES.has(type)) return false;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** The shared sleep, rejecting with `ProviderAbortError` when the caller aborts. */
async function retryPause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, signal);
  } catch {
    throw new ProviderAbortError({ cause: signal?.reason });
  }
}

async function errorFromResponse(response: Response): Promise<ProviderApiError> {
  const text = await response.text().catch(() => "");
  let type = "api_error";
  let message = text.slice(0, 1000) || `HTTP ${response.status}`;
  let requestId = response.headers.get("request-id") ?? undefined;
  let errorCode: string | undefined;
  let providerError: Record<string, unknown> | undefined;
  try {
    const parsed = JSON.parse(text) as {
      error?: { type?: unknown; message?: unknown; details?: { error_code?: unknown } };
      request_id?: unknown;
    };
    if (parsed && typeof parsed === "object" && parsed.error && typeof parsed.error === "object") {
      providerError = parsed.error as Record<string, unknown>;
      if (typeof parsed.error.type === "string") type = parsed.error.type;
      if (typeof parsed.error.message === "string") message = parsed.error.message;
      if (typeof parsed.error.details?.error_code === "string") {
        errorCode = parsed.error.details.error_code;
      }
    }
    if (!requestId && typeof parsed?.request_id === "string") requestId = parsed.request_id;
  } catch {
    // A non-JSON error body is kept as text.
  }
  return new ProviderApiError({
    status: response.status,
    type,
    message,
    requestId,
    retryable: isRetryableStatus(response, type),
    errorCode,
    providerError,
  });
}

/**
 * Sends requests to the provider with the shared rules. One instance per client.
 */
export class HttpTransport {
  readonly #baseUrl: string;
  readonly #headers: Record<string, string>;
  readonly #betas: readonly string[];
  readonly #defaultTimeoutMs: number;
  readonly #streamTimeoutMs: number;
  readonly #maxRetries: number;
  readonly #fetch: FetchLike;
  readonly #onTrace: ProviderTraceCallback | undefined;

  /** Validates the options; a missing `baseUrl` is a `TypeError`. */
  constructor(options: HttpTransportOptions) {
    if (typeof options.baseUrl !== "string" || options.baseUrl === "") {
      throw new TypeError("baseUrl is required: pass the provider API base URL");
    }
    let parsed: URL;
    try {
      parsed = new URL(options.baseUrl);
    } catch {
      throw new TypeError("baseUrl is not a valid URL");
    }
    this.#baseUrl = parsed.href.replace(/\/+$/, "");
    const headers: Record<string, string> = {
      ...checkExtraHeaders(options.headers),
      "provider-version": options.providerVersion ?? DEFAULT_PROVIDER_VERSION,
    };
    if (options.authToken) headers["authorization"] = `Bearer ${options.authToken}`;
    else if (options.apiKey) headers["x-api-key"] = options.apiKey;
    this.#headers = headers;
    this.#betas = [...new Set(checkBetas(options.betas) ?? [])];
    this.#defaultTimeoutMs = options.defaultTimeoutMs ?? 60_000;
    this.#streamTimeoutMs = options.streamTimeoutMs ?? 600_000;
    this.#maxRetries = options.maxRetries ?? 2;
    const fetchImpl = options.fetchImpl ?? globalThis.fetch;
    this.#fetch = (input, init) => fetchImpl(input, init);
    this.#onTrace = options.onTrace;
  }

  /** Sends a request and parses the JSON answer; 204 or an empty body yields undefined. */
  async json<T>(request: HttpRequest): Promise<T> {
    const { response, timer } = await this.#send(request);
    try {
      const text = await this.#readBody(response, request);
      return (text === "" ? undefined : JSON.parse(text)) as T;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Sends a request and returns the response once its headers arrived, body unread. The timeout
   * covers only the wait for the headers; the caller's signal still cancels the body.
   */
  async send(request: HttpRequest): Promise<Response> {
    const { response, timer } = await this.#send(request);
    clearTimeout(timer);
    return response;
  }

  async #send(
    request: HttpRequest,
  ): Promise<{ response: Response; timer: ReturnType<typeof setTimeout> }> {
    let url = this.#baseUrl + request.path + encodeQuery(request.query);
    const rawQuery = checkRawQuery(request.rawQuery);
    if (rawQuery !== undefined) url += (url.includes("?") ? "&" : "?") + rawQuery;
    const headers = new Headers(this.#headers);
    const version = checkProviderVersion(request.providerVersion);
    if (version !== undefined) headers.set("provider-version", version);
    headers.set("accept", request.accept ?? "application/json");
    const betas = request.betas === undefined
      ? this.#betas
      : [...new Set([...(checkBetas(request.betas) ?? []), ...this.#betas])];
    if (betas.length > 0) headers.set("provider-beta", betas.join(","));
    const extra = checkExtraHeaders(request.headers);
    for (const name in extra) headers.set(name, extra[name]);
    let body: string | Uint8Array<ArrayBuffer> | undefined;
    if (request.rawBody !== undefined) {
      if (/[\r\n\0]/.test(request.rawBody.contentType)) {
        throw new TypeError("rawBody.contentType must be a header value without line breaks");
      }
      body = request.rawBody.bytes as Uint8Array<ArrayBuffer>;
      headers.set("content-type", request.rawBody.contentType);
    } else if (request.body !== undefined) {
      body = JSON.stringify(request.body);
      headers.set("content-type", "application/json");
    }
    const timeoutMs = request.stream
      ? this.#streamTimeoutMs
      : request.timeoutMs ?? this.#defaultTimeoutMs;
    for (let attempt = 0;; attempt++) {
      if (request.signal?.aborted) throw new ProviderAbortError({ cause: request.signal.reason });
      const started = performance.now();
      const timeout = new AbortController();
      const timer = setTimeout(
        () => timeout.abort(new ProviderTimeoutError(timeoutMs)),
        timeoutMs,
      );
      const signal = request.signal
        ? AbortSignal.any([request.signal, timeout.signal])
        : timeout.signal;
      let response: Response;
      try {
        response = await this.#fetch(url, { method: request.method, headers, body, signal });
      } catch (cause) {
        clearTimeout(timer);
        const error = request.signal?.aborted
          ? new ProviderAbortError({ cause: request.signal.reason })
          : timeout.signal.aborted
          ? new ProviderTimeoutError(timeoutMs, { cause })
          : new ProviderConnectionError(
            `Connection to the provider failed: ${(cause as Error)?.message ?? cause}`,
            { cause },
          );
        this.#trace(request, attempt, started, undefined, undefined, error.code);
        if (error instanceof ProviderAbortError || attempt >= this.#maxRetries) throw error;
        await retryPause(backoffMs(attempt), request.signal);
        continue;
      }
      const requestId = response.headers.get("request-id") ?? undefined;
      this.#trace(request, attempt, started, response.status, requestId);
      if (response.ok) return { response, timer };
      clearTimeout(timer);
      const error = await errorFromResponse(response);
      if (!error.retryable || attempt >= this.#maxRetries) throw error;
      await retryPause(retryAfterMs(response.headers) ?? backoffMs(attempt), request.signal);
    }
  }

  async #readBody(response: Response, request: HttpRequest): Promise<string> {
    try {
      return await response.text();
    } catch (cause) {
      if (request.signal?.aborted) throw new ProviderAbortError({ cause: request.signal.reason });
      if (cause instanceof ProviderTimeoutError) throw cause;
      throw new ProviderConnectionError("The provider response ended early", { cause });
    }
  }

  #trace(
    request: HttpRequest,
    attempt: number,
    started: number,
    status: number | undefined,
    requestId: string | undefined,
    error?: string,
  ): void {
    if (!this.#onTrace) return;
    try {
      this.#onTrace({
        method: request.method,
        path: request.path,
        status,
        durationMs: performance.now() - started,
        attempt,
        requestId,
        error,
      });
    } catch {
      // A throwing trace callback must not break the request.
    }
  }
}
