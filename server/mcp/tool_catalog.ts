/**
 * What each MCP tool is: a declaration naming its HTTP twin (method and path template), the
 * arguments that fill the twin's path, query and body, whether it takes an `idempotencyKey`,
 * and how its answer becomes the tool result. The capability is not declared here: it is the
 * twin route's own, read from the server's route table when the tools are bound (`tools.ts`),
 * and a tool whose twin route is not in the table is not offered at all.
 *
 * | tool | HTTP twin | arguments |
 * |---|---|---|
 * | `runtime_info` | `GET /v1/runtime` | – |
 * | `principals_list` | `GET /v1/principals` | `limit?`, `cursor?` |
 * | `principal_issue` | `POST /v1/principals` | the body, `idempotencyKey?` |
 * | `principal_revoke` | `DELETE /v1/principals/{principalId}` | `principalId` |
 * | `run_start` | `POST /v1/runs` | the body, `idempotencyKey?` |
 * | `run_list` | `GET /v1/runs` | `limit?`, `cursor?`, `state?`, `principalId?` |
 * | `run_get` | `GET /v1/runs/{runId}` | `runId` |
 * | `run_events` | `GET /v1/runs/{runId}/events` (JSON page) | `runId`, `after?`, `limit?`, `waitMs?` |
 * | `run_cancel` | `POST /v1/runs/{runId}/cancel` | `runId`, `idempotencyKey?` |
 * | `run_send` | `POST /v1/runs/{runId}/messages` | `runId`, the body, `idempotencyKey?` |
 * | `run_pending` | `GET /v1/runs/{runId}/pending` | `runId` |
 * | `run_confirm_tool` | `POST /v1/runs/{runId}/tool-confirmations` | `runId`, the body, `idempotencyKey?` |
 * | `run_respond_custom_tool` | `POST /v1/runs/{runId}/custom-tool-results` | `runId`, the body, `idempotencyKey?` |
 * | `pending_list` | `GET /v1/pending` | `limit?`, `cursor?` |
 * | `activity_list` | `GET /v1/activity` (JSON page) | `after?`, `limit?` |
 * | `audit_list` | `GET /v1/audit` | `limit?`, `cursor?`, `principalId?`, `action?` |
 * | `usage_get` | `GET /v1/usage` | `from?`, `to?`, `groupBy?`, `principalId?` |
 *
 * Body arguments are the route's own body schema (`server/schemas/`), so the tool's JSON Schema
 * and the route's validation are one definition.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/types"
import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import {
  capability,
  createPrincipalBody,
  principalPolicyAnswerShape,
} from "../schemas/principals.ts";
import {
  customToolResultBody,
  printableId,
  sendMessageBody,
  startRunBody,
  toolConfirmationBody,
} from "../schemas/runs.ts";
import { AUDIT_ACTIONS, RUN_STATES, USAGE_GROUPS } from "../../wire/mod.ts";

/** Longest wait of `run_events` for a new event, in ms. */
export const MAX_WAIT_MS = 30_000;

/** How an answer of the twin route becomes the tool's structured result. */
export type ToolShape = (body: unknown, args: Record<string, unknown>) => unknown;

/** One MCP tool. */
export interface ToolDeclaration {
  /** Tool name. */
  readonly name: string;
  /** Human-readable title. */
  readonly title: string;
  /** What the tool does, for the host's model. */
  readonly description: string;
  /** Method of the HTTP twin. */
  readonly method: string;
  /** Path template of the HTTP twin, as in the route table (`/v1/runs/:runId`). */
  readonly path: string;
  /** Path parameters, each filled from the argument of the same name. */
  readonly params?: readonly string[];
  /** Query arguments, each sent as the query parameter of the same name. */
  readonly query?: z.ZodObject;
  /** The twin route's body schema; its fields are arguments. */
  readonly body?: z.ZodObject;
  /** Whether the tool mutates and so takes an `idempotencyKey` argument. */
  readonly idempotent: boolean;
  /** Arguments the tool handles itself (not sent to the route), such as `waitMs`. */
  readonly local?: z.ZodObject;
  /** Hints for the host. */
  readonly annotations: ToolAnnotations;
  /** Schema of the structured result, when the host may rely on one. */
  readonly output?: z.ZodType;
  /** Rebuilds the result from the answer (default: the answer's body). */
  readonly shape?: ToolShape;
  /** `Accept` of the twin request (the JSON page form of a route that also streams). */
  readonly accept?: string;
}

