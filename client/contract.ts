/**
 * The universal run contract every provider client implements: run states, the start body, the
 * canonical stream events, batches and capabilities.
 *
 * @module
 */

/**
 * Every run state, in canonical order: the active ones (see {@linkcode ACTIVE_RUN_STATES}), then
 * the terminal ones. The one list of the states: the runtime service's API, its store, its MCP
 * tools and its OpenAPI document take theirs from here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ACTIVE_RUN_STATES, RUN_STATES } from "@automation/runtime/client";
 * assert.deepEqual(RUN_STATES.filter((state) => !ACTIVE_RUN_STATES.has(state)), [
 *   "completed",
 *   "failed",
 *   "cancelled",
 * ]);
 * ```
 */
export const RUN_STATES = [
  "queued",
  "running",
  "requires_action",
  "completed",
  "failed",
  "cancelled",
] as const;

/** Where a run is in its life: one of {@linkcode RUN_STATES}. */
export type RuntimeRunState = typeof RUN_STATES[number];

/**
 * The states of a run that has not ended (`queued`, `running`, `requires_action`); every other
 * state is terminal. The runtime service counts a run in these states against its active-run
 * quotas.
 */
export const ACTIVE_RUN_STATES: ReadonlySet<RuntimeRunState> = new Set<RuntimeRunState>([
  "queued",
  "running",
  "requires_action",
]);

/** One input item of a run: a role and its content (text or provider content blocks). */
export interface RuntimeRunInput {
  /** Who speaks. */
  role: "user" | "assistant";
  /** Text, or provider-shaped content blocks. */
  content: string | Record<string, unknown>[];
}

/** What starts a run. */
export interface RuntimeRunStartBody {
  /** A prompt, or a conversation. */
  input: string | RuntimeRunInput[];
  /** Model id (the stateless client falls back to its `defaultModel`). */
  model?: string;
  /** System instructions. */
  instructions?: string;
  /** Output token cap (the stateless client falls back to its `defaultMaxTokens`). */
  maxTokens?: number;
  /** Provider-specific metadata (the managed-agents client reads `agent_id`, `environment_id`, …). */
  metadata?: Record<string, unknown>;
}

/** Token usage of a run, where the provider reports it. */
export type RuntimeUsage = Record<string, number>;

/** The state of a run as a client reports it. */
export interface RuntimeRunStatus {
  /** Run id (message id or session id). */
  runId: string;
  /** `started` right after an asynchronous start; a run state otherwise. */
  status: RuntimeRunState | "started";
  /** Final text, when the run is complete and the client has it. */
  output?: string;
  /** Why the run stopped. */
  stopReason?: string;
  /** Token usage. */
  usage?: RuntimeUsage;
}

/** Canonical stream events, each carrying the run id. */
export type RunStreamEvent =
  | { type: "run.started"; runId: string }
  | { type: "message.delta"; runId: string; text: string }
  | { type: "message.completed"; runId: string; text: string }
  | {
    type: "tool.call";
    runId: string;
    id: string;
    name: string;
    input: unknown;
    needsConfirmation: boolean;
  }
  | { type: "tool.result"; runId: string; id?: string; isError: boolean }
  | { type: "run.status"; runId: string; state: RuntimeRunState }
  | { type: "run.completed"; runId: string; stopReason?: string; usage?: RuntimeUsage }
  | { type: "run.failed"; runId: string; error: { type?: string; message: string } }
  | { type: "run.cancelled"; runId: string };

/** The `type` values of {@linkcode RunStreamEvent}. */
export type RunStreamEventType = RunStreamEvent["type"];

/** Callbacks of a streamed run. */
export interface RunStreamHandlers {
  /** Each canonical event in order. An async handler is awaited before the next event. */
  onEvent?: (event: RunStreamEvent) => void | Promise<void>;
}

/** Options of a streamed run. */
export interface RunStreamOptions {
  /** Stops the stream and releases the connection. */
  signal?: AbortSignal;
  /**
   * Managed-agents runs: ask the provider for text deltas (`event_deltas[]=agent.message`), so
   * `message.delta` events come before each `message.completed` and together spell its text.
   * Off by default. The messages client always streams deltas.
   */
  deltas?: boolean;
  /**
   * Beta values for this call's requests, sent first in `provider-beta` (before the client's own
   * and the API group's beta).
   */
  betas?: readonly string[];
  /**
   * Extra headers for this call's requests. Headers the client sets itself (`authorization`,
   * `x-api-key`, `provider-version`, `provider-beta`, `content-type`, `accept`) are a
   * `TypeError`.
   */
  headers?: Record<string, string>;
}

