/**
 * `ProviderManagedAgentClient`: the stateful managed-agents client. It serves the universal run
 * contract on sessions (a run is a session; the run id is the session id) and every operation of
 * the managed-agents API.
 *
 * This file holds the class, its options and the run contract. The resource operations live one
 * group per file, each with its wire conversion, paths and methods: `agents.ts`,
 * `environments.ts` (and the work queue), `sessions.ts` (and resources), `session_events.ts`
 * (and threads), `memory.ts` (stores, memories, versions), `vaults.ts` (and credentials),
 * `deployments.ts` (and runs) and `raw.ts` (requests passed on as they are). Each group exports an interface, which the class merges, and an
 * implementation, which `installMethods` puts on the class's prototype: to callers they are
 * ordinary methods.
 *
 * @module
 */
import { checkBetas, type FetchLike, HttpTransport, type ProviderTraceCallback } from "../http.ts";
import { providerCapabilities } from "../capabilities.ts";
import type {
  RunStreamHandlers,
  RunStreamOptions,
  RunStreamResult,
  RuntimeCapabilities,
  RuntimeClient,
  RuntimeRunStartBody,
  RuntimeRunStatus,
} from "../contract.ts";
import { BatchlessRuntimeClient } from "../batchless.ts";
import { bindWire, installMethods, ResourceWire, wire } from "./_resource.ts";
import {
  kickoffEvents,
  readTurnEnd,
  resolveRunTarget,
  runEventLoop,
  type TurnEnd,
} from "./_run.ts";
import { agentsApi, type ManagedAgentAgentsApi } from "./agents.ts";
import { deploymentsApi, type ManagedAgentDeploymentsApi } from "./deployments.ts";
import { environmentsApi, type ManagedAgentEnvironmentsApi } from "./environments.ts";
import { type ManagedAgentMemoryApi, memoryApi } from "./memory.ts";
import { type ManagedAgentRawApi, rawApi } from "./raw.ts";
import { PROVIDER_MANAGED_AGENTS_BETA } from "./paths.ts";
import {
  type ManagedAgentSessionEventsApi,
  providerSessionEventStreamPath,
  sessionEventsApi,
} from "./session_events.ts";
import { type ManagedAgentSessionsApi, sessionsApi } from "./sessions.ts";
import { numericUsage, sessionStatusToRunState } from "./stream.ts";
import { type ManagedAgentVaultsApi, vaultsApi } from "./vaults.ts";

/** Settings of a {@linkcode ProviderManagedAgentClient}. */
export interface ProviderManagedAgentClientOptions {
  /** Sent as `x-api-key`. Provide this or `authToken`. */
  apiKey?: string;
  /** OAuth or long-term bearer token, sent as `Authorization: Bearer`; wins over `apiKey`. */
  authToken?: string;
  /** The persisted agent runs use unless `metadata.agent_id` names another. */
  agentId?: string;
  /** The environment runs use unless `metadata.environment_id` names another. */
  environmentId?: string;
  /** Sent as `provider-version` (default `2026-10-21`). */
  providerVersion?: string;
  /** Unary call timeout in ms (default 60000). */
  defaultTimeoutMs?: number;
  /** Time allowed until an event stream's first byte, in ms (default 10 minutes); never caps a stream. */
  streamTimeoutMs?: number;
  /** Base URL of the provider API (required). */
  baseUrl?: string;
  /** The fetch to use (default `globalThis.fetch`). */
  fetchImpl?: FetchLike;
  /** Receives one trace per request attempt (method, path, status, duration, attempt, request id). */
  onTrace?: ProviderTraceCallback;
  /**
   * Extra beta values sent on every request, comma-joined in `provider-beta` before
   * `managed-agents-2026-04-01` (always sent); a call's own `betas` come first.
   */
  betas?: readonly string[];
  /**
   * Extra headers sent on every request (a call's `headers` win over these). Headers the client
   * sets itself (`authorization`, `x-api-key`, `provider-version`, `provider-beta`,
   * `content-type`, `accept`) are a `TypeError`, so credentials never come from here.
   */
  headers?: Record<string, string>;
}

const NO_BATCHES = "managed-agent sessions have no batch API; use the messages client";

/**
 * The resource operations of {@linkcode ProviderManagedAgentClient}, one interface per resource
 * group, merged into the class: each group's file implements them and `installMethods` puts them
 * on the class's prototype, so they are ordinary methods of every client.
 */
export interface ProviderManagedAgentClient
  extends
    ManagedAgentAgentsApi,
    ManagedAgentEnvironmentsApi,
    ManagedAgentSessionsApi,
    ManagedAgentSessionEventsApi,
    ManagedAgentMemoryApi,
    ManagedAgentVaultsApi,
    ManagedAgentDeploymentsApi,
    ManagedAgentRawApi {}

