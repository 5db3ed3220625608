/**
 * The operations the `/provider` interface passes on to the provider, after its own checks:
 *
 * | access | capability | check |
 * |---|---|---|
 * | `thread`, `threadStream` | `session:read` | the session is one the caller may read, and no id of the path decodes to a path of its own (`plainIds`) |
 * | `agentRead` | `session:read` | the agent is one the caller may use (its `agentIds`; a list keeps only those); another is 404 `not_found_error` |
 * | `environmentRead` | `session:read` | the environment is one the caller may use (its `environmentIds`; a list keeps only those); another is 404 `not_found_error` |
 * | `admin` | `authority:admin` | none: the request is passed on as it came (its body byte for byte) |
 *
 * Answers come back as the provider sent them (`_relay.ts`); an event stream is held like the
 * hub's own (counted, its principal re-checked, ended on revocation).
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import { runPolicyOf } from "../runs/policy.ts";
import type { NativeCall, NativeHandler } from "./_chain.ts";
import { type NativeParts, providerPathOf, queryOf } from "./_parts.ts";
import { relayed, type RelayRequest, send, sendForText } from "./_relay.ts";

function notFound(what: string): InterfaceError {
  return new InterfaceError("notFound", `No ${what} with this id`);
}

/**
 * Refuses (404) a request whose path ids, decoded, hold a slash or a backslash or are `.` or
 * `..`: the path is passed on as it came, still encoded, and a provider (or a proxy before it)
 * that decoded `%2F` and resolved dot segments would read another path than the one checked
 * here, such as another session's thread. No id of the provider's looks like that.
 */
function plainIds(context: RequestContext, what: string): void {
  for (const id of Object.values(context.params)) {
    if (id.includes("/") || id.includes("\\") || id === "." || id === "..") throw notFound(what);
  }
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

  /**
   * A read of the agents or environments a principal's policy lists (`allowed`, null: any): one
   * (`id`) outside it is not found, and a list keeps only those in it (its cursor stays the
   * provider's).
   */
  async function scopedRead(
    context: RequestContext,
    call: NativeCall,
    allowed: readonly string[] | null,
    id: string | undefined,
    what: string,
  ): Promise<Response> {
    if (id !== undefined) {
      if (allowed !== null && !allowed.includes(id)) throw notFound(what);
      plainIds(context, what);
      return await forward(context, call);
    }
    if (allowed === null) return await forward(context, call);
    const { status, text } = await sendForText(parts, call, asItCame(context));
    const page = JSON.parse(text) as { data?: { id?: unknown }[] };
    if (Array.isArray(page.data)) {
      page.data = page.data.filter((item) =>
        typeof item?.id === "string" && allowed.includes(item.id)
      );
    }
    return Response.json(page, { status });
  }

  return {
    async thread(context, call) {
      gateway.requireEnabled();
      await gateway.visibleRun(call.run.principal, context.params.sessionId, "read");
      plainIds(context, "thread");
      return await forward(context, call);
    },

    async threadStream(context, call) {
      gateway.requireEnabled();
      await gateway.visibleRun(call.run.principal, context.params.sessionId, "read");
      plainIds(context, "thread");
      return await forward(context, call);
    },

    async agentRead(context, call) {
      gateway.requireEnabled();
      const { agentIds } = runPolicyOf(call.run.principal);
      return await scopedRead(context, call, agentIds, context.params.agentId, "agent");
    },

    async environmentRead(context, call) {
      gateway.requireEnabled();
      const { environmentIds } = runPolicyOf(call.run.principal);
      const id = context.params.environmentId;
      return await scopedRead(context, call, environmentIds, id, "environment");
    },

    async admin(context, call) {
      gateway.requireEnabled();
      return await forward(context, call);
    },
  };
}
