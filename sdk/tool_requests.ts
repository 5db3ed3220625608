/**
 * The tool requests of a run, as `client.runs.pending`, `client.runs.confirmTool` and
 * `client.runs.respondCustomTool` send and read them: the checks of the bodies sent and of the
 * answers read (the shapes are the wire contract's, `wire/tool_requests.ts`). Web standards only.
 *
 * @module
 */
import {
  type ConfirmToolBody,
  type CustomToolAnswer,
  type PendingToolRequest,
  type RespondCustomToolBody,
  TOOL_CONFIRMATION_RESULTS,
  TOOL_REQUEST_KINDS,
} from "../wire/mod.ts";
import { type Answer, invalidAnswer, isObject } from "./_request.ts";

function checkedToolUseId(value: unknown): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError("toolUseId must be a non-empty string");
  }
  return value;
}

/** The confirmation body with its fields in a fixed order (a retry is byte-identical). */
export function confirmPayload(body: ConfirmToolBody): Record<string, unknown> {
  if (!isObject(body)) throw new TypeError("confirmTool needs a body: { toolUseId, result }");
  const payload: Record<string, unknown> = { toolUseId: checkedToolUseId(body.toolUseId) };
  if (!TOOL_CONFIRMATION_RESULTS.includes(body.result)) {
    throw new TypeError(
      `result must be ${TOOL_CONFIRMATION_RESULTS.map((result) => `"${result}"`).join(" or ")}`,
    );
  }
  payload.result = body.result;
  if (body.denyMessage !== undefined) {
    if (typeof body.denyMessage !== "string" || body.denyMessage === "") {
      throw new TypeError("denyMessage must be a non-empty string");
    }
    if (body.result !== "deny") throw new TypeError("only a deny carries a denyMessage");
    payload.denyMessage = body.denyMessage;
  }
  return payload;
}

/** The custom tool result body with its fields in a fixed order. */
export function respondPayload(body: RespondCustomToolBody): Record<string, unknown> {
  if (!isObject(body)) {
    throw new TypeError("respondCustomTool needs a body: { toolUseId, content }");
  }
  const payload: Record<string, unknown> = { toolUseId: checkedToolUseId(body.toolUseId) };
  if (
    !Array.isArray(body.content) ||
    !body.content.every((block) => isObject(block) && typeof block.type === "string")
  ) {
    throw new TypeError("content must be an array of content blocks, each with a type");
  }
  payload.content = body.content;
  if (body.isError !== undefined) {
    if (typeof body.isError !== "boolean") throw new TypeError("isError must be a boolean");
    payload.isError = body.isError;
  }
  return payload;
}

/** Reads the pending list of an answer. */
export function pendingOf(answer: Answer): PendingToolRequest[] {
  const body = answer.body;
  if (!isObject(body) || !Array.isArray(body.pending)) {
    throw invalidAnswer(answer, "The pending answer has no pending array");
  }
  for (const item of body.pending) {
    if (
      !isObject(item) || typeof item.toolUseId !== "string" ||
      !(TOOL_REQUEST_KINDS as readonly unknown[]).includes(item.kind)
    ) {
      throw invalidAnswer(answer, "The runtime service answered with a malformed tool request");
    }
  }
  return body.pending as unknown as PendingToolRequest[];
}

/** Reads a recorded answer. */
export function toolAnswerOf<T extends CustomToolAnswer>(answer: Answer): T {
  const body = answer.body;
  if (
    !isObject(body) || typeof body.toolUseId !== "string" ||
    typeof body.answeredBy !== "string" || typeof body.answeredAt !== "string"
  ) {
    throw invalidAnswer(answer, "The runtime service answered with a malformed tool answer");
  }
  return body as unknown as T;
}
