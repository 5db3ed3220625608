/**
 * Migration 4: the run event logs and the tail leases.
 *
 * - `automation_runtime_run_events`: one row per log entry, keyed by `(namespace, run_id, seq)`,
 *   with `source_id` (the provider event id) unique within a run.
 * - `automation_runtime_run_leases`: which replica tails a run, and until when.
 * - `automation_runtime_append_run_events(...)`: appends a batch under a transaction-scoped
 *   advisory lock of the run, skipping entries whose source id the log holds, numbering the rest
 *   after the log's last seq, and notifies `automation_runtime_run_events` (delivered at commit)
 *   so subscribers on every replica wake. One call is one statement: no pinned connection.
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds the event log and lease tables and the append function.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration005 } from "./005_events.ts";
 * assert.equal(migration005.name, "events");
 * ```
 */
export const migration005: Migration = Object.freeze({
  version: 5,
  name: "events",
  sql: `
CREATE TABLE automation_runtime_run_events (
  namespace text   NOT NULL,
  run_id    text   NOT NULL,
  seq       bigint NOT NULL,
  source_id text   NOT NULL,
  at        text   NOT NULL,
  event     jsonb  NOT NULL,
  CONSTRAINT automation_runtime_run_events_pkey PRIMARY KEY (namespace, run_id, seq),
  CONSTRAINT automation_runtime_run_events_source UNIQUE (namespace, run_id, source_id)
);

CREATE TABLE automation_runtime_run_leases (
  namespace   text   NOT NULL,
  run_id      text   NOT NULL,
  holder      text   NOT NULL,
  lease_until bigint NOT NULL,
  CONSTRAINT automation_runtime_run_leases_pkey PRIMARY KEY (namespace, run_id)
);

CREATE FUNCTION automation_runtime_append_run_events(
  p_namespace text, p_run text, p_events jsonb
) RETURNS SETOF automation_runtime_run_events LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  last_seq bigint;
  item jsonb;
  added integer := 0;
BEGIN
  PERFORM pg_advisory_xact_lock(
    hashtextextended('automation_runtime_run_events:' || p_namespace || ':' || p_run, 0));
  SELECT coalesce(max(seq), 0) INTO last_seq FROM automation_runtime_run_events
  WHERE namespace = p_namespace AND run_id = p_run;
  FOR item IN SELECT value FROM jsonb_array_elements(p_events) LOOP
    IF NOT EXISTS (
      SELECT 1 FROM automation_runtime_run_events
      WHERE namespace = p_namespace AND run_id = p_run AND source_id = item->>'sourceId'
    ) THEN
      added := added + 1;
      RETURN QUERY
        INSERT INTO automation_runtime_run_events (namespace, run_id, seq, source_id, at, event)
        VALUES (p_namespace, p_run, last_seq + added, item->>'sourceId', item->>'at',
                item->'event')
        RETURNING *;
    END IF;
  END LOOP;
  IF added > 0 THEN
    PERFORM pg_notify('automation_runtime_run_events', p_namespace || ' ' || p_run);
  END IF;
END
$fn$;
`,
});
