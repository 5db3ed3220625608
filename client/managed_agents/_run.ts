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
} from "../contract.ts";
import { isTerminalRunStreamEvent } from "../contract.ts";
import { ProviderAbortError, ProviderConnectionError } from "../errors.ts";
import { isObject } from "../guards.ts";
import { RunEventMapper } from "./run_event_mapper.ts";
import { readSessionEventBatches } from "./session_reader.ts";
import { isSkippableEventType } from "./_peek.ts";
import type { ResourceWire } from "./_resource.ts";
import { providerSessionEventsPath } from "./session_events.ts";
import type {
  CreateManagedAgentSessionParams,
  JsonObject,
  ManagedAgentEvent,
  ManagedAgentRequestOptions,
} from "./types.ts";

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
  if (!isObject(metadata)) {
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
      !resources.every(isObject)
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

/** How a session's latest turn ended, read from its history (see {@linkcode readTurnEnd}). */
export interface TurnEnd {
  /** The stop reason type of the latest idle, when the session is idle. */
  stopReason?: string;
  /** Whether a `user.interrupt` came between the turn's `user.message` and its end. */
  interrupted: boolean;
  /** Whether the latest `user.message` has not been answered by a stop yet. */
  pending: boolean;
}

/**
 * Reads how the latest turn of a session ended from its event history, newest first: the latest
 * idle or terminated status, whether a `user.interrupt` preceded it within the turn, and whether
 * a newer `user.message` is still pending. The history is the record that survives processes, so
 * a run reads as cancelled after an interrupt sent by any process or replica.
 */
export async function readTurnEnd(
  resourceWire: ResourceWire,
  sessionId: string,
  status: string | undefined,
  options?: ManagedAgentRequestOptions,
): Promise<TurnEnd> {
  const end: TurnEnd = { interrupted: false, pending: false };
  const recent = await resourceWire.get<{ data?: JsonObject[] }>(
    providerSessionEventsPath(sessionId),
    {
      order: "desc",
      limit: 50,
      types: ["session.status_idle", "session.status_terminated", "user.message", "user.interrupt"],
    },
    options,
  );
  let sawStop = false;
  for (const event of recent?.data ?? []) {
    if (event.type === "session.status_idle" || event.type === "session.status_terminated") {
      if (sawStop) break;
      sawStop = true;
      if (status === "idle" && event.type === "session.status_idle") {
        const reason = event.stop_reason;
        end.stopReason = typeof reason === "string"
          ? reason
          : isObject(reason) && typeof reason.type === "string"
          ? reason.type
          : undefined;
        if (end.stopReason === undefined) delete end.stopReason;
      }
      continue;
    }
    if (event.type === "user.interrupt" && sawStop) end.interrupted = true;
    if (event.type === "user.message") {
      if (!sawStop) end.pending = true;
      break;
    }
  }
  if (!sawStop && status === "idle") end.pending = true;
  return end;
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
  /** Whether the stream was opened with text deltas (`event_deltas[]=agent.message`). */
  deltas?: boolean;
  /**
   * Asked at a run's end when the stream showed no `user.interrupt` for the turn (the stream may
   * have opened after it was sent): whether the session's history shows one.
   */
  interruptedInHistory?: () => Promise<boolean>;
}

/**
 * The run loop's `skip` for the session reader: what maps to nothing, except the echoes that
 * open and interrupt a turn (and, with deltas, the model request end that closes previews), is
 * passed over; usage events are deferred.
 *
 * Speed: a turn's end needs only the latest usage event's counters, so usage frames are not
 * parsed as they come ({@linkcode RunEventMapper} reads the newest when the turn ends, or when
 * its backlog of unread ones is full). In bench/session_stream_bench.ts's stream (1 frame in 10
 * is a usage event), `streamSession` took 0.95× the time of the same loop parsing them (one
 * process, alternating, 60 rounds each: median ratios 0.947, 0.966, 0.944).
 */
function loopSkip(deltas: boolean): (type: string) => boolean | "defer" {
  return (type) => {
    if (type === "user.message" || type === "user.interrupt") return false;
    if (type === "session.usage" || type === "usage") return "defer";
    return isSkippableEventType(type) && !(deltas && type === "span.model_request_end");
  };
}

/**
 * Reads a session stream through the session reader, maps each event and hands the canonical
 * events to the handler until a terminal event (returned) or the end of the stream (terminal
 * null). The body is always released.
 */
export async function runEventLoop(options: EventLoopOptions): Promise<RunStreamResult> {
  const { runId, handlers, signal } = options;
  const onEvent = handlers.onEvent;
  const deltas = options.deltas === true;
  const mapper = new RunEventMapper(runId, deltas);
  const out: RunStreamEvent[] = [];
  try {
    // One asynchronous step per body chunk; the events of a chunk are handled synchronously
    // unless the handler returns a promise, which is awaited before the next event.
    const batches = readSessionEventBatches(options.body, { signal, skip: loopSkip(deltas) });
    for await (const batch of batches) {
      for (let i = 0; i < batch.length; i++) {
        mapper.map(batch[i], out);
        for (let j = 0; j < out.length; j++) {
          let event = out[j];
          if (
            (event.type === "run.completed" ||
              (event.type === "run.failed" && event.error.type === "session_terminated")) &&
            !mapper.interrupted && options.interruptedInHistory !== undefined &&
            await options.interruptedInHistory()
          ) event = mapper.cancelled();
          if (onEvent) {
            const pending = onEvent(event);
            if (pending !== undefined && typeof (pending as Promise<void>).then === "function") {
              await pending;
            }
            if (signal?.aborted) throw new ProviderAbortError({ cause: signal.reason });
          }
          if (isTerminalRunStreamEvent(event)) return { runId, terminal: event };
        }
        // Speed: `out.length = 0` is a runtime call of about 70 ns, once per parsed event (5 ms of
        // bench/session_stream_bench.ts's 100,000 frames); popping its one or two events is not.
        while (out.length !== 0) out.pop();
      }
    }
  } catch (error) {
    throw streamFailure(error, signal);
  }
  return { runId, terminal: null };
}
