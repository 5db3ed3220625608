/**
 * Rule 6: `x-correlation-id` is required (400 `missingHeader`) and must be a UUID of at most
 * 64 bytes (400 `invalidHeader`), both with `header`.
 *
 * @module
 */
import { checkRule, type Rule } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";

/** The correlation rule. */
export function correlationRule(): Rule<RequestContext> {
  return checkRule(function correlation(context: RequestContext): void {
    if (context.correlationId !== null) return;
    if (context.correlationHeader === null) {
      throw new InterfaceError("missingHeader", "Header x-correlation-id is required", {
        extra: { header: "x-correlation-id" },
      });
    }
    throw new InterfaceError(
      "invalidHeader",
      "Header x-correlation-id must be a UUID of at most 64 bytes",
      { extra: { header: "x-correlation-id" } },
    );
  });
}
