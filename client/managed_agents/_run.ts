/**
 * Internal pieces of the managed-agents run contract: resolving a run's agent and environment,
 * building the kickoff events, and the stream loop shared by `streamRun` and `streamSession`.
 *
 * @module
 */
import type {
  RunStreamEvent,
  RunStreamHandlers,
  RunStreamResult,
  RuntimeRunStartBody,
  RuntimeUsage,
} from "../contract.ts";
import { isTerminalRunStreamEvent } from "../contract.ts";
import { ProviderAbortError, ProviderConnectionError } from "../errors.ts";
import { readSseBatches, type SseMessage } from "../sse.ts";
import { skippableFrameType } from "./_peek.ts";
import { mapManagedAgentEventObject, numericUsage } from "./stream.ts";
import type { CreateManagedAgentSessionParams, JsonObject, ManagedAgentEvent } from "./types.ts";

/** The defaults a run falls back to. */
export interface RunDefaults {
  agentId?: string;
  environmentId?: string;
}

function fail(message: string): never {
  throw new TypeError(message);
}

/**
 * The session a run creates: `metadata.agent_id` / `environment_id` override the client's
 * defaults; `agent_version`, `resources` and `vault_ids` are optional. `model` and
 * `instructions` are not applied (they live on the agent).
 */
export function resolveRunTarget(
  body: RuntimeRunStartBody,
  defaults: RunDefaults,
): CreateManagedAgentSessionParams {
  if (typeof body !== "object" || body === null) fail("The run body must be an object");
  const metadata = body.metadata ?? {};
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
    fail("metadata must be an object");
  }
  const agentId = metadata.agent_id ?? defaults.agentId;
  const environmentId = metadata.environment_id ?? defaults.environmentId;
  if (typeof agentId !== "string" || agentId === "") {
    fail("No agent: pass metadata.agent_id or set the agentId option");
  }
  if (typeof environmentId !== "string" || environmentId === "") {
    fail("No environment: pass metadata.environment_id or set the environmentId option");
  }
  const params: CreateManagedAgentSessionParams = { agentId, environmentId };
  const version = metadata.agent_version;
  if (version !== undefined) {
    if (!Number.isSafeInteger(version) || (version as number) < 1) {
      fail("metadata.agent_version must be a whole number of at least 1");
    }
    params.agentVersion = version as number;
  }
  const resources = metadata.resources;
  if (resources !== undefined) {
    if (
      !Array.isArray(resources) ||
      !resources.every((r) => typeof r === "object" && r !== null && !Array.isArray(r))
    ) fail("metadata.resources must be an array of objects");
    params.resources = resources as JsonObject[];
  }
  const vaultIds = metadata.vault_ids;
  if (vaultIds !== undefined) {
    if (!Array.isArray(vaultIds) || !vaultIds.every((v) => typeof v === "string" && v !== "")) {
      fail("metadata.vault_ids must be an array of ids");
    }
    params.vaultIds = vaultIds as string[];
  }
  return params;
}

/** The `user.message` events that start a run. Assistant turns cannot be injected. */
export function kickoffEvents(input: RuntimeRunStartBody["input"]): ManagedAgentEvent[] {
  if (typeof input === "string") {
    if (input === "") fail("input must not be empty");
    return [{ type: "user.message", content: [{ type: "text", text: input }] }];
  }
  if (!Array.isArray(input) || input.length === 0) {
    fail("input must be a string or a non-empty array of user messages");
  }
  return input.map((item) => {
    if (typeof item !== "object" || item === null) fail("input items must be objects");
    if (item.role !== "user") {
      fail("A managed-agent session takes only user input: the agent writes its own turns");
    }
    const content = typeof item.content === "string"
      ? [{ type: "text", text: item.content }]
      : item.content;
    if (!Array.isArray(content) || content.length === 0) {
      fail("input content must be text or a non-empty array of content blocks");
    }
    return { type: "user.message", content };
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Turns stream failures into the client's error families. */
export function streamFailure(error: unknown, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted) return new ProviderAbortError({ cause: signal.reason });
  if (error instanceof TypeError) {
    return new ProviderConnectionError("The event stream broke before it ended", { cause: error });
  }
  return error;
}

/** Options of {@linkcode runEventLoop}. */
export interface EventLoopOptions {
  /** Session id (the run id). */
  runId: string;
  /** The open stream body. */
  body: ReadableStream<Uint8Array>;
  /** Handlers of the caller. */
  handlers: RunStreamHandlers;
  /** Caller abort. */
  signal?: AbortSignal;
}

/**
 * Maps session SSE frames to canonical events, remembering the latest `session.usage` (attached
 * to `run.completed`) and the latest `session.error` (which explains a `run.failed` caused by
 * termination). Synchronous, so the hot path stays in one optimizable function.
 */
class FrameMapper {
  readonly #runId: string;
  #usage: RuntimeUsage | undefined;
  #lastError: { type?: string; message: string } | undefined;

  constructor(runId: string) {
    this.#runId = runId;
  }

  map(message: SseMessage): RunStreamEvent | null {
    const data = message.data;
    // Frames that certainly map to nothing (running, thinking, spans, echoes) skip the parse.
    if (data === "" || skippableFrameType(data) !== undefined) return null;
    let raw: Record<string, unknown>;
    try {
      raw = JSON.parse(data);
    } catch {
      return null;
    }
    if (!isObject(raw)) return null;
    if (typeof raw.type !== "string" && message.event) raw = { ...raw, type: message.event };
    const type = raw.type;
    if (type === "session.usage" || type === "usage") {
      this.#usage = numericUsage(raw.usage) ?? this.#usage;
      return null;
    }
    if (type === "session.error") {
      const error = raw.error;
      if (isObject(error) && typeof error.message === "string") {
        this.#lastError = typeof error.type === "string"
          ? { type: error.type, message: error.message }
          : { message: error.message };
      }
      return null;
    }
    const event = mapManagedAgentEventObject(raw, this.#runId);
    if (event === null) return null;
    if (event.type === "run.completed" && this.#usage !== undefined) {
      return { ...event, usage: this.#usage };
    }
    if (
      event.type === "run.failed" && this.#lastError !== undefined &&
      event.error.type === "session_terminated"
    ) return { ...event, error: this.#lastError };
    return event;
  }
}

/**
 * Reads a session stream, maps each frame and hands the canonical events to the handler until a
 * terminal event (returned) or the end of the stream (terminal null). The body is always
 * released.
 */
export async function runEventLoop(options: EventLoopOptions): Promise<RunStreamResult> {
  const { runId, handlers, signal } = options;
  const onEvent = handlers.onEvent;
  const mapper = new FrameMapper(runId);
  try {
    // One asynchronous step per body chunk; the frames of a chunk are handled synchronously
    // unless the handler returns a promise, which is awaited before the next event.
    for await (const batch of readSseBatches(options.body, { signal })) {
      for (let i = 0; i < batch.length; i++) {
        const event = mapper.map(batch[i]);
        if (event === null) continue;
        if (onEvent) {
          const pending = onEvent(event);
          if (pending !== undefined && typeof (pending as Promise<void>).then === "function") {
            await pending;
          }
          if (signal?.aborted) throw new ProviderAbortError({ cause: signal.reason });
        }
        if (isTerminalRunStreamEvent(event)) return { runId, terminal: event };
      }
    }
  } catch (error) {
    throw streamFailure(error, signal);
  }
  return { runId, terminal: null };
}
