/**
 * `GET /healthz` and `HEAD /healthz`: 200 `{"ok":true}`, no headers required, nothing about the
 * principals.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import type { RouteDefinition } from "../router.ts";

const BODY = '{"ok":true}';

const NO_STORE = { "cache-control": "no-store" };

function health(context: RequestContext): Response {
  const response = context.json(context.method === "HEAD" ? null : BODY, 200, NO_STORE);
  if (context.method === "HEAD") response.headers.set("content-type", "application/json");
  return response;
}

/**
 * The health routes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { healthRoutes } from "./health.ts";
 * assert.deepEqual(healthRoutes().map((route) => route.method), ["GET", "HEAD"]);
 * ```
 */
export function healthRoutes(): RouteDefinition[] {
  return [
    { method: "GET", path: "/healthz", kind: "public", handle: health },
    { method: "HEAD", path: "/healthz", kind: "public", handle: health },
  ];
}
