/**
 * Conversions from the messages API's wire records to the run contract. Internal.
 *
 * @module
 */
import { isObject } from "../guards.ts";
import type { RuntimeBatchResult, RuntimeBatchStatus, RuntimeUsage } from "../contract.ts";
import { ProviderBatchLineError } from "./batch_errors.ts";
import type { ProviderMessage, ProviderMessageBatch, ProviderRunStatus } from "./types.ts";

function usageOf(usage: unknown): RuntimeUsage | undefined {
  if (!isObject(usage)) return undefined;
  let result: RuntimeUsage | undefined;
  for (const [key, value] of Object.entries(usage)) {
    if (typeof value === "number" && Number.isFinite(value)) (result ??= {})[key] = value;
  }
  return result;
}

/** Whether a value has the fields the client relies on in a message. */
export function isProviderMessage(value: unknown): value is ProviderMessage {
  return isObject(value) && typeof value.id === "string" && Array.isArray(value.content);
}

/**
 * A message as a run status: `requires_action` when the model stopped to call tools
 * (`stop_reason: tool_use`), `completed` otherwise; `output` joins the text blocks.
 */
export function messageToRunStatus(message: ProviderMessage): ProviderRunStatus {
  let output = "";
  for (const block of message.content) {
    if (block?.type === "text" && typeof block.text === "string") output += block.text;
  }
  const status: ProviderRunStatus = {
    runId: message.id,
    status: message.stop_reason === "tool_use" ? "requires_action" : "completed",
    output,
    message,
  };
  if (typeof message.stop_reason === "string") status.stopReason = message.stop_reason;
  const usage = usageOf(message.usage);
  if (usage) status.usage = usage;
  return status;
}

/** A batch record as the contract's batch status. */
export function batchToStatus(batch: ProviderMessageBatch): RuntimeBatchStatus {
  const counts = isObject(batch.request_counts) ? batch.request_counts : undefined;
  const count = (name: string): number => {
    const value = counts?.[name];
    return typeof value === "number" ? value : 0;
  };
  const status: RuntimeBatchStatus = {
    batchId: batch.id,
    status: batch.processing_status,
    counts: {
      processing: count("processing"),
      succeeded: count("succeeded"),
      errored: count("errored"),
      canceled: count("canceled"),
      expired: count("expired"),
    },
    resultsUrl: batch.results_url ?? null,
    endedAt: batch.ended_at ?? null,
  };
  if (typeof batch.created_at === "string") status.createdAt = batch.created_at;
  return status;
}

/** Whether a value looks like a batch record. */
export function isProviderBatch(value: unknown): value is ProviderMessageBatch {
  return isObject(value) && typeof value.id === "string" &&
    (value.processing_status === "in_progress" || value.processing_status === "canceling" ||
      value.processing_status === "ended");
}

/**
 * One parsed results line as a contract batch result. Throws {@linkcode ProviderBatchLineError}
 * (`invalidShape`) when the line is JSON but not a result.
 */
export function lineToBatchResult(value: unknown, lineNumber: number): RuntimeBatchResult {
  const customId = isObject(value) && typeof value.custom_id === "string"
    ? value.custom_id
    : undefined;
  const bad = (detail: string): ProviderBatchLineError =>
    new ProviderBatchLineError({ lineNumber, problem: "invalidShape", customId, detail });
  if (customId === undefined) throw bad("custom_id is missing");
  const result = (value as Record<string, unknown>).result;
  if (!isObject(result)) throw bad("result is missing");
  switch (result.type) {
    case "succeeded":
      if (!isProviderMessage(result.message)) throw bad("succeeded result has no message");
      return { customId, type: "succeeded", run: messageToRunStatus(result.message) };
    case "errored": {
      // The error is a provider error body `{type: "error", error: {type, message}}`.
      const body = isObject(result.error) ? result.error : {};
      const inner = isObject(body.error) ? body.error : body;
      const error: { type?: string; message: string } = {
        message: typeof inner.message === "string" ? inner.message : "The request failed",
      };
      if (typeof inner.type === "string") error.type = inner.type;
      return { customId, type: "errored", error };
    }
    case "canceled":
      return { customId, type: "canceled" };
    case "expired":
      return { customId, type: "expired" };
    default:
      throw bad(`unknown result type ${JSON.stringify(result.type)?.slice(0, 64)}`);
  }
}
