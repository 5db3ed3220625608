/**
 * Rule 1: the route and method. An unknown path answers 404 `notFound`, a known path with
 * another method 405 `methodNotAllowed` with `Allow`.
 *
 * @module
 */
import type { Chain, Rule } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import { boundedField, MAX_LOGGED_METHOD } from "../log.ts";
import type { Router } from "../router.ts";

/**
 * Hands the request to the chain of the matching route, or refuses with 404 / 405. It is the
 * last rule of the server's chain: the route's chain answers.
 */
export function routeRule(router: Router<Chain<RequestContext>>): Rule<RequestContext> {
  return function route(context: RequestContext) {
    const match = router.match(context.method, context.path);
    if (match === null) throw new InterfaceError("notFound", "No route for this path");
    if ("allow" in match) {
      const allow = match.allow.join(", ");
      throw new InterfaceError(
        "methodNotAllowed",
        `Method ${boundedField(context.method, MAX_LOGGED_METHOD)} is not allowed here`,
        {
          headers: { allow },
          extra: { allowedMethods: match.allow },
        },
      );
    }
    context.params = match.params;
    context.route = match.pattern;
    return match.value(context);
  };
}
