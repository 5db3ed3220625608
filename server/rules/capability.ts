/**
 * Rule 8: the caller must hold the route's capability, else 403 `missingCapability` with
 * `requiredCapability`.
 *
 * @module
 */
import { type GuardStep, guardStep } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { Capability } from "../store/types.ts";

/**
 * The capability step for one required capability.
 *
 * @example
 * ```ts
 * import { capabilityStep } from "./capability.ts";
 * const step = capabilityStep("authority:admin");
 * ```
 */
export function capabilityStep(required: Capability): GuardStep<RequestContext> {
  return guardStep(function capability(context: RequestContext): void {
    if (context.principal?.capabilities.includes(required)) return;
    throw new InterfaceError("missingCapability", `This operation requires ${required}`, {
      extra: { requiredCapability: required },
    });
  });
}
