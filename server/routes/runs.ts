/**
 * The run routes of the gateway, under the shared rules:
 *
 * | method and path | capability | answer |
 * |---|---|---|
 * | `POST /v1/runs` (idempotent) | `session:write` | 201 run record |
 * | `GET /v1/runs` | `session:read` | 200 `{runs, nextCursor}`, newest first |
 * | `GET /v1/runs/{runId}` | `session:read` | 200 run record |
 * | `POST /v1/runs/{runId}/cancel` (idempotent, no body) | `session:write` | 202 run record |
 * | `POST /v1/runs/{runId}/messages` (idempotent) | `session:write` | 202 run record |
 *
 * Without a provider credential each answers 503 `providerNotConfigured`. Another principal's
 * run is 404 `runNotFound` (admins see every run; approvers read every run). The bodies are
 * checked by the zod schemas of `server/schemas/runs.ts`, loaded on the first body so that
 * startup does not load zod. Each handler hands the run gateway (`server/runs/runs.ts`) the
 * request's run call and serialises the public run it answers.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import { invalidRequest, type ValidationDetail } from "../errors.ts";
import type { RouteDefinition } from "../router.ts";
import { type LazyBodySchema, lazyBodySchema } from "../schemas/lazy.ts";
import type { RunGateway } from "../runs/runs.ts";
import { decodeRunCursor, type RunListQuery } from "../store/types.ts";
import {
  RUN_STATES,
  type RuntimeRunState,
  type SendRunMessageBody,
  type StartRunBody,
} from "../../wire/mod.ts";
import { runCallOf } from "./_run_call.ts";

const STATES: ReadonlySet<string> = new Set<string>(RUN_STATES);

/**
 * Body schema of `POST /v1/runs` (`startRunBody` in `server/schemas/runs.ts`), loaded with zod
 * on the first body.
 */
export const startRunSchema: LazyBodySchema = lazyBodySchema(async () =>
  (await import("../schemas/runs.ts")).startRunBody
);

/** Body schema of `POST /v1/runs/{runId}/messages` (`sendMessageBody`), loaded likewise. */
export const sendMessageSchema: LazyBodySchema = lazyBodySchema(async () =>
  (await import("../schemas/runs.ts")).sendMessageBody
);

/**
 * Parses `limit` (1 to `max`, default `fallback`) and the named string parameters of a query;
 * anything malformed is 422 `invalidRequest` with `details`.
 */
export function parseListQuery(
  query: string,
  options: { names: readonly string[]; max?: number; fallback?: number },
): { limit: number; values: Record<string, string> } {
  const params = new URLSearchParams(query);
  const details: ValidationDetail[] = [];
  const max = options.max ?? 100;
  let limit = options.fallback ?? 20;
  const rawLimit = params.get("limit");
  if (rawLimit !== null) {
    const parsed = /^[0-9]{1,4}$/.test(rawLimit) ? Number(rawLimit) : Number.NaN;
    if (!(parsed >= 1 && parsed <= max)) {
      details.push({ path: "limit", message: `Must be a whole number from 1 to ${max}` });
    } else {
      limit = parsed;
    }
  }
  const values: Record<string, string> = {};
  for (const name of ["cursor", ...options.names]) {
    const all = params.getAll(name);
    if (all.length > 1) details.push({ path: name, message: "Must be given once" });
    else if (all.length === 1) {
      if (all[0] === "" || all[0].length > 512) {
        details.push({ path: name, message: "Must be 1 to 512 characters" });
      } else values[name] = all[0];
    }
  }
  if (details.length > 0) throw invalidRequest(details);
  return { limit, values };
}

function parseRunsQuery(query: string): RunListQuery {
  const { limit, values } = parseListQuery(query, { names: ["state", "principalId"] });
  const details: ValidationDetail[] = [];
  if (values.state !== undefined && !STATES.has(values.state)) {
    details.push({ path: "state", message: `Must be one of ${RUN_STATES.join(", ")}` });
  }
  if (values.cursor !== undefined && decodeRunCursor(values.cursor) === null) {
    details.push({ path: "cursor", message: "Must be a nextCursor of an earlier page" });
  }
  if (details.length > 0) throw invalidRequest(details);
  return {
    limit,
    ...(values.cursor !== undefined ? { cursor: values.cursor } : {}),
    ...(values.state !== undefined ? { state: values.state as RuntimeRunState } : {}),
    ...(values.principalId !== undefined ? { principalId: values.principalId } : {}),
  };
}

/**
 * The run routes over one {@linkcode RunGateway}.
 *
 * @example
 * ```ts ignore
 * import { runRoutes } from "./runs.ts";
 * const routes = runRoutes(gateway);
 * ```
 */
export function runRoutes(gateway: RunGateway): RouteDefinition[] {
  function answer(context: RequestContext, body: unknown, status: number): Response {
    return context.json(JSON.stringify(body), status);
  }

  async function start(context: RequestContext): Promise<Response> {
    const run = await gateway.start(runCallOf(context), context.body as StartRunBody);
    return answer(context, run, 201);
  }

  async function list(context: RequestContext): Promise<Response> {
    // Runs disabled answer 503 before a malformed query's 422.
    gateway.requireEnabled();
    const page = await gateway.list(runCallOf(context), parseRunsQuery(context.query));
    return answer(context, page, 200);
  }

  async function get(context: RequestContext): Promise<Response> {
    return answer(context, await gateway.get(runCallOf(context), context.params.runId), 200);
  }

  async function cancel(context: RequestContext): Promise<Response> {
    return answer(context, await gateway.cancel(runCallOf(context), context.params.runId), 202);
  }

  async function send(context: RequestContext): Promise<Response> {
    const body = context.body as SendRunMessageBody;
    const run = await gateway.send(runCallOf(context), context.params.runId, body.input);
    return answer(context, run, 202);
  }

  return [
    {
      method: "POST",
      path: "/v1/runs",
      kind: "shared",
      capability: "session:write",
      idempotent: true,
      body: startRunSchema,
      handle: start,
    },
    { method: "GET", path: "/v1/runs", kind: "shared", capability: "session:read", handle: list },
    {
      method: "GET",
      path: "/v1/runs/:runId",
      kind: "shared",
      capability: "session:read",
      handle: get,
    },
    {
      method: "POST",
      path: "/v1/runs/:runId/cancel",
      kind: "shared",
      capability: "session:write",
      idempotent: true,
      handle: cancel,
    },
    {
      method: "POST",
      path: "/v1/runs/:runId/messages",
      kind: "shared",
      capability: "session:write",
      idempotent: true,
      body: sendMessageSchema,
      handle: send,
    },
  ];
}
