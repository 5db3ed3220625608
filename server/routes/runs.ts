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
 * checked by hand-written schemas (zod's result shape), so startup does not load zod.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import type { BodySchema, RouteDefinition } from "../router.ts";
import { invalidRequest, type ValidationDetail } from "../rules/json.ts";
import { publicRun, type RunGateway, type StartRunBody } from "../runs/runs.ts";
import { ACTIVE_RUN_STATES, type RunState } from "../store/types.ts";

/** Most input items of one request. */
export const MAX_INPUT_ITEMS = 100;
/** Longest title, in characters. */
export const MAX_TITLE_LENGTH = 512;
/** Longest id (agent, environment, vault, run) accepted, in characters. */
const MAX_ID_LENGTH = 256;

const RUN_STATES: ReadonlySet<string> = new Set<RunState>([
  ...ACTIVE_RUN_STATES,
  "completed",
  "failed",
  "cancelled",
]);

interface Issue {
  path: (string | number)[];
  message: string;
}

function typeName(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_ID_LENGTH &&
    /^[\x21-\x7e]+$/.test(value);
}

function checkInput(value: unknown, issues: Issue[]): void {
  if (typeof value === "string") {
    if (value.length === 0) issues.push({ path: ["input"], message: "Must not be empty" });
    return;
  }
  if (!Array.isArray(value)) {
    issues.push({
      path: ["input"],
      message: `Expected string or array, received ${typeName(value)}`,
    });
    return;
  }
  if (value.length === 0 || value.length > MAX_INPUT_ITEMS) {
    issues.push({ path: ["input"], message: `Must hold 1 to ${MAX_INPUT_ITEMS} items` });
    return;
  }
  value.forEach((item, index) => {
    if (!isObject(item)) {
      issues.push({ path: ["input", index], message: "Expected an object" });
      return;
    }
    if (item.role !== "user") {
      issues.push({
        path: ["input", index, "role"],
        message: 'Must be "user": the agent writes its own turns',
      });
    }
    const content = item.content;
    if (typeof content === "string") {
      if (content.length === 0) {
        issues.push({ path: ["input", index, "content"], message: "Must not be empty" });
      }
    } else if (
      !Array.isArray(content) || content.length === 0 ||
      !content.every((block) => isObject(block) && typeof block.type === "string")
    ) {
      issues.push({
        path: ["input", index, "content"],
        message: "Must be text or a non-empty array of content blocks with a type",
      });
    }
    const unknown = Object.keys(item).filter((key) => key !== "role" && key !== "content");
    if (unknown.length > 0) {
      issues.push({
        path: ["input", index],
        message: `Unrecognized key(s): ${unknown.join(", ")}`,
      });
    }
  });
}

const METADATA_FIELDS = new Set([
  "agent_id",
  "environment_id",
  "agent_version",
  "resources",
  "vault_ids",
]);

function checkMetadata(value: unknown, issues: Issue[]): void {
  if (value === undefined) return;
  if (!isObject(value)) {
    issues.push({ path: ["metadata"], message: `Expected object, received ${typeName(value)}` });
    return;
  }
  for (const field of ["agent_id", "environment_id"]) {
    if (value[field] !== undefined && !isId(value[field])) {
      issues.push({ path: ["metadata", field], message: "Must be a non-empty printable id" });
    }
  }
  const version = value.agent_version;
  if (
    version !== undefined && (typeof version !== "number" || !Number.isSafeInteger(version) ||
      version < 1)
  ) {
    issues.push({ path: ["metadata", "agent_version"], message: "Must be a whole number >= 1" });
  }
  const resources = value.resources;
  if (
    resources !== undefined &&
    (!Array.isArray(resources) || resources.length > MAX_INPUT_ITEMS ||
      !resources.every((r) => isObject(r) && typeof r.type === "string"))
  ) {
    issues.push({
      path: ["metadata", "resources"],
      message: "Must be an array of resource objects with a type",
    });
  }
  const vaults = value.vault_ids;
  if (
    vaults !== undefined &&
    (!Array.isArray(vaults) || vaults.length > MAX_INPUT_ITEMS || !vaults.every(isId))
  ) {
    issues.push({ path: ["metadata", "vault_ids"], message: "Must be an array of ids" });
  }
  const unknown = Object.keys(value).filter((key) => !METADATA_FIELDS.has(key));
  if (unknown.length > 0) {
    issues.push({ path: ["metadata"], message: `Unrecognized key(s): ${unknown.join(", ")}` });
  }
}

function objectSchema(
  fields: ReadonlySet<string>,
  check: (body: Record<string, unknown>, issues: Issue[]) => void,
): BodySchema {
  return {
    safeParse(value: unknown) {
      if (!isObject(value)) {
        return {
          success: false,
          error: {
            issues: [{ path: [], message: `Expected object, received ${typeName(value)}` }],
          },
        };
      }
      const issues: Issue[] = [];
      check(value, issues);
      const unknown = Object.keys(value).filter((key) => !fields.has(key));
      if (unknown.length > 0) {
        issues.push({ path: [], message: `Unrecognized key(s): ${unknown.join(", ")}` });
      }
      return issues.length > 0
        ? { success: false, error: { issues } }
        : { success: true, data: value };
    },
  };
}

/**
 * Schema of `POST /v1/runs`: `{input, title?, metadata?}`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startRunSchema } from "./runs.ts";
 * assert.equal(startRunSchema.safeParse({ input: "hi" }).success, true);
 * assert.equal(startRunSchema.safeParse({ input: "" }).success, false);
 * ```
 */
export const startRunSchema: BodySchema = objectSchema(
  new Set(["input", "title", "metadata"]),
  (body, issues) => {
    checkInput(body.input, issues);
    const title = body.title;
    if (
      title !== undefined &&
      (typeof title !== "string" || title.length === 0 || title.length > MAX_TITLE_LENGTH)
    ) {
      issues.push({ path: ["title"], message: `Must be 1 to ${MAX_TITLE_LENGTH} characters` });
    }
    checkMetadata(body.metadata, issues);
  },
);

/**
 * Schema of `POST /v1/runs/{runId}/messages`: `{input}`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sendMessageSchema } from "./runs.ts";
 * assert.equal(sendMessageSchema.safeParse({ input: [{ role: "user", content: "hi" }] }).success, true);
 * ```
 */
export const sendMessageSchema: BodySchema = objectSchema(
  new Set(["input"]),
  (body, issues) => checkInput(body.input, issues),
);

/** The parsed query of `GET /v1/runs`. */
interface ListQuery {
  limit: number;
  cursor?: string;
  state?: RunState;
  principalId?: string;
}

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

function parseRunsQuery(query: string): ListQuery {
  const { limit, values } = parseListQuery(query, { names: ["state", "principalId"] });
  const details: ValidationDetail[] = [];
  if (values.state !== undefined && !RUN_STATES.has(values.state)) {
    details.push({ path: "state", message: `Must be one of ${[...RUN_STATES].join(", ")}` });
  }
  if (values.cursor !== undefined && !/^[A-Za-z0-9_-]+$/.test(values.cursor)) {
    details.push({ path: "cursor", message: "Must be a nextCursor of an earlier page" });
  }
  if (details.length > 0) throw invalidRequest(details);
  return {
    limit,
    ...(values.cursor !== undefined ? { cursor: values.cursor } : {}),
    ...(values.state !== undefined ? { state: values.state as RunState } : {}),
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
    const record = await gateway.start(context, context.body as StartRunBody);
    // The run's tail starts at once (on this replica when it takes the lease).
    gateway.activity.notify(record.runId);
    return answer(context, publicRun(record), 201);
  }

  async function list(context: RequestContext): Promise<Response> {
    gateway.requireEnabled();
    const page = await gateway.list(context, parseRunsQuery(context.query));
    return answer(context, { runs: page.runs.map(publicRun), nextCursor: page.nextCursor }, 200);
  }

  async function get(context: RequestContext): Promise<Response> {
    const record = await gateway.get(context, context.params.runId);
    return answer(context, publicRun(record), 200);
  }

  async function cancel(context: RequestContext): Promise<Response> {
    const record = await gateway.cancel(context, context.params.runId);
    gateway.activity.notify(record.runId);
    return answer(context, publicRun(record), 202);
  }

  async function send(context: RequestContext): Promise<Response> {
    const body = context.body as { input: StartRunBody["input"] };
    const record = await gateway.send(context, context.params.runId, body.input);
    // A follow-up may start a finished run's new turn: its tail must follow it.
    gateway.activity.notify(record.runId);
    return answer(context, publicRun(record), 202);
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
