/**
 * Migration 13: what the provider's own API at `/provider` needs: the native logs (the provider's
 * own session events beside each run's event log) and principals' agent-override policy.
 *
 * - `automation_runtime_native_events`: one row per native entry, keyed by
 *   `(namespace, run_id, seq)`, with `event_id` (the provider event id) unique within a run and
 *   `body`, the event's JSON text as the provider sent it (`text`, not `jsonb`, which would
 *   reorder its fields).
 * - `automation_runtime_append_events(...)`: appends a batch to both logs under the same
 *   transaction-scoped advisory lock as `automation_runtime_append_run_events`, skipping known
 *   ids, numbering each log after its own last seq, and notifies
 *   `automation_runtime_run_events` once (delivered at commit). One call is one statement.
 *   Rows come back with `kind` `e` (a run event) or `n` (a native entry).
 * - Principals gain `allow_agent_overrides` (null: not allowed).
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds the native log table, the append function of both logs and the override policy column.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration013 } from "./013_provider_interface.ts";
 * assert.equal(migration013.name, "provider_interface");
 * ```
 */
export const migration013: Migration = Object.freeze({
  version: 13,
  name: "provider_interface",
  sql: `
ALTER TABLE automation_runtime_principals
  ADD COLUMN allow_agent_overrides boolean;

CREATE TABLE automation_runtime_native_events (
  namespace text   NOT NULL,
  run_id    text   NOT NULL,
  seq       bigint NOT NULL,
  event_id  text   NOT NULL,
  type      text   NOT NULL,
  body      text   NOT NULL,
  CONSTRAINT automation_runtime_native_events_pkey PRIMARY KEY (namespace, run_id, seq),
  CONSTRAINT automation_runtime_native_events_id UNIQUE (namespace, run_id, event_id)
);

CREATE FUNCTION automation_runtime_append_events(
  p_namespace text, p_run text, p_events jsonb, p_native jsonb
) RETURNS TABLE (kind text, seq bigint, id text, at text, event jsonb, type text, body text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  last_seq bigint;
  last_native bigint;
  item jsonb;
  added integer := 0;
  added_native integer := 0;
BEGIN
  PERFORM pg_advisory_xact_lock(
    hashtextextended('automation_runtime_run_events:' || p_namespace || ':' || p_run, 0));
  SELECT coalesce(max(e.seq), 0) INTO last_seq FROM automation_runtime_run_events e
  WHERE e.namespace = p_namespace AND e.run_id = p_run;
  FOR item IN SELECT value FROM jsonb_array_elements(p_events) LOOP
    IF NOT EXISTS (
      SELECT 1 FROM automation_runtime_run_events e
      WHERE e.namespace = p_namespace AND e.run_id = p_run AND e.source_id = item->>'sourceId'
    ) THEN
      added := added + 1;
      INSERT INTO automation_runtime_run_events (namespace, run_id, seq, source_id, at, event)
      VALUES (p_namespace, p_run, last_seq + added, item->>'sourceId', item->>'at', item->'event');
      kind := 'e';
      seq := last_seq + added;
      id := item->>'sourceId';
      at := item->>'at';
      event := item->'event';
      type := NULL;
      body := NULL;
      RETURN NEXT;
    END IF;
  END LOOP;
  SELECT coalesce(max(n.seq), 0) INTO last_native FROM automation_runtime_native_events n
  WHERE n.namespace = p_namespace AND n.run_id = p_run;
  FOR item IN SELECT value FROM jsonb_array_elements(p_native) LOOP
    IF NOT EXISTS (
      SELECT 1 FROM automation_runtime_native_events n
      WHERE n.namespace = p_namespace AND n.run_id = p_run AND n.event_id = item->>'id'
    ) THEN
      added_native := added_native + 1;
      INSERT INTO automation_runtime_native_events (namespace, run_id, seq, event_id, type, body)
      VALUES (p_namespace, p_run, last_native + added_native, item->>'id', item->>'type',
              item->>'json');
      kind := 'n';
      seq := last_native + added_native;
      id := item->>'id';
      at := NULL;
      event := NULL;
      type := item->>'type';
      body := item->>'json';
      RETURN NEXT;
    END IF;
  END LOOP;
  IF added > 0 OR added_native > 0 THEN
    PERFORM pg_notify('automation_runtime_run_events', p_namespace || ' ' || p_run);
  END IF;
END
$fn$;
`,
});
