/**
 * Migration 9: runs indexed by state and by end, and idempotency claims that began their effect.
 *
 * - `automation_runtime_runs_by_state` and `automation_runtime_runs_by_principal_state`: a
 *   state-filtered list (of every principal, or of one) reads only the runs in that state, newest
 *   first, instead of every run ever stored.
 * - `automation_runtime_runs_by_end`: the retention purge finds finished runs by their end time
 *   (`record->>'endedAt'`, compared byte-wise like every other RFC 3339 text here).
 * - `automation_runtime_idempotency.begun`: the claim's request reached its point of no return
 *   (a provider call that may take effect): such a claim is never taken over, so a retry with
 *   the key never repeats the effect (`IdempotencyStore.begin`).
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds the run indexes and the `begun` column.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration009 } from "./009_runs_and_effects.ts";
 * assert.equal(migration009.name, "runs_and_effects");
 * ```
 */
export const migration009: Migration = Object.freeze({
  version: 9,
  name: "runs_and_effects",
  sql: `
CREATE INDEX automation_runtime_runs_by_state ON automation_runtime_runs
  (namespace, state, created_at COLLATE "C" DESC, run_id COLLATE "C" DESC);

CREATE INDEX automation_runtime_runs_by_principal_state ON automation_runtime_runs
  (namespace, principal_id, state, created_at COLLATE "C" DESC, run_id COLLATE "C" DESC);

CREATE INDEX automation_runtime_runs_by_end ON automation_runtime_runs
  (namespace, ((record->>'endedAt') COLLATE "C"))
  WHERE state IN ('completed', 'failed', 'cancelled');

ALTER TABLE automation_runtime_idempotency
  ADD COLUMN begun boolean NOT NULL DEFAULT false;
`,
});
