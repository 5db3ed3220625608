/**
 * {@linkcode driveManagedAgentSession} tails a managed-agents session until it reaches a terminal
 * state, answering tool confirmations and custom tool calls on the way, and survives dropped
 * streams without handling an event twice or answering a tool call twice.
 *
 * How it works:
 * 1. Open the event stream FIRST, then list the history and handle what was not handled yet, then
 *    read the stream. Events that arrive both ways are handled once (deduped by id), in the
 *    provider's order.
 * 2. A tool-use id counts as answered only once its answer was sent successfully, or once the
 *    session's history or stream shows an answer for it. A failed send keeps the computed answer
 *    (the handler is not asked again) and ends the current pass; the next pass re-lists the
 *    history, so an answer that reached the provider despite the error is not sent again.
 * 3. A dropped stream (error or end of body without a terminal event) is reopened with
 *    exponential backoff (500 ms doubling to 10 s, with jitter). `maxReconnects` counts passes in
 *    a row that made no progress; progress (a new event handled or an answer sent) resets it.
 *
 * Memory stays bounded however long the session runs: handled events are not kept; the dedupe
 * state is two {@linkcode BoundedIdSet}s of `dedupeWindow` ids (default 10,000) plus the id and
 * `processed_at` of the last handled event. A re-list only asks for events processed at or after
 * that time (`createdAt.gte`) and skips everything up to the last handled id, so the window only
 * has to cover events re-delivered close together (duplicate frames, the overlap between history
 * and a new stream). Pending requests are kept until answered.
 *
 * This file is one concept past 600 lines on purpose: the steps above, their dedupe state and
 * their options only make sense read together.
 *
 * @module
 */
import { backoffDelayMs, sleep } from "../backoff.ts";
import { readSessionEvents } from "./session_reader.ts";
import {
  isOutcomeEndEvent,
  isTerminalSessionEvent,
  isThreadEvent,
  type ManagedAgentCustomToolUseEvent,
  type ManagedAgentOutcomeEndEvent,
  type ManagedAgentSessionEvent,
  type ManagedAgentStatusEvent,
  type ManagedAgentThreadCreatedEvent,
  type ManagedAgentThreadMessageEvent,
  type ManagedAgentThreadStatusEvent,
  type ManagedAgentToolUseEvent,
  parseSessionEvent,
  sessionEventNeedsConfirmation,
} from "./events.ts";
import { BoundedIdSet } from "./_bounded_id_set.ts";
import type {
  ConfirmToolParams,
  CustomToolResponse,
  ListSessionEventsParams,
  ManagedAgentEvent,
  ManagedAgentRequestOptions,
  RespondCustomToolParams,
  ToolConfirmationDecision,
} from "./types.ts";

