/**
 * The cross-run views of `client.runs`: the inbox (`GET /v1/pending`, every pending tool request
 * the caller may see) and the activity feed (`GET /v1/activity`, the changes of the runs the caller
 * may read) as pages and as an async iterator that resumes by itself.
 *
 * `client.runs.activity({after, signal})`, in order:
 *
 * 1. Without `after`, read the inbox's `activitySeq` (where the service's changes stand now), so
 *    the feed starts there: from now on, and without a gap when a reconnection comes before the
 *    first change.
 * 2. Open the stream after the last seq seen (`Last-Event-ID`) and yield each change in order.
 * 3. When the stream breaks or ends (a replica drained, the service restarted), reconnect after a
 *    short backoff and resume after the last seq: no change is skipped or repeated.
 * 4. Refusals that last (401 — a revoked or expired principal —, 403, 404, 400) reject;
 *    `connectionFailed`, 429 and 503 are retried.
 *
 * It never ends by itself: abort `signal` (it then rejects with the signal's reason) or stop
 * iterating. Web standards only.
 *
 * @module
 */
import {
  type ActivityEvent,
  type ActivityEventPage,
  type InboxItem,
  type InboxPage,
  type InboxQuery,
  TOOL_REQUEST_KINDS,
} from "../wire/mod.ts";
import {
  type Answer,
  checkedCursor,
  checkedLimit,
  checkedSeq,
  invalidAnswer,
  isObject,
  queryOf,
  type SendRequest,
} from "./_request.ts";
import { backoffDelay, sleep } from "./_retry.ts";
import { openRetryable, type OpenStream, sseReaderOf } from "./run_events.ts";
import type { CallOptions } from "./types.ts";

/** Options of `client.runs.activity()`. */
export interface ActivityOptions {
  /** Start after this seq (an inbox page's `activitySeq`, say); absent: from now on. */
  after?: number;
  /** Ends the iteration and closes the stream. */
  signal?: AbortSignal;
  /** Bound on the wait for each connection's first byte, in ms (the client's default otherwise). */
  deadlineMs?: number;
}

/** Reads one page of the inbox. */
export async function readInboxPage(
  send: SendRequest,
  params: InboxQuery,
  options: CallOptions = {},
): Promise<InboxPage> {
  const limit = checkedLimit(params.limit, 100);
  const cursor = checkedCursor(params.cursor);
  const answer: Answer = await send({
    method: "GET",
    path: `/v1/pending${queryOf({ limit, cursor })}`,
    authenticated: true,
    options,
  });
  const body = answer.body;
  if (
    !isObject(body) || !Array.isArray(body.pending) || typeof body.activitySeq !== "number"
  ) {
    throw invalidAnswer(answer, "The inbox answer is not a page of pending requests");
  }
  for (const item of body.pending) {
    if (
      !isObject(item) || typeof item.runId !== "string" || typeof item.toolUseId !== "string" ||
      !(TOOL_REQUEST_KINDS as readonly unknown[]).includes(item.kind)
    ) {
      throw invalidAnswer(answer, "The runtime service answered with a malformed inbox item");
    }
  }
  const next = body.nextCursor;
  return {
    pending: body.pending as unknown as InboxItem[],
    nextCursor: typeof next === "string" && next !== "" ? next : null,
    activitySeq: body.activitySeq,
  };
}

/** Reads one JSON page of the activity feed. */
export async function readActivityPage(
  send: SendRequest,
  params: { after?: number; limit?: number },
  options: CallOptions = {},
): Promise<ActivityEventPage> {
  if (params.after !== undefined) checkedSeq(params.after);
  checkedLimit(params.limit, 500);
  const answer: Answer = await send({
    method: "GET",
    path: `/v1/activity${queryOf({ after: params.after, limit: params.limit })}`,
    authenticated: true,
    options,
  });
  const body = answer.body;
  if (!isObject(body) || !Array.isArray(body.events) || typeof body.nextAfter !== "number") {
    throw invalidAnswer(answer, "The activity answer is not a page of changes");
  }
  return { events: body.events as unknown as ActivityEvent[], nextAfter: body.nextAfter };
}

/** Steps 1 to 4 of the module doc. */
export async function* iterateActivity(
  send: SendRequest,
  open: OpenStream,
  options: ActivityOptions = {},
): AsyncGenerator<ActivityEvent, void, undefined> {
  const { signal } = options;
  const call: CallOptions = {
    ...(signal !== undefined ? { signal } : {}),
    ...(options.deadlineMs !== undefined ? { deadlineMs: options.deadlineMs } : {}),
  };
  let after = options.after === undefined
    ? (await readInboxPage(send, { limit: 1 }, call)).activitySeq
    : checkedSeq(options.after);
  const { readSse } = await sseReaderOf();
  let attempt = 0;
  for (;;) {
    signal?.throwIfAborted();
    const body = await openRetryable(open, "/v1/activity", String(after), call);
    if (body === null) {
      await sleep(backoffDelay(attempt++), signal);
      continue;
    }
    try {
      for await (const frame of readSse(body, { signal })) {
        if (frame.id === undefined || frame.data === "") continue;
        const event = JSON.parse(frame.data) as ActivityEvent;
        if (event.seq <= after) continue;
        after = event.seq;
        attempt = 0;
        yield event;
      }
    } catch (error) {
      if (signal?.aborted) throw signal.reason ?? error;
      // A broken stream: resume below.
    } finally {
      await body.cancel().catch(() => {});
    }
    await sleep(backoffDelay(attempt++), signal);
  }
}
