/**
 * The operations the `/provider` interface passes on to the provider, after its own checks:
 *
 * | access | capability | check |
 * |---|---|---|
 * | `thread`, `threadStream` | `session:read` | the session is one the caller may read |
 * | `agentRead` | `session:read` | the agent is one the caller may use (a list keeps only those); another is 404 `not_found_error` |
 * | `environmentRead` | `session:read` | as the principal's run policy allows environments |
 * | `admin` | `authority:admin` | none: the request is passed on as it came (its body byte for byte) |
 *
 * Answers come back as the provider sent them (`_relay.ts`); an event stream is held like the
 * hub's own (counted, its principal re-checked, ended on revocation).
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import { allowsAgent, runPolicyOf } from "../runs/policy.ts";
import type { NativeCall, NativeHandler } from "./_chain.ts";
import { type NativeParts, providerPathOf, queryOf } from "./_parts.ts";
import { relayed, type RelayRequest, send, sendForText } from "./_relay.ts";

function notFound(what: string): InterfaceError {
  return new InterfaceError("notFound", `No ${what} with this id`);
}

/** The request as it came: method, provider path, query, and body with its content type. */
function asItCame(context: RequestContext): RelayRequest {
  const bytes = context.bodyBytes;
  const query = queryOf(context);
  return {
    method: context.method as RelayRequest["method"],
    path: providerPathOf(context),
    ...(query !== undefined ? { query } : {}),
    ...(bytes !== null && bytes.length > 0
      ? {
        rawBody: {
          bytes,
          contentType: context.request.headers.get("content-type") ?? "application/json",
        },
      }
      : {}),
  };
}

/** The forwarded handlers, by the operation table's access (`operations.ts`). */
export function forwardedHandlers(parts: NativeParts): {
  thread: NativeHandler;
  threadStream: NativeHandler;
  agentRead: NativeHandler;
  environmentRead: NativeHandler;
  admin: NativeHandler;
} {
  const { gateway, hub } = parts;

  async function forward(context: RequestContext, call: NativeCall): Promise<Response> {
    const response = await send(parts, call, asItCame(context));
    return relayed(response, (body) =>
      hub.relay(body, {
        authorization: call.credential,
        principalId: call.run.principal.principalId,
      }));
  }

  return {
    async thread(context, call) {
      gateway.requireEnabled();
      await gateway.visibleRun(call.run.principal, context.params.sessionId, "read");
      return await forward(context, call);
    },

    async threadStream(context, call) {
      gateway.requireEnabled();
      await gateway.visibleRun(call.run.principal, context.params.sessionId, "read");
      return await forward(context, call);
    },

    async agentRead(context, call) {
      gateway.requireEnabled();
      const policy = runPolicyOf(call.run.principal);
      const agentId = context.params.agentId;
      if (agentId !== undefined) {
        if (!allowsAgent(policy, agentId)) throw notFound("agent");
        return await forward(context, call);
      }
      if (policy.agentIds === null) return await forward(context, call);
      // A list keeps the caller's agents only; its cursor stays the provider's.
      const { status, text } = await sendForText(parts, call, asItCame(context));
      const page = JSON.parse(text) as { data?: { id?: unknown }[] };
      if (Array.isArray(page.data)) {
        page.data = page.data.filter((agent) =>
          typeof agent?.id === "string" && allowsAgent(policy, agent.id)
        );
      }
      return Response.json(page, { status });
    },

    async environmentRead(context, call) {
      gateway.requireEnabled();
      return await forward(context, call);
    },

    async admin(context, call) {
      gateway.requireEnabled();
      return await forward(context, call);
    },
  };
}
