/**
 * Sessions through the provider's own API: a session is a run of the gateway, on both
 * interfaces the same one.
 *
 * | operation | capability | what the gateway does |
 * |---|---|---|
 * | create | `session:write` | maps the body into the gateway's one start request (`runs/start_request.ts`) and starts the run: the principal's agents, agent overrides, active runs and every other start check; answers the provider's session |
 * | list | `session:read` | the caller's runs (approvers and admins: every run), newest first, each read from the provider (within the read budget below); `limit` 1 to 100 (20), `page`, `order=desc`, `agent_id`, `agent_version`, `statuses[]`, `include_archived`, `created_at[gt,gte,lt,lte]` |
 * | retrieve | `session:read` | a run the caller may read, read from the provider within the read budget |
 * | update | `session:write` | `title` and `metadata` on the caller's own runs; any other field needs `authority:admin`; `budget` is refused on a run whose principal has a budget or a `maxRunCost` (its ceiling is the run's hold); passed on |
 * | archive, delete | `session:write` | the caller's own runs, passed on; the run's state is read again |
 *
 * Another principal's session is 404 `not_found_error`, as `/v1` answers `runNotFound`.
 *
 * The read budget (`_session_reads.ts`): a replica reads a session from the provider at most
 * once in flight and keeps the answer for a second, for every caller, so clients polling a
 * session in a loop cost the service's key about one read a second per session and replica; and
 * it reads at most eight sessions of one principal at a time, however many lists and retrieves
 * that principal sends at once (a list reads up to a hundred). An
 * update, archive or delete through this interface forgets the kept answer at once; a change
 * made any other way (a turn ending, `/v1`) shows within that second.
 *
 * @module
 */
import { isObject } from "../../client/guards.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { StartRequest } from "../runs/start_request.ts";
import { providerFailureOf } from "../runs/provider_failure.ts";
import { readsEveryRun } from "../runs/runs.ts";
import type { StoredRunRecord } from "../store/types.ts";
import {
  AGENT_OVERRIDE_FIELDS,
  type NativeCreateSessionBody,
  type ProviderWireObject,
} from "../../wire/mod.ts";
import type { NativeCall, NativeHandler } from "./_chain.ts";
import { type NativeParts, providerPathOf, queryOf } from "./_parts.ts";
import { inRanges, invalid, listParams, type TimeRange } from "./_query.ts";
import { relayed, send, sendForText } from "./_relay.ts";
import { PrincipalReads, SessionReads } from "./_session_reads.ts";

/** Most sessions a list page holds. */
export const MAX_SESSION_PAGE = 100;
/** Sessions read from the provider at once while a page is made, and per principal. */
const READS_AT_ONCE = 8;
/** The fields of an update a session's writer may change; others need `authority:admin`. */
const WRITER_FIELDS: ReadonlySet<string> = new Set(["title", "metadata"]);

/**
 * The gateway's start request of a create body.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startRequestOfSession } from "./sessions.ts";
 * const request = startRequestOfSession({
 *   agent: { type: "agent_with_overrides", id: "agent_1", version: 2, model: "m" },
 *   environment_id: "env_1",
 *   initial_events: [{ type: "user.message", content: [{ type: "text", text: "hi" }] }],
 * });
 * assert.deepEqual(request.agentOverrides, { model: "m" });
 * assert.equal(request.agentVersion, 2);
 * assert.equal(request.initialEvents?.length, 1);
 * ```
 */
export function startRequestOfSession(body: NativeCreateSessionBody): StartRequest {
  const agent = body.agent;
  const request: StartRequest = {
    agentId: typeof agent === "string" ? agent : agent.id,
    environmentId: body.environment_id,
  };
  if (typeof agent !== "string") {
    if (agent.version !== undefined) request.agentVersion = agent.version;
    if (agent.type === "agent_with_overrides") {
      const overrides: ProviderWireObject = {};
      for (const field of AGENT_OVERRIDE_FIELDS) {
        if (field in agent) overrides[field] = agent[field];
      }
      if (Object.keys(overrides).length > 0) request.agentOverrides = overrides;
    }
  }
  if (typeof body.title === "string") request.title = body.title;
  if (body.metadata !== undefined) request.metadata = body.metadata;
  if (body.resources !== undefined) request.resources = body.resources;
  if (body.vault_ids !== undefined) request.vaultIds = body.vault_ids;
  if (isObject(body.budget)) request.budget = body.budget;
  if (body.initial_events !== undefined) request.initialEvents = body.initial_events;
  return request;
}

