/**
 * Rule 12: the body must be UTF-8 JSON (400 `invalidJson`) that fits the route's schema
 * (422 `invalidRequest` with `details`). Neither message quotes the body.
 *
 * @module
 */
import type { Next, Rule } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError, invalidRequest } from "../errors.ts";
import type { BodySchema } from "../router.ts";
import { isLazyBodySchema, type LazyBodySchema } from "../schemas/lazy.ts";

// The 422 error and its details are the service's shared error type (`errors.ts`); the routes
// import them from here too.
export { invalidRequest, type ValidationDetail } from "../errors.ts";

const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * The JSON rule for one schema; sets `context.body` to the validated value. A lazy schema
 * (`server/schemas/lazy.ts`) is loaded before the first check; later checks run synchronously.
 */
export function jsonRule(schema: BodySchema): Rule<RequestContext> {
  let ready = !isLazyBodySchema(schema);
  function check(context: RequestContext, next: Next) {
    let value: unknown;
    try {
      value = JSON.parse(decoder.decode(context.bodyBytes ?? new Uint8Array(0)));
    } catch {
      throw new InterfaceError("invalidJson", "The request body is not valid JSON");
    }
    const result = schema.safeParse(value);
    if (!result.success) {
      const issues = result.error?.issues ?? [];
      throw invalidRequest(
        issues.map((issue) => ({ path: issue.path.map(String).join("."), message: issue.message })),
      );
    }
    context.body = result.data;
    return next();
  }
  return function json(context: RequestContext, next: Next) {
    if (ready) return check(context, next);
    return (schema as LazyBodySchema).load().then(() => {
      ready = true;
      return check(context, next);
    });
  };
}
