/**
 * Session events and threads: sending user events (messages, interrupts, tool answers,
 * outcomes), event history, event streams and multiagent threads. The user-event wire
 * conversion, the event and thread paths and the methods {@linkcode ProviderManagedAgentClient}
 * takes from here.
 *
 * @module
 */
import { collect, compact, pathSegment, range, wire } from "./_resource.ts";
import type {
  ConfirmToolParams,
  DefineOutcomeParams,
  InterruptSessionOptions,
  JsonObject,
  ListManagedAgentThreadsParams,
  ListSessionEventsParams,
  ManagedAgentEvent,
  ManagedAgentListOptions,
  ManagedAgentRequestOptions,
  ManagedAgentThread,
  RespondCustomToolParams,
} from "./types.ts";
import { providerSessionPath } from "./sessions.ts";

/**
 * The path to send events to a session (`POST`) and list its event history (`GET`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerSessionEventsPath } from "@automation/runtime/client";
 * assert.deepEqual(providerSessionEventsPath("sesn_1"), "/v1/sessions/sesn_1/events");
 * ```
 */
export function providerSessionEventsPath(sessionId: string): string {
  return `${providerSessionPath(sessionId)}/events`;
}

/**
 * The path of a session's SSE event stream.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerSessionEventStreamPath } from "@automation/runtime/client";
 * assert.deepEqual(providerSessionEventStreamPath("sesn_1"), "/v1/sessions/sesn_1/events/stream");
 * ```
 */
export function providerSessionEventStreamPath(sessionId: string): string {
  return `${providerSessionPath(sessionId)}/events/stream`;
}

/**
 * The path of a session's threads, or of one thread when `threadId` is given.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerSessionThreadPath } from "@automation/runtime/client";
 * assert.deepEqual(providerSessionThreadPath("sesn_1", "sthr_1"), "/v1/sessions/sesn_1/threads/sthr_1");
 * ```
 */
export function providerSessionThreadPath(sessionId: string, threadId?: string): string {
  const base = `${providerSessionPath(sessionId)}/threads`;
  return threadId === undefined ? base : `${base}/${pathSegment("threadId", threadId)}`;
}

/**
 * The session-event and thread operations of {@linkcode ProviderManagedAgentClient}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderManagedAgentClient } from "@automation/runtime/client";
 *
 * // A local stand-in for the provider that records the sent events with ids.
 * const client = new ProviderManagedAgentClient({
 *   baseUrl: "https://provider.example",
 *   apiKey: "<API_KEY>",
 *   fetchImpl: (_input, init) => {
 *     const { events } = JSON.parse(String(init?.body));
 *     return Promise.resolve(
 *       Response.json({ data: events.map((e: object, i: number) => ({ id: `sevt_${i}`, ...e })) }),
 *     );
 *   },
 * });
 * const [sent] = await client.sendMessage("sesn_1", "Summarize the repository");
 * assert.deepEqual(sent, {
 *   id: "sevt_0",
 *   type: "user.message",
 *   content: [{ type: "text", text: "Summarize the repository" }],
 * });
 * ```
 */
