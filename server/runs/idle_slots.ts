/**
 * Idle sessions of revoked or expired principals give their active-run slots back (rule 8 of
 * `run_state.ts`). A session created without a turn holds a slot while it waits for its first;
 * once its owner is revoked or expired nobody but an admin can use it, so the slot returns to the
 * service-wide limit. Three paths release them:
 *
 * - a revocation (`DELETE /v1/principals/{id}`, also through MCP), for that principal, right
 *   after the revoking write and before it answers;
 * - a start or a waking follow-up that finds the service-wide limit full (`_reservations.ts`),
 *   for every principal: it catches expiries, which no write marks, and a revocation whose
 *   release never happened (its process stopped in between). The reservation is tried again
 *   once when a slot was released;
 * - the periodic store cleanup (every `cleanupIntervalMs`), for every principal, before it
 *   purges the records of long-retired principals (a session whose owner's record is gone is no
 *   longer known to be abandoned).
 *
 * Each release is one compare-and-set write of the run's record (`store.runs.update`), which
 * frees the slot and moves both counters in the same atomic step, on either backend, so every
 * replica sees it before the next reservation; a first turn that got there first keeps its run.
 * The session itself stays at the provider: it is the principal's, and an admin may still read
 * or continue it (a first turn then reserves a slot like a follow-up that wakes a finished run).
 *
 * @module
 */
import type { PrincipalRecord, Store } from "../store/types.ts";
import { parseRfc3339 } from "../time.ts";
import { changeRun } from "./_change_run.ts";
import { afterOwnerGone } from "./run_state.ts";

/** Most idle sessions one call looks at (a bound on its reads; more are released next time). */
export const MAX_IDLE_RELEASED = 1000;

/**
 * Whether a principal's record says it is gone: revoked, or expired at `now` (ms). A missing
 * record is not (the bootstrap principal has none).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isOwnerGone } from "./idle_slots.ts";
 * const at = Date.parse("2026-01-01T00:00:00Z");
 * const owner = { revokedAt: null, expiresAt: "2026-01-02T00:00:00Z" };
 * assert.equal(isOwnerGone(owner, at), false);
 * assert.equal(isOwnerGone(owner, at + 86_400_000), true);
 * assert.equal(isOwnerGone({ ...owner, revokedAt: "2026-01-01T00:00:00Z" }, at), true);
 * assert.equal(isOwnerGone(null, at), false);
 * ```
 */
export function isOwnerGone(
  owner: Pick<PrincipalRecord, "revokedAt" | "expiresAt"> | null,
  now: number,
): boolean {
  if (owner === null) return false;
  return owner.revokedAt !== null || !(now < (parseRfc3339(owner.expiresAt) ?? Number.NaN));
}

/** Options of {@linkcode releaseIdleSlots}. */
export interface ReleaseIdleOptions {
  /** The one principal whose idle sessions to look at (a revocation); all when absent. */
  principalId?: string;
  /** The clock, ms since the epoch. */
  now: number;
}

/**
 * Ends the wait of the idle sessions whose owner is revoked or expired (of one principal, or of
 * all), freeing their slots; returns how many it released.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { releaseIdleSlots } from "./idle_slots.ts";
 * import { openKvStore } from "../store/mod.ts";
 * const store = await openKvStore({ path: ":memory:", namespace: "0".repeat(32) });
 * assert.equal(await releaseIdleSlots(store, { now: Date.now() }), 0);
 * await store.close();
 * ```
 */
export async function releaseIdleSlots(
  store: Store,
  options: ReleaseIdleOptions,
): Promise<number> {
  const idle = await store.runs.idleRuns(options.principalId ?? null, MAX_IDLE_RELEASED);
  const owners = new Map<string, Promise<boolean>>();
  const gone = (principalId: string): Promise<boolean> => {
    let known = owners.get(principalId);
    if (known === undefined) {
      known = store.principals.get(principalId).then((owner) => isOwnerGone(owner, options.now));
      owners.set(principalId, known);
    }
    return known;
  };
  const at = new Date(options.now).toISOString();
  let released = 0;
  for (const record of idle) {
    if (!await gone(record.principalId)) continue;
    let changed = false;
    await changeRun(store, record.runId, (current) => {
      const next = afterOwnerGone(current, at);
      changed = next !== null;
      return next;
    }, record);
    if (changed) released++;
  }
  return released;
}
