/**
 * Rules 3 and 4: the bearer. Missing, malformed, unknown, revoked or minted under an old
 * bootstrap answers 401 `authenticationFailed` with `WWW-Authenticate: Bearer`; an expired
 * principal (the bootstrap included) 401 `tokenExpired`. No body is read before this rule.
 *
 * @module
 */
import type { Authenticator } from "../authenticator.ts";
import type { Next, Rule } from "../chain.ts";
import type { RequestContext } from "../context.ts";

/**
 * The authentication rule; sets `context.principal`. It waits only when the principal must be
 * read from the store. `credentialOf` gives the request's credential as an `Authorization` value
 * (default: its `Authorization` header; the provider's own API also takes `x-api-key`).
 */
export function authenticateRule(
  authenticator: Authenticator,
  credentialOf: (context: RequestContext) => string | null = (context) => context.authorization,
): Rule<RequestContext> {
  return function authenticate(context: RequestContext, next: Next) {
    const result = authenticator.authenticate(credentialOf(context), context.receivedAt);
    if (result instanceof Promise) {
      return result.then((principal) => {
        context.principal = principal;
        return next();
      });
    }
    context.principal = result;
    return next();
  };
}
