/**
 * The run call of a request: what the run gateway and the tool answers are told of an HTTP
 * request that passed the shared rules (its principal, deadline, correlation id, time and
 * idempotency key).
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { RunCall } from "../runs/call.ts";

/**
 * The {@linkcode RunCall} of a request the shared rules authenticated; a request without a
 * principal (a route wired without the rules) is refused, never run as nobody.
 *
 * @example
 * ```ts ignore
 * const run = await gateway.get(runCallOf(context), context.params.runId);
 * ```
 */
export function runCallOf(context: RequestContext): RunCall {
  const principal = context.principal;
  if (principal === null) {
    throw new InterfaceError("authenticationFailed", "The request is not authenticated");
  }
  return {
    principal,
    deadline: context.deadline,
    correlationId: context.responseCorrelationId,
    at: context.receivedAt,
    idempotency: context.idempotency,
  };
}
