/**
 * Mapping of the messages API's event stream onto the canonical {@linkcode RunStreamEvent}s:
 * {@linkcode mapProviderStreamEvent}, {@linkcode readProviderRunId} and the per-stream
 * {@linkcode ProviderStreamState} that assembles tool input from its JSON deltas.
 *
 * A frame without an `event:` line has the WHATWG type `message`, which the messages API never
 * sends (it names every frame after its `data.type`); such frames, like `ping`, map to nothing,
 * as the vendor SDK skips them too.
 *
 * @module
 */
import type { RunStreamEvent, RuntimeUsage } from "../contract.ts";
import type { SseMessage } from "../sse.ts";

interface BlockState {
  type: string;
  id: string;
  name: string;
  parts: string[];
}

let blocksOf: (state: ProviderStreamState) => Map<number, BlockState>;

/**
 * What one messages stream has said so far: the run id from `message_start`, the stop reason and
 * usage from `message_delta`, and each open content block's text or tool-input JSON. Pass one
 * fresh state per stream to {@linkcode mapProviderStreamEvent}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mapProviderStreamEvent, ProviderStreamState } from "@automation/runtime/client";
 * const state = new ProviderStreamState();
 * const frame = (data: object) => ({ event: "x", data: JSON.stringify(data) });
 * mapProviderStreamEvent(frame({ type: "message_start", message: { id: "msg_1" } }), "msg_1", state);
 * assert.deepEqual(state.runId, "msg_1");
 * ```
 */
export class ProviderStreamState {
  /** The run id from `message_start`, or null before it. */
  runId: string | null = null;
  /** The stop reason from `message_delta`, once sent. */
  stopReason: string | undefined = undefined;
  /** Numeric usage fields; `message_delta` values replace those of `message_start`. */
  usage: RuntimeUsage | undefined = undefined;
  readonly #blocks: Map<number, BlockState> = new Map();

  static {
    blocksOf = (state) => state.#blocks;
  }
}

function numericUsage(usage: unknown, into: RuntimeUsage | undefined): RuntimeUsage | undefined {
  if (typeof usage !== "object" || usage === null) return into;
  let result = into;
  for (const [key, value] of Object.entries(usage)) {
    if (typeof value === "number" && Number.isFinite(value)) {
      result ??= {};
      result[key] = value;
    }
  }
  return result;
}

interface WireFrame {
  type?: unknown;
  index?: unknown;
  message?: { id?: unknown; usage?: unknown };
  content_block?: { type?: unknown; id?: unknown; name?: unknown; text?: unknown };
  delta?: { type?: unknown; text?: unknown; partial_json?: unknown; stop_reason?: unknown };
  usage?: unknown;
  error?: { type?: unknown; message?: unknown };
}

function failed(runId: string, type: string, message: string): RunStreamEvent {
  return { type: "run.failed", runId, error: { type, message } };
}

function errorEvent(frame: WireFrame | undefined, data: string, runId: string): RunStreamEvent {
  const error = frame?.error;
  const type = typeof error?.type === "string" ? error.type : "api_error";
  const message = typeof error?.message === "string"
    ? error.message
    : data.slice(0, 1000) || "The provider reported an error in the stream";
  return failed(runId, type, message);
}

function parseFrame(data: string): WireFrame | undefined {
  try {
    const value = JSON.parse(data) as unknown;
    return typeof value === "object" && value !== null ? value as WireFrame : undefined;
  } catch {
    return undefined;
  }
}

function blockStop(
  state: ProviderStreamState,
  index: number,
  runId: string,
): RunStreamEvent | null {
  const blocks = blocksOf(state);
  const block = blocks.get(index);
  if (!block) return null;
  blocks.delete(index);
  if (block.type === "text") {
    return { type: "message.completed", runId, text: block.parts.join("") };
  }
  if (block.type !== "tool_use") return null;
  const json = block.parts.join("");
  let input: unknown = {};
  if (json.trim() !== "") {
    try {
      input = JSON.parse(json);
    } catch {
      return failed(
        runId,
        "invalid_tool_input",
        `Tool input of ${block.name || "a tool"} (${block.id}) is not valid JSON`,
      );
    }
  }
  return {
    type: "tool.call",
    runId,
    id: block.id,
    name: block.name,
    input,
    needsConfirmation: false,
  };
}