const pageLimit = (max: number, fallback: number) =>
  z.number().int().min(1).max(max).optional().describe(
    `Most items in the page, 1 to ${max} (default ${fallback})`,
  );
const cursor = z.string().min(1).max(512).optional().describe(
  "The nextCursor of the previous page",
);
const idempotencyKey = z.string().min(1).max(128).regex(/^[\x20-\x7e]+$/).optional().describe(
  "Idempotency key (1 to 128 printable ASCII characters): a retry with the same key and " +
    "arguments returns the first result again instead of acting twice",
);

/**
 * What a call's `idempotencyKey` is checked against before the route: only that it is a
 * string. The route's own idempotency rule checks the rest, so a malformed key is the same
 * `invalidHeader` refusal as over HTTP.
 */
const idempotencyKeyLoose = z.string().optional();

const runIdParam = printableId.describe("The run's id (runId)");

/** Schemas of the path parameters, by name. */
export const PARAM_SCHEMAS: Readonly<Record<string, z.ZodType>> = {
  runId: runIdParam,
  principalId: z.string().min(1).max(64).describe("Lower-case UUID of the principal"),
};

function readOnly(): ToolAnnotations {
  return { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
}

function mutating(destructive: boolean, openWorld: boolean): ToolAnnotations {
  return {
    readOnlyHint: false,
    destructiveHint: destructive,
    idempotentHint: false,
    openWorldHint: openWorld,
  };
}

const principalLabels = {
  name: z.string().optional().describe("its name, when it was given one"),
  metadata: z.record(z.string(), z.string()).optional().describe("its metadata pairs"),
};

const principalSummary = z.object({
  principalId: z.string(),
  ...principalLabels,
  capabilities: z.array(capability),
  expiresAt: z.string(),
  issuerId: z.string(),
  createdAt: z.string(),
  ...principalPolicyAnswerShape(),
  revokedAt: z.string().optional(),
});

const RUN_NOTE = "Another principal's run is runNotFound. ";

/** Every tool the runtime knows, in the order they are listed. */
export const TOOL_CATALOG: readonly ToolDeclaration[] = [
  {
    name: "runtime_info",
    title: "Runtime info",
    description: "The runtime's interface version and the caller's own principal id, " +
      "capabilities, expiry and run policy, and whether runs are enabled (as GET /v1/runtime).",
    method: "GET",
    path: "/v1/runtime",
    idempotent: false,
    annotations: readOnly(),
    output: z.object({
      interfaceVersion: z.string(),
      principalId: z.string(),
      capabilities: z.array(capability),
      expiresAt: z.string(),
      runs: z.boolean(),
      ...principalPolicyAnswerShape(),
    }),
  },
  {
    name: "principals_list",
    title: "List principals",
    description: "One page of principals, oldest first, without bearers or digests; revoked " +
      "ones carry revokedAt; pass nextCursor back as cursor for the next page " +
      "(as GET /v1/principals).",
    method: "GET",
    path: "/v1/principals",
    query: z.strictObject({ limit: pageLimit(500, 100), cursor }),
    idempotent: false,
    annotations: readOnly(),
    output: z.object({ principals: z.array(principalSummary), nextCursor: z.string().nullable() }),
  },
  {
    name: "principal_issue",
    title: "Issue a principal",
    description: "Issues a scoped principal and returns its one-time bearer, which cannot be " +
      "retrieved again: hand it to its holder at once (as POST /v1/principals). capabilities " +
      "must be a subset of the caller's, never authority:admin; expiresAt at most 90 days " +
      "ahead; name and metadata label it for people. Pass idempotencyKey to make retries " +
      "safe (a retry returns the bearer again).",
    method: "POST",
    path: "/v1/principals",
    body: createPrincipalBody,
    idempotent: true,
    annotations: mutating(false, false),
    output: z.object({
      principalId: z.string(),
      ...principalLabels,
      capabilities: z.array(capability),
      expiresAt: z.string(),
      ...principalPolicyAnswerShape(),
      bearer: z.string(),
    }),
  },
  {
    name: "principal_revoke",
    title: "Revoke a principal",
    description: "Revokes a principal at once: its bearer is refused from the next request " +
      "on, on every replica, and its MCP sessions end (as DELETE /v1/principals/{id}). " +
      "Revoking an already revoked principal succeeds again.",
    method: "DELETE",
    path: "/v1/principals/:principalId",
    params: ["principalId"],
    idempotent: false,
    annotations: { ...mutating(true, false), idempotentHint: true },
    output: z.object({ principalId: z.string(), revoked: z.boolean() }),
    shape: (_body, args) => ({ principalId: args.principalId, revoked: true }),
  },
  {
    name: "run_start",
    title: "Start a run",
    description: "Starts a managed-agent run with the user's input and returns its run " +
      "record (as POST /v1/runs); follow it with run_events. metadata.agent_id must be one of " +
      "the caller's agents. Pass idempotencyKey so a retry does not start a second run.",
    method: "POST",
    path: "/v1/runs",
    body: startRunBody,
    idempotent: true,
    annotations: mutating(false, true),
  },
  {
    name: "run_list",
    title: "List runs",
    description: "One page of runs, newest first: the caller's own, or anyone's for admins " +
      "and approvers (who may filter by principalId); pass nextCursor back as cursor " +
      "(as GET /v1/runs).",
    method: "GET",
    path: "/v1/runs",
    query: z.strictObject({
      limit: pageLimit(100, 20),
      cursor,
      state: z.enum(RUN_STATES).optional().describe("Only runs in this state"),
      principalId: z.string().min(1).max(512).optional()
        .describe("Only runs of this principal (admins and approvers)"),
    }),
    idempotent: false,
    annotations: readOnly(),
  },
  {
    name: "run_get",
    title: "Get a run",
    description: "The run record: state, stopReason, usage and lastEventSeq " +
      `(as GET /v1/runs/{runId}). ${RUN_NOTE}`,
    method: "GET",
    path: "/v1/runs/:runId",
    params: ["runId"],
    idempotent: false,
    annotations: readOnly(),
  },
  {
    name: "run_events",
    title: "Read run events",
    description: "A page of the run's events after seq `after` (default 0), oldest first: " +
      "{events, nextAfter, terminal}. Pass nextAfter back as after for the next page; " +
      "terminal is true once the page holds the run's last event (completed, failed or " +
      "cancelled). With waitMs (at most 30000) the call waits that long for an event after " +
      "`after` before answering an empty page, so there is no need to poll " +
      `(as GET /v1/runs/{runId}/events). ${RUN_NOTE}`,
    method: "GET",
    path: "/v1/runs/:runId/events",
    params: ["runId"],
    query: z.strictObject({
      after: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional()
        .describe("Return events after this seq (default 0: from the first)"),
      limit: pageLimit(500, 100),
    }),
    local: z.strictObject({
      waitMs: z.number().int().min(0).max(MAX_WAIT_MS).optional().describe(
        `Wait up to this many ms (at most ${MAX_WAIT_MS}) for an event when none is there yet`,
      ),
    }),
    idempotent: false,
    annotations: readOnly(),
    accept: "application/json",
  },
  {
    name: "run_cancel",
    title: "Cancel a run",
    description: "Asks the provider to stop the run; its state becomes cancelled once it " +
      `stops (as POST /v1/runs/{runId}/cancel). ${RUN_NOTE}`,
    method: "POST",
    path: "/v1/runs/:runId/cancel",
    params: ["runId"],
    idempotent: true,
    annotations: mutating(true, true),
  },
  {
    name: "run_send",
    title: "Send a message to a run",
    description: "Sends a follow-up user message; a finished run starts again " +
      `(as POST /v1/runs/{runId}/messages). ${RUN_NOTE}`,
    method: "POST",
    path: "/v1/runs/:runId/messages",
    params: ["runId"],
    body: sendMessageBody,
    idempotent: true,
    annotations: mutating(false, true),
  },
  {
    name: "run_pending",
    title: "Pending tool requests",
    description: "The run's tool requests waiting for an answer: confirmations (answer with " +
      "run_confirm_tool) and custom-tool calls (answer with run_respond_custom_tool) " +
      `(as GET /v1/runs/{runId}/pending). ${RUN_NOTE}`,
    method: "GET",
    path: "/v1/runs/:runId/pending",
    params: ["runId"],
    idempotent: false,
    annotations: readOnly(),
  },
  {
    name: "run_confirm_tool",
    title: "Answer a tool confirmation",
    description: "Allows or denies a pending tool confirmation; exactly one answer wins: a " +
      "second answer, by anyone, is alreadyAnswered " +
      "(as POST /v1/runs/{runId}/tool-confirmations). Needs session:approve.",
    method: "POST",
    path: "/v1/runs/:runId/tool-confirmations",
    params: ["runId"],
    body: toolConfirmationBody,
    idempotent: true,
    annotations: mutating(false, true),
  },
  {
    name: "run_respond_custom_tool",
    title: "Answer a custom-tool call",
    description: "Sends the result of a pending custom-tool call of the caller's run; a " +
      "second answer is alreadyAnswered (as POST /v1/runs/{runId}/custom-tool-results).",
    method: "POST",
    path: "/v1/runs/:runId/custom-tool-results",
    params: ["runId"],
    body: customToolResultBody,
    idempotent: true,
    annotations: mutating(false, true),
  },
  {
    name: "pending_list",
    title: "List pending tool requests across runs",
    description: "The inbox: every tool request waiting for an answer in the runs the caller " +
      "may read (approvers and admins: every run), with its input, deniedAt (when the runtime " +
      "denies it by itself), and the run's title, agent and owner; answer with " +
      "run_confirm_tool or run_respond_custom_tool. A page covers up to limit runs; pass " +
      "nextCursor back as cursor (as GET /v1/pending).",
    method: "GET",
    path: "/v1/pending",
    query: z.strictObject({ limit: pageLimit(100, 50), cursor }),
    idempotent: false,
    annotations: readOnly(),
  },
  {
    name: "activity_list",
    title: "Read the activity feed",
    description: "The changes of the runs the caller may read after seq `after` (default 0), " +
      "oldest first: run.created, run.state, tool.pending and tool.answered (with who " +
      "answered). Pass nextAfter back as after for the next page; GET /v1/pending's " +
      "activitySeq is where changes since that inbox page start (as GET /v1/activity).",
    method: "GET",
    path: "/v1/activity",
    query: z.strictObject({
      after: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional()
        .describe("Return changes after this seq (default 0)"),
      limit: pageLimit(500, 100),
    }),
    idempotent: false,
    annotations: readOnly(),
    accept: "application/json",
  },
  {
    name: "audit_list",
    title: "List audit entries",
    description: "One page of the audit log, newest first; filter by principalId (actor or " +
      "subject) or action; pass nextCursor back as cursor (as GET /v1/audit).",
    method: "GET",
    path: "/v1/audit",
    query: z.strictObject({
      limit: pageLimit(100, 20),
      cursor,
      principalId: z.string().min(1).max(512).optional()
        .describe("Only entries whose actor or subject is this principal"),
      action: z.enum(AUDIT_ACTIONS).optional()
        .describe("Only entries of this action"),
    }),
    idempotent: false,
    annotations: readOnly(),
  },
  {
    name: "usage_get",
    title: "Read usage and list cost",
    description: "Tokens and list cost settled in [from, to), summed by principal, agent or UTC " +
      "day; admins see everyone's, others their own (as GET /v1/usage).",
    method: "GET",
    path: "/v1/usage",
    query: z.strictObject({
      from: z.string().min(1).max(64).optional()
        .describe("RFC 3339 start, inclusive (default: the start of this UTC month)"),
      to: z.string().min(1).max(64).optional().describe("RFC 3339 end, exclusive (default: now)"),
      groupBy: z.enum(USAGE_GROUPS).optional().describe("How to group (default principal)"),
      principalId: z.string().min(1).max(512).optional()
        .describe("Only this principal's usage (admins)"),
    }),
    idempotent: false,
    annotations: readOnly(),
  },
];

/**
 * The whole argument schema of a tool: its path parameters, query and body fields, local
 * arguments and, when idempotent, `idempotencyKey`. Unknown arguments are refused. The
 * `publish` form is the one listed to hosts; the `check` form differs only in leaving the
 * key's format to the route (see `idempotencyKeyLoose`).
 */
export function argumentSchema(
  declaration: ToolDeclaration,
  form: "publish" | "check",
): z.ZodObject {
  const shape: Record<string, z.ZodType> = {};
  for (const name of declaration.params ?? []) {
    shape[name] = PARAM_SCHEMAS[name] ?? printableId;
  }
  Object.assign(
    shape,
    declaration.query?.shape,
    declaration.body?.shape,
    declaration.local?.shape,
  );
  if (declaration.idempotent) {
    shape.idempotencyKey = form === "publish" ? idempotencyKey : idempotencyKeyLoose;
  }
  return z.strictObject(shape);
}
