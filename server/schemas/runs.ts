/**
 * The request bodies of the run routes as zod schemas: the one definition the routes validate
 * with (loaded on the first body, see `server/schemas/lazy.ts`) and the MCP tools publish as
 * their JSON Schema. Each `satisfies` its body type of the wire contract (`wire/`): a body the
 * schema accepts is a value of that type.
 *
 * | schema | route |
 * |---|---|
 * | {@linkcode startRunBody} | `POST /v1/runs` |
 * | {@linkcode sendMessageBody} | `POST /v1/runs/{runId}/messages` |
 * | {@linkcode toolConfirmationBody} | `POST /v1/runs/{runId}/tool-confirmations` |
 * | {@linkcode customToolResultBody} | `POST /v1/runs/{runId}/custom-tool-results` |
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startRunBody } from "./runs.ts";
 * assert.equal(startRunBody.safeParse({ input: "hi" }).success, true);
 * assert.equal(startRunBody.safeParse({ input: "" }).success, false);
 * ```
 *
 * @module
 */
import { z } from "zod";
import {
  type ConfirmToolBody,
  type RespondCustomToolBody,
  type SendRunMessageBody,
  type StartRunBody,
  TOOL_CONFIRMATION_RESULTS,
} from "../../wire/mod.ts";

/** Most input items (or resources, or vault ids) of one request. */
export const MAX_INPUT_ITEMS = 100;
/** Longest title, in characters. */
export const MAX_TITLE_LENGTH = 512;
/** Longest id (agent, environment, vault, run, tool use) accepted, in characters. */
export const MAX_ID_LENGTH = 256;

/** A non-empty printable id of at most {@linkcode MAX_ID_LENGTH} characters. */
export const printableId: z.ZodString = z.string()
  .min(1, "Must be a non-empty printable id")
  .max(MAX_ID_LENGTH, `Must be at most ${MAX_ID_LENGTH} characters`)
  .regex(/^[\x21-\x7e]+$/, "Must be a non-empty printable id");

const contentBlock = z.looseObject({ type: z.string() });

/** One input item: a user turn, as text or content blocks. */
export const runInputItem = z.strictObject({
  role: z.literal("user", 'Must be "user": the agent writes its own turns'),
  content: z.union([
    z.string().min(1, "Must not be empty"),
    z.array(contentBlock).min(1, "Must be text or a non-empty array of content blocks"),
  ], "Must be text or a non-empty array of content blocks with a type"),
});

/** What a run is asked: text, or 1 to 100 user input items. */
export const runInput = z.union([
  z.string().min(1, "Must not be empty"),
  z.array(runInputItem).min(1, `Must hold 1 to ${MAX_INPUT_ITEMS} items`)
    .max(MAX_INPUT_ITEMS, `Must hold 1 to ${MAX_INPUT_ITEMS} items`),
], "Expected a string or an array of input items").describe(
  'The user\'s message: text, or an array of {role: "user", content} items',
);

/** The provider fields of a start: agent, environment, version, resources and vaults. */
export const runMetadata = z.strictObject({
  agent_id: printableId.optional().describe("Agent to run (default: the service's)"),
  environment_id: printableId.optional().describe(
    "Environment to run in (default: the service's)",
  ),
  agent_version: z.number().int("Must be a whole number >= 1").min(1, "Must be a whole number >= 1")
    .max(Number.MAX_SAFE_INTEGER).optional().describe("Agent version to pin"),
  resources: z.array(contentBlock).max(MAX_INPUT_ITEMS).optional()
    .describe("Resource objects, each with a type"),
  vault_ids: z.array(printableId).max(MAX_INPUT_ITEMS).optional().describe("Vault ids"),
});

/** Body of `POST /v1/runs`: `{input, title?, metadata?}`. */
export const startRunBody = z.strictObject({
  input: runInput,
  title: z.string().min(1, `Must be 1 to ${MAX_TITLE_LENGTH} characters`)
    .max(MAX_TITLE_LENGTH, `Must be 1 to ${MAX_TITLE_LENGTH} characters`).optional()
    .describe("Title of the run"),
  metadata: runMetadata.optional(),
}) satisfies z.ZodType<StartRunBody>;

/** Body of `POST /v1/runs/{runId}/messages`: `{input}`. */
export const sendMessageBody = z.strictObject({
  input: runInput,
}) satisfies z.ZodType<SendRunMessageBody>;

/** Body of `POST /v1/runs/{runId}/tool-confirmations`: `{toolUseId, result, denyMessage?}`. */
export const toolConfirmationBody = z.strictObject({
  toolUseId: printableId.describe("The pending request's toolUseId"),
  result: z.enum(TOOL_CONFIRMATION_RESULTS).describe("Whether the tool may run"),
  denyMessage: z.string().min(1).max(4096).optional()
    .describe("Why it may not (with deny), passed to the agent"),
}).refine((body) => body.denyMessage === undefined || body.result === "deny", {
  path: ["denyMessage"],
  message: "Only a deny carries a message",
}) satisfies z.ZodType<ConfirmToolBody>;

/** Body of `POST /v1/runs/{runId}/custom-tool-results`: `{toolUseId, content, isError?}`. */
export const customToolResultBody = z.strictObject({
  toolUseId: printableId.describe("The pending request's toolUseId"),
  content: z.array(contentBlock).max(MAX_INPUT_ITEMS)
    .describe('The tool\'s result as content blocks, such as {type: "text", text}'),
  isError: z.boolean().optional().describe("Whether the result is an error"),
}) satisfies z.ZodType<RespondCustomToolBody>;
