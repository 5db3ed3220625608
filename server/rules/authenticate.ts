/**
 * Rules 3 and 4: the bearer. Missing, malformed, unknown, revoked or minted under an old
 * bootstrap answers 401 `authenticationFailed` with `WWW-Authenticate: Bearer`; an expired
 * principal (the bootstrap included) 401 `tokenExpired`. No body is read before this rule.
 *
 * @module
 */
import type { Authenticator } from "../authenticator.ts";
import { type GuardStep, guardStep } from "../chain.ts";
import type { RequestContext } from "../context.ts";

/**
 * The authentication step; sets `context.principal`.
 *
 * @example
 * ```ts ignore
 * import { authenticateStep } from "./authenticate.ts";
 * const step = authenticateStep(authenticator);
 * ```
 */
export function authenticateStep(authenticator: Authenticator): GuardStep<RequestContext> {
  return guardStep(function authenticate(context: RequestContext): void | Promise<void> {
    const result = authenticator.authenticate(context.authorization, context.receivedAt);
    if (result instanceof Promise) {
      return result.then((principal) => {
        context.principal = principal;
      });
    }
    context.principal = result;
  });
}
