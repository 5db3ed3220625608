/**
 * `GET /v1/pending` (capability `session:read`): the cross-run inbox, every pending tool request
 * of the runs the caller may read (approvers and admins: all; others: their own), served from the
 * store (`runs/inbox.ts`). Query: `limit` (runs per page, 1 to 100, default 50) and `cursor`;
 * anything malformed is 422 `invalidRequest`. Without a provider credential: 503
 * `providerNotConfigured`, like every run route.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import { invalidRequest } from "../errors.ts";
import type { RouteDefinition } from "../router.ts";
import { DEFAULT_INBOX_RUNS, MAX_INBOX_RUNS, readInbox } from "../runs/inbox.ts";
import type { RunGateway } from "../runs/runs.ts";
import type { Store } from "../store/types.ts";
import { runCallOf } from "./_run_call.ts";
import { parseListQuery } from "./runs.ts";

/** Options of {@linkcode inboxRoutes}. */
export interface InboxRoutesOptions {
  /** The run gateway (whether runs are enabled). */
  gateway: RunGateway;
  /** The store. */
  store: Store;
  /** The pending timeout of the tool answers (each item's `deniedAt`). */
  pendingTimeoutMs: number;
}

/**
 * The inbox route.
 *
 * @example
 * ```ts ignore
 * import { inboxRoutes } from "./inbox.ts";
 * const routes = inboxRoutes({ gateway, store, pendingTimeoutMs: 600_000 });
 * ```
 */
export function inboxRoutes(options: InboxRoutesOptions): RouteDefinition[] {
  const { gateway, store, pendingTimeoutMs } = options;
  async function pending(context: RequestContext): Promise<Response> {
    gateway.requireEnabled();
    const { limit, values } = parseListQuery(context.query, {
      names: [],
      max: MAX_INBOX_RUNS,
      fallback: DEFAULT_INBOX_RUNS,
    });
    if (values.cursor !== undefined && !/^[A-Za-z0-9_-]+$/.test(values.cursor)) {
      throw invalidRequest([{
        path: "cursor",
        message: "Must be a nextCursor of an earlier page",
      }]);
    }
    const page = await readInbox({
      store,
      principal: runCallOf(context).principal,
      limit,
      ...(values.cursor !== undefined ? { cursor: values.cursor } : {}),
      pendingTimeoutMs,
    });
    return context.json(JSON.stringify(page), 200);
  }

  return [{
    method: "GET",
    path: "/v1/pending",
    kind: "shared",
    capability: "session:read",
    handle: pending,
  }];
}
