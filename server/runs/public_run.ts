/**
 * The public form of a run record: what the gateway answers, the routes write out and the
 * provider's own API reads, without the record's internal fields.
 *
 * @module
 */
import type { StoredRunRecord } from "../store/types.ts";
import type { RunRecord } from "../../wire/mod.ts";

/**
 * The public form of a run record (the internal cancel marker, turn count, provider read times
 * time limit and the wait for a first turn left out).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { publicRun } from "./public_run.ts";
 * const run = publicRun({
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e", state: "cancelled",
 *   lastEventSeq: 0, createdAt: "t", updatedAt: "t", cancelRequested: true,
 * });
 * assert.equal("cancelRequested" in run, false);
 * ```
 */
export function publicRun(record: StoredRunRecord): RunRecord {
  const {
    cancelRequested: _,
    turns: _turns,
    statusReadAt: _status,
    historyReadAt: _history,
    timeLimitAt: _timeLimit,
    awaitingFirstTurn: _waiting,
    ...rest
  } = record;
  return rest;
}
