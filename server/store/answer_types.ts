/**
 * The tool-answer part of the run store: one record per `(runId, toolUseId)` that makes sure a
 * pending tool request gets exactly one answer across replicas, and the ids of accepted provider
 * webhook deliveries.
 *
 * A tool answer goes through three steps, each one atomic store write:
 *
 * 1. `AnswerStore.claim` creates the record in state `claimed` with a fresh
 *    token, unless one exists. A claim older than `staleMs` (its replica died between claim and
 *    send) is handed to the new caller in the same write, which then learns the old claim
 *    (`recovered`) and must check the provider's history before sending.
 * 2. The caller sends the answer to the provider.
 * 3. `AnswerStore.complete` turns the record into `answered` (only while the
 *    caller's token still holds it); a failed send calls `AnswerStore.release`
 *    instead, which deletes the record so a retry can claim it again.
 *
 * Records are kept 7 days after they were written last; webhook ids 7 days after delivery.
 *
 * @module
 */

import type { ToolAnswerResult, ToolRequestKind } from "../../wire/mod.ts";

export type { ToolAnswerResult, ToolRequestKind } from "../../wire/mod.ts";

/**
 * What an answer answers: a tool request (`confirmation`, `custom_tool`), or `tool_result`, the
 * result of a tool the client runs itself (a self-hosted environment's `agent.tool_use`,
 * answered with `user.tool_result` through the provider's own API).
 */
export type ToolAnswerKind = ToolRequestKind | "tool_result";

/** One tool answer as stored. */
export interface ToolAnswerRecord {
  /** The run (provider session id). */
  runId: string;
  /** The tool-use event id. */
  toolUseId: string;
  /** What kind of request it answers. */
  kind: ToolAnswerKind;
  /** `claimed` while being sent; `answered` once the provider took it. */
  state: "claimed" | "answered";
  /** The claim's token (opaque; proves ownership of the claim). */
  token: string;
  /** Who answers (a principal id, or `runtime` for the fail-closed default). */
  principalId: string;
  /** The answer. */
  result: ToolAnswerResult;
  /** When the claim was taken, ms since the epoch. */
  claimedAt: number;
  /** RFC 3339 time the answer was recorded (state `answered`). */
  answeredAt?: string;
}

/** Parameters of `AnswerStore.claim`. */
export interface ToolAnswerClaimParams {
  /** The run. */
  runId: string;
  /** The tool-use event id. */
  toolUseId: string;
  /** What kind of request it answers. */
  kind: ToolAnswerKind;
  /** Who answers. */
  principalId: string;
  /** The answer about to be sent. */
  result: ToolAnswerResult;
  /** Current time, ms since the epoch. */
  now: number;
  /** A claim older than this (ms) is taken over. */
  staleMs: number;
}

/** What `AnswerStore.claim` found. */
export type ToolAnswerClaim =
  /**
   * The caller holds the claim under `token`. `recovered` is the stale claim it replaced: its
   * answer may have reached the provider, so check the history before sending.
   */
  | { state: "claimed"; token: string; recovered?: ToolAnswerRecord }
  /** Someone answered before, or is sending an answer now (a live claim). */
  | { state: "taken"; record: ToolAnswerRecord };

/** How long answers and webhook ids are kept: 7 days. */
export const ANSWER_RETENTION_MS = 7 * 86_400_000;
