/**
 * Run-state reconciliation: the one set of rules that turns what the gateway learns about a run
 * into its record's next state. A status read from the provider (the read path, `_run_reads.ts`),
 * entries appended to the run's event log (its tail, `tail.ts`), a cancel and a follow-up
 * message all go through these functions; `_change_run.ts` writes their result over the record
 * they were derived from.
 *
 * The rules:
 *
 * 1. A run is active while `queued`, `running` or `requires_action`, and holds an active-run slot
 *    while active; `completed`, `failed` and `cancelled` are terminal, and the store frees the
 *    slot in the same write that records a terminal state.
 * 2. A turn's end, once recorded, stays until a follow-up: no status or entry makes a finished
 *    run active again (that would take its slot back); only a follow-up message does.
 * 3. `turns` counts the events that start a turn the gateway sent (`user.message`,
 *    `user.define_outcome`: the start's, then one per follow-up; a record without it is in its
 *    first turn), as the tail counts them in the session's history. What was learnt during an earlier turn than the
 *    record's (a status read, an entry of the history, before a follow-up was recorded) changes
 *    no state; a record without `turns` has no earlier turn to tell apart.
 * 4. A cancel marks the run `cancelled` at once and remembers it (`cancelRequested`): the end
 *    the provider reports afterwards, `completed` or `failed`, is recorded as `cancelled`.
 * 5. A terminal state records when it was reached (`endedAt`); a follow-up clears it, with the
 *    stop reason and the cancel, and starts the next turn as `running`.
 * 6. A run whose time limit passed is cancelled like a cancel, with `stopReason: "timeLimit"`,
 *    which the provider's report of the interrupted turn's end does not replace.
 * 7. A session started without a turn waits for its first (`awaitingFirstTurn`): it reads
 *    `completed` and holds an active-run slot all the same (`holdsRunSlot`), so a principal's
 *    idle sessions count against its quota. The wait ends with the first turn (a follow-up, rule
 *    5) or when the session is gone or terminated at the provider (a `failed` status or entry:
 *    the run is `failed` then, its slot freed); nothing else the provider reports changes it (an
 *    interrupted idle session is still there).
 * 8. A session whose owner is revoked or expired stops waiting ({@linkcode afterOwnerGone}): no
 *    one but an admin can use it any more, so it gives its slot back. Its run stays `completed`,
 *    ended then; the session itself stays at the provider. A first turn sent to it afterwards
 *    (an admin's) is a follow-up that wakes a finished run (rule 5): it takes a slot again.
 *
 * The caller supplies the time (`at`, RFC 3339): these rules read no clock.
 *
 * @module
 */
import type { RunEventEntry } from "../store/run_event_types.ts";
import {
  ACTIVE_RUN_STATES,
  holdsRunSlot,
  type RuntimeRunState as RunState,
  type StoredRunRecord as RunRecord,
} from "../store/types.ts";

/**
 * Whether a state is terminal (rule 1).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isTerminal } from "./run_state.ts";
 * assert.equal(isTerminal("cancelled"), true);
 * assert.equal(isTerminal("requires_action"), false);
 * ```
 */
export function isTerminal(state: RunState): boolean {
  return !ACTIVE_RUN_STATES.has(state);
}

/**
 * Whether a run has settled: nothing the provider reports can change it until a follow-up. A
 * terminal run has, save a session waiting for its first turn (rule 7), which a status read may
 * still find gone.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isSettled } from "./run_state.ts";
 * const record = {
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e",
 *   state: "completed" as const, lastEventSeq: 0, createdAt: "t", updatedAt: "t",
 * };
 * assert.equal(isSettled(record), true);
 * assert.equal(isSettled({ ...record, awaitingFirstTurn: true }), false);
 * assert.equal(isSettled({ ...record, state: "running" }), false);
 * ```
 */
export function isSettled(record: RunRecord): boolean {
  return !holdsRunSlot(record);
}

/** The record of a session whose wait for its first turn ends as `failed` at `at` (rule 7). */
function waitEnded(current: RunRecord, at: string): RunRecord {
  const { awaitingFirstTurn: _, ...rest } = current;
  return { ...rest, state: "failed", updatedAt: at, endedAt: at };
}

/** The turn a record is in (rule 3): its `turns`, or 1 for a record without them. */
export function turnOf(record: RunRecord): number {
  return record.turns ?? 1;
}

/**
 * Whether something learnt during `turn` belongs to an earlier turn than the record's (rule 3):
 * then it changes no state. Not when the turn is unknown or the record does not count turns.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isEarlierTurn } from "./run_state.ts";
 * const record = {
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e",
 *   state: "running" as const,
 *   lastEventSeq: 0, createdAt: "t", updatedAt: "t", turns: 2,
 * };
 * assert.equal(isEarlierTurn(1, record), true);
 * assert.equal(isEarlierTurn(2, record), false);
 * assert.equal(isEarlierTurn(undefined, record), false);
 * ```
 */