export interface ManagedAgentSessionEventsApi {
  /** Sends events to a session and returns them as recorded (with ids). */
  sendEvents(
    sessionId: string,
    events: ManagedAgentEvent[],
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEvent[]>;

  /** Sends a `user.message` (text, or content blocks). */
  sendMessage(
    sessionId: string,
    input: string | JsonObject[],
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEvent[]>;

  /** Sends a `user.interrupt` (all threads, or one); the session stays reusable. */
  interruptSession(
    sessionId: string,
    options?: InterruptSessionOptions,
  ): Promise<ManagedAgentEvent[]>;

  /**
   * Lists a session's event history (every page, oldest first by default), for lossless
   * reconnects and dedupe by event id.
   */
  listEvents(sessionId: string, params?: ListSessionEventsParams): Promise<ManagedAgentEvent[]>;

  /** Yields a session's events page by page. */
  iterateEvents(
    sessionId: string,
    params?: ListSessionEventsParams,
  ): AsyncGenerator<ManagedAgentEvent, void>;

  /**
   * Answers a tool call paused on a confirmation (`user.tool_confirmation`). The provider routes
   * the answer by tool-use id, so `sessionThreadId` is not sent.
   */
  confirmTool(
    sessionId: string,
    params: ConfirmToolParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEvent[]>;

  /** Answers a custom tool call (`user.custom_tool_result`). */
  respondCustomTool(
    sessionId: string,
    params: RespondCustomToolParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEvent[]>;

  /**
   * Defines an outcome (`user.define_outcome`): the harness grades and revises until it is
   * satisfied or `maxIterations` (default 3, at most 20) run out. Do not send a message as well.
   */
  defineOutcome(
    sessionId: string,
    params: DefineOutcomeParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentEvent[]>;

  /**
   * Opens a session's SSE event stream and returns the raw body once the response headers
   * arrived (`streamTimeoutMs` bounds only that wait). Read it with `readSessionEvents`;
   * cancelling it, or aborting `signal`, releases the connection. With `options.deltas` the
   * provider adds text deltas of `agent.message` (`event_deltas[]=agent.message`).
   */
  openEventStream(
    sessionId: string,
    signal?: AbortSignal,
    options?: { deltas?: boolean },
  ): Promise<ReadableStream<Uint8Array>>;

  /** Lists a session's threads, the primary thread included (every page). */
  listThreads(
    sessionId: string,
    params?: ListManagedAgentThreadsParams,
  ): Promise<ManagedAgentThread[]>;

  /** Yields a session's threads page by page. */
  iterateThreads(
    sessionId: string,
    params?: ListManagedAgentThreadsParams,
  ): AsyncGenerator<ManagedAgentThread, void>;

  /** Reads a thread. */
  getThread(
    sessionId: string,
    threadId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentThread>;

  /** Archives a thread. */
  archiveThread(
    sessionId: string,
    threadId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentThread>;

  /** Lists a thread's events (every page). */
  listThreadEvents(
    sessionId: string,
    threadId: string,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentEvent[]>;

  /** Yields a thread's events page by page. */
  iterateThreadEvents(
    sessionId: string,
    threadId: string,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentEvent, void>;

  /** Opens a thread's SSE event stream (raw body), like `openEventStream`. */
  openThreadEventStream(
    sessionId: string,
    threadId: string,
    signal?: AbortSignal,
  ): Promise<ReadableStream<Uint8Array>>;
}

/** The implementation of {@linkcode ManagedAgentSessionEventsApi}, installed on the client's prototype. */
export const sessionEventsApi:
  & ManagedAgentSessionEventsApi
  & ThisType<ManagedAgentSessionEventsApi> = {
    async sendEvents(
      sessionId: string,
      events: ManagedAgentEvent[],
      options?: ManagedAgentRequestOptions,
    ): Promise<ManagedAgentEvent[]> {
      if (!Array.isArray(events) || events.length === 0) {
        throw new TypeError("events must be a non-empty array");
      }
      const answer = await wire(this).post<{ data?: ManagedAgentEvent[] }>(
        providerSessionEventsPath(sessionId),
        { events },
        options,
      );
      return answer?.data ?? [];
    },

    sendMessage(
      sessionId: string,
      input: string | JsonObject[],
      options?: ManagedAgentRequestOptions,
    ): Promise<ManagedAgentEvent[]> {
      const content = typeof input === "string" ? [{ type: "text", text: input }] : input;
      return this.sendEvents(sessionId, [{ type: "user.message", content }], options);
    },

    interruptSession(
      sessionId: string,
      options?: InterruptSessionOptions,
    ): Promise<ManagedAgentEvent[]> {
      return this.sendEvents(sessionId, [
        compact({ type: "user.interrupt", session_thread_id: options?.sessionThreadId }),
      ], options);
    },

    listEvents(sessionId: string, params?: ListSessionEventsParams): Promise<ManagedAgentEvent[]> {
      return collect(this.iterateEvents(sessionId, params));
    },

    iterateEvents(
      sessionId: string,
      params?: ListSessionEventsParams,
    ): AsyncGenerator<ManagedAgentEvent, void> {
      return wire(this).iterate(providerSessionEventsPath(sessionId), {
        order: params?.order,
        types: params?.types,
        created_at: range(params?.createdAt),
      }, params);
    },

    confirmTool(
      sessionId: string,
      params: ConfirmToolParams,
      options?: ManagedAgentRequestOptions,
    ): Promise<ManagedAgentEvent[]> {
      if (params.result !== "allow" && params.result !== "deny") {
        throw new TypeError("result must be allow or deny");
      }
      return this.sendEvents(sessionId, [compact({
        type: "user.tool_confirmation",
        tool_use_id: params.toolUseId,
        result: params.result,
        deny_message: params.result === "deny" ? params.denyMessage : undefined,
      })], options);
    },

    respondCustomTool(
      sessionId: string,
      params: RespondCustomToolParams,
      options?: ManagedAgentRequestOptions,
    ): Promise<ManagedAgentEvent[]> {
      return this.sendEvents(sessionId, [compact({
        type: "user.custom_tool_result",
        custom_tool_use_id: params.toolUseId,
        content: params.content,
        is_error: params.isError,
      })], options);
    },

    defineOutcome(
      sessionId: string,
      params: DefineOutcomeParams,
      options?: ManagedAgentRequestOptions,
    ): Promise<ManagedAgentEvent[]> {
      const max = params.maxIterations;
      if (max !== undefined && (!Number.isSafeInteger(max) || max < 1 || max > 20)) {
        throw new RangeError("maxIterations must be a whole number from 1 to 20");
      }
      return this.sendEvents(sessionId, [compact({
        type: "user.define_outcome",
        description: params.description,
        rubric: params.rubric,
        max_iterations: max,
      })], options);
    },

    openEventStream(
      sessionId: string,
      signal?: AbortSignal,
      options?: { deltas?: boolean },
    ): Promise<ReadableStream<Uint8Array>> {
      const query = options?.deltas === true ? { event_deltas: ["agent.message"] } : undefined;
      return wire(this).stream(providerSessionEventStreamPath(sessionId), { signal }, query);
    },

    listThreads(
      sessionId: string,
      params?: ListManagedAgentThreadsParams,
    ): Promise<ManagedAgentThread[]> {
      return collect(this.iterateThreads(sessionId, params));
    },

    iterateThreads(
      sessionId: string,
      params?: ListManagedAgentThreadsParams,
    ): AsyncGenerator<ManagedAgentThread, void> {
      return wire(this).iterate(providerSessionThreadPath(sessionId), {
        statuses: params?.statuses,
      }, params);
    },

    getThread(
      sessionId: string,
      threadId: string,
      options?: ManagedAgentRequestOptions,
    ): Promise<ManagedAgentThread> {
      return wire(this).get(providerSessionThreadPath(sessionId, threadId), undefined, options);
    },

    archiveThread(
      sessionId: string,
      threadId: string,
      options?: ManagedAgentRequestOptions,
    ): Promise<ManagedAgentThread> {
      return wire(this).post(
        `${providerSessionThreadPath(sessionId, threadId)}/archive`,
        undefined,
        options,
      );
    },

    listThreadEvents(
      sessionId: string,
      threadId: string,
      params?: ManagedAgentListOptions,
    ): Promise<ManagedAgentEvent[]> {
      return collect(this.iterateThreadEvents(sessionId, threadId, params));
    },

    iterateThreadEvents(
      sessionId: string,
      threadId: string,
      params?: ManagedAgentListOptions,
    ): AsyncGenerator<ManagedAgentEvent, void> {
      return wire(this).iterate(
        `${providerSessionThreadPath(sessionId, threadId)}/events`,
        {},
        params,
      );
    },

    openThreadEventStream(
      sessionId: string,
      threadId: string,
      signal?: AbortSignal,
    ): Promise<ReadableStream<Uint8Array>> {
      return wire(this).stream(`${providerSessionThreadPath(sessionId, threadId)}/stream`, {
        signal,
      });
    },
  };
