/**
 * The MCP endpoint, loaded on its first request. The MCP SDK (and zod, ajv and the rest it
 * brings) takes a few hundred milliseconds to load; a runtime that is never asked for MCP never
 * pays for it, and every other route answers as soon as the server listens. `server/server.ts`
 * mounts it; it is not exported from `server/mcp/mod.ts`, whose `createMcpEndpoint` loads the SDK
 * at once.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import type { RouteDefinition } from "../router.ts";
import type { RuntimeServices } from "../services.ts";
import type { McpEndpoint, McpOptions } from "./endpoint.ts";

/** Path of the MCP endpoint (the same as `MCP_PATH` in `endpoint.ts`). */
const PATH = "/v1/mcp";

/** Methods the endpoint routes (the same as `ROUTED` in `endpoint.ts`). */
const ROUTED = ["GET", "POST", "DELETE", "OPTIONS", "PUT", "PATCH", "HEAD"];

/**
 * An {@linkcode McpEndpoint} whose routes load and create the real endpoint on the first
 * request, then hand every request to it. `table` gives the server's route table, read then
 * (the MCP tools run their HTTP twins from it).
 */
export function createLazyMcpEndpoint(
  services: RuntimeServices,
  options: McpOptions | undefined,
  table?: () => readonly RouteDefinition[],
): McpEndpoint {
  let loading: Promise<McpEndpoint> | null = null;
  let endpoint: McpEndpoint | null = null;
  let closed = false;
  function load(): Promise<McpEndpoint> {
    loading ??= import("./endpoint.ts").then((module) => {
      endpoint = module.createMcpEndpoint(services, options, table?.());
      if (closed) return endpoint.close().then(() => endpoint!);
      return endpoint;
    });
    return loading;
  }
  const routes: RouteDefinition[] = ROUTED.map((method) => ({
    method,
    path: PATH,
    kind: "custom",
    async handle(context: RequestContext): Promise<Response> {
      const real = (await load()).routes.find((route) => route.method === method);
      if (real === undefined) throw new Error(`The MCP endpoint has no ${method} route`);
      return await real.handle(context);
    },
  }));
  return {
    routes,
    get sessionCount(): number {
      return endpoint?.sessionCount ?? 0;
    },
    async close(): Promise<void> {
      closed = true;
      if (loading !== null) await (await loading).close();
    },
  };
}
