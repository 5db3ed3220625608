/**
 * Changing a run's record when others may write it too. A run's tail (on any replica), the routes
 * that cancel and message it, and refreshes from the provider all write the same record; each
 * reads it, derives a new one and writes it back. {@linkcode changeRun} makes that a
 * compare-and-set (`store.runs.update` with the record it read): when another writer got there
 * between the read and the write, it reads again and derives again, so no writer's change is
 * overwritten by a record derived from an older one.
 *
 * @module
 */
import type { Store, StoredRunRecord } from "../store/types.ts";
import { StoreUnavailableError } from "../store/types.ts";

/** Reads before giving up: each failed one means another writer committed in between. */
const MAX_ATTEMPTS = 50;

/**
 * Writes `change(record)` over a run's record, deriving it again from a fresh read whenever
 * another writer changed the record first. `change` returns null when there is nothing to write.
 * `read` is the record as the caller already read it: the first attempt starts from it rather
 * than reading again (a stale one only costs that attempt). Returns the record as it now stands,
 * or null when the run is gone.
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
): Promise<StoredRunRecord | null> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const record = attempt === 0 && read !== undefined ? read : await store.runs.get(runId);
    if (record === null) return null;
    const changed = change(record);
    if (changed === null) return record;
    if (await store.runs.update(changed, record)) return changed;
  }
  throw new StoreUnavailableError("The run record changed too often to be updated");
}
