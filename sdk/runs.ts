/**
 * `client.runs`: the runs of managed agents that the runtime service starts and steers for its
 * principals, with the service holding the provider credential. Web standards only.
 *
 * | method | request | answer | needs |
 * |---|---|---|---|
 * | {@linkcode RunsApi.start} | `POST /v1/runs` | 201 {@linkcode RunRecord} | `session:write` |
 * | {@linkcode RunsApi.get} | `GET /v1/runs/{runId}` | 200 {@linkcode RunRecord} | `session:read` |
 * | {@linkcode RunsApi.list} | `GET /v1/runs` | 200 {@linkcode RunPage} | `session:read` |
 * | {@linkcode RunsApi.cancel} | `POST /v1/runs/{runId}/cancel` | 202 {@linkcode RunRecord} | `session:write` |
 * | {@linkcode RunsApi.send} | `POST /v1/runs/{runId}/messages` | 202 {@linkcode RunRecord} | `session:write` |
 * | {@linkcode RunsApi.pending} | `GET /v1/runs/{runId}/pending` | 200 `PendingToolRequest[]` | `session:read` |
 * | {@linkcode RunsApi.confirmTool} | `POST /v1/runs/{runId}/tool-confirmations` | 200 `ToolConfirmation` | `session:approve` |
 * | {@linkcode RunsApi.respondCustomTool} | `POST /v1/runs/{runId}/custom-tool-results` | 200 `CustomToolAnswer` | `session:write` |
 * | {@linkcode RunsApi.events} | `GET /v1/runs/{runId}/events` (SSE) | async iterator of {@linkcode RunEvent} | `session:read` |
 * | {@linkcode RunsApi.eventPage} | `GET /v1/runs/{runId}/events` (JSON) | 200 {@linkcode RunEventPage} | `session:read` |
 * | {@linkcode RunsApi.inbox} | `GET /v1/pending` | 200 `InboxPage` | `session:read` |
 * | {@linkcode RunsApi.inboxAll} | `GET /v1/pending`, every page | async iterator of `InboxItem` | `session:read` |
 * | {@linkcode RunsApi.activity} | `GET /v1/activity` (SSE) | async iterator of `ActivityEvent` | `session:read` |
 * | {@linkcode RunsApi.activityPage} | `GET /v1/activity` (JSON) | 200 `ActivityEventPage` | `session:read` |
 *
 * Retries: reads are retried as every read is. `start`, `cancel` and `send` always carry an
 * `idempotency-key` (yours, or a random UUID generated once per call), so the service
 * deduplicates them and the client retries them too, with the same key, on connection errors,
 * 408, 409 `idempotencyInFlight`, 429 `resourceExhausted` and 503 `providerUnavailable`. Not
 * retried: 503 `providerNotConfigured` and 429 `runQuotaExceeded` (they last), 502
 * `providerError` (the provider refused). `confirmTool` and `respondCustomTool` carry a key too;
 * their 409 `alreadyAnswered` (someone answered first) is final. Pass your own `idempotencyKey` to make a retry by a
 * later process (a rerun script) safe as well.
 *
 * One file because it is one concept: `client.runs`, every call of the runs API in one place
 * (event streaming, tool requests and the cross-run views are delegated to `run_events.ts`,
 * `tool_requests.ts` and `activity.ts`).
 *
 * @module
 */
