/**
 * Scripted turns of the provider simulator. A session's turn is a list of steps: provider events
 * to emit (an id and a time are added), pauses, and usage reports. The simulator frames the turn
 * with `session.status_running` and a final `session.status_idle`, whose stop reason is
 * `requires_action` while a tool call waits for an answer, else `end_turn`; a step list that
 * ends the session itself (see {@linkcode sessionFailure}) gets no idle.
 *
 * The builders here write the steps a test usually wants: {@linkcode agentMessage},
 * {@linkcode toolNeedingConfirmation}, {@linkcode customToolUse}, {@linkcode usageReport} (tokens
 * and their list cost), {@linkcode sessionFailure} and {@linkcode pause}. A step can also be any
 * provider event object, such as `{type: "agent.thinking"}`.
 *
 * @module
 */
import type { Json } from "./http.ts";

/** A pause of a scripted turn: the next step comes `delayMs` later. */
export interface PauseStep {
  /** The pause, in ms. */
  delayMs: number;
}

/** Token counts a usage report adds to the session's totals. */
export interface TokenUsage {
  /** Input tokens. */
  inputTokens: number;
  /** Output tokens. */
  outputTokens: number;
  /** Input tokens read from the prompt cache (default 0). */
  cacheReadInputTokens?: number;
}

/**
 * A usage report of a scripted turn: the tokens are added to the session's totals, and the
 * simulator emits `session.usage` with the new totals and their list cost.
 */
export interface UsageStep {
  /** The tokens this step adds. */
  addUsage: TokenUsage;
}

/** One step of a scripted turn: a provider event (with a `type`), a pause or a usage report. */
export type TurnStep = Json | PauseStep | UsageStep;

/** What a turn script sees. */
export interface TurnContext {
  /** The session record (the provider's wire shape). */
  session: Json;
  /** Text of the `user.message` that started the turn (empty for continuations). */
  text: string;
  /** Every event of the session so far. */
  events: readonly Json[];
}

/** A turn script: the steps of a turn. */
export type TurnScript = (context: TurnContext) => TurnStep[];

/**
 * List prices, in minor units of `currency` (cents for USD) per million tokens. The simulator
 * prices usage with them as the provider does at its public list rates: the cost of the totals,
 * rounded up to a whole minor unit.
 */
export interface ListPrices {
  /** ISO 4217 code (`USD`). */
  currency: string;
  /** Per million input tokens. */
  inputPerMillion: number;
  /** Per million output tokens. */
  outputPerMillion: number;
  /** Per million input tokens read from the prompt cache. */
  cacheReadPerMillion: number;
}

/** The simulator's default list prices: $3 per million input tokens, $15 per million output. */
export const DEFAULT_LIST_PRICES: Readonly<ListPrices> = Object.freeze({
  currency: "USD",
  inputPerMillion: 300,
  outputPerMillion: 1500,
  cacheReadPerMillion: 30,
});

/**
 * The list cost of usage totals, as the provider's monetary amount: an integer string of minor
 * units (rounded up) and the currency.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DEFAULT_LIST_PRICES, listCostOf } from "./turns.ts";
 * assert.deepEqual(
 *   listCostOf({ inputTokens: 24_000, outputTokens: 1_800 }, DEFAULT_LIST_PRICES),
 *   { amount: "10", currency: "USD" },
 * );
 * ```
 */
export function listCostOf(
  usage: TokenUsage,
  prices: ListPrices,
): { amount: string; currency: string } {
  const millionths = usage.inputTokens * prices.inputPerMillion +
    usage.outputTokens * prices.outputPerMillion +
    (usage.cacheReadInputTokens ?? 0) * prices.cacheReadPerMillion;
  return { amount: String(Math.ceil(millionths / 1_000_000)), currency: prices.currency };
}

/**
 * An agent message with one text block.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { agentMessage } from "./turns.ts";
 * assert.deepEqual(agentMessage("Hi"), {
 *   type: "agent.message",
 *   content: [{ type: "text", text: "Hi" }],
 * });
 * ```
 */
export function agentMessage(text: string): Json {
  return { type: "agent.message", content: [{ type: "text", text }] };
}

/**
 * A call of a built-in tool that needs a confirmation (`evaluated_permission: "ask"`): the turn
 * stops with `requires_action` until a `user.tool_confirmation` answers it, which the simulator
 * follows with the tool's result (`ran`, or an error when denied) and the agent's continuation.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolNeedingConfirmation } from "./turns.ts";
 * const step = toolNeedingConfirmation("bash", { command: "ls" });
 * assert.equal(step.evaluated_permission, "ask");
 * ```
 */
export function toolNeedingConfirmation(name: string, input: Json = {}): Json {
  return { type: "agent.tool_use", name, input, evaluated_permission: "ask" };
}

/**
 * A call of a custom tool: the turn stops with `requires_action` until a
 * `user.custom_tool_result` answers it, then the agent's continuation runs.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { customToolUse } from "./turns.ts";
 * assert.equal(customToolUse("lookup", { q: "x" }).type, "agent.custom_tool_use");
 * ```
 */
export function customToolUse(name: string, input: Json = {}): Json {
  return { type: "agent.custom_tool_use", name, input };
}

/**
 * A usage report: adds the tokens to the session's totals and emits `session.usage` with the
 * totals and their `list_cost` (see {@linkcode ListPrices}). Put it before the end of a turn: the
 * run's completion carries the latest usage.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { usageReport } from "./turns.ts";
 * assert.deepEqual(usageReport({ inputTokens: 10, outputTokens: 5 }), {
 *   addUsage: { inputTokens: 10, outputTokens: 5 },
 * });
 * ```
 */
export function usageReport(usage: TokenUsage): UsageStep {
  return { addUsage: { ...usage } };
}

/**
 * A failure: a `session.error` (an `unknown_error` unless `type` says otherwise) followed by the
 * session's termination, which a run reports as failed with that error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sessionFailure } from "./turns.ts";
 * const [error, end] = sessionFailure("The model is overloaded", "model_overloaded_error");
 * assert.equal(error.type, "session.error");
 * assert.equal(end.type, "session.status_terminated");
 * ```
 */
export function sessionFailure(message: string, type = "unknown_error"): Json[] {
  return [
    { type: "session.error", error: { type, message, retry_status: { type: "terminal" } } },
    { type: "session.status_terminated" },
  ];
}

/**
 * A pause before the next step, in ms: a turn that takes a while, or one that stays running (a
 * pause of minutes) until the test cancels it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pause } from "./turns.ts";
 * assert.deepEqual(pause(50), { delayMs: 50 });
 * ```
 */
export function pause(ms: number): PauseStep {
  return { delayMs: ms };
}

/** Whether a step is a pause. */
export function isPause(step: TurnStep): step is PauseStep {
  return typeof (step as Partial<PauseStep>).delayMs === "number";
}

/** Whether a step is a usage report. */
export function isUsageReport(step: TurnStep): step is UsageStep {
  const usage = (step as Partial<UsageStep>).addUsage;
  return typeof usage === "object" && usage !== null;
}
