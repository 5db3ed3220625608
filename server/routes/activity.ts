/**
 * `GET /v1/activity` (capability `session:read`): the activity feed, the changes of the runs the
 * caller may read (approvers and admins: all; others: their own), under the shared rules:
 *
 * | request | answer |
 * |---|---|
 * | `Accept: text/event-stream`; `Last-Event-ID` or `?after=<seq>` resumes after that seq (absent: from now on) | 200 SSE stream (`runs/activity_feed.ts`) |
 * | otherwise, `?after=<seq>&limit=1..500` (100) | 200 `{events, nextAfter}` |
 * | `Last-Event-ID` not a whole number | 400 `invalidHeader` (+`header`) |
 * | `after` or `limit` malformed | 422 `invalidRequest` (+`details`) |
 * | more open streams than `--max-event-streams` on this replica | 503 `resourceExhausted` |
 * | more open streams of the caller than `--max-event-streams-per-principal` on this replica | 429 `resourceExhausted` |
 *
 * `Last-Event-ID` wins over `?after`. The stream counts against the same limits as run event
 * streams. Without a provider credential: 503 `providerNotConfigured`, like every run route.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import type { RouteDefinition } from "../router.ts";
import { type ActivityFeed, MAX_ACTIVITY_PAGE } from "../runs/activity_feed.ts";
import type { RunGateway } from "../runs/runs.ts";
import { resumePoint, sseResponse, wantsStream } from "./run_events.ts";

/** Events of a JSON page when `limit` is absent. */
export const DEFAULT_ACTIVITY_PAGE = 100;

/** Options of {@linkcode activityRoutes}. */
export interface ActivityRoutesOptions {
  /** The run gateway (whether runs are enabled). */
  gateway: RunGateway;
  /** This replica's activity feed. */
  feed: ActivityFeed;
}

/**
 * The activity route.
 *
 * @example
 * ```ts ignore
 * import { activityRoutes } from "./activity.ts";
 * const routes = activityRoutes({ gateway, feed });
 * ```
 */
export function activityRoutes(options: ActivityRoutesOptions): RouteDefinition[] {
  const { gateway, feed } = options;
  async function activity(context: RequestContext): Promise<Response> {
    gateway.requireEnabled();
    const { after, limit } = resumePoint(context, {
      max: MAX_ACTIVITY_PAGE,
      fallback: DEFAULT_ACTIVITY_PAGE,
    });
    const principal = context.principal!;
    if (!wantsStream(context.request.headers.get("accept"))) {
      const page = await feed.page(principal, { after: after ?? 0, limit });
      return context.json(JSON.stringify(page), 200);
    }
    // A client that goes cancels the body (see run_events.ts on `request.signal`).
    const body = await feed.stream({
      principal,
      authorization: context.authorization,
      ...(after !== undefined ? { after } : {}),
    });
    return sseResponse(body);
  }

  return [{
    method: "GET",
    path: "/v1/activity",
    kind: "shared",
    capability: "session:read",
    handle: activity,
  }];
}
