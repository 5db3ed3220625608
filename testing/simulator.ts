/**
 * {@linkcode ProviderSimulator}: a managed-agents provider on a loopback socket, for tests and
 * demos. It checks the provider key on every request, logs each request (without credentials),
 * routes it, and answers with the provider's wire shapes and error bodies. By default it serves
 * the stateful managed-agents API (`managed_agents.ts`): agents, environments, sessions whose turns
 * follow a script, event streams. More routes can be added with
 * {@linkcode ProviderSimulator.route} (the messages API of `messages.ts`, say).
 *
 * Fault switches (each applies to the next matching request or stream, then clears itself):
 * {@linkcode ProviderSimulator.failNext} (an error status such as 500, 503, 529 or 429, with
 * `retry-after` headers), {@linkcode ProviderSimulator.delayNext} (a slow answer),
 * {@linkcode ProviderSimulator.delayNextStream} (a slow first byte of an event stream),
 * {@linkcode ProviderSimulator.dropNextStream} (a stream cut mid-frame); and two that stay on
 * while set: {@linkcode ProviderSimulator.duplicateDeliveries} (every frame written twice) and
 * {@linkcode ProviderSimulator.injectUnknownEvents} (an event of an unknown type before each).
 *
 * @module
 */
import { eventStreamResponse } from "./_event_stream.ts";
import { listen, type Listening } from "./_listen.ts";
import {
  FaultSwitches,
  type SimulatorDelay,
  type SimulatorFault,
  type StreamDelay,
  type StreamDrop,
} from "./faults.ts";
import {
  errorResponse,
  errorTypeOf,
  type Json,
  SimulatorHttpError,
  type SimulatorStreamSubscriber,
} from "./http.ts";
import { installManagedAgentRoutes, type ManagedAgentsState } from "./managed_agents.ts";

/** What a route handler receives. */
export interface SimulatorRouteContext {
  /** The request (its body already read: use {@linkcode SimulatorRouteContext.body}). */
  request: Request;
  /** Its parsed URL. */
  url: URL;
  /** Path parameters by name (`:id` → `params.id`), decoded. */
  params: Record<string, string>;
  /** The simulator. */
  simulator: ProviderSimulator;
  /** The `request-id` this answer carries. */
  requestId: string;
  /** The JSON body (`{}` when there is none); rejects with a 400 when it is not a JSON object. */
  body(): Promise<Json>;
}

/** A route handler: an answer, or a thrown {@linkcode SimulatorHttpError}. */
export type SimulatorRouteHandler = (
  context: SimulatorRouteContext,
) => Response | Promise<Response>;

/** Options of a route. */
export interface SimulatorRouteOptions {
  /** Beta values of which `provider-beta` must contain one; none means no beta check. */
  betas?: readonly string[];
}

/** A logged request. Credentials are never kept, only which scheme was used. */
export interface SimulatorRequestLog {
  /** HTTP method. */
  method: string;
  /** Path without the query. */
  path: string;
  /** The raw query string without `?`. */
  query: string;
  /** Headers with lower-case names, `authorization` and `x-api-key` removed. */
  headers: Record<string, string>;
  /** `x-api-key`, `bearer` or null. */
  auth: "x-api-key" | "bearer" | null;
  /** The parsed JSON body (the text when it is not JSON), or undefined. */
  body?: unknown;
}

/** Options of {@linkcode ProviderSimulator.start}. */
export interface ProviderSimulatorOptions {
  /**
   * The key callers must send (as `x-api-key` or `Authorization: Bearer`). Default `test-key`;
   * give a random one where the key must not be guessable (a demo others can reach).
   */
  apiKey?: string;
  /** Serve only added routes, not the managed-agents API. */
  bare?: boolean;
  /** Address to bind (default `127.0.0.1`). */
  hostname?: string;
  /** Port to bind (default 0: a free one). */
  port?: number;
  /** Requests kept in {@linkcode ProviderSimulator.requests}, oldest dropped first (default 10,000). */
  maxLoggedRequests?: number;
  /** Largest request body accepted, in bytes; a larger one is answered 413 (default 32 MiB). */
  maxBodyBytes?: number;
}