import {
  type ConfirmToolBody,
  type CustomToolAnswer,
  type ListRunsParams,
  type PendingToolRequest,
  type RespondCustomToolBody,
  RUN_STATES,
  type RunPage,
  type RunRecord,
  type RuntimeRunInput,
  type SendRunMessageBody,
  type StartRunBody,
  type ToolConfirmation,
} from "../wire/mod.ts";
import {
  type Answer,
  checkedCursor,
  checkedLimit,
  idempotencyKeyOf,
  idSegment,
  invalidAnswer,
  isObject,
  queryOf,
  type SendRequest,
} from "./_request.ts";
import type { CallOptions, MutatingCallOptions } from "./types.ts";
import { confirmPayload, pendingOf, respondPayload, toolAnswerOf } from "./tool_requests.ts";
import type { RunEvent, RunEventPage } from "../wire/mod.ts";
import {
  iterateRunEvents,
  type OpenStream,
  readRunEventPage,
  type RunEventsOptions,
} from "./run_events.ts";
import type {
  ActivityEvent,
  ActivityEventPage,
  InboxItem,
  InboxPage,
  InboxQuery,
} from "../wire/mod.ts";
import {
  type ActivityOptions,
  iterateActivity,
  readActivityPage,
  readInboxPage,
} from "./activity.ts";

/**
 * The runs of the runtime service, as `client.runs` of a `RuntimeServiceClient`. Failures
 * reject with `RuntimeServiceError` (`runNotFound`, `agentNotAllowed`, `runQuotaExceeded`,
 * `providerError`, `providerNotConfigured`, `providerUnavailable`, …); invalid arguments throw
 * a `TypeError` or `RangeError` before anything is sent.
 *
 * @example Start a run, follow up, cancel it
 * ```ts
 * import assert from "node:assert/strict";
 * import { RuntimeServiceClient } from "./client.ts";
 *
 * // An in-process stand-in for the service, so the example runs anywhere.
 * const seen: string[] = [];
 * const client = new RuntimeServiceClient({
 *   baseUrl: "http://127.0.0.1:7777",
 *   token: "art_" + "x".repeat(43),
 *   fetch: (input, init) => {
 *     const url = new URL(String(input));
 *     seen.push(`${init?.method} ${url.pathname}`);
 *     const state = url.pathname.endsWith("/cancel") ? "cancelled" : "running";
 *     return Promise.resolve(Response.json({
 *       runId: "sesn_1", principalId: "p", agentId: "agent_1", environmentId: "env_1",
 *       state, lastEventSeq: 0, createdAt: "2026-07-23T00:00:00Z",
 *       updatedAt: "2026-07-23T00:00:00Z",
 *     }, { status: init?.method === "POST" && url.pathname === "/v1/runs" ? 201 : 202 }));
 *   },
 * });
 *
 * const run = await client.runs.start(
 *   { input: "Summarise the open issues", metadata: { agent_id: "agent_1" } },
 *   { idempotencyKey: "nightly-summary-2026-07-23" },
 * );
 * await client.runs.send(run.runId, { input: "Only the security ones" });
 * const cancelled = await client.runs.cancel(run.runId);
 * assert.equal(cancelled.state, "cancelled");
 * assert.deepEqual(seen, [
 *   "POST /v1/runs",
 *   "POST /v1/runs/sesn_1/messages",
 *   "POST /v1/runs/sesn_1/cancel",
 * ]);
 * ```
 */
export class RunsApi {
  readonly #send: SendRequest;
  readonly #open: OpenStream | undefined;

  /**
   * Binds the group to a client's request function; reach it as `client.runs`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * import { RunsApi } from "./runs.ts";
   * const client = new RuntimeServiceClient({ baseUrl: "http://127.0.0.1:7777", token: "art_x" });
   * assert.ok(client.runs instanceof RunsApi);
   * ```
   */
  constructor(send: SendRequest, open?: OpenStream) {
    this.#send = send;
    this.#open = open;
  }