/** The query of a session list, as the gateway applies it. */
interface SessionQuery {
  limit: number;
  cursor?: string;
  agentId?: string;
  agentVersion?: number;
  statuses: Set<string>;
  includeArchived: boolean;
  createdAt: readonly TimeRange[];
}

const KNOWN_PARAMS: ReadonlySet<string> = new Set([
  "page",
  "order",
  "agent_id",
  "agent_version",
  "statuses[]",
  "include_archived",
]);

/** Parses a session list query; what the gateway cannot apply is refused, not ignored. */
function sessionQuery(query: string): SessionQuery {
  const params = new URLSearchParams(query);
  const parsed: SessionQuery = {
    ...listParams(params, {
      known: KNOWN_PARAMS,
      what: "sessions",
      maxLimit: MAX_SESSION_PAGE,
      defaultLimit: 20,
    }),
    statuses: new Set(params.getAll("statuses[]")),
    includeArchived: params.get("include_archived") === "true",
  };
  const order = params.get("order");
  if (order !== null && order !== "desc") {
    throw invalid("The gateway lists sessions newest first only (order=desc)");
  }
  const page = params.get("page");
  if (page !== null && page !== "") parsed.cursor = page;
  const agentId = params.get("agent_id");
  if (agentId !== null && agentId !== "") parsed.agentId = agentId;
  const version = params.get("agent_version");
  if (version !== null) {
    if (!/^[1-9][0-9]{0,14}$/.test(version)) throw invalid("agent_version must be a whole number");
    parsed.agentVersion = Number(version);
  }
  return parsed;
}

/** Reads `items` with `read`, at most {@linkcode READS_AT_ONCE} at a time, in order. */
async function readAll<T, R>(items: readonly T[], read: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      out[index] = await read(items[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(READS_AT_ONCE, items.length) }, worker));
  return out;
}

/** What the API version and betas of `call` make of a session's answer (`SessionReads`). */
function variantOf(call: NativeCall): string {
  return `${call.upstream.providerVersion ?? ""}\n${(call.upstream.betas ?? []).join(",")}`;
}

