/**
 * The run-state rules (`server/runs/run_state.ts`) on their own: what a status read from the
 * provider, entries of the run's log, a cancel and a follow-up do to a run record, that the read
 * path and the tail reach the same state from the same news, and that a session waiting for its
 * first turn keeps waiting (with its slot) until that turn or its end at the provider.
 */
import assert from "node:assert/strict";
import {
  afterCancel,
  afterEntries,
  afterFollowUp,
  afterStatus,
  isSettled,
  isTerminal,
  nextState,
} from "../../server/runs/run_state.ts";
import type { RunEventEntry } from "../../server/store/run_event_types.ts";
import {
  ACTIVE_RUN_STATES,
  type RuntimeRunState as RunState,
  type StoredRunRecord as RunRecord,
} from "../../server/store/types.ts";

const STATES: readonly RunState[] = [...ACTIVE_RUN_STATES, "completed", "failed", "cancelled"];

function run(fields: Partial<RunRecord> = {}): RunRecord {
  return {
    runId: "sesn_1",
    principalId: "p",
    agentId: "agent_1",
    environmentId: "env_1",
    state: "running",
    lastEventSeq: 3,
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
    turns: 1,
    ...fields,
  };
}

/** The log entry that reports `state` (a `run.status`, or the terminal event). */
function entryOf(state: RunState, seq: number, at = "2026-01-01T00:01:00.000Z"): RunEventEntry {
  const runId = "sesn_1";
  switch (state) {
    case "completed":
      return { seq, sourceId: `e${seq}`, at, event: { type: "run.completed", runId } };
    case "failed":
      return {
        seq,
        sourceId: `e${seq}`,
        at,
        event: { type: "run.failed", runId, error: { type: "x", message: "x" } },
      };
    case "cancelled":
      return { seq, sourceId: `e${seq}`, at, event: { type: "run.cancelled", runId } };
    default:
      return { seq, sourceId: `e${seq}`, at, event: { type: "run.status", runId, state } };
  }
}

Deno.test("run state: a status of the record's turn moves it; a terminal one stamps endedAt", () => {
  const ended = afterStatus(
    run(),
    { turn: 1, state: "completed", stopReason: "end_turn", usage: { output_tokens: 5 } },
    "2026-01-01T00:02:00.000Z",
  );
  assert.equal(ended?.state, "completed");
  assert.equal(ended?.stopReason, "end_turn");
  assert.deepEqual(ended?.usage, { output_tokens: 5 });
  assert.equal(ended?.endedAt, "2026-01-01T00:02:00.000Z");
  assert.equal(ended?.updatedAt, "2026-01-01T00:02:00.000Z");
  const waiting = afterStatus(run(), { turn: 1, state: "requires_action" }, "t");
  assert.equal(waiting?.state, "requires_action");
  assert.equal(waiting?.endedAt, undefined);
});

Deno.test("run state: a status read before a follow-up, or one saying nothing new, writes nothing", () => {
  assert.equal(afterStatus(run({ turns: 2 }), { turn: 1, state: "completed" }, "t"), null);
  assert.equal(afterStatus(run(), { turn: 1, state: "running" }, "t"), null);
  // A record without a turn count has no earlier turn to tell apart: the status applies.
  assert.equal(
    afterStatus(run({ turns: undefined }), { turn: 1, state: "completed" }, "t")?.state,
    "completed",
  );
});

Deno.test("run state: a turn's end stays until a follow-up, whatever reports it", () => {
  for (const ended of ["completed", "failed", "cancelled"] as const) {
    const record = run({ state: ended, endedAt: "t0" });
    for (const active of ["queued", "running", "requires_action"] as const) {
      assert.equal(
        afterStatus(record, { turn: 1, state: active }, "t"),
        null,
        `${ended}/${active}`,
      );
      const after = afterEntries(record, [entryOf(active, 4)], { at: "t" });
      assert.equal(after.state, ended, `${ended}/${active}`);
      assert.equal(after.endedAt, "t0");
      assert.equal(after.lastEventSeq, 4, "the log position still moves");
    }
  }
  const resumed = afterFollowUp(
    run({ state: "completed", endedAt: "t0", stopReason: "end_turn" }),
    "t",
  );
  assert.equal(resumed.state, "running");
  assert.equal(resumed.turns, 2);
  assert.equal(resumed.endedAt, undefined);
  assert.equal(resumed.stopReason, undefined);
});