  /**
   * A run's events (`GET /v1/runs/{runId}/events` as SSE, `session:read`), in order, from after
   * `after` (default 0) until the turn's terminal event (`run.completed`, `run.failed`,
   * `run.cancelled`). It reconnects by itself when a stream breaks or a replica drains, resuming
   * after the last seq it yielded, so no event is skipped or repeated. Aborting `signal` ends it.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const frames = [
   *   'id: 1\nevent: run.started\ndata: {"seq":1,"at":"t","type":"run.started","runId":"sesn_1"}\n\n',
   *   'id: 2\nevent: run.completed\ndata: {"seq":2,"at":"t","type":"run.completed","runId":"sesn_1"}\n\n',
   * ];
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: () => Promise.resolve(new Response("retry: 2000\n\n" + frames.join(""), {
   *     headers: { "content-type": "text/event-stream" },
   *   })),
   * });
   * const types = [];
   * for await (const event of client.runs.events("sesn_1")) types.push(`${event.seq} ${event.type}`);
   * assert.deepEqual(types, ["1 run.started", "2 run.completed"]);
   * ```
   */
  events(runId: string, options: RunEventsOptions = {}): AsyncGenerator<RunEvent, void, undefined> {
    const open = this.#open;
    if (open === undefined) throw new TypeError("This RunsApi was built without a stream opener");
    return iterateRunEvents(this.#send, open, runId, options);
  }

  /**
   * One JSON page of a run's events (`GET /v1/runs/{runId}/events`, `session:read`): up to
   * `limit` (1 to 500, default 100) after `after`, with `nextAfter` and whether the run ended
   * at the page's end (`terminal`).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: () => Promise.resolve(Response.json({ events: [], nextAfter: 7, terminal: true })),
   * });
   * const page = await client.runs.eventPage("sesn_1", { after: 7 });
   * assert.equal(page.terminal, true);
   * ```
   */
  eventPage(
    runId: string,
    params: { after?: number; limit?: number } = {},
    options: CallOptions = {},
  ): Promise<RunEventPage> {
    return readRunEventPage(this.#send, runId, params, options);
  }

  /**
   * One page of the cross-run inbox (`GET /v1/pending`, `session:read`): every tool request
   * waiting for an answer in the runs the caller may read (approvers and admins: every run), each
   * with its run's title, agent and owner and `deniedAt`, when the service answers it by itself.
   * A page covers up to `limit` runs (1 to 100, default 50); `activitySeq` is where to follow
   * {@linkcode RunsApi.activity} from.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: () =>
   *     Promise.resolve(Response.json({
   *       pending: [{
   *         runId: "sesn_5", toolUseId: "sevt_1", kind: "confirmation", name: "bash",
   *         input: { command: "ls" }, requestedAt: "2026-07-23T00:00:00Z",
   *         deniedAt: "2026-07-23T00:10:00Z", agentId: "agent_1", principalId: "p",
   *       }],
   *       nextCursor: null,
   *       activitySeq: 42,
   *     })),
   * });
   * const page = await client.runs.inbox();
   * assert.equal(page.pending[0].deniedAt, "2026-07-23T00:10:00Z");
   * assert.equal(page.activitySeq, 42);
   * ```
   */
  inbox(params: InboxQuery = {}, options: CallOptions = {}): Promise<InboxPage> {
    return readInboxPage(this.#send, params, options);
  }

  /**
   * Every pending tool request of the inbox, page after page (`limit` runs a page).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const item = (runId: string) => ({
   *   runId, toolUseId: `${runId}_t`, kind: "custom_tool", name: "lookup", input: {},
   *   requestedAt: "t", deniedAt: "t", agentId: "a", principalId: "p",
   * });
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: (input) => {
   *     const cursor = new URL(String(input)).searchParams.get("cursor");
   *     return Promise.resolve(Response.json(cursor === null
   *       ? { pending: [item("r2")], nextCursor: "c", activitySeq: 9 }
   *       : { pending: [item("r1")], nextCursor: null, activitySeq: 9 }));
   *   },
   * });
   * const runs: string[] = [];
   * for await (const request of client.runs.inboxAll({ limit: 1 })) runs.push(request.runId);
   * assert.deepEqual(runs, ["r2", "r1"]);
   * ```
   */
  async *inboxAll(
    params: Omit<InboxQuery, "cursor"> = {},
    options: CallOptions = {},
  ): AsyncGenerator<InboxItem, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.inbox({ ...params, ...(cursor ? { cursor } : {}) }, options);
      yield* page.pending;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /**
   * The activity feed (`GET /v1/activity` as SSE, `session:read`): the changes of the runs the
   * caller may read (`run.created`, `run.state`, `tool.pending`, `tool.answered`), in order, from
   * after `after` (absent: from now on). It reconnects by itself when a stream breaks or a
   * replica drains, resuming after the last seq it yielded, so no change is skipped or repeated;
   * it never ends by itself (abort `signal`). A revoked principal's iteration rejects with 401.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const frame =
   *   'id: 8\nevent: tool.answered\ndata: {"seq":8,"at":"t","type":"tool.answered",' +
   *   '"runId":"sesn_1","principalId":"p","toolUseId":"sevt_1","kind":"confirmation",' +
   *   '"result":"allow","answeredBy":"a"}\n\n';
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: () => Promise.resolve(new Response("retry: 2000\n\n" + frame, {
   *     headers: { "content-type": "text/event-stream" },
   *   })),
   * });
   * const stop = new AbortController();
   * for await (const change of client.runs.activity({ after: 7, signal: stop.signal })) {
   *   assert.equal(change.type, "tool.answered");
   *   break;
   * }
   * ```
   */
  activity(options: ActivityOptions = {}): AsyncGenerator<ActivityEvent, void, undefined> {
    const open = this.#open;
    if (open === undefined) throw new TypeError("This RunsApi was built without a stream opener");
    return iterateActivity(this.#send, open, options);
  }

  /**
   * One JSON page of the activity feed (`GET /v1/activity`, `session:read`): up to `limit`
   * (1 to 500, default 100) changes after `after` (default 0), with `nextAfter`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: () => Promise.resolve(Response.json({ events: [], nextAfter: 12 })),
   * });
   * assert.equal((await client.runs.activityPage({ after: 12 })).nextAfter, 12);
   * ```
   */
  activityPage(
    params: { after?: number; limit?: number } = {},
    options: CallOptions = {},
  ): Promise<ActivityEventPage> {
    return readActivityPage(this.#send, params, options);
  }

  /**
   * Starts a run (`POST /v1/runs`, `session:write`) and resolves with its record (201). The
   * agent and environment come from `metadata` or the service's defaults; a principal limited
   * to some agents gets 403 `agentNotAllowed` for any other, and 429 `runQuotaExceeded` once it
   * has its maximum of active runs.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * let body = "";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: (_input, init) => {
   *     body = String(init?.body);
   *     return Promise.resolve(Response.json({
   *       runId: "sesn_2", principalId: "p", agentId: "agent_1", environmentId: "env_1",
   *       title: "triage", state: "queued", lastEventSeq: 0,
   *       createdAt: "2026-07-23T00:00:00Z", updatedAt: "2026-07-23T00:00:00Z",
   *     }, { status: 201 }));
   *   },
   * });
   * const run = await client.runs.start({ input: "Triage", title: "triage" });
   * assert.equal(run.state, "queued");
   * assert.deepEqual(JSON.parse(body), { input: "Triage", title: "triage" });
   * ```
   */
  async start(body: StartRunBody, options: MutatingCallOptions = {}): Promise<RunRecord> {
    const payload = startPayload(body);
    const answer = await this.#send({
      method: "POST",
      path: "/v1/runs",
      body: payload,
      authenticated: true,
      idempotencyKey: idempotencyKeyOf(options),
      options,
    });
    return runRecordOf(answer);
  }

  /**
   * Reads a run (`GET /v1/runs/{runId}`, `session:read`). Another principal's run, or an
   * unknown one, rejects with 404 `runNotFound`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * import { RuntimeServiceError } from "./errors.ts";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: () =>
   *     Promise.resolve(Response.json({
   *       error: { code: "runNotFound", layer: "interface", message: "No such run", correlationId: "c" },
   *     }, { status: 404 })),
   * });
   * await assert.rejects(
   *   client.runs.get("sesn_unknown"),
   *   (error) => error instanceof RuntimeServiceError && error.code === "runNotFound",
   * );
   * ```
   */
  async get(runId: string, options: CallOptions = {}): Promise<RunRecord> {
    const answer = await this.#send({
      method: "GET",
      path: `/v1/runs/${idSegment(runId, "runId")}`,
      authenticated: true,
      options,
    });
    return runRecordOf(answer);
  }

  /**
   * Lists runs newest first (`GET /v1/runs`, `session:read`), one page. Pass the page's
   * `nextCursor` as `cursor` for the next one, or walk every page with
   * {@linkcode RunsApi.listAll}.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * let query = "";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: (input) => {
   *     query = new URL(String(input)).search;
   *     return Promise.resolve(Response.json({ runs: [], nextCursor: null }));
   *   },
   * });
   * const page = await client.runs.list({ limit: 5, state: "running" });
   * assert.deepEqual(page, { runs: [], nextCursor: null });
   * assert.equal(query, "?limit=5&state=running");
   * ```
   */
  async list(params: ListRunsParams = {}, options: CallOptions = {}): Promise<RunPage> {
    const answer = await this.#send({
      method: "GET",
      path: `/v1/runs${listQuery(params)}`,
      authenticated: true,
      options,
    });
    const body = answer.body;
    if (!isObject(body) || !Array.isArray(body.runs)) {
      throw invalidAnswer(answer, "The run list answer has no runs array");
    }
    const runs = body.runs.map((run) => checkedRecord(answer, run));
    const next = body.nextCursor;
    return { runs, nextCursor: typeof next === "string" && next !== "" ? next : null };
  }

  /**
   * Every run matching `params`, page after page (`limit` is the page size), newest first.
   * Stops at the last page; `options.signal` stops it between and during pages.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const record = (runId: string) => ({
   *   runId, principalId: "p", agentId: "a", environmentId: "e", state: "completed",
   *   lastEventSeq: 3, createdAt: "2026-07-23T00:00:00Z", updatedAt: "2026-07-23T00:00:00Z",
   * });
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: (input) => {
   *     const cursor = new URL(String(input)).searchParams.get("cursor");
   *     return Promise.resolve(Response.json(
   *       cursor === null
   *         ? { runs: [record("r3"), record("r2")], nextCursor: "page2" }
   *         : { runs: [record("r1")], nextCursor: null },
   *     ));
   *   },
   * });
   * const ids: string[] = [];
   * for await (const run of client.runs.listAll({ limit: 2 })) ids.push(run.runId);
   * assert.deepEqual(ids, ["r3", "r2", "r1"]);
   * ```
   */
  async *listAll(
    params: Omit<ListRunsParams, "cursor"> = {},
    options: CallOptions = {},
  ): AsyncGenerator<RunRecord, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...params, cursor }, options);
      yield* page.runs;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /**
   * Asks the provider to stop a run (`POST /v1/runs/{runId}/cancel`, `session:write`, no body)
   * and resolves with its record (202); the run becomes `cancelled` once it stops.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const sent: Headers[] = [];
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: (_input, init) => {
   *     sent.push(new Headers(init?.headers));
   *     return Promise.resolve(Response.json({
   *       runId: "sesn_3", principalId: "p", agentId: "a", environmentId: "e",
   *       state: "running", lastEventSeq: 4, createdAt: "2026-07-23T00:00:00Z",
   *       updatedAt: "2026-07-23T00:00:05Z",
   *     }, { status: 202 }));
   *   },
   * });
   * await client.runs.cancel("sesn_3", { idempotencyKey: "cancel-sesn_3" });
   * assert.equal(sent[0].get("idempotency-key"), "cancel-sesn_3");
   * assert.equal(sent[0].get("content-type"), null);
   * ```
   */
  async cancel(runId: string, options: MutatingCallOptions = {}): Promise<RunRecord> {
    const answer = await this.#send({
      method: "POST",
      path: `/v1/runs/${idSegment(runId, "runId")}/cancel`,
      authenticated: true,
      idempotencyKey: idempotencyKeyOf(options),
      options,
    });
    return runRecordOf(answer);
  }

  /**
   * Sends a follow-up message (`POST /v1/runs/{runId}/messages`, `session:write`) and resolves
   * with the run's record (202). A message may start a finished run again.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * let body = "";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: (_input, init) => {
   *     body = String(init?.body);
   *     return Promise.resolve(Response.json({
   *       runId: "sesn_4", principalId: "p", agentId: "a", environmentId: "e",
   *       state: "running", lastEventSeq: 9, createdAt: "2026-07-23T00:00:00Z",
   *       updatedAt: "2026-07-23T00:01:00Z",
   *     }, { status: 202 }));
   *   },
   * });
   * const run = await client.runs.send("sesn_4", { input: "And now the tests" });
   * assert.equal(run.state, "running");
   * assert.deepEqual(JSON.parse(body), { input: "And now the tests" });
   * ```
   */
  async send(
    runId: string,
    body: SendRunMessageBody,
    options: MutatingCallOptions = {},
  ): Promise<RunRecord> {
    const segment = idSegment(runId, "runId");
    if (!isObject(body)) throw new TypeError("send needs a body object: { input }");
    const payload = { input: checkedInput(body.input) };
    const answer = await this.#send({
      method: "POST",
      path: `/v1/runs/${segment}/messages`,
      body: payload,
      authenticated: true,
      idempotencyKey: idempotencyKeyOf(options),
      options,
    });
    return runRecordOf(answer);
  }

  /**
   * The run's tool requests waiting for an answer (`GET /v1/runs/{runId}/pending`,
   * `session:read`; approvers and admins read any run's).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: () =>
   *     Promise.resolve(Response.json({
   *       pending: [{
   *         toolUseId: "sevt_1", kind: "confirmation", name: "bash", input: { command: "ls" },
   *         requestedAt: "2026-07-23T00:00:00Z",
   *       }],
   *     })),
   * });
   * const pending = await client.runs.pending("sesn_5");
   * assert.equal(pending[0].kind, "confirmation");
   * ```
   */
  async pending(runId: string, options: CallOptions = {}): Promise<PendingToolRequest[]> {
    const answer = await this.#send({
      method: "GET",
      path: `/v1/runs/${idSegment(runId, "runId")}/pending`,
      authenticated: true,
      options,
    });
    return pendingOf(answer);
  }

  /**
   * Allows or denies a paused tool call (`POST /v1/runs/{runId}/tool-confirmations`,
   * `session:approve`, any run). Exactly one answer counts: a later one, by anyone, rejects with
   * 409 `alreadyAnswered` (its error names `answeredBy` and `result`); an unknown or no longer
   * pending request with 404 `toolUseNotFound`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * let body = "";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: (_input, init) => {
   *     body = String(init?.body);
   *     return Promise.resolve(Response.json({
   *       toolUseId: "sevt_1", result: "deny", answeredBy: "p", answeredAt: "2026-07-23T00:00:00Z",
   *     }));
   *   },
   * });
   * const answer = await client.runs.confirmTool(
   *   "sesn_5",
   *   { toolUseId: "sevt_1", result: "deny", denyMessage: "not in production" },
   *   { idempotencyKey: "deny-sevt_1" },
   * );
   * assert.equal(answer.result, "deny");
   * assert.deepEqual(JSON.parse(body), {
   *   toolUseId: "sevt_1", result: "deny", denyMessage: "not in production",
   * });
   * ```
   */
  async confirmTool(
    runId: string,
    body: ConfirmToolBody,
    options: MutatingCallOptions = {},
  ): Promise<ToolConfirmation> {
    const segment = idSegment(runId, "runId");
    const payload = confirmPayload(body);
    const answer = await this.#send({
      method: "POST",
      path: `/v1/runs/${segment}/tool-confirmations`,
      body: payload,
      authenticated: true,
      idempotencyKey: idempotencyKeyOf(options),
      options,
    });
    return toolAnswerOf<ToolConfirmation>(answer);
  }

  /**
   * Sends a custom tool's result (`POST /v1/runs/{runId}/custom-tool-results`,
   * `session:write`, the caller's own runs). Exactly one answer counts, as with
   * {@linkcode RunsApi.confirmTool}.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: () =>
   *     Promise.resolve(Response.json({
   *       toolUseId: "sevt_2", answeredBy: "p", answeredAt: "2026-07-23T00:00:00Z",
   *     })),
   * });
   * const answer = await client.runs.respondCustomTool("sesn_5", {
   *   toolUseId: "sevt_2",
   *   content: [{ type: "text", text: "42" }],
   * });
   * assert.equal(answer.toolUseId, "sevt_2");
   * ```
   */
  async respondCustomTool(
    runId: string,
    body: RespondCustomToolBody,
    options: MutatingCallOptions = {},
  ): Promise<CustomToolAnswer> {
    const segment = idSegment(runId, "runId");
    const payload = respondPayload(body);
    const answer = await this.#send({
      method: "POST",
      path: `/v1/runs/${segment}/custom-tool-results`,
      body: payload,
      authenticated: true,
      idempotencyKey: idempotencyKeyOf(options),
      options,
    });
    return toolAnswerOf<CustomToolAnswer>(answer);
  }
}