/** What the driver needs of a client (`ProviderManagedAgentClient` has all four). */
export interface ManagedAgentDriverClient {
  /** Opens the session's event stream and returns the raw SSE body. */
  openEventStream(sessionId: string, signal?: AbortSignal): Promise<ReadableStream<Uint8Array>>;
  /** Lists the session's event history, oldest first. */
  listEvents(
    sessionId: string,
    params?: ListSessionEventsParams,
  ): Promise<readonly ManagedAgentEvent[]>;
  /** Sends a `user.tool_confirmation`. */
  confirmTool(
    sessionId: string,
    params: ConfirmToolParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<unknown>;
  /** Sends a `user.custom_tool_result`. */
  respondCustomTool(
    sessionId: string,
    params: RespondCustomToolParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<unknown>;
}

/** A tool call paused until it is allowed or denied. */
export interface ManagedAgentToolConfirmationRequest {
  /** Id of the tool-use event. */
  toolUseId: string;
  /** Tool name. */
  name: string;
  /** Tool input. */
  input: unknown;
  /** Thread the call ran on, when cross-posted from a sub-agent. */
  sessionThreadId?: string;
  /** The event. */
  event: ManagedAgentToolUseEvent;
  /** Aborted when the drive stops. */
  signal: AbortSignal;
}

/** A custom tool call the client must run and answer. */
export interface ManagedAgentCustomToolRequest {
  /** Id of the custom-tool-use event. */
  toolUseId: string;
  /** Tool name. */
  name: string;
  /** Tool input. */
  input: unknown;
  /** Thread the call ran on, when cross-posted from a sub-agent. */
  sessionThreadId?: string;
  /** The event. */
  event: ManagedAgentCustomToolUseEvent;
  /** Aborted when the drive stops. */
  signal: AbortSignal;
}

/** Callbacks of {@linkcode driveManagedAgentSession}; all optional, sync or async. */
export interface ManagedAgentDriverHandlers {
  /** Every parsed event, in order, once per event id. */
  onEvent?(event: ManagedAgentSessionEvent): void | Promise<void>;
  /** Agent text output. */
  onMessage?(text: string, event: ManagedAgentSessionEvent): void | Promise<void>;
  /** Decides a paused tool call; without it every such call is denied. */
  onToolConfirmation?(
    request: ManagedAgentToolConfirmationRequest,
  ): ToolConfirmationDecision | Promise<ToolConfirmationDecision>;
  /**
   * Runs a custom tool; without it the driver answers with an error result, since an unanswered
   * custom tool blocks the session.
   */
  onCustomTool?(
    request: ManagedAgentCustomToolRequest,
  ): CustomToolResponse | Promise<CustomToolResponse>;
  /** Each finished grader iteration of an outcome. */
  onOutcomeEvaluation?(event: ManagedAgentOutcomeEndEvent): void | Promise<void>;
  /** Thread created, status and message events. */
  onThreadEvent?(
    event:
      | ManagedAgentThreadCreatedEvent
      | ManagedAgentThreadStatusEvent
      | ManagedAgentThreadMessageEvent,
  ): void | Promise<void>;
  /** Once, when the session reaches a terminal state or the drive gives up (not on abort). */
  onComplete?(): void | Promise<void>;
  /**
   * A {@linkcode ManagedAgentDriverError}: transport failure after reconnects are exhausted (then
   * `onComplete` follows), a fatal provider error, a handler that threw, or an answer that could
   * not be sent. Lifecycle errors of the session arrive through `onEvent`.
   */
  onError?(error: ManagedAgentDriverError): void | Promise<void>;
}

/** Options of {@linkcode driveManagedAgentSession}. */
export interface ManagedAgentDriverOptions {
  /** Stops everything and releases the stream; the drive then resolves with outcome `aborted`. */
  signal?: AbortSignal;
  /** Passes in a row without progress before giving up (default 2). */
  maxReconnects?: number;
  /** First reconnect delay in ms (default 500), doubled per failed pass. */
  minReconnectDelayMs?: number;
  /** Largest reconnect delay in ms (default 10000). */
  maxReconnectDelayMs?: number;
  /** How many recent event ids and answered tool-use ids are remembered (default 10000). */
  dedupeWindow?: number;
}

/** How a drive ended. */
export interface ManagedAgentDriveResult {
  /**
   * `terminal`: the session reached a terminal state; `error`: the drive gave up (reconnects
   * exhausted or a fatal error); `aborted`: the signal fired.
   */
  outcome: "terminal" | "error" | "aborted";
  /** The terminal status event, for outcome `terminal`. */
  terminalEvent?: ManagedAgentStatusEvent;
  /** What ended the drive, for outcome `error`. */
  error?: ManagedAgentDriverError;
}

/** Why a {@linkcode ManagedAgentDriverError} was raised. */
export type ManagedAgentDriverErrorReason =
  /** The stream kept failing without progress for more than `maxReconnects` passes. */
  | "reconnectsExhausted"
  /** The provider refused in a way a retry cannot fix (for example 404 or 401). */
  | "fatal"
  /** A handler threw; the drive went on (a throwing request handler gets a deny or error answer). */
  | "handlerFailed"
  /** An answer was refused in a way a retry cannot fix; it is not sent again. */
  | "answerFailed";

/** An error reported to `onError`. `cause` holds the underlying error. */
export class ManagedAgentDriverError extends Error {
  /** Stable error code. */
  readonly code = "managedAgentDriverError" as const;
  /** What failed. */
  readonly reason: ManagedAgentDriverErrorReason;

  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ManagedAgentDriverError } from "@automation/runtime/client";
   * const error = new ManagedAgentDriverError("handlerFailed", "onMessage threw", {
   *   cause: new Error("boom"),
   * });
   * assert.deepEqual(error.reason, "handlerFailed");
   * ```
   */
  constructor(reason: ManagedAgentDriverErrorReason, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ManagedAgentDriverError";
    this.reason = reason;
  }
}

const DEFAULT_MAX_RECONNECTS = 2;
const DEFAULT_MIN_DELAY_MS = 500;
const DEFAULT_MAX_DELAY_MS = 10_000;
const DEFAULT_DEDUPE_WINDOW = 10_000;
const LIST_PAGE_SIZE = 1000;
const HANDLER_DENY_MESSAGE = "The client's tool confirmation handler failed";
const NO_HANDLER_MESSAGE = "This client has no handler for custom tools";
const CUSTOM_TOOL_FAILED_MESSAGE = "The client's custom tool handler failed";

/**
 * Tails a session until it is terminal: an `idle` status whose stop reason is not
 * `requires_action`, `terminated`, or `deleted`. Paused tool calls go to `onToolConfirmation`
 * (denied without it), custom tool calls to `onCustomTool` (an error result without it), and the
 * answers are sent with `confirmTool` and `respondCustomTool`. Dropped streams are reopened and
 * the history re-listed, so every event is handled once and every request answered once.
 * Resolves when the drive ends; it rejects only on invalid options.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { driveManagedAgentSession, ProviderManagedAgentClient } from "@automation/runtime/client";
 *
 * // A local stand-in for the provider: one message, then the end of the turn.
 * const frames = [
 *   { type: "agent.message", id: "sevt_1", content: [{ type: "text", text: "Done" }] },
 *   { type: "session.status_idle", id: "sevt_2", stop_reason: { type: "end_turn" } },
 * ].map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join("");
 * const client = new ProviderManagedAgentClient({
 *   apiKey: "<API_KEY>",
 *   baseUrl: "https://provider.example",
 *   fetchImpl: (input) =>
 *     Promise.resolve(
 *       String(input).includes("/events/stream")
 *         ? new Response(frames)
 *         : Response.json({ data: [], next_page: null }),
 *     ),
 * });
 * const messages: string[] = [];
 * const result = await driveManagedAgentSession(client, "sesn_01", {
 *   onMessage: (text) => void messages.push(text),
 *   onToolConfirmation: ({ name }) => ({ result: name === "read" ? "allow" : "deny" }),
 *   onCustomTool: ({ input }) => ({ content: [{ type: "text", text: JSON.stringify(input) }] }),
 * });
 * assert.deepEqual(result.outcome, "terminal");
 * assert.deepEqual(messages, ["Done"]);
 * ```
 */
export function driveManagedAgentSession(
  client: ManagedAgentDriverClient,
  sessionId: string,
  handlers: ManagedAgentDriverHandlers = {},
  options: ManagedAgentDriverOptions = {},
): Promise<ManagedAgentDriveResult> {
  try {
    return new SessionDriver(client, sessionId, handlers, options).run();
  } catch (error) {
    return Promise.reject(error);
  }
}

/** An answer computed for a request, waiting to be sent. */
interface PendingAnswer {
  kind: "confirmation" | "custom";
  params: ConfirmToolParams | RespondCustomToolParams;
}

/** Thrown inside a pass to end it early; the loop then reconnects. */
class PassEnded extends Error {}

class SessionDriver {
  readonly #client: ManagedAgentDriverClient;
  readonly #sessionId: string;
  readonly #handlers: ManagedAgentDriverHandlers;
  readonly #maxReconnects: number;
  readonly #minDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #signal: AbortSignal;
  readonly #abort = new AbortController();
  readonly #outer: AbortSignal | undefined;
  readonly #onOuterAbort: () => void;
  readonly #seen: BoundedIdSet;
  readonly #answered: BoundedIdSet;
  readonly #pending = new Map<string, PendingAnswer>();
  #lastId: string | undefined;
  #lastProcessedAt: string | undefined;
  #progress = 0;
  #terminal: ManagedAgentStatusEvent | undefined;

  constructor(
    client: ManagedAgentDriverClient,
    sessionId: string,
    handlers: ManagedAgentDriverHandlers,
    options: ManagedAgentDriverOptions,
  ) {
    for (const name of ["openEventStream", "listEvents", "confirmTool", "respondCustomTool"]) {
      if (typeof (client as unknown as Record<string, unknown>)?.[name] !== "function") {
        throw new TypeError(`client must have a ${name} method`);
      }
    }
    if (typeof sessionId !== "string" || sessionId === "") {
      throw new TypeError("sessionId must be a non-empty string");
    }
    this.#maxReconnects = wholeNumber(
      options.maxReconnects,
      DEFAULT_MAX_RECONNECTS,
      "maxReconnects",
    );
    this.#minDelayMs = wholeNumber(
      options.minReconnectDelayMs,
      DEFAULT_MIN_DELAY_MS,
      "minReconnectDelayMs",
    );
    this.#maxDelayMs = wholeNumber(
      options.maxReconnectDelayMs,
      DEFAULT_MAX_DELAY_MS,
      "maxReconnectDelayMs",
    );
    const window = wholeNumber(options.dedupeWindow, DEFAULT_DEDUPE_WINDOW, "dedupeWindow");
    this.#seen = new BoundedIdSet(Math.max(1, window));
    this.#answered = new BoundedIdSet(Math.max(1, window));
    this.#client = client;
    this.#sessionId = sessionId;
    this.#handlers = handlers;
    this.#signal = this.#abort.signal;
    const outer = options.signal;
    this.#outer = outer;
    this.#onOuterAbort = () => this.#abort.abort(outer?.reason);
    if (outer?.aborted) this.#abort.abort(outer.reason);
    else outer?.addEventListener("abort", this.#onOuterAbort, { once: true });
  }