/**
 * Maps one frame of a messages stream to a canonical run event, or null when the frame carries
 * nothing for the caller. Dispatch follows the vendor SDK: frames without an `event:` line and
 * `event: ping` are skipped, `event: error` is a failure, and otherwise the JSON `type` decides.
 *
 * | Frame | Result |
 * |---|---|
 * | `message_start`, `ping`, `content_block_start`, `message_delta` | null |
 * | `content_block_delta` with `text_delta` | `message.delta {text}` |
 * | `content_block_delta` with `input_json_delta` and other deltas | null (the state appends the JSON) |
 * | `content_block_stop` | null without a state; with one, the block's content is complete there: a `tool_use` block gives `tool.call` with its input parsed from the assembled deltas, a `text` block gives `message.completed {text}`, other blocks null |
 * | `message_stop` | `run.completed` (with the state's `stopReason` and `usage`) |
 * | `error` | `run.failed {error: {type, message}}` |
 * | a frame whose data is not JSON | `run.failed` with type `invalid_stream_event` |
 *
 * Without a `state` the mapping is pure per frame; with one (what `streamRun` uses), the state
 * also records the run id, stop reason, usage and the open blocks.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mapProviderStreamEvent } from "@automation/runtime/client";
 * const event = mapProviderStreamEvent({
 *   event: "content_block_delta",
 *   data: '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}',
 * }, "msg_1");
 * assert.deepEqual(event, { type: "message.delta", runId: "msg_1", text: "Hi" });
 * ```
 */
export function mapProviderStreamEvent(
  sse: SseMessage,
  runId: string,
  state?: ProviderStreamState,
): RunStreamEvent | null {
  // By the WHATWG rules a frame without an `event:` line has the type `message`. The messages API
  // names every frame (`event: <data.type>`), so `message` is never one of its events; the vendor
  // SDK skips such frames, and so does this mapping, to surface the same results.
  const name = sse.event ?? "message";
  if (name === "message" || name === "ping") return null;
  if (sse.data === "") {
    return name === "error"
      ? failed(runId, "api_error", "The provider reported an error in the stream")
      : null;
  }
  const frame = parseFrame(sse.data);
  if (name === "error") return errorEvent(frame, sse.data, runId);
  if (!frame) {
    return failed(runId, "invalid_stream_event", `Stream event ${name} is not a JSON object`);
  }
  switch (frame.type) {
    case "content_block_delta": {
      const delta = frame.delta;
      if (delta?.type === "text_delta" && typeof delta.text === "string") {
        if (state) blocksOf(state).get(frame.index as number)?.parts.push(delta.text);
        return { type: "message.delta", runId, text: delta.text };
      }
      if (state && delta?.type === "input_json_delta" && typeof delta.partial_json === "string") {
        blocksOf(state).get(frame.index as number)?.parts.push(delta.partial_json);
      }
      return null;
    }
    case "message_start":
      if (state) {
        if (typeof frame.message?.id === "string") state.runId = frame.message.id;
        state.usage = numericUsage(frame.message?.usage, state.usage);
      }
      return null;
    case "content_block_start":
      if (state && typeof frame.index === "number") {
        const block = frame.content_block;
        const type = typeof block?.type === "string" ? block.type : "unknown";
        const parts: string[] = [];
        if (type === "text" && typeof block?.text === "string" && block.text !== "") {
          parts.push(block.text);
        }
        blocksOf(state).set(frame.index, {
          type,
          id: typeof block?.id === "string" ? block.id : "",
          name: typeof block?.name === "string" ? block.name : "",
          parts,
        });
      }
      return null;
    case "content_block_stop":
      return state && typeof frame.index === "number" ? blockStop(state, frame.index, runId) : null;
    case "message_delta":
      if (state) {
        if (typeof frame.delta?.stop_reason === "string") {
          state.stopReason = frame.delta.stop_reason;
        }
        state.usage = numericUsage(frame.usage, state.usage);
      }
      return null;
    case "message_stop": {
      const event: RunStreamEvent = { type: "run.completed", runId };
      if (state?.stopReason !== undefined) event.stopReason = state.stopReason;
      if (state?.usage !== undefined) event.usage = { ...state.usage };
      return event;
    }
    case "error":
      return errorEvent(frame, sse.data, runId);
    default:
      return null;
  }
}

/**
 * Reads the run id (the message id) from a `message_start` frame; null for any other frame.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readProviderRunId } from "@automation/runtime/client";
 * const id = readProviderRunId({
 *   event: "message_start",
 *   data: '{"type":"message_start","message":{"id":"msg_01","content":[]}}',
 * });
 * assert.deepEqual(id, "msg_01");
 * ```
 */
export function readProviderRunId(sse: SseMessage): string | null {
  if (sse.event === undefined || sse.event === "ping" || sse.event === "error") return null;
  const frame = parseFrame(sse.data);
  if (frame?.type !== "message_start") return null;
  const id = frame.message?.id;
  return typeof id === "string" && id !== "" ? id : null;
}
