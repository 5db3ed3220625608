/**
 * Migration 11: the activity log (changes across runs, for the activity feed and the inbox).
 *
 * - `automation_runtime_activity`: one row per entry, keyed by `(namespace, seq)`, with the run,
 *   its owner, the type, the time, the dedupe `key` (unique within a run when set) and the entry
 *   as JSON.
 * - `automation_runtime_activity_seq`: the last seq of each namespace. Its row is the log's lock:
 *   an append updates it first, so appends of one namespace take turns, each numbering after the
 *   last one committed (a reader never sees seq `n + 1` before `n`), and seqs never go back, even
 *   once the purge emptied the log.
 * - `automation_runtime_append_activity(namespace, entries)`: appends a batch (skipping entries
 *   whose key their run's log holds) and notifies `automation_runtime_activity` (delivered at
 *   commit) with `"<namespace> <last seq>"`. The runs and answers parts call it inside their own
 *   statements, so an entry commits with the change it reports.
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds the activity tables and the append function.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration011 } from "./011_activity.ts";
 * assert.equal(migration011.name, "activity");
 * ```
 */
export const migration011: Migration = Object.freeze({
  version: 11,
  name: "activity",
  sql: `
CREATE TABLE automation_runtime_activity (
  namespace    text   NOT NULL,
  seq          bigint NOT NULL,
  run_id       text   NOT NULL,
  principal_id text   NOT NULL,
  type         text   NOT NULL,
  at           text   NOT NULL,
  key          text,
  entry        jsonb  NOT NULL,
  CONSTRAINT automation_runtime_activity_pkey PRIMARY KEY (namespace, seq)
);

CREATE UNIQUE INDEX automation_runtime_activity_key ON automation_runtime_activity
  (namespace, run_id, key) WHERE key IS NOT NULL;

CREATE INDEX automation_runtime_activity_by_run ON automation_runtime_activity
  (namespace, run_id, seq);

CREATE INDEX automation_runtime_activity_by_principal ON automation_runtime_activity
  (namespace, principal_id, seq);

CREATE TABLE automation_runtime_activity_seq (
  namespace text   NOT NULL,
  last_seq  bigint NOT NULL,
  CONSTRAINT automation_runtime_activity_seq_pkey PRIMARY KEY (namespace)
);

CREATE FUNCTION automation_runtime_append_activity(p_namespace text, p_entries jsonb)
RETURNS SETOF automation_runtime_activity LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_last bigint;
  v_item jsonb;
  v_added integer := 0;
BEGIN
  IF p_entries IS NULL OR jsonb_array_length(p_entries) = 0 THEN
    RETURN;
  END IF;
  INSERT INTO automation_runtime_activity_seq AS s (namespace, last_seq)
  VALUES (p_namespace, 0)
  ON CONFLICT (namespace) DO UPDATE SET last_seq = s.last_seq
  RETURNING s.last_seq INTO v_last;
  FOR v_item IN SELECT value FROM jsonb_array_elements(p_entries) LOOP
    IF v_item->>'key' IS NULL OR NOT EXISTS (
      SELECT 1 FROM automation_runtime_activity
      WHERE namespace = p_namespace AND run_id = v_item->>'runId' AND key = v_item->>'key'
    ) THEN
      v_added := v_added + 1;
      RETURN QUERY
        INSERT INTO automation_runtime_activity
          (namespace, seq, run_id, principal_id, type, at, key, entry)
        VALUES (p_namespace, v_last + v_added, v_item->>'runId', v_item->>'principalId',
                v_item->>'type', v_item->>'at', v_item->>'key',
                v_item || jsonb_build_object('seq', v_last + v_added))
        RETURNING *;
    END IF;
  END LOOP;
  IF v_added > 0 THEN
    UPDATE automation_runtime_activity_seq SET last_seq = v_last + v_added
    WHERE namespace = p_namespace;
    PERFORM pg_notify('automation_runtime_activity', p_namespace || ' ' || (v_last + v_added));
  END IF;
END
$fn$;
`,
});
