/**
 * `GET /openapi.json`: the OpenAPI 3.1 document of this server's routes, no header required,
 * nothing secret in it. The generator (and zod) is loaded by the first request for it, not at
 * startup, and the document is built once.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import type { RouteDefinition } from "../router.ts";
import { loadBodySchemas } from "../schemas/lazy.ts";

/**
 * The OpenAPI route over the server's route table (read when first asked, so it holds every
 * route, this one included).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openApiRoutes } from "./openapi.ts";
 * assert.equal(openApiRoutes(() => [])[0].path, "/openapi.json");
 * ```
 */
export function openApiRoutes(table: () => readonly RouteDefinition[]): RouteDefinition[] {
  let document: Promise<string> | null = null;
  async function serve(context: RequestContext): Promise<Response> {
    document ??= Promise.all([import("../openapi/document.ts"), loadBodySchemas(table())]).then(
      ([module]) => module.renderOpenApiDocument(table()),
    ).catch((error) => {
      document = null;
      throw error;
    });
    return context.json(await document, 200, { "cache-control": "no-cache" });
  }
  return [{ method: "GET", path: "/openapi.json", kind: "public", handle: serve }];
}