interface Route {
  method: string;
  pattern: RegExp;
  keys: string[];
  handler: SimulatorRouteHandler;
  betas?: readonly string[];
}

const DEFAULT_MAX_LOGGED_REQUESTS = 10_000;
const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

/**
 * A managed-agents provider simulator on a loopback socket. Start it with
 * {@linkcode ProviderSimulator.start}, point a provider client (or the runtime service's
 * `--provider-base-url`) at {@linkcode ProviderSimulator.baseUrl} with
 * {@linkcode ProviderSimulator.apiKey}, and {@linkcode ProviderSimulator.close} it when done.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderManagedAgentClient } from "@automation/runtime/client";
 * import { agentMessage, ProviderSimulator } from "@automation/runtime/testing";
 *
 * await using simulator = await ProviderSimulator.start();
 * const agent = simulator.managedAgents!.addAgent({
 *   name: "greeter",
 *   turn: ({ text }) => [agentMessage(`Hello, ${text}`)],
 * });
 * const environment = simulator.managedAgents!.addEnvironment({ name: "test" });
 * const client = new ProviderManagedAgentClient({
 *   baseUrl: simulator.baseUrl,
 *   apiKey: simulator.apiKey,
 *   agentId: agent.id,
 *   environmentId: environment.id,
 * });
 * const { terminal } = await client.streamRun({ input: "Ada" }, {});
 * assert.equal(terminal?.type, "run.completed");
 * ```
 */
export class ProviderSimulator {
  /** `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  /** The accepted key. */
  readonly apiKey: string;
  /** The latest requests, oldest first (at most `maxLoggedRequests`). */
  readonly requests: SimulatorRequestLog[] = [];
  /** The managed-agents state (undefined when started `bare`). */
  managedAgents: ManagedAgentsState | undefined;
  /** While true, every stream frame is written twice (a duplicated delivery). */
  duplicateDeliveries = false;
  /** While true, an event of an unknown type is emitted before each session event. */
  injectUnknownEvents = false;

