/**
 * The `/provider` interface, loaded on its first request. Its routes are in the server's route
 * table from the start (made from the table of operations, `operations.ts`, with their
 * capabilities and body schemas, so the OpenAPI document and the MCP-free router see them), but
 * their handlers, rules and the modules behind them load with the first request under
 * `/provider`: a runtime never asked for the provider's API never pays for loading it.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import type { RouteDefinition } from "../router.ts";
import { isLazyBodySchema } from "../schemas/lazy.ts";
import type { NativeParts } from "./_parts.ts";
import { NATIVE_OPERATIONS, NATIVE_PREFIX, NATIVE_RULES } from "./operations.ts";

/**
 * Routes of the interface whose handlers load the real ones (`mod.ts`) on the first request and
 * hand every request to them.
 *
 * @example
 * ```ts ignore
 * import { createLazyNativeRoutes } from "./lazy.ts";
 * const routes = createLazyNativeRoutes(parts);
 * ```
 */
export function createLazyNativeRoutes(parts: NativeParts): RouteDefinition[] {
  let loading: Promise<Map<string, RouteDefinition>> | null = null;
  function load(): Promise<Map<string, RouteDefinition>> {
    loading ??= import("./mod.ts").then((module) =>
      new Map(
        module.nativeRoutes(parts).map((route) => [`${route.method} ${route.path}`, route]),
      )
    ).catch((error) => {
      loading = null;
      throw error;
    });
    return loading;
  }
  return NATIVE_OPERATIONS.map((operation) => {
    const rules = NATIVE_RULES[operation.access];
    const path = NATIVE_PREFIX + operation.path;
    const key = `${operation.method} ${path}`;
    return {
      method: operation.method,
      path,
      kind: "provider",
      ...(rules.capability !== undefined ? { capability: rules.capability } : {}),
      ...(rules.schema !== undefined && isLazyBodySchema(rules.schema)
        ? { body: rules.schema }
        : {}),
      async handle(context: RequestContext): Promise<Response> {
        const real = (await load()).get(key);
        if (real === undefined) throw new Error(`The provider interface has no route ${key}`);
        return await real.handle(context);
      },
    };
  });
}
