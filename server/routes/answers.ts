/**
 * The tool-answer routes of the gateway, under the shared rules:
 *
 * | method and path | capability | answer |
 * |---|---|---|
 * | `GET /v1/runs/{runId}/pending` | `session:read` | 200 `{pending: [...]}` |
 * | `GET /v1/runs/{runId}/answers` | `session:read` | 200 `{answers: [...]}`: who answered what |
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
import type { RouteDefinition } from "../router.ts";
import { type LazyBodySchema, lazyBodySchema } from "../schemas/lazy.ts";
import type { ToolAnswers } from "../runs/answers.ts";
import type {
  ConfirmToolBody,
  CustomToolAnswer,
  PendingToolRequestList,
  RecordedToolAnswerList,
  RespondCustomToolBody,
} from "../../wire/mod.ts";
import { runCallOf } from "./_run_call.ts";

/**
 * Body of `POST /v1/runs/{runId}/tool-confirmations` (`toolConfirmationBody` in
 * `schemas/runs.ts`), loaded on the first body.
 */
export const toolConfirmationSchema: LazyBodySchema = lazyBodySchema(async () =>
  (await import("../schemas/runs.ts")).toolConfirmationBody
);

/**
 * Body of `POST /v1/runs/{runId}/custom-tool-results` (`customToolResultBody` in
 * `schemas/runs.ts`), loaded on the first body.
 */
export const customToolResultSchema: LazyBodySchema = lazyBodySchema(async () =>
  (await import("../schemas/runs.ts")).customToolResultBody
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
    const list: PendingToolRequestList = {
      pending: await answers.pending(runCallOf(context), context.params.runId),
    };
    return context.json(JSON.stringify(list), 200);
  }

  async function answered(context: RequestContext): Promise<Response> {
    const list: RecordedToolAnswerList = {
      answers: await answers.answered(runCallOf(context), context.params.runId),
    };
    return context.json(JSON.stringify(list), 200);
  }

  async function confirm(context: RequestContext): Promise<Response> {
    const body = context.body as ConfirmToolBody;
    const answer = await answers.confirm(runCallOf(context), context.params.runId, body);
    return context.json(JSON.stringify(answer), 200);
  }

  async function respond(context: RequestContext): Promise<Response> {
    const body = context.body as RespondCustomToolBody;
    const answer = await answers.respond(runCallOf(context), context.params.runId, body);
    const recorded: CustomToolAnswer = {
      toolUseId: answer.toolUseId,
      answeredBy: answer.answeredBy,
      answeredAt: answer.answeredAt,
    };
    return context.json(JSON.stringify(recorded), 200);
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
      method: "GET",
      path: "/v1/runs/:runId/answers",
      kind: "shared",
      capability: "session:read",
      handle: answered,
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