/**
 * The managed-agents client. A run is a session of a persisted agent in an environment, both
 * created beforehand (`createAgent`, `createEnvironment`) and named by the `agentId` and
 * `environmentId` options or per run by `metadata.agent_id` / `metadata.environment_id`.
 *
 * Every request sends `provider-beta: managed-agents-2026-04-01`. Lists walk every page and
 * return arrays (`limit` is the page size); each has an `iterate…` twin yielding records lazily.
 * Deletes resolve to nothing. Provider errors are {@linkcode ProviderApiError}s (a memory path
 * conflict is the narrower {@linkcode MemoryPathConflictError}); failed connections, timeouts and
 * aborts are `ProviderConnectionError`, `ProviderTimeoutError` and `ProviderAbortError`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderManagedAgentClient } from "@automation/runtime/client";
 *
 * // A local stand-in for the provider: the session, its stream, the kickoff.
 * const turn = [
 *   { type: "agent.message", id: "sevt_1", content: [{ type: "text", text: "Summary." }] },
 *   { type: "session.status_idle", id: "sevt_2", stop_reason: { type: "end_turn" } },
 * ].map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join("");
 * const fetchImpl = (input: Request | URL | string): Promise<Response> => {
 *   const path = new URL(String(input)).pathname;
 *   if (path === "/v1/sessions") return Promise.resolve(Response.json({ id: "sesn_1" }));
 *   if (path.endsWith("/stream")) return Promise.resolve(new Response(turn));
 *   return Promise.resolve(Response.json({ data: [] }));
 * };
 * const client = new ProviderManagedAgentClient({
 *   baseUrl: "https://provider.example",
 *   apiKey: "<API_KEY>",
 *   agentId: "agent_123",
 *   environmentId: "env_123",
 *   fetchImpl,
 * });
 * const texts: string[] = [];
 * const result = await client.streamRun({ input: "Summarize the repository" }, {
 *   onEvent(event) {
 *     if (event.type === "message.completed") texts.push(event.text);
 *   },
 * });
 * assert.deepEqual(texts, ["Summary."]);
 * assert.deepEqual(result.terminal, { type: "run.completed", runId: "sesn_1", stopReason: "end_turn" });
 * ```
 */
export class ProviderManagedAgentClient extends BatchlessRuntimeClient implements RuntimeClient {
  readonly #agentId: string | undefined;
  readonly #environmentId: string | undefined;

  /**
   * Creates the client. A missing `baseUrl`, or neither `apiKey` nor `authToken`, is a
   * `TypeError`.
   */
  constructor(options: ProviderManagedAgentClientOptions) {
    super(NO_BATCHES);
    if (typeof options !== "object" || options === null) {
      throw new TypeError("options are required");
    }
    if (!options.apiKey && !options.authToken) {
      throw new TypeError("apiKey or authToken is required");
    }
    bindWire(
      this,
      new ResourceWire(
        new HttpTransport({
          baseUrl: options.baseUrl,
          apiKey: options.apiKey,
          authToken: options.authToken,
          providerVersion: options.providerVersion,
          betas: [...(checkBetas(options.betas) ?? []), PROVIDER_MANAGED_AGENTS_BETA],
          headers: options.headers,
          defaultTimeoutMs: options.defaultTimeoutMs,
          streamTimeoutMs: options.streamTimeoutMs,
          fetchImpl: options.fetchImpl,
          onTrace: options.onTrace,
        }),
      ),
    );
    this.#agentId = options.agentId;
    this.#environmentId = options.environmentId;
  }

  // ------------------------------------------------------------------ run contract

  /**
   * What this client supports: `runs` and `streaming` (from the shared capability declaration).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderManagedAgentClient } from "@automation/runtime/client";
   * const client = new ProviderManagedAgentClient({ baseUrl: "https://provider.example", apiKey: "k" });
   * assert.deepEqual(client.getRuntimeCapabilities().streaming, true);
   * ```
   */
  getRuntimeCapabilities(): RuntimeCapabilities {
    return providerCapabilities("provider-managed-agents");
  }

  /**
   * Creates a session against the resolved agent and environment, sends the kickoff message and
   * returns the session id with status `started`. `body.model` and `body.instructions` are not
   * applied: model and system prompt live on the agent.
   */
  async startRun(body: RuntimeRunStartBody, options?: RunStreamOptions): Promise<RuntimeRunStatus> {
    const target = resolveRunTarget(body, {
      agentId: this.#agentId,
      environmentId: this.#environmentId,
    });
    const kickoff = kickoffEvents(body.input);
    const session = await this.createSession(target, options);
    await this.sendEvents(session.id, kickoff, options);
    return { runId: session.id, status: "started" };
  }