Deno.test("run state: after a cancel, the end the provider reports is recorded as cancelled", () => {
  const cancelled = afterCancel(run(), "2026-01-01T00:03:00.000Z");
  assert.equal(cancelled.state, "cancelled");
  assert.equal(cancelled.cancelRequested, true);
  assert.equal(cancelled.endedAt, "2026-01-01T00:03:00.000Z");
  for (const reported of ["completed", "failed"] as const) {
    assert.equal(nextState(cancelled, reported), "cancelled");
    assert.equal(afterEntries(cancelled, [entryOf(reported, 4)], { at: "t" }).state, "cancelled");
    // Nothing new for the record: the status read writes nothing.
    assert.equal(afterStatus(cancelled, { turn: 1, state: reported }, "t"), null);
  }
  // A follow-up forgets the cancel: the next turn's end is its own.
  const resumed = afterFollowUp(cancelled, "t");
  assert.equal(resumed.cancelRequested, undefined);
  assert.equal(afterEntries(resumed, [entryOf("completed", 5)], { at: "t" }).state, "completed");
});

Deno.test("run state: entries of an earlier turn change no state; the last state-bearing one decides", () => {
  const record = run({ turns: 2 });
  const old = entryOf("completed", 4);
  const turnOfEntry = (entry: RunEventEntry) => entry === old ? 1 : 2;
  const kept = afterEntries(record, [old], { at: "t", turnOfEntry });
  assert.equal(kept.state, "running");
  assert.equal(kept.lastEventSeq, 4);
  const decided = afterEntries(
    record,
    [entryOf("requires_action", 5), entryOf("running", 6), entryOf("completed", 7, "t7")],
    { at: "t8", turnOfEntry },
  );
  assert.equal(decided.state, "completed");
  assert.equal(decided.endedAt, "t7", "the entry's time, not the write's");
  assert.equal(decided.updatedAt, "t8");
  assert.equal(decided.lastEventSeq, 7);
});

Deno.test("run state: the read path and the tail reach the same state from the same report", () => {
  for (const current of STATES) {
    for (const cancelRequested of [false, true]) {
      for (const reported of STATES) {
        const record = run({
          state: current,
          ...(isTerminal(current) ? { endedAt: "t0" } : {}),
          ...(cancelRequested ? { cancelRequested } : {}),
        });
        const byStatus = afterStatus(record, { turn: 1, state: reported }, "t")?.state ??
          record.state;
        const byEntry = afterEntries(record, [entryOf(reported, 4)], { at: "t" }).state;
        assert.equal(byStatus, byEntry, `${current}, cancel ${cancelRequested}, ${reported}`);
        assert.equal(byStatus, nextState(record, reported) ?? record.state);
      }
    }
  }
});

Deno.test("run state: a session waiting for its first turn stays waiting until its first turn, or until it is gone", () => {
  const waiting = run({
    state: "completed",
    turns: 0,
    endedAt: "2026-01-01T00:00:00.000Z",
    awaitingFirstTurn: true,
    lastEventSeq: 0,
  });
  const at = "2026-01-01T00:05:00.000Z";
  assert.equal(isSettled(waiting), false, "a status read may still find it gone");
  // Whatever else the provider says of it (idle, interrupted, running), it keeps waiting.
  for (const state of STATES.filter((state) => state !== "failed")) {
    assert.equal(afterStatus(waiting, { turn: 0, state }, at), null, state);
    const entries = afterEntries(waiting, [entryOf(state, 1)], { at });
    assert.equal(entries.state, "completed", state);
    assert.equal(entries.awaitingFirstTurn, true, state);
    assert.equal(entries.lastEventSeq, 1);
  }
  // Gone (or terminated) at the provider: failed, no longer waiting, so its slot is freed.
  for (
    const ended of [
      afterStatus(waiting, { turn: 0, state: "failed" }, at)!,
      afterEntries(waiting, [entryOf("failed", 1, at)], { at }),
    ]
  ) {
    assert.equal(ended.state, "failed");
    assert.equal(ended.endedAt, at);
    assert.equal("awaitingFirstTurn" in ended, false);
    assert.equal(isSettled(ended), true);
  }
  // Its first turn.
  const woken = afterFollowUp(waiting, at);
  assert.equal(woken.state, "running");
  assert.equal(woken.turns, 1);
  assert.equal("awaitingFirstTurn" in woken, false);
  assert.equal(isSettled(afterStatus(woken, { turn: 1, state: "completed" }, at)!), true);
});