function checkedInput(input: unknown): string | RuntimeRunInput[] {
  if (typeof input === "string") {
    if (input === "") throw new TypeError("input must not be empty");
    return input;
  }
  if (Array.isArray(input) && input.length > 0 && input.every(isObject)) {
    return input as unknown as RuntimeRunInput[];
  }
  throw new TypeError("input must be a non-empty string or a non-empty array of messages");
}

/** The start body with its fields in a fixed order, so a retried or rerun call is identical. */
function startPayload(body: StartRunBody): Record<string, unknown> {
  if (!isObject(body)) throw new TypeError("start needs a body object: { input, ... }");
  const payload: Record<string, unknown> = { input: checkedInput(body.input) };
  if (body.title !== undefined) {
    if (typeof body.title !== "string") throw new TypeError("title must be a string");
    payload.title = body.title;
  }
  if (body.metadata !== undefined) {
    if (!isObject(body.metadata)) throw new TypeError("metadata must be an object");
    payload.metadata = body.metadata;
  }
  return payload;
}

function listQuery(params: ListRunsParams): string {
  if (params === null || typeof params !== "object") {
    throw new TypeError("list params must be an object");
  }
  const { limit, cursor, state, principalId } = params;
  checkedLimit(limit, 100);
  checkedCursor(cursor);
  if (state !== undefined && !(RUN_STATES as readonly string[]).includes(state)) {
    throw new TypeError(`state must be one of ${RUN_STATES.join(", ")}`);
  }
  if (principalId !== undefined && (typeof principalId !== "string" || principalId === "")) {
    throw new TypeError("principalId must be a non-empty string");
  }
  return queryOf({ limit, cursor, state, principalId });
}

function checkedRecord(answer: Answer, value: unknown): RunRecord {
  if (
    !isObject(value) || typeof value.runId !== "string" || typeof value.state !== "string" ||
    typeof value.principalId !== "string"
  ) {
    throw invalidAnswer(answer, "The runtime service answered with a malformed run record");
  }
  return value as unknown as RunRecord;
}

function runRecordOf(answer: Answer): RunRecord {
  return checkedRecord(answer, answer.body);
}
