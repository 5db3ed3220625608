/**
 * Migration 3 (registered as 2 until the migrations of parallel work are numbered at merge): the
 * run gateway's tables.
 *
 * - Principals gain their run policy: `agent_ids` (null: any agent) and `max_active_runs`.
 * - `automation_runtime_runs`: one row per run, the record as JSON beside the columns its lists
 *   filter and order by.
 * - `automation_runtime_run_slots`: active-run slots (runs, and reservations with a lease).
 * - `automation_runtime_audit`: the append-only audit log.
 * - `automation_runtime_reserve_run_slot(...)`: takes a slot against both quotas under a
 *   namespace-wide transaction lock. Each statement of a PL/pgSQL function takes a fresh snapshot
 *   after the lock is held, so its counts see every reservation committed before it: replicas
 *   reserving at once are serialized and never admit more than the limits.
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds the run policy columns, the runs, slots and audit tables, and the reservation function.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration003 } from "./003_runs.ts";
 * assert.equal(migration003.name, "runs");
 * ```
 */
export const migration003: Migration = Object.freeze({
  version: 3,
  name: "runs",
  sql: `
ALTER TABLE automation_runtime_principals
  ADD COLUMN agent_ids text[],
  ADD COLUMN max_active_runs integer;

CREATE TABLE automation_runtime_runs (
  namespace    text  NOT NULL,
  run_id       text  NOT NULL,
  principal_id text  NOT NULL,
  state        text  NOT NULL,
  created_at   text  NOT NULL,
  record       jsonb NOT NULL,
  CONSTRAINT automation_runtime_runs_pkey PRIMARY KEY (namespace, run_id)
);

CREATE INDEX automation_runtime_runs_by_principal ON automation_runtime_runs
  (namespace, principal_id, created_at COLLATE "C" DESC, run_id COLLATE "C" DESC);

CREATE INDEX automation_runtime_runs_by_time ON automation_runtime_runs
  (namespace, created_at COLLATE "C" DESC, run_id COLLATE "C" DESC);

CREATE TABLE automation_runtime_run_slots (
  namespace    text   NOT NULL,
  principal_id text   NOT NULL,
  slot_id      text   NOT NULL,
  lease_until  bigint,
  CONSTRAINT automation_runtime_run_slots_pkey PRIMARY KEY (namespace, principal_id, slot_id)
);

CREATE TABLE automation_runtime_audit (
  seq            bigint GENERATED ALWAYS AS IDENTITY,
  namespace      text   NOT NULL,
  at             text   NOT NULL,
  action         text   NOT NULL,
  actor_id       text   NOT NULL,
  subject_id     text,
  run_id         text,
  correlation_id text   NOT NULL,
  outcome        text   NOT NULL,
  CONSTRAINT automation_runtime_audit_pkey PRIMARY KEY (seq)
);

CREATE INDEX automation_runtime_audit_by_namespace ON automation_runtime_audit (namespace, seq);

CREATE FUNCTION automation_runtime_reserve_run_slot(
  p_namespace text, p_principal text, p_slot text, p_principal_limit integer,
  p_service_limit integer, p_now bigint, p_lease_until bigint
) RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  n integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('automation_runtime_run_slots:' || p_namespace, 0));
  IF EXISTS (
    SELECT 1 FROM automation_runtime_run_slots
    WHERE namespace = p_namespace AND principal_id = p_principal AND slot_id = p_slot
      AND (lease_until IS NULL OR lease_until > p_now)
  ) THEN
    RETURN 'reserved';
  END IF;
  DELETE FROM automation_runtime_run_slots
  WHERE namespace = p_namespace AND lease_until IS NOT NULL AND lease_until <= p_now;
  SELECT count(*) INTO n FROM automation_runtime_run_slots
  WHERE namespace = p_namespace AND principal_id = p_principal;
  IF n >= p_principal_limit THEN
    RETURN 'principalQuota';
  END IF;
  SELECT count(*) INTO n FROM automation_runtime_run_slots WHERE namespace = p_namespace;
  IF n >= p_service_limit THEN
    RETURN 'serviceQuota';
  END IF;
  INSERT INTO automation_runtime_run_slots (namespace, principal_id, slot_id, lease_until)
  VALUES (p_namespace, p_principal, p_slot, p_lease_until);
  RETURN 'reserved';
END
$fn$;
`,
});