export function isEarlierTurn(turn: number | undefined, record: RunRecord): boolean {
  return turn !== undefined && record.turns !== undefined && turn < record.turns;
}

/**
 * The state a run moves to when `reported` is learnt for the record's current turn, or null when
 * it stays as it is (rules 2 and 4).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nextState } from "./run_state.ts";
 * const record = {
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e",
 *   state: "cancelled" as const, lastEventSeq: 0, createdAt: "t", updatedAt: "t",
 *   cancelRequested: true,
 * };
 * assert.equal(nextState(record, "running"), null);
 * assert.equal(nextState(record, "completed"), "cancelled");
 * ```
 */
export function nextState(record: RunRecord, reported: RunState): RunState | null {
  if (!isTerminal(reported)) return isTerminal(record.state) ? null : reported;
  if (record.cancelRequested === true && (reported === "completed" || reported === "failed")) {
    return "cancelled";
  }
  return reported;
}

/** A run's status as read from the provider. */
export interface StatusReport {
  /** The turn of the record the status was read for (its {@linkcode turnOf} before the read). */
  turn: number;
  /** The state the provider reports (a session the provider no longer knows: `failed`). */
  state: RunState;
  /** Why it stopped, when the provider said. */
  stopReason?: string;
  /** Token usage, when the provider reported it. */
  usage?: Record<string, number>;
}

/**
 * The record after a status read from the provider, or null when there is nothing to write: the
 * status is of an earlier turn, would reopen a finished run, or says nothing new.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { afterStatus } from "./run_state.ts";
 * const record = {
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e",
 *   state: "running" as const,
 *   lastEventSeq: 0, createdAt: "t", updatedAt: "t", turns: 1,
 * };
 * const ended = afterStatus(record, { turn: 1, state: "completed", stopReason: "end_turn" }, "t2");
 * assert.equal(ended?.state, "completed");
 * assert.equal(ended?.endedAt, "t2");
 * assert.equal(afterStatus({ ...record, turns: 2 }, { turn: 1, state: "completed" }, "t2"), null);
 * ```
 */
export function afterStatus(
  current: RunRecord,
  report: StatusReport,
  at: string,
): RunRecord | null {
  // A follow-up sent since the status was read started a turn this status knows nothing of.
  if (isEarlierTurn(report.turn, current)) return null;
  if (current.awaitingFirstTurn === true) {
    return report.state === "failed" ? waitEnded(current, at) : null;
  }
  const state = nextState(current, report.state);
  if (state === null) return null;
  if (
    state === current.state && report.stopReason === current.stopReason &&
    JSON.stringify(report.usage) === JSON.stringify(current.usage)
  ) {
    return null;
  }
  const updated: RunRecord = { ...current, state, updatedAt: at };
  if (report.stopReason !== undefined && !endedByTimeLimit(current)) {
    updated.stopReason = report.stopReason;
  }
  if (report.usage !== undefined) updated.usage = report.usage;
  if (isTerminal(state)) updated.endedAt = at;
  return updated;
}

/**
 * The record after entries appended to the run's log: the last state-bearing entry decides, by
 * the rules of the module doc; `lastEventSeq` follows the newest entry. `turnOfEntry` tells the
 * turn an entry was mapped in (undefined: not known, the entry is taken as current).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { afterEntries } from "./run_state.ts";
 * const record = afterEntries({
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e", state: "running",
 *   lastEventSeq: 0, createdAt: "t", updatedAt: "t",
 * }, [{ seq: 1, sourceId: "x", at: "2026-01-01T00:00:00Z", event: {
 *   type: "run.completed", runId: "sesn_1", stopReason: "end_turn",
 * } }], { at: "2026-01-01T00:00:01Z" });
 * assert.equal(record.state, "completed");
 * assert.equal(record.lastEventSeq, 1);
 * assert.equal(record.endedAt, "2026-01-01T00:00:00Z");
 * ```
 */
export function afterEntries(
  record: RunRecord,
  entries: readonly RunEventEntry[],
  options: { at: string; turnOfEntry?: (entry: RunEventEntry) => number | undefined },
): RunRecord {
  const turnOfEntry = options.turnOfEntry;
  let updated: RunRecord = { ...record };
  for (const entry of entries) {
    const event = entry.event;
    updated.lastEventSeq = Math.max(updated.lastEventSeq, entry.seq);
    if (isEarlierTurn(turnOfEntry?.(entry), record)) continue;
    let reported: RunState | null = null;
    if (event.type === "run.status") reported = event.state;
    else if (event.type === "run.completed") reported = "completed";
    else if (event.type === "run.failed") reported = "failed";
    else if (event.type === "run.cancelled") reported = "cancelled";
    if (reported === null) continue;
    if (updated.awaitingFirstTurn === true) {
      if (reported === "failed") updated = waitEnded(updated, entry.at);
      continue;
    }
    const state = nextState(updated, reported);
    if (state === null) continue;
    if (!isTerminal(state)) {
      updated = { ...updated, state };
      continue;
    }
    updated.state = state;
    updated.endedAt = entry.at;
    if (event.type === "run.completed") {
      if (event.stopReason !== undefined && !endedByTimeLimit(updated)) {
        updated.stopReason = event.stopReason;
      }
      if (event.usage !== undefined) updated.usage = event.usage as Record<string, number>;
    }
  }
  updated.updatedAt = options.at;
  return updated;
}

