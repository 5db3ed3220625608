/**
 * Migration 18: appends fenced by the tail lease (see `server/store/events.ts`).
 *
 * - `automation_runtime_append_held_events(p_namespace, p_run, p_holder, p_events, p_native)`:
 *   migration 13's append, made only while `p_holder` holds the run's tail lease. The lease row
 *   is locked (`FOR SHARE`) before the append, so a takeover by another holder (which updates the
 *   row) waits for the append to commit, and an append after the takeover sees the new holder.
 *   A holder that does not hold the lease gets one row of kind `l` and nothing is written. The
 *   lease's time is not compared with the database's clock: `lease_until` is written by the
 *   replicas' clocks, and a holder's appends only compete with another holder's once that one
 *   took the lease, which the holder check sees.
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds the fenced append function.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration018 } from "./018_fenced_appends.ts";
 * assert.equal(migration018.version, 18);
 * ```
 */
export const migration018: Migration = Object.freeze({
  version: 18,
  name: "fenced_appends",
  sql: `
CREATE FUNCTION automation_runtime_append_held_events(
  p_namespace text, p_run text, p_holder text, p_events jsonb, p_native jsonb
) RETURNS TABLE (kind text, seq bigint, id text, at text, event jsonb, type text, body text)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM 1 FROM automation_runtime_run_leases l
  WHERE l.namespace = p_namespace AND l.run_id = p_run AND l.holder = p_holder
  FOR SHARE;
  IF NOT FOUND THEN
    kind := 'l';
    RETURN NEXT;
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM automation_runtime_append_events(p_namespace, p_run, p_events, p_native);
END
$fn$;
`,
});
