/**
 * Changing a run's record when others may write it too. A run's tail (on any replica), the routes
 * that cancel and message it, and refreshes from the provider all write the same record; each
 * reads it, derives a new one and writes it back. {@linkcode changeRun} makes that a
 * compare-and-set (`store.runs.update` with the record it read): when another writer got there
 * between the read and the write, it reads again and derives again, so no writer's change is
 * overwritten by a record derived from an older one.
 *
 * It is also where a run's state changes reach the activity log: a write that changes the
 * record's `state` carries the `run.state` entry (with the state before and after) in the same
 * store write, whichever writer made it. A caller's own entries (the tail's `tool.pending`) ride
 * on the same write; when there is nothing to write to the record they are appended on their own.
 *
 * @module
 */
import type { ActivityInput, Store, StoredRunRecord } from "../store/types.ts";
import { StoreUnavailableError } from "../store/types.ts";

/** Reads before giving up: each failed one means another writer committed in between. */
const MAX_ATTEMPTS = 50;

/**
 * The `run.state` entry of a change from `before` to `after`, or none when the state stays.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stateActivity } from "./_change_run.ts";
 * const run = {
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e", state: "running" as const,
 *   lastEventSeq: 0, createdAt: "t", updatedAt: "t",
 * };
 * assert.deepEqual(stateActivity(run, { ...run, lastEventSeq: 3 }), []);
 * assert.equal(stateActivity(run, { ...run, state: "completed" })[0].type, "run.state");
 * ```
 */
export function stateActivity(before: StoredRunRecord, after: StoredRunRecord): ActivityInput[] {
  if (before.state === after.state) return [];
  return [{
    type: "run.state",
    at: after.updatedAt,
    runId: after.runId,
    principalId: after.principalId,
    state: after.state,
    previousState: before.state,
  }];
}

/**
 * Writes `change(record)` over a run's record, deriving it again from a fresh read whenever
 * another writer changed the record first. `change` returns null when there is nothing to write.
 * `read` is the record as the caller already read it: the first attempt starts from it rather
 * than reading again (a stale one only costs that attempt). `activity` rides on the write (or is
 * appended on its own when nothing is written), beside the `run.state` entry of a state change.
 * Returns the record as it now stands, or null when the run is gone.
 *
 * @example
 * ```ts ignore
 * await changeRun(store, runId, (record) => ({ ...record, state: "cancelled" }));
 * ```
 */
export async function changeRun(
  store: Store,
  runId: string,
  change: (record: StoredRunRecord) => StoredRunRecord | null,
  read?: StoredRunRecord,
  activity: readonly ActivityInput[] = [],
): Promise<StoredRunRecord | null> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const record = attempt === 0 && read !== undefined ? read : await store.runs.get(runId);
    if (record === null) return null;
    const changed = change(record);
    if (changed === null) {
      if (activity.length > 0) await store.activity.append(activity);
      return record;
    }
    const entries = [...stateActivity(record, changed), ...activity];
    if (await store.runs.update(changed, record, entries)) return changed;
  }
  throw new StoreUnavailableError("The run record changed too often to be updated");
}