/** The session handlers, by the operation table's access (`operations.ts`). */
export function sessionHandlers(parts: NativeParts): {
  createSession: NativeHandler;
  listSessions: NativeHandler;
  getSession: NativeHandler;
  updateSession: NativeHandler;
  archiveSession: NativeHandler;
  deleteSession: NativeHandler;
} {
  const { gateway, store } = parts;
  const reads = new SessionReads(parts.now);
  const principalReads = new PrincipalReads(READS_AT_ONCE);

  /**
   * The session's JSON text from the provider, within the read budget (`_session_reads.ts`): a
   * read a caller starts waits for one of its principal's {@linkcode READS_AT_ONCE} slots.
   */
  function sessionText(call: NativeCall, runId: string): Promise<string> {
    return reads.read(
      runId,
      variantOf(call),
      () =>
        principalReads.run(
          call.run.principal.principalId,
          async () =>
            (await sendForText(parts, call, {
              method: "GET",
              path: `/v1/sessions/${encodeURIComponent(runId)}`,
            })).text,
        ),
    );
  }

  /** {@linkcode sessionText}, or null when the provider no longer knows the session (404). */
  async function sessionTextOrGone(call: NativeCall, runId: string): Promise<string | null> {
    try {
      return await sessionText(call, runId);
    } catch (error) {
      if (providerFailureOf(error)?.providerStatus === 404) return null;
      throw error;
    }
  }

  /**
   * Passes a change of a session the caller may write on to the provider; `read` is the run as
   * the caller already read it for writing (else it is read here).
   */
  async function passOn(
    context: RequestContext,
    call: NativeCall,
    body?: unknown,
    read?: StoredRunRecord,
  ): Promise<{ record: StoredRunRecord; response: Response }> {
    const record = read ??
      await gateway.visibleRun(call.run.principal, context.params.sessionId, "write");
    const response = await send(parts, call, {
      method: context.method as "GET" | "POST" | "DELETE",
      path: providerPathOf(context),
      ...(queryOf(context) !== undefined ? { query: queryOf(context) } : {}),
      ...(body !== undefined ? { body } : {}),
    });
    return { record, response };
  }

  /** Reads the run's state again after the provider changed its session (best effort). */
  async function refreshed(record: StoredRunRecord, response: Response): Promise<Response> {
    reads.forget(record.runId);
    const answer = new Response(await response.arrayBuffer(), response);
    await gateway.refreshRun(record.runId, { timeoutMs: 5_000 }).catch(() => null);
    return relayed(answer);
  }

  return {
    async createSession(context, call) {
      gateway.requireEnabled();
      const body = context.body;
      if (!isObject(body)) throw invalid("The body must be a session to create");
      // The answer is the provider's session, recorded with the run under the key when there is
      // one (a retry with it answers the same session, and never opens a second).
      const started = await gateway.startSession(
        call.run,
        startRequestOfSession(body as unknown as NativeCreateSessionBody),
        ({ session }) => ({ status: 200, body: JSON.stringify(session) }),
      );
      return Response.json(started.session, { status: 200 });
    },

    async listSessions(context, call) {
      gateway.requireEnabled();
      const query = sessionQuery(queryOf(context) ?? "");
      const principal = call.run.principal;
      const page = await store.runs.list({
        limit: query.limit,
        ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
        ...(readsEveryRun(principal) ? {} : { principalId: principal.principalId }),
      });
      const runs = page.runs.filter((run) =>
        (query.agentId === undefined || run.agentId === query.agentId) &&
        (query.agentVersion === undefined || run.agentVersion === query.agentVersion)
      );
      const texts = await readAll(runs, (run) => sessionTextOrGone(call, run.runId));
      const data: string[] = [];
      for (const text of texts) {
        if (text === null) continue;
        const session = JSON.parse(text) as Record<string, unknown>;
        if (!query.includeArchived && session.archived_at != null) continue;
        if (query.statuses.size > 0 && !query.statuses.has(String(session.status))) continue;
        if (!inRanges(session.created_at, query.createdAt)) continue;
        data.push(text);
      }
      const next = page.nextCursor === null ? "null" : JSON.stringify(page.nextCursor);
      return new Response(`{"data":[${data.join(",")}],"next_page":${next},"prev_page":null}`, {
        headers: { "content-type": "application/json" },
      });
    },

    async getSession(context, call) {
      gateway.requireEnabled();
      const record = await gateway.visibleRun(call.run.principal, context.params.sessionId, "read");
      return new Response(await sessionText(call, record.runId), {
        headers: { "content-type": "application/json" },
      });
    },

    async updateSession(context, call) {
      gateway.requireEnabled();
      const body = context.body;
      if (!isObject(body)) throw invalid("The body must be the session's changes");
      const admin = call.run.principal.capabilities.includes("authority:admin");
      const beyond = Object.keys(body).filter((field) => !WRITER_FIELDS.has(field));
      if (beyond.length > 0 && !admin) {
        throw new InterfaceError(
          "missingCapability",
          `Changing ${beyond.join(", ")} of a session requires authority:admin`,
          { extra: { requiredCapability: "authority:admin" } },
        );
      }
      let read: StoredRunRecord | undefined;
      if ("budget" in body) {
        // The provider's ceiling of a budgeted principal's session is its hold: not for changing.
        read = await gateway.visibleRun(call.run.principal, context.params.sessionId, "write");
        if (await gateway.ownerHoldsMoney(call.run.principal, read)) {
          throw new InterfaceError(
            "invalidRequest",
            "The budget of a session whose principal has a budget or a maxRunCost is the " +
              "gateway's hold for its run: a session update cannot change it",
            { extra: { details: [{ path: "budget", message: "Cannot be changed" }] } },
          );
        }
      }
      const { record, response } = await passOn(context, call, body, read);
      reads.forget(record.runId);
      return relayed(response);
    },

    async archiveSession(context, call) {
      gateway.requireEnabled();
      const { record, response } = await passOn(context, call);
      return await refreshed(record, response);
    },

    async deleteSession(context, call) {
      gateway.requireEnabled();
      const { record, response } = await passOn(context, call);
      return await refreshed(record, response);
    },
  };
}
