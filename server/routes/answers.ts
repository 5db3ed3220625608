/**
 * The tool-answer routes of the gateway, under the shared rules:
 *
 * | method and path | capability | answer |
 * |---|---|---|
 * | `GET /v1/runs/{runId}/pending` | `session:read` | 200 `{pending: [...]}` |
 * | `POST /v1/runs/{runId}/tool-confirmations` (idempotent) | `session:approve` | 200 `{toolUseId, result, answeredBy, answeredAt}` |
 * | `POST /v1/runs/{runId}/custom-tool-results` (idempotent) | `session:write` | 200 `{toolUseId, answeredBy, answeredAt}` |
 *
 * Reading pending requests follows the run's read rule (owner, approvers, admins); confirmations
 * go to any run; custom tool results only to the caller's own runs (admins: any). The idempotency
 * record is the shared rule's; the exactly-once answer is the store's own claim (`answers.ts`).
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import type { BodySchema, RouteDefinition } from "../router.ts";
import type { CustomToolResultBody, ToolAnswers, ToolConfirmationBody } from "../runs/answers.ts";

/** Longest tool-use id accepted, in characters. */
const MAX_ID_LENGTH = 256;
/** Longest deny message, in characters. */
export const MAX_DENY_MESSAGE_LENGTH = 4096;
/** Most content blocks of one custom tool result. */
export const MAX_CONTENT_BLOCKS = 100;

interface Issue {
  path: (string | number)[];
  message: string;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function schema(
  fields: readonly string[],
  check: (body: Record<string, unknown>, issues: Issue[]) => void,
): BodySchema {
  return {
    safeParse(value: unknown) {
      if (!isObject(value)) {
        return {
          success: false,
          error: { issues: [{ path: [], message: "Expected an object" }] },
        };
      }
      const issues: Issue[] = [];
      const id = value.toolUseId;
      if (
        typeof id !== "string" || id.length === 0 || id.length > MAX_ID_LENGTH ||
        !/^[\x21-\x7e]+$/.test(id)
      ) {
        issues.push({ path: ["toolUseId"], message: "Must be a non-empty printable id" });
      }
      check(value, issues);
      const unknown = Object.keys(value).filter((key) => !fields.includes(key));
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
 * Schema of `POST /v1/runs/{runId}/tool-confirmations`: `{toolUseId, result, denyMessage?}`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolConfirmationSchema } from "./answers.ts";
 * assert.equal(toolConfirmationSchema.safeParse({ toolUseId: "sevt_1", result: "allow" }).success, true);
 * assert.equal(toolConfirmationSchema.safeParse({ toolUseId: "sevt_1", result: "maybe" }).success, false);
 * ```
 */
export const toolConfirmationSchema: BodySchema = schema(
  ["toolUseId", "result", "denyMessage"],
  (body, issues) => {
    if (body.result !== "allow" && body.result !== "deny") {
      issues.push({ path: ["result"], message: 'Must be "allow" or "deny"' });
    }
    const message = body.denyMessage;
    if (message !== undefined) {
      if (
        typeof message !== "string" || message.length === 0 ||
        message.length > MAX_DENY_MESSAGE_LENGTH
      ) {
        issues.push({
          path: ["denyMessage"],
          message: `Must be 1 to ${MAX_DENY_MESSAGE_LENGTH} characters`,
        });
      } else if (body.result !== "deny") {
        issues.push({ path: ["denyMessage"], message: "Only a deny carries a message" });
      }
    }
  },
);

/**
 * Schema of `POST /v1/runs/{runId}/custom-tool-results`: `{toolUseId, content, isError?}`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { customToolResultSchema } from "./answers.ts";
 * const body = { toolUseId: "sevt_2", content: [{ type: "text", text: "42" }] };
 * assert.equal(customToolResultSchema.safeParse(body).success, true);
 * assert.equal(customToolResultSchema.safeParse({ ...body, content: "42" }).success, false);
 * ```
 */
export const customToolResultSchema: BodySchema = schema(
  ["toolUseId", "content", "isError"],
  (body, issues) => {
    const content = body.content;
    if (
      !Array.isArray(content) || content.length > MAX_CONTENT_BLOCKS ||
      !content.every((block) => isObject(block) && typeof block.type === "string")
    ) {
      issues.push({
        path: ["content"],
        message: `Must be an array of at most ${MAX_CONTENT_BLOCKS} content blocks with a type`,
      });
    }
    if (body.isError !== undefined && typeof body.isError !== "boolean") {
      issues.push({ path: ["isError"], message: "Must be a boolean" });
    }
  },
);

/**
 * The tool-answer routes over one {@linkcode ToolAnswers}.
 *
 * @example
 * ```ts ignore
 * import { answerRoutes } from "./answers.ts";
 * const routes = answerRoutes(answers);
 * ```
 */
export function answerRoutes(answers: ToolAnswers): RouteDefinition[] {
  async function pending(context: RequestContext): Promise<Response> {
    const list = await answers.pending(context, context.params.runId);
    return context.json(JSON.stringify({ pending: list }), 200);
  }

  async function confirm(context: RequestContext): Promise<Response> {
    const body = context.body as ToolConfirmationBody;
    const answer = await answers.confirm(context, context.params.runId, body);
    return context.json(JSON.stringify(answer), 200);
  }

  async function respond(context: RequestContext): Promise<Response> {
    const body = context.body as CustomToolResultBody;
    const answer = await answers.respond(context, context.params.runId, body);
    return context.json(
      JSON.stringify({
        toolUseId: answer.toolUseId,
        answeredBy: answer.answeredBy,
        answeredAt: answer.answeredAt,
      }),
      200,
    );
  }

  return [
    {
      method: "GET",
      path: "/v1/runs/:runId/pending",
      kind: "shared",
      capability: "session:read",
      handle: pending,
    },
    {
      method: "POST",
      path: "/v1/runs/:runId/tool-confirmations",
      kind: "shared",
      capability: "session:approve",
      idempotent: true,
      body: toolConfirmationSchema,
      handle: confirm,
    },
    {
      method: "POST",
      path: "/v1/runs/:runId/custom-tool-results",
      kind: "shared",
      capability: "session:write",
      idempotent: true,
      body: customToolResultSchema,
      handle: respond,
    },
  ];
}