/**
 * The record after a cancel the provider accepted: `cancelled` at once, remembered (rule 4).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { afterCancel } from "./run_state.ts";
 * const record = afterCancel({
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e", state: "running",
 *   lastEventSeq: 0, createdAt: "t", updatedAt: "t",
 * }, "t2");
 * assert.equal(record.state, "cancelled");
 * assert.equal(record.cancelRequested, true);
 * ```
 */
export function afterCancel(current: RunRecord, at: string): RunRecord {
  return { ...current, state: "cancelled", cancelRequested: true, updatedAt: at, endedAt: at };
}

/**
 * Whether a time limit ended the run: its reason stays over the end the provider reports.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { endedByTimeLimit } from "./run_state.ts";
 * const record = {
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e", state: "cancelled",
 *   lastEventSeq: 0, createdAt: "t", updatedAt: "t", cancelRequested: true,
 * } as const;
 * assert.equal(endedByTimeLimit({ ...record, stopReason: "timeLimit" }), true);
 * assert.equal(endedByTimeLimit(record), false);
 * ```
 */
export function endedByTimeLimit(record: RunRecord): boolean {
  return record.cancelRequested === true && record.stopReason === "timeLimit";
}

/**
 * The record of an active run whose time ran out (its principal's `maxRunSeconds`): cancelled at
 * once like a cancel, with `stopReason: "timeLimit"`; null when it is no longer active.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { afterStatus, afterTimeLimit } from "./run_state.ts";
 * const record = afterTimeLimit({
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e", state: "running",
 *   lastEventSeq: 0, createdAt: "t", updatedAt: "t",
 * }, "t2");
 * assert.equal(record?.state, "cancelled");
 * assert.equal(record?.stopReason, "timeLimit");
 * // The provider's report of the interrupted turn's end keeps the reason.
 * const read = afterStatus(record!, { turn: 1, state: "completed", stopReason: "end_turn" }, "t3");
 * assert.equal(read?.stopReason ?? record?.stopReason, "timeLimit");
 * ```
 */
export function afterTimeLimit(current: RunRecord, at: string): RunRecord | null {
  if (isTerminal(current.state)) return null;
  return { ...afterCancel(current, at), stopReason: "timeLimit" };
}

/**
 * The record after a follow-up message the provider accepted: the next turn (`turns` more, one
 * per event it sent that starts a turn, as the tail counts them), `running` (rule 5), which ends
 * a session's wait for its first turn (rule 7).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { afterFollowUp } from "./run_state.ts";
 * const record = afterFollowUp({
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e", state: "cancelled",
 *   lastEventSeq: 0, createdAt: "t", updatedAt: "t", endedAt: "t", cancelRequested: true, turns: 1,
 * }, "t2");
 * assert.equal(record.state, "running");
 * assert.equal(record.turns, 2);
 * assert.equal("endedAt" in record || "cancelRequested" in record, false);
 * assert.equal(afterFollowUp(record, "t3", 2).turns, 4);
 * ```
 */
export function afterFollowUp(current: RunRecord, at: string, turns = 1): RunRecord {
  const {
    endedAt: _ended,
    stopReason: _stop,
    cancelRequested: _cancel,
    awaitingFirstTurn: _waiting,
    ...rest
  } = current;
  return { ...rest, state: "running", turns: turnOf(current) + turns, updatedAt: at };
}

/**
 * The record of a session waiting for its first turn whose owner was revoked or expired: the wait
 * ends (rule 8), so the write frees its slot; the run reads `completed`, ended at `at`. Null when
 * the session no longer waits (its first turn came first, or it is gone).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { afterOwnerGone } from "./run_state.ts";
 * import { holdsRunSlot } from "../store/types.ts";
 * const idle = {
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e",
 *   state: "completed" as const, lastEventSeq: 0, createdAt: "t", updatedAt: "t",
 *   endedAt: "t", turns: 0, awaitingFirstTurn: true as const,
 * };
 * const released = afterOwnerGone(idle, "t2");
 * assert.equal(released?.state, "completed");
 * assert.equal(released?.endedAt, "t2");
 * assert.equal(holdsRunSlot(released!), false);
 * assert.equal(afterOwnerGone(released!, "t3"), null);
 * ```
 */
export function afterOwnerGone(current: RunRecord, at: string): RunRecord | null {
  if (current.awaitingFirstTurn !== true) return null;
  const { awaitingFirstTurn: _, ...rest } = current;
  return { ...rest, updatedAt: at, endedAt: at };
}
