/**
 * `GET /v1/audit` (capability `authority:admin`): the audit log, newest first, in cursor pages.
 * Query: `limit` (1 to 100, default 20), `cursor`, `principalId` (entries whose actor or subject
 * it is), `action` (one of the audit actions). Anything malformed is 422 `invalidRequest`.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import type { RouteDefinition } from "../router.ts";
import { invalidRequest } from "../rules/json.ts";
import type { RuntimeServices } from "../services.ts";
import { decodeAuditCursor } from "../store/types.ts";
import { AUDIT_ACTIONS, type AuditAction } from "../../wire/mod.ts";
import { parseListQuery } from "./runs.ts";

const ACTIONS: ReadonlySet<string> = new Set<string>(AUDIT_ACTIONS);

/**
 * The audit route.
 *
 * @example
 * ```ts ignore
 * import { auditRoutes } from "./audit.ts";
 * const routes = auditRoutes(services);
 * ```
 */
export function auditRoutes(services: RuntimeServices): RouteDefinition[] {
  async function list(context: RequestContext): Promise<Response> {
    const { limit, values } = parseListQuery(context.query, { names: ["principalId", "action"] });
    if (values.action !== undefined && !ACTIONS.has(values.action)) {
      throw invalidRequest([{
        path: "action",
        message: `Must be one of ${AUDIT_ACTIONS.join(", ")}`,
      }]);
    }
    if (values.cursor !== undefined && decodeAuditCursor(values.cursor) === null) {
      throw invalidRequest([{
        path: "cursor",
        message: "Must be a nextCursor of an earlier page",
      }]);
    }
    const page = await services.store.audit.list({
      limit,
      ...(values.cursor !== undefined ? { cursor: values.cursor } : {}),
      ...(values.principalId !== undefined ? { principalId: values.principalId } : {}),
      ...(values.action !== undefined ? { action: values.action as AuditAction } : {}),
    });
    return context.json(JSON.stringify(page));
  }

  return [{
    method: "GET",
    path: "/v1/audit",
    kind: "shared",
    capability: "authority:admin",
    handle: list,
  }];
}