  async run(): Promise<ManagedAgentDriveResult> {
    let result: ManagedAgentDriveResult | undefined;
    try {
      result = await this.#loop();
      if (result === undefined) return { outcome: "aborted" };
      if (result.error) await this.#report(result.error);
      try {
        await this.#handlers.onComplete?.();
      } catch (error) {
        await this.#report(
          new ManagedAgentDriverError("handlerFailed", "The onComplete handler threw", {
            cause: error,
          }),
        );
      }
      return result;
    } finally {
      this.#outer?.removeEventListener("abort", this.#onOuterAbort);
      // Tells handlers still running (through their request's signal) that the drive is over.
      this.#abort.abort();
    }
  }

  /** Runs passes until the session is terminal (a result), or the drive is aborted (undefined). */
  async #loop(): Promise<ManagedAgentDriveResult | undefined> {
    let failures = 0;
    let lastError: unknown;
    while (true) {
      try {
        if (failures > 0) await sleep(this.#delay(failures), this.#signal);
        const progressBefore = this.#progress;
        try {
          await this.#pass();
        } catch (error) {
          if (this.#signal.aborted) return undefined;
          if (isFatal(error)) {
            return {
              outcome: "error",
              error: new ManagedAgentDriverError(
                "fatal",
                "The provider refused a request for this session; retrying cannot help",
                { cause: error },
              ),
            };
          }
          lastError = error instanceof PassEnded ? error.cause : error;
        }
        if (this.#terminal !== undefined) {
          return { outcome: "terminal", terminalEvent: this.#terminal };
        }
        // A pass that made progress and then dropped starts a new run of failures.
        failures = this.#progress > progressBefore ? 1 : failures + 1;
        if (failures > this.#maxReconnects) {
          return {
            outcome: "error",
            error: new ManagedAgentDriverError(
              "reconnectsExhausted",
              `The event stream failed ${failures} times in a row; reconnects are exhausted`,
              { cause: lastError },
            ),
          };
        }
      } catch (error) {
        if (this.#signal.aborted) return undefined;
        throw error;
      }
    }
  }

  /** One pass: open the stream, catch up from history, answer what is pending, read the stream. */
  async #pass(): Promise<void> {
    const connection = new AbortController();
    const onAbort = (): void => connection.abort(this.#signal.reason);
    this.#signal.addEventListener("abort", onAbort, { once: true });
    let body: ReadableStream<Uint8Array> | undefined;
    let reading = false;
    try {
      body = await this.#guard(this.#client.openEventStream(this.#sessionId, connection.signal));
      await this.#catchUp();
      if (this.#terminal !== undefined) return;
      reading = true;
      for await (const event of readSessionEvents(body, { signal: connection.signal })) {
        await this.#handle(event);
        if (this.#terminal !== undefined) return;
      }
      throw new TypeError("The event stream ended before the session reached a terminal state");
    } finally {
      this.#signal.removeEventListener("abort", onAbort);
      connection.abort();
      if (body !== undefined && !reading) await body.cancel().catch(() => {});
    }
  }

  /** Lists the history since the last handled event and handles what is new, in order. */
  async #catchUp(): Promise<void> {
    const params: ListSessionEventsParams = { limit: LIST_PAGE_SIZE, signal: this.#signal };
    if (this.#lastProcessedAt !== undefined) params.createdAt = { gte: this.#lastProcessedAt };
    const raw = await this.#guard(this.#client.listEvents(this.#sessionId, params));
    const events: ManagedAgentSessionEvent[] = [];
    for (const item of raw) {
      const event = parseSessionEvent(item);
      if (event !== null) events.push(event);
    }
    let start = 0;
    if (this.#lastId !== undefined) {
      for (let i = events.length - 1; i >= 0; i--) {
        if (events[i].id === this.#lastId) {
          start = i + 1;
          break;
        }
      }
    }
    // Answers anywhere in the listed history settle their requests before those are handled, so
    // a request answered earlier (by this driver, despite a failed send, or by another client) is
    // never answered again. Answers still pending then go out, in request order, before new ones.
    for (let i = start; i < events.length; i++) this.#noteAnswer(events[i]);
    await this.#sendPending();
    for (let i = start; i < events.length; i++) {
      await this.#handle(events[i]);
      if (this.#terminal !== undefined) return;
    }
  }

  /** Handles one event: dedupe, handlers, answers. */
  async #handle(event: ManagedAgentSessionEvent): Promise<void> {
    this.#signal.throwIfAborted();
    const id = event.id;
    if (id !== undefined && id !== "") {
      if (this.#seen.has(id)) return;
      this.#seen.add(id);
      if (event.processedAt !== undefined) {
        this.#lastId = id;
        this.#lastProcessedAt = event.processedAt;
      }
    }
    this.#progress++;
    this.#noteAnswer(event);
    const handlers = this.#handlers;
    if (handlers.onEvent) await this.#call("onEvent", () => handlers.onEvent?.(event));
    if (event.kind === "message" && handlers.onMessage) {
      await this.#call("onMessage", () => handlers.onMessage?.(event.text, event));
    } else if (isOutcomeEndEvent(event) && handlers.onOutcomeEvaluation) {
      await this.#call("onOutcomeEvaluation", () => handlers.onOutcomeEvaluation?.(event));
    } else if (isThreadEvent(event) && handlers.onThreadEvent) {
      await this.#call("onThreadEvent", () => handlers.onThreadEvent?.(event));
    }
    if (isTerminalSessionEvent(event)) {
      this.#terminal = event as ManagedAgentStatusEvent;
      return;
    }
    if (sessionEventNeedsConfirmation(event) || event.kind === "custom_tool_use") {
      await this.#request(event);
    }
  }

  /** Records an answer seen in the session (ours or another client's). */
  #noteAnswer(event: ManagedAgentSessionEvent): void {
    const raw = event.raw;
    let toolUseId: unknown;
    if (event.type === "user.tool_confirmation") toolUseId = raw.tool_use_id;
    else if (event.type === "user.custom_tool_result") toolUseId = raw.custom_tool_use_id;
    else return;
    if (typeof toolUseId !== "string") return;
    this.#answered.add(toolUseId);
    this.#pending.delete(toolUseId);
  }

  /** Asks the handler for an answer to a request and sends it. */
  async #request(event: ManagedAgentToolUseEvent | ManagedAgentCustomToolUseEvent): Promise<void> {
    const toolUseId = event.id;
    if (toolUseId === "" || this.#answered.has(toolUseId) || this.#pending.has(toolUseId)) return;
    const base = {
      toolUseId,
      name: event.name,
      input: event.input,
      signal: this.#signal,
      ...(event.sessionThreadId === undefined ? {} : { sessionThreadId: event.sessionThreadId }),
    };
    let answer: PendingAnswer;
    if (event.kind === "tool_use") {
      answer = { kind: "confirmation", params: await this.#decide({ ...base, event }) };
    } else {
      answer = { kind: "custom", params: await this.#runCustomTool({ ...base, event }) };
    }
    this.#signal.throwIfAborted();
    // An answer may have appeared while the handler ran (for example from another client).
    if (this.#answered.has(toolUseId)) return;
    this.#pending.set(toolUseId, answer);
    await this.#send(toolUseId, answer);
  }

  async #decide(request: ManagedAgentToolConfirmationRequest): Promise<ConfirmToolParams> {
    const params: ConfirmToolParams = { toolUseId: request.toolUseId, result: "deny" };
    if (request.sessionThreadId !== undefined) params.sessionThreadId = request.sessionThreadId;
    const handler = this.#handlers.onToolConfirmation;
    if (!handler) return params;
    const ok = await this.#call("onToolConfirmation", async () => {
      const decision = await handler(request);
      // Fail closed: only an explicit allow runs the tool.
      if (decision?.result === "allow") params.result = "allow";
      else if (decision?.result !== "deny") {
        throw new TypeError("The decision must have a result of allow or deny");
      }
      if (params.result === "deny" && typeof decision.denyMessage === "string") {
        params.denyMessage = decision.denyMessage;
      }
    });
    if (!ok) {
      params.result = "deny";
      params.denyMessage = HANDLER_DENY_MESSAGE;
    }
    return params;
  }

  async #runCustomTool(request: ManagedAgentCustomToolRequest): Promise<RespondCustomToolParams> {
    const params: RespondCustomToolParams = {
      toolUseId: request.toolUseId,
      content: [{ type: "text", text: NO_HANDLER_MESSAGE }],
      isError: true,
    };
    if (request.sessionThreadId !== undefined) params.sessionThreadId = request.sessionThreadId;
    const handler = this.#handlers.onCustomTool;
    if (!handler) return params;
    const ok = await this.#call("onCustomTool", async () => {
      const response = await handler(request);
      if (!response || !Array.isArray(response.content)) {
        throw new TypeError("The custom tool response must have a content array");
      }
      params.content = response.content;
      if (response.isError === true) params.isError = true;
      else delete params.isError;
    });
    if (!ok) params.content = [{ type: "text", text: CUSTOM_TOOL_FAILED_MESSAGE }];
    return params;
  }

  /** Sends every answer whose send failed before. */
  async #sendPending(): Promise<void> {
    for (const [toolUseId, answer] of [...this.#pending]) {
      if (this.#pending.get(toolUseId) === answer) await this.#send(toolUseId, answer);
    }
  }

  /** Sends an answer; on success the id counts as answered, on failure the pass ends. */
  async #send(toolUseId: string, answer: PendingAnswer): Promise<void> {
    try {
      if (answer.kind === "confirmation") {
        await this.#guard(
          this.#client.confirmTool(this.#sessionId, answer.params as ConfirmToolParams, {
            signal: this.#signal,
          }),
        );
      } else {
        await this.#guard(
          this.#client.respondCustomTool(
            this.#sessionId,
            answer.params as RespondCustomToolParams,
            { signal: this.#signal },
          ),
        );
      }
    } catch (error) {
      this.#signal.throwIfAborted();
      if (isFatal(error)) {
        this.#pending.delete(toolUseId);
        await this.#report(
          new ManagedAgentDriverError(
            "answerFailed",
            `The provider refused the answer to ${toolUseId}`,
            { cause: error },
          ),
        );
        return;
      }
      // The answer may or may not have arrived: the next pass re-lists the history first.
      throw new PassEnded("answer failed", { cause: error });
    }
    this.#pending.delete(toolUseId);
    this.#answered.add(toolUseId);
    this.#progress++;
  }

  /** Runs a handler; a throw is reported to `onError` and the drive goes on. */
  async #call(name: string, run: () => unknown): Promise<boolean> {
    try {
      const value = run();
      // Only a handler that returns a promise needs the abort race (sync ones are the common case).
      if (isThenable(value)) await this.#guard(Promise.resolve(value));
      return true;
    } catch (error) {
      this.#signal.throwIfAborted();
      await this.#report(
        new ManagedAgentDriverError("handlerFailed", `The ${name} handler threw`, { cause: error }),
      );
      return false;
    }
  }

  async #report(error: ManagedAgentDriverError): Promise<void> {
    try {
      await this.#handlers.onError?.(error);
    } catch {
      // An onError that throws has nowhere left to report to.
    }
  }

  /** Awaits a promise, or rejects with the abort reason as soon as the drive is aborted. */
  #guard<T>(promise: Promise<T>): Promise<T> {
    const signal = this.#signal;
    if (signal.aborted) {
      promise.catch(() => {});
      return Promise.reject(signal.reason);
    }
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      promise.then(
        (value) => {
          signal.removeEventListener("abort", onAbort);
          resolve(value);
        },
        (error) => {
          signal.removeEventListener("abort", onAbort);
          reject(error);
        },
      );
    });
  }

  #delay(failures: number): number {
    return backoffDelayMs(failures - 1, this.#minDelayMs, this.#maxDelayMs);
  }
}

function wholeNumber(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`${name} must be a whole number of at least 0`);
  }
  return value;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

/** Whether an error says that retrying cannot help (a provider 4xx other than 408, 409, 429). */
function isFatal(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { retryable, status } = error as { retryable?: unknown; status?: unknown };
  return retryable === false && typeof status === "number" && status >= 400 && status < 500;
}