  /**
   * Creates a session, opens its event stream, then sends the kickoff (so no event is missed) and
   * emits canonical events until a terminal one. `run.started` comes first; `runId` is the
   * session id. Aborting `signal` closes the stream and rejects with `ProviderAbortError`.
   *
   * With `options.deltas`, the stream asks the provider for text deltas of `agent.message`
   * (`event_deltas[]=agent.message`): `message.delta` events come before each
   * `message.completed` and together spell its text (the final buffered event replaces its
   * preview, so a delta carries whatever the preview had not streamed yet).
   *
   * A turn interrupted by `cancelRun` (the stream shows the `user.interrupt` echo before the
   * turn's idle or termination) ends with `run.cancelled`.
   */
  async streamRun(
    body: RuntimeRunStartBody,
    handlers: RunStreamHandlers,
    options: RunStreamOptions = {},
  ): Promise<RunStreamResult> {
    const { signal } = options;
    const target = resolveRunTarget(body, {
      agentId: this.#agentId,
      environmentId: this.#environmentId,
    });
    const kickoff = kickoffEvents(body.input);
    const session = await this.createSession(target, options);
    const stream = await openRunStream(this, session.id, options);
    try {
      await handlers.onEvent?.({ type: "run.started", runId: session.id });
      await this.sendEvents(session.id, kickoff, options);
    } catch (error) {
      await stream.cancel().catch(() => {});
      throw error;
    }
    return await runEventLoop({
      runId: session.id,
      body: stream,
      handlers,
      signal,
      deltas: options.deltas === true,
    });
  }

  /**
   * Streams an existing session without a kickoff, emitting canonical events until a terminal
   * one or the end of the stream. `options.deltas` as for `streamRun`. The stream may open after
   * an interrupt was sent, so when the turn ends without an interrupt on the stream, the
   * session's event history decides: a `user.interrupt` between the turn's `user.message` and its
   * end makes it `run.cancelled` (one extra history read per finished turn).
   */
  async streamSession(
    sessionId: string,
    handlers: RunStreamHandlers,
    options: RunStreamOptions = {},
  ): Promise<RunStreamResult> {
    const { signal } = options;
    const stream = await openRunStream(this, sessionId, options);
    return await runEventLoop({
      runId: sessionId,
      body: stream,
      handlers,
      signal,
      deltas: options.deltas === true,
      // The stream may have opened after an interrupt was sent: the history decides. A failed
      // read keeps the turn's end as the stream reported it rather than failing a finished run.
      interruptedInHistory: async () => {
        try {
          return (await readTurnEnd(wire(this), sessionId, "idle", options)).interrupted;
        } catch (error) {
          if (signal?.aborted) throw error;
          return false;
        }
      },
    });
  }

  /**
   * Reads a run's state: the session's live status, with the latest idle stop reason and whether
   * an interrupt asked for the stop, mapped to a run state.
   */
  async getRun(runId: string, options?: RunStreamOptions): Promise<RuntimeRunStatus> {
    const session = await this.getSession(runId, options);
    const status = typeof session.status === "string" ? session.status : undefined;
    const end: TurnEnd = status === "idle" || status === "terminated"
      ? await readTurnEnd(wire(this), runId, status, options)
      : { interrupted: false, pending: false };
    const state = sessionStatusToRunState({ status, ...end });
    const result: RuntimeRunStatus = { runId, status: state };
    if (end.stopReason !== undefined) result.stopReason = end.stopReason;
    const usage = numericUsage(session.usage);
    if (usage !== undefined) result.usage = usage;
    return result;
  }

  /**
   * Interrupts the session (a graceful stop); the session stays reusable. The interrupt is
   * recorded as a `user.interrupt` event in the session's history, which is how every process
   * knows afterwards that the turn was cancelled: `getRun` then reads `cancelled`, and
   * `streamRun` / `streamSession` end the turn with `run.cancelled`.
   */
  async cancelRun(runId: string, options?: RunStreamOptions): Promise<RuntimeRunStatus> {
    await this.interruptSession(runId, options);
    return { runId, status: "cancelled" };
  }
}

/** Opens a session's stream for a run, asking for text deltas when `options.deltas` is set. */
function openRunStream(
  client: ProviderManagedAgentClient,
  sessionId: string,
  options: RunStreamOptions,
): Promise<ReadableStream<Uint8Array>> {
  const query = options.deltas === true ? { event_deltas: ["agent.message"] } : undefined;
  return wire(client).stream(providerSessionEventStreamPath(sessionId), options, query);
}

installMethods(
  ProviderManagedAgentClient.prototype,
  agentsApi,
  environmentsApi,
  sessionsApi,
  sessionEventsApi,
  memoryApi,
  vaultsApi,
  deploymentsApi,
  rawApi,
);
