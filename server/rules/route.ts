/**
 * Rule 1: the route and method. An unknown path answers 404 `notFound`, a known path with
 * another method 405 `methodNotAllowed` with `Allow`.
 *
 * @module
 */
import type { EagerChain, EagerStep } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { Router } from "../router.ts";

/**
 * Dispatches to the chain of the matching route, or refuses with 404 / 405.
 *
 * @example
 * ```ts
 * import { Router } from "../router.ts";
 * import { RequestContext } from "../context.ts";
 * import { routeStep } from "./route.ts";
 * const router = new Router<(context: RequestContext) => Promise<Response>>();
 * router.add("GET", "/healthz", () => Promise.resolve(new Response("ok")));
 * const step = routeStep(router);
 * const context = new RequestContext(new Request("http://localhost/healthz"), Date.now());
 * console.log((await step(context, () => Promise.reject())).status); // 200
 * ```
 */
export function routeStep(
  router: Router<EagerChain<RequestContext>>,
): EagerStep<RequestContext> {
  return function route(context: RequestContext): Response | Promise<Response> {
    const match = router.match(context.method, context.path);
    if (match === null) throw new InterfaceError("notFound", "No route for this path");
    if ("allow" in match) {
      const allow = match.allow.join(", ");
      throw new InterfaceError("methodNotAllowed", `Method ${context.method} is not allowed here`, {
        headers: { allow },
        extra: { allowedMethods: match.allow },
      });
    }
    context.params = match.params;
    return match.value(context);
  };
}
