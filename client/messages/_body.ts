/**
 * Turns a contract run body into a messages-API create body, applying the client's defaults.
 * Internal to the stateless client.
 *
 * @module
 */
import { isObject } from "../guards.ts";
import type { RuntimeRunStartBody } from "../contract.ts";
import type { ProviderMessageParam, ProviderMessagesCreateParams } from "./types.ts";

/** The client defaults a run body falls back to. */
export interface RunBodyDefaults {
  /** Used when the body names no model. */
  defaultModel?: string;
  /** Used when the body names no `maxTokens`. */
  defaultMaxTokens?: number;
}

const RESERVED_PARAMS = new Set(["model", "max_tokens", "messages", "system", "stream"]);

function toMessages(input: RuntimeRunStartBody["input"]): ProviderMessageParam[] {
  if (typeof input === "string") {
    if (input === "") throw new TypeError("Run input is empty: pass a prompt or a conversation");
    return [{ role: "user", content: input }];
  }
  if (!Array.isArray(input) || input.length === 0) {
    throw new TypeError("Run input must be a non-empty string or a non-empty array of messages");
  }
  return input.map((item, index) => {
    if (
      !isObject(item) || (item.role !== "user" && item.role !== "assistant") ||
      (typeof item.content !== "string" && !Array.isArray(item.content))
    ) {
      throw new TypeError(
        `Run input item ${index} must be {role: "user" | "assistant", content: string | blocks}`,
      );
    }
    return { role: item.role, content: item.content };
  });
}

/**
 * Builds the create body. The model and token cap come from the body, else from the defaults;
 * with neither a `TypeError` names what is missing, before any request is sent.
 *
 * `metadata.user_id` (a string) becomes the wire `metadata.user_id`; `metadata.params` (an object)
 * carries further messages-API fields (`tools`, `tool_choice`, `thinking`, …) and may not set
 * `model`, `max_tokens`, `messages`, `system` or `stream`.
 */
export function toCreateParams(
  body: RuntimeRunStartBody,
  defaults: RunBodyDefaults,
  stream: boolean,
): ProviderMessagesCreateParams {
  if (!isObject(body)) throw new TypeError("Run body must be an object");
  const model = body.model ?? defaults.defaultModel;
  if (typeof model !== "string" || model === "") {
    throw new TypeError("No model for the run: set body.model or the client's defaultModel");
  }
  const maxTokens = body.maxTokens ?? defaults.defaultMaxTokens;
  if (maxTokens === undefined) {
    throw new TypeError(
      "No max tokens for the run: set body.maxTokens or the client's defaultMaxTokens",
    );
  }
  if (!Number.isInteger(maxTokens) || maxTokens < 1) {
    throw new TypeError("Max tokens must be a positive integer");
  }
  const params: ProviderMessagesCreateParams = {
    model,
    max_tokens: maxTokens,
    messages: toMessages(body.input),
  };
  if (body.instructions !== undefined) {
    if (typeof body.instructions !== "string") {
      throw new TypeError("Run instructions must be a string");
    }
    params.system = body.instructions;
  }
  const metadata = body.metadata;
  if (metadata !== undefined) {
    if (!isObject(metadata)) throw new TypeError("Run metadata must be an object");
    if (metadata.user_id !== undefined) {
      if (typeof metadata.user_id !== "string") {
        throw new TypeError("Run metadata.user_id must be a string");
      }
      params.metadata = { user_id: metadata.user_id };
    }
    if (metadata.params !== undefined) {
      if (!isObject(metadata.params)) throw new TypeError("Run metadata.params must be an object");
      for (const [key, value] of Object.entries(metadata.params)) {
        if (RESERVED_PARAMS.has(key)) {
          throw new TypeError(`Run metadata.params cannot set ${key}: use the run body fields`);
        }
        if (value !== undefined) params[key] = value;
      }
    }
  }
  if (stream) params.stream = true;
  return params;
}
