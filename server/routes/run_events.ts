/**
 * `GET /v1/runs/{runId}/events` (capability `session:read`; another principal's run is 404
 * `runNotFound` unless the caller is an admin or approver), under the shared rules:
 *
 * | request | answer |
 * |---|---|
 * | `Accept: text/event-stream`, `Last-Event-ID` or `?after=<seq>` | 200 SSE stream, or its whole bytes when already known (see `runs/events.ts`) |
 * | otherwise (`Accept: application/json`), `?after=<seq>&limit=1..500` (100) | 200 `{events, nextAfter, terminal}` |
 * | `Last-Event-ID` not a whole number | 400 `invalidHeader` (+`header`) |
 * | `after` or `limit` malformed | 422 `invalidRequest` (+`details`) |
 * | more open streams than `--max-event-streams` on this replica (a known answer takes no slot) | 503 `resourceExhausted` |
 * | more open streams of the caller than `--max-event-streams-per-principal` on this replica | 429 `resourceExhausted` |
 *
 * `Last-Event-ID` wins over `?after`. The stream's answer (status, common headers, log line) is
 * settled when it starts: the log line's duration is the time to the first byte, not the
 * stream's length.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { RouteDefinition } from "../router.ts";
import { invalidRequest, type ValidationDetail } from "../errors.ts";
import { readEventPage } from "../runs/event_page.ts";
import type { RunEventHub } from "../runs/events.ts";
import type { RunGateway } from "../runs/runs.ts";
import type { Store } from "../store/types.ts";
import { runCallOf } from "./_run_call.ts";

/** Most entries of one JSON page. */
export const MAX_EVENT_PAGE = 500;
/** Entries of a JSON page when `limit` is absent. */
export const DEFAULT_EVENT_PAGE = 100;

const SEQ = /^(0|[1-9][0-9]{0,14})$/;

function parseQuery(
  query: string,
  bounds: { max: number; fallback: number },
): { after?: number; limit: number } {
  const params = new URLSearchParams(query);
  const details: ValidationDetail[] = [];
  const out: { after?: number; limit: number } = { limit: bounds.fallback };
  for (const name of ["after", "limit"]) {
    const all = params.getAll(name);
    if (all.length === 0) continue;
    if (all.length > 1 || !SEQ.test(all[0])) {
      details.push({ path: name, message: "Must be given once, as a whole number" });
      continue;
    }
    const value = Number(all[0]);
    if (name === "after") out.after = value;
    else if (value < 1 || value > bounds.max) {
      details.push({
        path: "limit",
        message: `Must be a whole number from 1 to ${bounds.max}`,
      });
    } else out.limit = value;
  }
  if (details.length > 0) throw invalidRequest(details);
  return out;
}

/**
 * Where an SSE request resumes and how large a JSON page is: `Last-Event-ID` (a whole number,
 * else 400 `invalidHeader`) wins over `?after=`; `?limit=` from 1 to `max` (default `fallback`);
 * anything malformed in the query is 422 `invalidRequest`. `after` is absent when neither says.
 * The run event route and the activity route read their resume points here.
 *
 * @example
 * ```ts ignore
 * const { after, limit } = resumePoint(context, { max: 500, fallback: 100 });
 * ```
 */
export function resumePoint(
  context: RequestContext,
  bounds: { max: number; fallback: number },
): { after?: number; limit: number } {
  const query = parseQuery(context.query, bounds);
  const lastEventId = context.request.headers.get("last-event-id");
  if (lastEventId === null) return query;
  const trimmed = lastEventId.trim();
  if (!SEQ.test(trimmed)) {
    throw new InterfaceError("invalidHeader", "Last-Event-ID must be a whole number (a seq)", {
      extra: { header: "last-event-id" },
    });
  }
  return { after: Number(trimmed), limit: query.limit };
}

/**
 * Whether a request asks for an SSE stream (`Accept` names `text/event-stream`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { wantsStream } from "./run_events.ts";
 * assert.equal(wantsStream("text/event-stream"), true);
 * assert.equal(wantsStream("application/json"), false);
 * ```
 */
export function wantsStream(accept: string | null): boolean {
  return accept !== null && accept.toLowerCase().includes("text/event-stream");
}

/**
 * The 200 of an SSE answer: the body with its content type, no caching, and no proxy buffering.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sseResponse } from "./run_events.ts";
 * const response = sseResponse("retry: 2000\n\n");
 * assert.equal(response.headers.get("content-type"), "text/event-stream; charset=utf-8");
 * ```
 */
export function sseResponse(body: BodyInit): Response {
  return new Response(body, {
    status: 200,
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    },
  });
}

/** Options of {@linkcode runEventRoutes}. */
export interface RunEventRoutesOptions {
  /** Checks that the run is visible to the caller. */
  gateway: RunGateway;
  /** This replica's event hub: SSE answers. */
  hub: RunEventHub;
  /** The store holding the logs: JSON pages. */
  store: Store;
}

/**
 * The event route over the gateway, this replica's hub and the store.
 *
 * @example
 * ```ts ignore
 * import { runEventRoutes } from "./run_events.ts";
 * const routes = runEventRoutes({ gateway, hub, store });
 * ```
 */
export function runEventRoutes(options: RunEventRoutesOptions): RouteDefinition[] {
  const { gateway, hub, store } = options;
  async function events(context: RequestContext): Promise<Response> {
    const request = context.request;
    const query = resumePoint(context, { max: MAX_EVENT_PAGE, fallback: DEFAULT_EVENT_PAGE });
    const after = query.after ?? 0;
    if (!wantsStream(request.headers.get("accept"))) {
      const record = await gateway.readableRun(runCallOf(context), context.params.runId);
      const page = await readEventPage({
        store,
        runId: record.runId,
        after,
        limit: query.limit,
        record,
      });
      return context.json(page, 200);
    }
    // Not `request.signal`: reading it makes Deno.serve print a legacy-abort notice on stderr,
    // which would break the one-JSON-object-a-line log. A client that goes cancels the body.
    // Bytes when the whole answer is known already, else a stream: the hub decides.
    // A subscriber of a run this replica read lately is let in with no store read.
    const record = await gateway.streamableRun(context.principal!, context.params.runId);
    const body = await hub.stream({
      runId: context.params.runId,
      after,
      authorization: context.authorization,
      principalId: context.principal!.principalId,
      ...(record !== undefined ? { record } : {}),
    });
    return sseResponse(body);
  }

  return [{
    method: "GET",
    path: "/v1/runs/:runId/events",
    kind: "shared",
    capability: "session:read",
    handle: events,
  }];
}
