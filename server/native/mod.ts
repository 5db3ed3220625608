/**
 * The provider's own API through the gateway, at `/provider`: a client of the managed-agents
 * provider (the vendor's SDK, its CLI, any tool built on them) points its base URL at
 * `{base_url}/provider` and uses a principal's bearer as its API key. It sees only its own
 * sessions, may use only its allowed agents, and gets the gateway's durable, resumable event
 * stream and exactly-once answers; the provider key never leaves the service.
 *
 * - Every operation is in one table (`operations.ts`), from which the routes (kind `provider`,
 *   in the server's one route table) and their OpenAPI entries are made.
 * - The interface's own rules replace the shared header rules (`_chain.ts`); every refusal is in
 *   the provider's error shape (`server/runs/native_error.ts`).
 * - Sessions are the gateway's runs (`sessions.ts`), their events come from the run's native log
 *   and go through the gateway's paths (`events.ts`), the rest is passed on after its checks
 *   (`forwarded.ts`).
 *
 * @module
 */
import type { RouteDefinition } from "../router.ts";
import { isLazyBodySchema } from "../schemas/lazy.ts";
import { nativeChain, type NativeHandler } from "./_chain.ts";
import type { NativeParts } from "./_parts.ts";
import { eventHandlers } from "./events.ts";
import { forwardedHandlers } from "./forwarded.ts";
import { NATIVE_OPERATIONS, NATIVE_PREFIX, NATIVE_RULES, type NativeAccess } from "./operations.ts";
import { sessionHandlers } from "./sessions.ts";

export type { NativeParts } from "./_parts.ts";
export type { NativeRuleParts } from "./_chain.ts";
export {
  isNativePath,
  NATIVE_OPERATIONS,
  NATIVE_PREFIX,
  type NativeAccess,
  type NativeOperation,
} from "./operations.ts";
export { createLazyNativeRoutes } from "./lazy.ts";

/**
 * The routes of the interface, one per operation of the table, over the server's parts, with
 * their handlers (loaded: the server mounts them through `createLazyNativeRoutes`, which loads
 * this module with the first request under `/provider`).
 *
 * @example
 * ```ts ignore
 * import { nativeRoutes } from "./mod.ts";
 * const routes = nativeRoutes(parts); // parts: the gateway, answers, hub, store, clock, rules
 * ```
 */
export function nativeRoutes(parts: NativeParts): RouteDefinition[] {
  const handlers: Record<NativeAccess, NativeHandler> = {
    ...sessionHandlers(parts),
    ...eventHandlers(parts),
    ...forwardedHandlers(parts),
  };
  return NATIVE_OPERATIONS.map((operation) => {
    const rules = NATIVE_RULES[operation.access];
    const idempotent = rules.idempotent === true && operation.method === "POST";
    const route: RouteDefinition = {
      method: operation.method,
      path: NATIVE_PREFIX + operation.path,
      kind: "provider",
      ...(rules.capability !== undefined ? { capability: rules.capability } : {}),
      // The route table holds a body's zod schema (the OpenAPI document's), not the plain check.
      ...(rules.schema !== undefined && isLazyBodySchema(rules.schema)
        ? { body: rules.schema }
        : {}),
      handle: nativeChain(
        parts.rules,
        {
          ...rules,
          idempotent,
          body: rules.body === true && operation.method !== "GET",
        },
        handlers[operation.access],
      ),
    };
    return route;
  });
}
