/**
 * A fake provider for tests: an in-process HTTP server on 127.0.0.1 (random port) with a small
 * router, a request log and fault switches. {@linkcode FakeProvider.start} installs the stateful
 * managed-agents API (`fake_managed_agents.ts`); other files add their own routes with
 * {@linkcode FakeProvider.route} (for example `fake_messages.ts`).
 *
 * Fault switches (each applies to the next matching request, then clears itself):
 * - {@linkcode FakeProvider.failNext}: answer an error status with chosen headers (`retry-after`,
 *   `retry-after-ms`, `x-should-retry`), `times` in a row;
 * - {@linkcode FakeProvider.dropNextStream}: cut the next event stream after N bytes (mid-frame);
 * - {@linkcode FakeProvider.delayNextStream}: hold the next stream's first byte (its headers);
 * - {@linkcode FakeProvider.delayNext}: hold the next matching unary answer for a while;
 * - {@linkcode FakeProvider.duplicateDeliveries}: write every stream frame twice;
 * - {@linkcode FakeProvider.injectUnknownEvents}: emit an unknown event type before each event.
 *
 * @module
 */
import { installManagedAgentRoutes, type ManagedAgentsState } from "./fake_managed_agents.ts";

/** A JSON object. */
export type Json = Record<string, unknown>;

/** What a route handler receives. */
export interface FakeRouteContext {
  /** The request. */
  request: Request;
  /** Its parsed URL. */
  url: URL;
  /** Path parameters by name (`:id` → `params.id`), decoded. */
  params: Record<string, string>;
  /** The server. */
  fake: FakeProvider;
  /** The `request-id` this answer carries. */
  requestId: string;
  /** The JSON body (`{}` when there is none); a 400 answer when it is not a JSON object. */
  body(): Promise<Json>;
}

/** A route handler. */
export type FakeRouteHandler = (context: FakeRouteContext) => Response | Promise<Response>;

/** Options of a route. */
export interface FakeRouteOptions {
  /** Beta values of which `provider-beta` must contain one; none means no beta check. */
  betas?: readonly string[];
}

/** A logged request (auth values are never kept, only which scheme was used). */
export interface FakeRequestLog {
  /** HTTP method. */
  method: string;
  /** Path without the query. */
  path: string;
  /** The raw query string without `?`. */
  query: string;
  /** Headers with lower-case names, auth headers removed. */
  headers: Record<string, string>;
  /** `x-api-key`, `bearer` or null. */
  auth: "x-api-key" | "bearer" | null;
  /** Parsed JSON body, or undefined. */
  body?: unknown;
}

/** An error answer of {@linkcode FakeProvider.failNext}. */
export interface FakeFault {
  /** Only requests with this method. */
  method?: string;
  /** Only requests whose path equals this string or matches this pattern. */
  path?: string | RegExp;
  /** HTTP status to answer. */
  status: number;
  /** Provider error type (default from the status). */
  type?: string;
  /** Error message. */
  message?: string;
  /** Extra response headers (for example `retry-after-ms`). */
  headers?: Record<string, string>;
  /** How many matching requests fail (default 1). */
  times?: number;
}

/** Thrown inside handlers to answer an error. */
export class FakeHttpError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** Provider error type. */
  readonly type: string;
  /** Extra headers. */
  readonly headers: Record<string, string>;
  /** Extra fields of the `error` object. */
  readonly extra: Json;
  constructor(
    status: number,
    type: string,
    message: string,
    options: { headers?: Record<string, string>; extra?: Json } = {},
  ) {
    super(message);
    this.status = status;
    this.type = type;
    this.headers = options.headers ?? {};
    this.extra = options.extra ?? {};
  }
}

const DEFAULT_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  405: "invalid_request_error",
  408: "timeout_error",
  409: "conflict_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  503: "overloaded_error",
  529: "overloaded_error",
};

