/**
 * The activity feed on the wire: `GET /v1/activity` streams the changes of every run the caller
 * may read (its own runs; every run for approvers and admins), one SSE frame each
 * (`id: <seq>`, `event: <type>`, `data: <ActivityEvent JSON>`), resumable with `Last-Event-ID`.
 *
 * The feed is a small index of changes across runs, not the runs' event logs: it says that a
 * run was created or changed state, that a tool request of it waits for an answer, or that one
 * was answered and by whom. What a change holds in full (a message, a tool's input) is read from
 * the run's own routes (`GET /v1/runs/{runId}/events`, `GET /v1/pending`).
 *
 * | `type` | when | carries |
 * |---|---|---|
 * | `run.created` | a run was started | `state`, `agentId`, `title` |
 * | `run.state` | a run's state changed | `state`, `previousState` |
 * | `tool.pending` | a tool request waits for an answer | `toolUseId`, `kind`, `name`, `requestedAt`, `deniedAt` |
 * | `tool.answered` | a tool request was answered | `toolUseId`, `kind`, `result`, `answeredBy`, `answeredByName` |
 *
 * Every event carries `seq` (its position in the service's one activity log, increasing, the
 * SSE `id`), `at`, `runId` and `principalId` (the principal that owns the run).
 *
 * @module
 */
import type { RuntimeRunState } from "../client/contract.ts";
import type { ToolRequestKind } from "./tool_requests.ts";

/**
 * Every type of activity event, in canonical order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ACTIVITY_TYPES } from "./activity.ts";
 * assert.deepEqual([...ACTIVITY_TYPES], ["run.created", "run.state", "tool.pending", "tool.answered"]);
 * ```
 */
export const ACTIVITY_TYPES = [
  "run.created",
  "run.state",
  "tool.pending",
  "tool.answered",
] as const;

/** The type of an activity event: one of {@linkcode ACTIVITY_TYPES}. */
export type ActivityType = typeof ACTIVITY_TYPES[number];

/**
 * The answers a tool request can get: `allow` or `deny` for a confirmation, `ok` or `error` for
 * a custom tool's result.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TOOL_ANSWER_RESULTS } from "./activity.ts";
 * assert.deepEqual([...TOOL_ANSWER_RESULTS], ["allow", "deny", "ok", "error"]);
 * ```
 */
export const TOOL_ANSWER_RESULTS = ["allow", "deny", "ok", "error"] as const;

/** The answer a tool request got: one of {@linkcode TOOL_ANSWER_RESULTS}. */
export type ToolAnswerResult = typeof TOOL_ANSWER_RESULTS[number];

/** What every activity event carries. */
export interface ActivityBase {
  /** Position in the service's activity log, from 1, increasing: the SSE `id`. */
  seq: number;
  /** RFC 3339 time of the change. */
  at: string;
  /** The run it concerns. */
  runId: string;
  /** The principal that owns the run (who started it). */
  principalId: string;
}

/** A run was started. */
export interface RunCreatedActivity extends ActivityBase {
  /** `run.created`. */
  type: "run.created";
  /** Its state when recorded. */
  state: RuntimeRunState;
  /** The agent it runs. */
  agentId: string;
  /** Its title, when it was given one. */
  title?: string;
}

/** A run's state changed. */
export interface RunStateActivity extends ActivityBase {
  /** `run.state`. */
  type: "run.state";
  /** The state now. */
  state: RuntimeRunState;
  /** The state before. */
  previousState: RuntimeRunState;
}

/** A tool request of a run waits for an answer. */
export interface ToolPendingActivity extends ActivityBase {
  /** `tool.pending`. */
  type: "tool.pending";
  /** The tool-use id an answer names. */
  toolUseId: string;
  /** `confirmation` or `custom_tool`. */
  kind: ToolRequestKind;
  /** The tool's name. */
  name: string;
  /** RFC 3339 time the agent asked. */
  requestedAt: string;
  /** RFC 3339 time the runtime answers it by itself (deny, or an error result) if no one does. */
  deniedAt: string;
}

/** A tool request of a run was answered. */
export interface ToolAnsweredActivity extends ActivityBase {
  /** `tool.answered`. */
  type: "tool.answered";
  /** The tool-use id. */
  toolUseId: string;
  /** `confirmation` or `custom_tool`. */
  kind: ToolRequestKind;
  /** The answer. */
  result: ToolAnswerResult;
  /** The principal that answered (`runtime`: the fail-closed default; `external`: not the gateway). */
  answeredBy: string;
  /** That principal's name, when it has one. */
  answeredByName?: string;
}

/** One change of the activity feed. */
export type ActivityEvent =
  | RunCreatedActivity
  | RunStateActivity
  | ToolPendingActivity
  | ToolAnsweredActivity;

/** The JSON page of `GET /v1/activity` (`Accept: application/json`). */
export interface ActivityEventPage {
  /** The changes the caller may see after `after`, in order. */
  events: ActivityEvent[];
  /** Pass back as `after` for the next page (it passes changes the caller may not see). */
  nextAfter: number;
}

/** The query of `GET /v1/activity`. */
export interface ActivityQuery {
  /** Send the events after this seq (`Last-Event-ID` wins); absent: only what happens from now. */
  after?: number;
}