/** What a streamed run resolves to once its stream ends. */
export interface RunStreamResult {
  /** The run id, or null if the stream ended before it was known. */
  runId: string | null;
  /** The terminal event, or null when the stream ended without one. */
  terminal: RunStreamEvent | null;
}

/**
 * Whether an event ends a run: `run.completed`, `run.failed` or `run.cancelled`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isTerminalRunStreamEvent } from "@automation/runtime/client";
 * assert.deepEqual(isTerminalRunStreamEvent({ type: "run.cancelled", runId: "r1" }), true);
 * ```
 */
export function isTerminalRunStreamEvent(event: RunStreamEvent): boolean {
  return event.type === "run.completed" || event.type === "run.failed" ||
    event.type === "run.cancelled";
}

/** The capability names a runtime client may advertise. */
export type RuntimeCapabilityName =
  | "runs"
  | "streaming"
  | "media"
  | "wiki"
  | "agentConfig"
  | "teams"
  | "kanban"
  | "workspace"
  | "operator"
  | "discourse"
  | "batch";

/** Every capability name, in canonical order. */
export const RUNTIME_CAPABILITY_NAMES: readonly RuntimeCapabilityName[] = Object.freeze(
  [
    "runs",
    "streaming",
    "media",
    "wiki",
    "agentConfig",
    "teams",
    "kanban",
    "workspace",
    "operator",
    "discourse",
    "batch",
  ] as const,
);

/** A client's capabilities: each name to whether it is supported. */
export type RuntimeCapabilities = Readonly<Record<RuntimeCapabilityName, boolean>>;

/** One request of a batch. */
export interface RuntimeBatchRequest {
  /** Caller-chosen id, unique in the batch, echoed on its result. */
  customId: string;
  /** The run to perform. */
  body: RuntimeRunStartBody;
}

/** The state of a submitted batch. */
export interface RuntimeBatchStatus {
  /** Batch id. */
  batchId: string;
  /** `in_progress`, `canceling` or `ended`. */
  status: "in_progress" | "canceling" | "ended";
  /** Request counts by outcome. */
  counts: {
    processing: number;
    succeeded: number;
    errored: number;
    canceled: number;
    expired: number;
  };
  /** Where results can be read once ended, when the provider says. */
  resultsUrl?: string | null;
  /** Creation time. */
  createdAt?: string;
  /** End time. */
  endedAt?: string | null;
}

/** The outcome of one batch request. */
export type RuntimeBatchResult =
  | { customId: string; type: "succeeded"; run: RuntimeRunStatus }
  | { customId: string; type: "errored"; error: { type?: string; message: string } }
  | { customId: string; type: "canceled" }
  | { customId: string; type: "expired" };

/** The contract every provider client implements. */
export interface RuntimeClient {
  /** What this client supports. */
  getRuntimeCapabilities(): RuntimeCapabilities;
  /** Starts a run. */
  startRun(body: RuntimeRunStartBody, options?: RunStreamOptions): Promise<RuntimeRunStatus>;
  /** Starts a run and streams its canonical events. */
  streamRun(
    body: RuntimeRunStartBody,
    handlers: RunStreamHandlers,
    options?: RunStreamOptions,
  ): Promise<RunStreamResult>;
  /** Reads a run's state. */
  getRun(runId: string, options?: RunStreamOptions): Promise<RuntimeRunStatus>;
  /** Cancels a run. */
  cancelRun(runId: string, options?: RunStreamOptions): Promise<RuntimeRunStatus>;
  /** Submits a batch. */
  submitBatch(
    requests: RuntimeBatchRequest[],
    options?: RunStreamOptions,
  ): Promise<RuntimeBatchStatus>;
  /** Reads a batch's state. */
  getBatch(batchId: string, options?: RunStreamOptions): Promise<RuntimeBatchStatus>;
  /** Cancels a batch. */
  cancelBatch(batchId: string, options?: RunStreamOptions): Promise<RuntimeBatchStatus>;
  /** Streams a batch's results. */
  getBatchResults(
    batchId: string,
    options?: RunStreamOptions,
  ): AsyncIterable<RuntimeBatchResult>;
}
