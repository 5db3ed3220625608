/**
 * Rule 8: the caller must hold the route's capability, else 403 `missingCapability` with
 * `requiredCapability`.
 *
 * @module
 */
import { checkRule, type Rule } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { Capability } from "../store/types.ts";

/** The capability rule for one required capability. */
export function capabilityRule(required: Capability): Rule<RequestContext> {
  return checkRule(function capability(context: RequestContext): void {
    if (context.principal?.capabilities.includes(required)) return;
    throw new InterfaceError("missingCapability", `This operation requires ${required}`, {
      extra: { requiredCapability: required },
    });
  });
}
