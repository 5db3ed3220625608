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

function parseQuery(query: string): { after?: number; limit: number } {
  const params = new URLSearchParams(query);
  const details: ValidationDetail[] = [];
  const out: { after?: number; limit: number } = { limit: DEFAULT_EVENT_PAGE };
  for (const name of ["after", "limit"]) {
    const all = params.getAll(name);
    if (all.length === 0) continue;
    if (all.length > 1 || !SEQ.test(all[0])) {
      details.push({ path: name, message: "Must be given once, as a whole number" });
      continue;
    }
    const value = Number(all[0]);
    if (name === "after") out.after = value;
    else if (value < 1 || value > MAX_EVENT_PAGE) {
      details.push({
        path: "limit",
        message: `Must be a whole number from 1 to ${MAX_EVENT_PAGE}`,
      });
    } else out.limit = value;
  }
  if (details.length > 0) throw invalidRequest(details);
  return out;
}

function wantsStream(accept: string | null): boolean {
  return accept !== null && accept.toLowerCase().includes("text/event-stream");
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
    const query = parseQuery(context.query);
    const lastEventId = request.headers.get("last-event-id");
    let after = query.after ?? 0;
    if (lastEventId !== null) {
      const trimmed = lastEventId.trim();
      if (!SEQ.test(trimmed)) {
        throw new InterfaceError("invalidHeader", "Last-Event-ID must be a whole number (a seq)", {
          extra: { header: "last-event-id" },
        });
      }
      after = Number(trimmed);
    }
    const record = await gateway.readableRun(runCallOf(context), context.params.runId);
    if (!wantsStream(request.headers.get("accept"))) {
      const page = await readEventPage({
        store,
        runId: record.runId,
        after,
        limit: query.limit,
        record,
      });
      return context.json(JSON.stringify(page), 200);
    }
    // Not `request.signal`: reading it makes Deno.serve print a legacy-abort notice on stderr,
    // which would break the one-JSON-object-a-line log. A client that goes cancels the body.
    // Bytes when the whole answer is known already, else a stream: the hub decides.
    const body = await hub.stream({
      runId: record.runId,
      after,
      authorization: context.authorization,
      principalId: context.principal!.principalId,
      record,
    });
    return new Response(body, {
      status: 200,
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-accel-buffering": "no",
      },
    });
  }

  return [{
    method: "GET",
    path: "/v1/runs/:runId/events",
    kind: "shared",
    capability: "session:read",
    handle: events,
  }];
}
