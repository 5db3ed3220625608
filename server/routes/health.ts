/**
 * `GET /healthz` and `HEAD /healthz`: 200 `{"ok":true}`, no headers required, nothing about the
 * principals.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import type { RouteDefinition } from "../router.ts";

const BODY = '{"ok":true}';

function health(context: RequestContext): Response {
  return new Response(context.method === "HEAD" ? null : BODY, {
    headers: { "content-type": "application/json", "cache-control": "no-store" },
  });
}

/**
 * The health routes.
 *
 * @example
 * ```ts
 * import { healthRoutes } from "./health.ts";
 * console.log(healthRoutes().map((route) => route.method)); // ["GET", "HEAD"]
 * ```
 */
export function healthRoutes(): RouteDefinition[] {
  return [
    { method: "GET", path: "/healthz", kind: "public", handle: health },
    { method: "HEAD", path: "/healthz", kind: "public", handle: health },
  ];
}