/** A JSON answer. */
export function jsonResponse(
  body: unknown,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** A provider error answer: `{type: "error", error: {type, message, ...extra}, request_id}`. */
export function errorResponse(
  status: number,
  type: string | undefined,
  message: string,
  options: { headers?: Record<string, string>; extra?: Json; requestId?: string } = {},
): Response {
  return jsonResponse(
    {
      type: "error",
      error: { type: type ?? DEFAULT_TYPES[status] ?? "api_error", message, ...options.extra },
      request_id: options.requestId ?? null,
    },
    status,
    options.headers,
  );
}

/** One SSE frame: `event: <type>` and `data: <json>`. */
export function sseFrame(event: Json, options: { withEventLine?: boolean } = {}): string {
  const data = `data: ${JSON.stringify(event)}\n\n`;
  return options.withEventLine === false ? data : `event: ${String(event.type)}\n${data}`;
}

interface Route {
  method: string;
  pattern: RegExp;
  keys: string[];
  handler: FakeRouteHandler;
  betas?: readonly string[];
}

/** A live SSE subscriber. */
export interface FakeStreamSubscriber {
  /** Writes one frame (honours the drop and duplicate switches). */
  write(frame: string): void;
  /** Ends the stream. */
  close(): void;
  /** Whether the stream is over. */
  readonly closed: boolean;
}

const encoder = new TextEncoder();

/** Options of {@linkcode FakeProvider.start}. */
export interface FakeProviderOptions {
  /** The key callers must send (as `x-api-key` or `Authorization: Bearer`). Default `test-key`. */
  apiKey?: string;
  /** Skip the managed-agents routes (for example to serve only added routes). */
  bare?: boolean;
}

/** The fake provider server. */
export class FakeProvider {
  /** `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  /** The accepted key. */
  readonly apiKey: string;
  /** Every request, in order. */
  readonly requests: FakeRequestLog[] = [];
  /** The managed-agents state (undefined for a bare server). */
  managedAgents: ManagedAgentsState | undefined;
  /** Write every stream frame twice. */
  duplicateDeliveries = false;
  /** Emit an event of an unknown type before each emitted session event. */
  injectUnknownEvents = false;

  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #routes: Route[] = [];
  readonly #faults: FakeFault[] = [];
  readonly #delays: { method?: string; path?: string | RegExp; ms: number; times: number }[] = [];
  readonly #subscribers = new Set<FakeStreamSubscriber>();
  readonly #closers = new Set<() => void>();
  #dropAfterBytes: number | undefined;
  #dropAfterFrames: number | undefined;
  #delayStreamMs: number | undefined;
  #delayStreamTimes = 0;
  #requestCount = 0;
  #closed = false;

  private constructor(server: Deno.HttpServer<Deno.NetAddr>, apiKey: string) {
    this.#server = server;
    this.apiKey = apiKey;
    this.baseUrl = `http://127.0.0.1:${server.addr.port}`;
  }

  /** Starts a server on a random port; stop it with {@linkcode FakeProvider.close}. */
  static start(options: FakeProviderOptions = {}): Promise<FakeProvider> {
    const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request): Promise<Response> => fake.#handle(request),
    );
    const fake: FakeProvider = new FakeProvider(server, options.apiKey ?? "test-key");
    if (!options.bare) fake.managedAgents = installManagedAgentRoutes(fake);
    return Promise.resolve(fake);
  }

  /** Adds a route; `pattern` uses `:name` segments (`/v1/sessions/:session_id`). */
  route(
    method: string,
    pattern: string,
    handler: FakeRouteHandler,
    options: FakeRouteOptions = {},
  ): void {
    const keys: string[] = [];
    const source = pattern.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(
      /:([a-z_]+)/g,
      (_, key: string) => {
        keys.push(key);
        return "([^/]+)";
      },
    );
    this.#routes.push({
      method: method.toUpperCase(),
      pattern: new RegExp(`^${source}$`),
      keys,
      handler,
      betas: options.betas,
    });
  }

  /** Answers the next matching request(s) with an error. */
  failNext(fault: FakeFault): void {
    this.#faults.push({ times: 1, ...fault });
  }

  /** Holds the next matching request(s) for `ms` before answering them (`times`, default 1). */
  delayNext(delay: { method?: string; path?: string | RegExp; ms: number; times?: number }): void {
    this.#delays.push({ ...delay, times: delay.times ?? 1 });
  }

  /**
   * Cuts the next event stream: after `afterBytes` bytes of frames (mid-frame when it falls
   * there), or after `afterFrames` whole frames plus half of the next one.
   */
  dropNextStream(options: { afterBytes: number } | { afterFrames: number }): void {
    if ("afterBytes" in options) this.#dropAfterBytes = options.afterBytes;
    else this.#dropAfterFrames = options.afterFrames;
  }

  /** Holds the next `times` (default 1) event stream responses (their first byte) for `ms` ms. */
  delayNextStream(options: { ms: number; times?: number }): void {
    this.#delayStreamMs = options.ms;
    this.#delayStreamTimes = options.times ?? 1;
  }

  /** The number of open event streams. */
  get openStreams(): number {
    return this.#subscribers.size;
  }

  /** Registers a cleanup that runs on close (timers of scripted sessions). */
  onClose(closer: () => void): () => void {
    this.#closers.add(closer);
    return () => this.#closers.delete(closer);
  }

  /**
   * Answers an SSE stream: `attach` receives the subscriber before the response headers are sent,
   * so nothing emitted after the caller's fetch resolves can be missed.
   */
  sseResponse(attach: (subscriber: FakeStreamSubscriber) => () => void): Response {
    let dropAfter = this.#dropAfterBytes;
    let framesLeft = this.#dropAfterFrames;
    this.#dropAfterBytes = undefined;
    this.#dropAfterFrames = undefined;
    const duplicate = this.duplicateDeliveries;
    const subscribers = this.#subscribers;
    let detach: (() => void) | undefined;
    let closed = false;
    let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;
    const subscriber: FakeStreamSubscriber = {
      get closed() {
        return closed;
      },
      write(frame: string) {
        if (closed || !controllerRef) return;
        const frames = duplicate ? frame + frame : frame;
        let bytes = encoder.encode(frames);
        if (framesLeft !== undefined) {
          if (framesLeft === 0) dropAfter = Math.max(1, Math.floor(bytes.length / 2));
          framesLeft -= 1;
        }
        if (dropAfter !== undefined) {
          if (bytes.length >= dropAfter) {
            bytes = bytes.subarray(0, dropAfter);
            if (bytes.length > 0) controllerRef.enqueue(bytes);
            finish();
            dropWhenFlushed(controllerRef);
            return;
          }
          dropAfter -= bytes.length;
        }
        controllerRef.enqueue(bytes);
      },
      close() {
        if (closed) return;
        finish();
        try {
          controllerRef?.close();
        } catch {
          // Already errored or closed.
        }
      },
    };
    const closers = this.#closers;
    // Erroring a stream discards what is still queued, so wait until the server took every chunk.
    const dropWhenFlushed = (controller: ReadableStreamDefaultController<Uint8Array>): void => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stop = (): void => {
        clearTimeout(timer);
        closers.delete(stop);
        try {
          controller.error("fake provider: stream dropped on purpose (fault switch)");
        } catch {
          // Already cancelled by the client.
        }
      };
      const check = (): void => {
        if ((controller.desiredSize ?? 1) >= 1) stop();
        else timer = setTimeout(check, 2);
      };
      closers.add(stop);
      timer = setTimeout(check, 2);
    };
    const finish = (): void => {
      closed = true;
      subscribers.delete(subscriber);
      detach?.();
      detach = undefined;
    };
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controllerRef = controller;
      },
      cancel() {
        finish();
      },
    });
    subscribers.add(subscriber);
    detach = attach(subscriber);
    return new Response(body, {
      headers: {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
      },
    });
  }

  /** Stops every stream and timer, then the server. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const closer of [...this.#closers]) closer();
    this.#closers.clear();
    for (const subscriber of [...this.#subscribers]) subscriber.close();
    await this.#server.shutdown();
  }

  async #handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const requestId = `req_${String(++this.#requestCount).padStart(6, "0")}`;
    let bodyText = "";
    if (request.body) bodyText = await request.text();
    const headers: Record<string, string> = {};
    for (const [name, value] of request.headers) {
      if (name !== "authorization" && name !== "x-api-key") headers[name] = value;
    }
    const auth = request.headers.has("authorization")
      ? "bearer"
      : request.headers.has("x-api-key")
      ? "x-api-key"
      : null;
    let parsedBody: unknown;
    try {
      parsedBody = bodyText === "" ? undefined : JSON.parse(bodyText);
    } catch {
      parsedBody = bodyText;
    }
    this.requests.push({
      method: request.method,
      path: url.pathname,
      query: url.search.slice(1),
      headers,
      auth,
      body: parsedBody,
    });
    let response: Response;
    try {
      response = await this.#dispatch(request, url, bodyText, requestId);
    } catch (error) {
      if (error instanceof FakeHttpError) {
        response = errorResponse(error.status, error.type, error.message, {
          headers: error.headers,
          extra: error.extra,
          requestId,
        });
      } else {
        response = errorResponse(500, "api_error", `Fake provider failure: ${error}`, {
          requestId,
        });
      }
    }
    response.headers.set("request-id", requestId);
    return response;
  }

  async #dispatch(
    request: Request,
    url: URL,
    bodyText: string,
    requestId: string,
  ): Promise<Response> {
    const keyHeader = request.headers.get("x-api-key");
    const bearer = request.headers.get("authorization");
    if (keyHeader !== this.apiKey && bearer !== `Bearer ${this.apiKey}`) {
      throw new FakeHttpError(401, "authentication_error", "Invalid or missing credentials");
    }
    const delay = this.#delays.find((d) =>
      (d.method === undefined || d.method.toUpperCase() === request.method) &&
      (d.path === undefined ||
        (typeof d.path === "string" ? d.path === url.pathname : d.path.test(url.pathname)))
    );
    if (delay) {
      if (--delay.times <= 0) this.#delays.splice(this.#delays.indexOf(delay), 1);
      await new Promise<void>((resolve) => {
        let forget: () => void = () => {};
        const timer = setTimeout(() => {
          forget();
          resolve();
        }, delay.ms);
        forget = this.onClose(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    const fault = this.#faults.find((f) =>
      (f.method === undefined || f.method.toUpperCase() === request.method) &&
      (f.path === undefined ||
        (typeof f.path === "string" ? f.path === url.pathname : f.path.test(url.pathname)))
    );
    if (fault) {
      fault.times = (fault.times ?? 1) - 1;
      if (fault.times <= 0) this.#faults.splice(this.#faults.indexOf(fault), 1);
      throw new FakeHttpError(
        fault.status,
        fault.type ?? DEFAULT_TYPES[fault.status] ?? "api_error",
        fault.message ?? `Injected ${fault.status}`,
        { headers: fault.headers },
      );
    }
    const allowed: string[] = [];
    for (const route of this.#routes) {
      const match = route.pattern.exec(url.pathname);
      if (!match) continue;
      if (route.method !== request.method) {
        allowed.push(route.method);
        continue;
      }
      if (route.betas) {
        const sent = (request.headers.get("provider-beta") ?? "").split(",").map((s) => s.trim());
        if (!route.betas.some((beta) => sent.includes(beta))) {
          throw new FakeHttpError(
            400,
            "invalid_request_error",
            `This endpoint needs the provider-beta header (${route.betas.join(" or ")})`,
          );
        }
      }
      const params: Record<string, string> = {};
      route.keys.forEach((key, i) => params[key] = decodeURIComponent(match[i + 1]));
      if (url.pathname.endsWith("/stream") && this.#delayStreamMs !== undefined) {
        const ms = this.#delayStreamMs;
        if (--this.#delayStreamTimes <= 0) this.#delayStreamMs = undefined;
        await this.#wait(ms);
        if (this.#closed) {
          throw new FakeHttpError(503, "overloaded_error", "The fake provider is closing");
        }
      }
      return await route.handler({
        request,
        url,
        params,
        fake: this,
        requestId,
        body: () => {
          if (bodyText === "") return Promise.resolve({});
          try {
            const value = JSON.parse(bodyText);
            if (typeof value === "object" && value !== null && !Array.isArray(value)) {
              return Promise.resolve(value as Json);
            }
          } catch {
            // Answered below.
          }
          return Promise.reject(
            new FakeHttpError(400, "invalid_request_error", "The body must be a JSON object"),
          );
        },
      });
    }
    if (allowed.length > 0) {
      throw new FakeHttpError(
        405,
        "invalid_request_error",
        `Method ${request.method} is not allowed here`,
        { headers: { allow: [...new Set(allowed)].join(", ") } },
      );
    }
    throw new FakeHttpError(404, "not_found_error", `No route for ${url.pathname}`);
  }

  #wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#closers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#closers.add(done);
    });
  }
}
