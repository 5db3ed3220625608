/**
 * `client.runs.events(runId, {after, signal})`: a run's events as an async iterator over the
 * service's SSE stream (`GET /v1/runs/{runId}/events`), resuming by itself.
 *
 * 1. Open the stream after the last seq seen (`Last-Event-ID`; at first `after`, default 0).
 * 2. Yield each event (a `RunStreamEvent` with its `seq` and `at`) in order; stop after a
 *    terminal one (`run.completed`, `run.failed`, `run.cancelled`).
 * 3. When the stream breaks or ends early (a replica drained or died), reconnect after a short
 *    backoff and resume after the last seq: no event is skipped or repeated.
 * 4. When a stream ends without a new event, ask the JSON page whether the run already ended
 *    there (`terminal`): then stop.
 * 5. Refusals that last (401, 403, 404, 400) reject; `connectionFailed`, 429 and 503 are retried.
 *
 * Aborting `signal` ends the iteration (rejecting with the signal's reason) and closes the
 * stream. Web standards only.
 *
 * @module
 */
import type { RunEvent, RunEventPage } from "../wire/mod.ts";
import {
  type Answer,
  checkedLimit,
  checkedSeq,
  idSegment,
  invalidAnswer,
  queryOf,
  type SendRequest,
} from "./_request.ts";
import { backoffDelay, sleep } from "./_retry.ts";
import { RuntimeServiceError } from "./errors.ts";
import type { CallOptions } from "./types.ts";

/** Options of {@linkcode RunsApi.events}. */
export interface RunEventsOptions {
  /** Start after this seq (default 0: from the first event). */
  after?: number;
  /** Ends the iteration and closes the stream. */
  signal?: AbortSignal;
  /** Bound on the wait for each connection's first byte, in ms (the client's default otherwise). */
  deadlineMs?: number;
}

/** Opens an SSE stream at `path` after `lastEventId`; lent by the client. */
export type OpenStream = (
  path: string,
  lastEventId: string | undefined,
  options: CallOptions,
) => Promise<ReadableStream<Uint8Array>>;

/**
 * The one SSE reader, loaded on the first stream: it brings an npm package (`eventsource-parser`),
 * and a command line process that never streams (`principal list`, `call`) should not resolve
 * one. Deno prefetches the registry document of every npm package a module graph names, in the
 * background, and a process that exits a few milliseconds later loses it before it is cached:
 * it then prints `Download https://registry.npmjs.org/…` on every run (`docs/design.md`).
 */
let sseReader: Promise<typeof import("../client/sse.ts")> | undefined;

/** The SSE reader, loaded on the first stream (see above); the activity feed reads with it too. */
export function sseReaderOf(): Promise<typeof import("../client/sse.ts")> {
  return sseReader ??= import("../client/sse.ts");
}

const TERMINAL = new Set(["run.completed", "run.failed", "run.cancelled"]);
const RETRIED = new Set(["connectionFailed", "shuttingDown", "storeUnavailable"]);

/**
 * Whether opening or reading a stream failed in a way worth a reconnection: a connection error,
 * 429, 502, 503 (and the service draining or its store away); anything else lasts.
 */
export function retryableStreamError(error: unknown): boolean {
  if (!(error instanceof RuntimeServiceError)) return error instanceof TypeError;
  return RETRIED.has(error.code) || error.status === 429 || error.status === 503 ||
    error.status === 502;
}

/**
 * Opens a stream through `open`: the stream, or null after a failure worth a reconnection (the
 * caller waits, then tries again); a failure that lasts, or an aborted `signal`, rejects.
 */
export async function openRetryable(
  open: OpenStream,
  path: string,
  lastEventId: string,
  options: CallOptions,
): Promise<ReadableStream<Uint8Array> | null> {
  try {
    return await open(path, lastEventId, options);
  } catch (error) {
    if (options.signal?.aborted || !retryableStreamError(error)) throw error;
    return null;
  }
}

/** Reads one JSON page of a run's events. */
export async function readRunEventPage(
  send: SendRequest,
  runId: string,
  params: { after?: number; limit?: number },
  options: CallOptions = {},
): Promise<RunEventPage> {
  const segment = idSegment(runId, "runId");
  const search = queryOf({
    after: params.after === undefined ? undefined : checkedSeq(params.after),
    limit: checkedLimit(params.limit, 500),
  });
  const answer: Answer = await send({
    method: "GET",
    path: `/v1/runs/${segment}/events${search}`,
    authenticated: true,
    options,
  });
  const body = answer.body as Partial<RunEventPage> | null;
  if (
    body === null || typeof body !== "object" || !Array.isArray(body.events) ||
    typeof body.nextAfter !== "number" || typeof body.terminal !== "boolean"
  ) {
    throw invalidAnswer(answer, "The events answer is not a page of events");
  }
  return body as RunEventPage;
}

/** Steps 1 to 5 of the module doc. */
export async function* iterateRunEvents(
  send: SendRequest,
  open: OpenStream,
  runId: string,
  options: RunEventsOptions = {},
): AsyncGenerator<RunEvent, void, undefined> {
  const segment = idSegment(runId, "runId");
  const { signal } = options;
  let after = checkedSeq(options.after ?? 0);
  const call: CallOptions = {
    ...(signal !== undefined ? { signal } : {}),
    ...(options.deadlineMs !== undefined ? { deadlineMs: options.deadlineMs } : {}),
  };
  const { readSse } = await sseReaderOf();
  let attempt = 0;
  for (;;) {
    signal?.throwIfAborted();
    const body = await openRetryable(open, `/v1/runs/${segment}/events`, String(after), call);
    if (body === null) {
      await sleep(backoffDelay(attempt++), signal);
      continue;
    }
    let progressed = false;
    try {
      for await (const frame of readSse(body, { signal })) {
        if (frame.id === undefined || frame.data === "") continue;
        const event = JSON.parse(frame.data) as RunEvent;
        after = event.seq;
        progressed = true;
        attempt = 0;
        yield event;
        if (TERMINAL.has(event.type)) return;
      }
    } catch (error) {
      if (signal?.aborted) throw signal.reason ?? error;
      // A broken stream: resume below.
    } finally {
      await body.cancel().catch(() => {});
    }
    if (!progressed) {
      const page = await readRunEventPage(send, runId, { after, limit: 1 }, call).catch(
        (error) => {
          if (signal?.aborted || !retryableStreamError(error)) throw error;
          return null;
        },
      );
      if (page !== null && page.terminal && page.events.length === 0) return;
      await sleep(backoffDelay(attempt++), signal);
    }
  }
}
