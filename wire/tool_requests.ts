/**
 * A run's tool requests on the wire: what waits for an answer, the bodies that answer it, and
 * the recorded answers.
 *
 * - `GET /v1/runs/{runId}/pending` answers a {@linkcode PendingToolRequestList};
 * - `GET /v1/pending` (every run the caller may read) answers an {@linkcode InboxPage} of
 *   {@linkcode InboxItem}s;
 * - `POST /v1/runs/{runId}/tool-confirmations` takes a {@linkcode ConfirmToolBody} and answers a
 *   {@linkcode ToolConfirmation};
 * - `POST /v1/runs/{runId}/custom-tool-results` takes a {@linkcode RespondCustomToolBody} and
 *   answers a {@linkcode CustomToolAnswer};
 * - `GET /v1/runs/{runId}/answers` answers a {@linkcode RecordedToolAnswerList}: who answered
 *   what.
 *
 * @module
 */
import type { ToolAnswerResult } from "./activity.ts";

/**
 * The kinds of tool request: `confirmation` (a tool call the agent may run once allowed) and
 * `custom_tool` (a tool the caller runs and answers with its result).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TOOL_REQUEST_KINDS } from "./tool_requests.ts";
 * assert.deepEqual([...TOOL_REQUEST_KINDS], ["confirmation", "custom_tool"]);
 * ```
 */
export const TOOL_REQUEST_KINDS = ["confirmation", "custom_tool"] as const;

/** What kind of tool request: one of {@linkcode TOOL_REQUEST_KINDS}. */
export type ToolRequestKind = typeof TOOL_REQUEST_KINDS[number];

/** The answers to a tool confirmation: run the tool, or not. */
export const TOOL_CONFIRMATION_RESULTS = ["allow", "deny"] as const;

/** An answer to a tool confirmation: one of {@linkcode TOOL_CONFIRMATION_RESULTS}. */
export type ToolConfirmationResult = typeof TOOL_CONFIRMATION_RESULTS[number];

/** A tool request of a run waiting for an answer. */
export interface PendingToolRequest {
  /** The tool-use id: what an answer names. */
  toolUseId: string;
  /** `confirmation` (allow or deny it) or `custom_tool` (send its result). */
  kind: ToolRequestKind;
  /** The tool's name. */
  name: string;
  /** The tool's input. */
  input: unknown;
  /** RFC 3339 time the agent asked. */
  requestedAt: string;
}

/** The answer of `GET /v1/runs/{runId}/pending`. */
export interface PendingToolRequestList {
  /** The run's tool requests waiting for an answer, in the order they were made. */
  pending: PendingToolRequest[];
}

/**
 * A pending tool request in the cross-run inbox (`GET /v1/pending`): the request, when the
 * runtime will answer it by itself, and what the run is.
 */
export interface InboxItem extends PendingToolRequest {
  /** The run waiting. */
  runId: string;
  /**
   * RFC 3339 time the runtime answers the request by itself if no one does: a confirmation is
   * denied, a custom tool answered with an error result (the fail-closed default).
   */
  deniedAt: string;
  /**
   * Whether `input` was cut: a tool input longer than 16 KiB of JSON is kept as the text of its
   * first 16 KiB (the whole input is in the run's event log, a `tool.call` event with this id).
   */
  inputTruncated?: boolean;
  /** The run's title, when it was given one. */
  title?: string;
  /** The agent the run runs. */
  agentId: string;
  /** The principal that started the run. */
  principalId: string;
  /** That principal's name, when it has one. */
  principalName?: string;
}

/** The query of `GET /v1/pending`. */
export interface InboxQuery {
  /** Runs per page, 1 to 100 (service default 50); each run brings all its pending requests. */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

/** One page of `GET /v1/pending`. */
export interface InboxPage {
  /**
   * The pending requests of the page's runs (runs newest first, each run's requests in the
   * order they were made).
   */
  pending: InboxItem[];
  /** The cursor of the next page, or null on the last page. */
  nextCursor: string | null;
  /**
   * The activity log's last seq when the page was read: follow `GET /v1/activity` after it
   * (`?after=` or `Last-Event-ID`) to miss no change made since.
   */
  activitySeq: number;
}

/** The body of `POST /v1/runs/{runId}/tool-confirmations`. */
export interface ConfirmToolBody {
  /** The tool-use id. */
  toolUseId: string;
  /** Run the tool, or not. */
  result: ToolConfirmationResult;
  /** Shown to the agent on deny (only a deny carries one). */
  denyMessage?: string;
}

/** The body of `POST /v1/runs/{runId}/custom-tool-results`. */
export interface RespondCustomToolBody {
  /** The custom-tool-use id. */
  toolUseId: string;
  /** The result: content blocks (each with a `type`), such as `{type: "text", text}`. */
  content: Record<string, unknown>[];
  /** Whether the tool failed. */
  isError?: boolean;
}

/** A recorded tool confirmation: the answer of `POST /v1/runs/{runId}/tool-confirmations`. */
export interface ToolConfirmation {
  /** The tool-use id. */
  toolUseId: string;
  /** The decision sent. */
  result: ToolConfirmationResult;
  /** The principal that answered. */
  answeredBy: string;
  /** RFC 3339 time it was recorded. */
  answeredAt: string;
}

/** A recorded custom tool result: the answer of `POST /v1/runs/{runId}/custom-tool-results`. */
export interface CustomToolAnswer {
  /** The custom-tool-use id. */
  toolUseId: string;
  /** The principal that answered. */
  answeredBy: string;
  /** RFC 3339 time it was recorded. */
  answeredAt: string;
}

/** A tool request's recorded answer: an entry of `GET /v1/runs/{runId}/answers`. */
export interface RecordedToolAnswer {
  /** The tool-use id. */
  toolUseId: string;
  /** What kind of request it answered. */
  kind: ToolRequestKind;
  /** The answer. */
  result: ToolAnswerResult;
  /**
   * Who answered: a principal id, `runtime` for the fail-closed default, `external` for an
   * answer sent outside the gateway.
   */
  answeredBy: string;
  /** The answering principal's name, when it has one. */
  answeredByName?: string;
  /** RFC 3339 time it was recorded. */
  answeredAt: string;
}

/** The answer of `GET /v1/runs/{runId}/answers`. */
export interface RecordedToolAnswerList {
  /** The run's answered tool requests, oldest answer first. */
  answers: RecordedToolAnswer[];
}