  readonly #routes: Route[] = [];
  readonly #faults = new FaultSwitches();
  readonly #streams = {
    subscribers: new Set<SimulatorStreamSubscriber>(),
    closers: new Set<() => void>(),
  };
  readonly #maxLoggedRequests: number;
  readonly #maxBodyBytes: number;
  #listening: Listening | undefined;
  #requestCount = 0;
  #closed = false;

  private constructor(
    baseUrl: string,
    apiKey: string,
    options: ProviderSimulatorOptions,
  ) {
    this.baseUrl = baseUrl;
    this.apiKey = apiKey;
    this.#maxLoggedRequests = options.maxLoggedRequests ?? DEFAULT_MAX_LOGGED_REQUESTS;
    this.#maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  /**
   * Starts a simulator on a socket (a free loopback port by default); stop it with
   * {@linkcode ProviderSimulator.close} (or `await using`).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderSimulator } from "./simulator.ts";
   * const simulator = await ProviderSimulator.start({ apiKey: "sk-test-1234" });
   * try {
   *   const refused = await fetch(`${simulator.baseUrl}/v1/agents`);
   *   assert.equal(refused.status, 401);
   *   await refused.body?.cancel();
   * } finally {
   *   await simulator.close();
   * }
   * ```
   */
  static async start(options: ProviderSimulatorOptions = {}): Promise<ProviderSimulator> {
    const hostname = options.hostname ?? "127.0.0.1";
    const started: { simulator?: ProviderSimulator } = {};
    const listening = await listen((request) => {
      if (started.simulator === undefined) {
        return Promise.resolve(errorResponse(503, undefined, "The simulator is starting"));
      }
      return started.simulator.fetch(request);
    }, {
      hostname,
      port: options.port ?? 0,
      maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    });
    const host = hostname.includes(":") ? `[${hostname}]` : hostname;
    const simulator = started.simulator = new ProviderSimulator(
      `http://${host}:${listening.port}`,
      options.apiKey ?? "test-key",
      options,
    );
    simulator.#listening = listening;
    if (!options.bare) simulator.managedAgents = installManagedAgentRoutes(simulator);
    return simulator;
  }

  /**
   * Adds a route; `pattern` uses `:name` segments (`/v1/sessions/:session_id`). Routes are tried
   * in the order they were added.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { jsonResponse } from "./http.ts";
   * import { ProviderSimulator } from "./simulator.ts";
   * await using simulator = await ProviderSimulator.start({ bare: true });
   * simulator.route("GET", "/v1/models/:id", (c) => jsonResponse({ id: c.params.id }));
   * const response = await fetch(`${simulator.baseUrl}/v1/models/small`, {
   *   headers: { "x-api-key": simulator.apiKey },
   * });
   * assert.deepEqual(await response.json(), { id: "small" });
   * ```
   */
  route(
    method: string,
    pattern: string,
    handler: SimulatorRouteHandler,
    options: SimulatorRouteOptions = {},
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

  /**
   * Answers the next matching request(s) with an error status (a 5xx, a 529 overload, a 429 with
   * `retry-after` …), `times` in a row (default 1).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderSimulator } from "./simulator.ts";
   * await using simulator = await ProviderSimulator.start();
   * simulator.failNext({ path: "/v1/agents", status: 503, headers: { "retry-after": "1" } });
   * const headers = { "x-api-key": simulator.apiKey, "provider-beta": "managed-agents-2026-04-01" };
   * const failed = await fetch(`${simulator.baseUrl}/v1/agents`, { headers });
   * assert.equal(failed.status, 503);
   * await failed.body?.cancel();
   * const next = await fetch(`${simulator.baseUrl}/v1/agents`, { headers });
   * assert.equal(next.status, 200);
   * await next.body?.cancel();
   * ```
   */
  failNext(fault: SimulatorFault): void {
    this.#faults.failNext(fault);
  }

  /** Holds the next matching request(s) for `ms` before answering them (`times`, default 1). */
  delayNext(delay: SimulatorDelay): void {
    this.#faults.delayNext(delay);
  }

  /**
   * Cuts the next event stream: after `afterBytes` bytes of frames (mid-frame when it falls
   * there), or after `afterFrames` whole frames plus half of the next one.
   */
  dropNextStream(drop: StreamDrop): void {
    this.#faults.dropNextStream(drop);
  }

  /** Holds the next `times` (default 1) event stream answers (their first byte) for `ms` ms. */
  delayNextStream(delay: StreamDelay): void {
    this.#faults.delayNextStream(delay);
  }

  /** The number of open event streams. */
  get openStreams(): number {
    return this.#streams.subscribers.size;
  }

  /** Registers a cleanup that runs on close (timers of scripted turns); returns its removal. */
  onClose(closer: () => void): () => void {
    this.#streams.closers.add(closer);
    return () => this.#streams.closers.delete(closer);
  }

  /**
   * Answers an SSE stream: `attach` receives the subscriber before the answer exists, so nothing
   * written after the caller's fetch resolves can be missed; it returns what detaches it. The
   * stream switches (drop, duplicate) apply to what it writes.
   */
  sseResponse(attach: (subscriber: SimulatorStreamSubscriber) => () => void): Response {
    return eventStreamResponse({
      drop: this.#faults.takeStreamDrop(),
      duplicate: this.duplicateDeliveries,
      registry: this.#streams,
      attach,
    });
  }

  /**
   * Answers one request as the simulator does on its socket: to mount it in a server of your own,
   * or to call it without a socket.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderSimulator } from "./simulator.ts";
   * await using simulator = await ProviderSimulator.start();
   * const response = await simulator.fetch(new Request("http://simulator/v1/agents"));
   * assert.equal(response.status, 401);
   * await response.body?.cancel();
   * ```
   */
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const requestId = `req_${String(++this.#requestCount).padStart(6, "0")}`;
    let response: Response;
    try {
      const bodyText = await readBody(request, this.#maxBodyBytes);
      this.#log(request, url, bodyText);
      response = await this.#dispatch(request, url, bodyText, requestId);
    } catch (error) {
      response = error instanceof SimulatorHttpError
        ? errorResponse(error.status, error.type, error.message, {
          headers: error.headers,
          extra: error.extra,
          requestId,
        })
        : errorResponse(500, "api_error", `Provider simulator failure: ${error}`, { requestId });
    }
    response.headers.set("request-id", requestId);
    return response;
  }

  /** Stops every stream and timer, then the socket. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const closer of [...this.#streams.closers]) closer();
    this.#streams.closers.clear();
    for (const subscriber of [...this.#streams.subscribers]) subscriber.close();
    await this.#listening?.close();
  }

  /** Same as {@linkcode ProviderSimulator.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #log(request: Request, url: URL, bodyText: string): void {
    const headers: Record<string, string> = {};
    for (const [name, value] of request.headers) {
      if (name !== "authorization" && name !== "x-api-key") headers[name] = value;
    }
    const auth = request.headers.has("authorization")
      ? "bearer"
      : request.headers.has("x-api-key")
      ? "x-api-key"
      : null;
    let body: unknown;
    try {
      body = bodyText === "" ? undefined : JSON.parse(bodyText);
    } catch {
      body = bodyText;
    }
    if (this.requests.length >= this.#maxLoggedRequests) this.requests.shift();
    this.requests.push({
      method: request.method,
      path: url.pathname,
      query: url.search.slice(1),
      headers,
      auth,
      body,
    });
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
      throw new SimulatorHttpError(401, "authentication_error", "Invalid or missing credentials");
    }
    const delayMs = this.#faults.takeDelay(request.method, url.pathname);
    if (delayMs !== undefined) await this.#wait(delayMs);
    const fault = this.#faults.takeFault(request.method, url.pathname);
    if (fault) {
      throw new SimulatorHttpError(
        fault.status,
        fault.type ?? errorTypeOf(fault.status),
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
          throw new SimulatorHttpError(
            400,
            "invalid_request_error",
            `This endpoint needs the provider-beta header (${route.betas.join(" or ")})`,
          );
        }
      }
      const params: Record<string, string> = {};
      route.keys.forEach((key, i) => params[key] = decodeURIComponent(match[i + 1]));
      if (url.pathname.endsWith("/stream")) {
        const streamDelayMs = this.#faults.takeStreamDelay();
        if (streamDelayMs !== undefined) {
          await this.#wait(streamDelayMs);
          if (this.#closed) {
            throw new SimulatorHttpError(503, "overloaded_error", "The simulator is closing");
          }
        }
      }
      return await route.handler({
        request,
        url,
        params,
        simulator: this,
        requestId,
        body: () => parseObject(bodyText),
      });
    }
    if (allowed.length > 0) {
      throw new SimulatorHttpError(
        405,
        "invalid_request_error",
        `Method ${request.method} is not allowed here`,
        { headers: { allow: [...new Set(allowed)].join(", ") } },
      );
    }
    throw new SimulatorHttpError(404, "not_found_error", `No route for ${url.pathname}`);
  }

  /** Waits `ms`, or less when the simulator closes meanwhile. */
  #wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#streams.closers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#streams.closers.add(done);
    });
  }
}

function parseObject(text: string): Promise<Json> {
  if (text === "") return Promise.resolve({});
  try {
    const value = JSON.parse(text);
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      return Promise.resolve(value as Json);
    }
  } catch {
    // Answered below.
  }
  return Promise.reject(
    new SimulatorHttpError(400, "invalid_request_error", "The body must be a JSON object"),
  );
}

/** The request's body as text, refused with a 413 past `limit` bytes (counted as it streams). */
async function readBody(request: Request, limit: number): Promise<string> {
  if (request.body === null) return "";
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > limit) {
    await request.body.cancel().catch(() => {});
    throw tooLarge(limit);
  }
  const decoder = new TextDecoder();
  let text = "";
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    text += decoder.decode(value, { stream: true });
  }
  return text + decoder.decode();
}

function tooLarge(limit: number): SimulatorHttpError {
  return new SimulatorHttpError(
    413,
    "request_too_large",
    `The request body is larger than ${limit} bytes`,
  );
}
