/**
 * Migration 17: holds across turns (see `server/store/spend.ts`).
 *
 * - `automation_runtime_reserve_run(..., p_fence)`: migration 15's reservation with a follow-up
 *   to a run that is still active: while the run holds money it takes a zero hold of its turn,
 *   no new money. A hold of a run locks the run's totals row first, as its settlements do, so a
 *   settlement and a follow-up's hold never interleave. (Migration 15's function stays for a
 *   replica still on the older build.)
 *   A start's hold that lapsed (its run never recorded) counts as spent, not given back: its
 *   session may be running unrecorded. A lapsed hold of a run that exists stays: the run's tail
 *   settles it, or gives it back when the session's history shows its follow-up never arrived.
 * - `automation_runtime_settle_run(...)`: a turn's end keeps the rest of its holds while the
 *   run holds money for a later turn (a follow-up was sent before the end was settled).
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Replaces the reservation and settlement functions of migration 15.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration017 } from "./017_spend_turns.ts";
 * assert.equal(migration017.version, 17);
 * ```
 */
export const migration017: Migration = Object.freeze({
  version: 17,
  name: "spend_turns",
  sql: `
CREATE OR REPLACE FUNCTION automation_runtime_reserve_run(
  p_namespace text, p_principal text, p_slot text, p_principal_limit integer,
  p_service_limit integer, p_now bigint, p_lease_until bigint,
  p_hold text, p_run text, p_turn integer, p_period text, p_limit bigint, p_run_cap bigint,
  p_fence boolean
) RETURNS TABLE (r_result text, r_amount bigint, r_ceiling bigint, r_left bigint, r_limit text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  n integer;
  slot_live boolean;
  held bigint;
  taken bigint := 0;
  granted bigint;
  which text := 'budget';
  cap_left bigint;
  ledger_spent bigint;
  ledger_reserved bigint;
  run_holds boolean := false;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('automation_runtime_run_slots:' || p_namespace, 0));
  IF p_hold IS NOT NULL THEN
    -- Lapsed holds first: those without a run (a run's are its tails' to settle or give back).
    WITH gone AS (
      DELETE FROM automation_runtime_spend_holds h
      WHERE h.namespace = p_namespace AND h.principal_id = p_principal
        AND h.lease_until <= p_now
        AND (h.run_id IS NULL OR NOT EXISTS (
          SELECT 1 FROM automation_runtime_runs r
          WHERE r.namespace = h.namespace AND r.run_id = h.run_id))
      RETURNING h.period, h.amount, h.run_id
    ), back AS (
      -- A start's hold counts as spent: its session may run unrecorded (its replica died).
      SELECT g.period, sum(g.amount) AS amount,
        coalesce(sum(g.amount) FILTER (WHERE g.run_id IS NULL), 0) AS spent
      FROM gone g
      WHERE g.period IS NOT NULL GROUP BY g.period
    )
    UPDATE automation_runtime_spend_ledgers l
    SET reserved = greatest(l.reserved - b.amount, 0), spent = l.spent + b.spent
    FROM back b
    WHERE l.namespace = p_namespace AND l.principal_id = p_principal AND l.period = b.period;
    SELECT h.amount INTO held FROM automation_runtime_spend_holds h
    WHERE h.namespace = p_namespace AND h.principal_id = p_principal AND h.hold_id = p_hold;
    IF p_run IS NOT NULL THEN
      -- The run's totals row, locked as its settlements lock it: a settlement and this hold
      -- never interleave (each sees the other's holds whole).
      INSERT INTO automation_runtime_spend_runs (namespace, run_id, principal_id)
      VALUES (p_namespace, p_run, p_principal) ON CONFLICT DO NOTHING;
      PERFORM 1 FROM automation_runtime_spend_runs t
      WHERE t.namespace = p_namespace AND t.run_id = p_run FOR UPDATE;
      run_holds := EXISTS (
        SELECT 1 FROM automation_runtime_spend_holds h
        WHERE h.namespace = p_namespace AND h.run_id = p_run);
      SELECT coalesce(sum(h.amount), 0) INTO taken FROM automation_runtime_spend_holds h
      WHERE h.namespace = p_namespace AND h.run_id = p_run;
      taken := taken + coalesce((
        SELECT t.cost FROM automation_runtime_spend_runs t
        WHERE t.namespace = p_namespace AND t.run_id = p_run), 0);
    END IF;
  END IF;
  slot_live := EXISTS (
    SELECT 1 FROM automation_runtime_run_slots s
    WHERE s.namespace = p_namespace AND s.principal_id = p_principal AND s.slot_id = p_slot
      AND (s.lease_until IS NULL OR s.lease_until > p_now)
  );
  IF slot_live AND (p_hold IS NULL OR held IS NOT NULL) THEN
    RETURN QUERY SELECT 'reserved'::text, held,
      CASE WHEN held IS NULL THEN NULL::bigint WHEN p_run IS NULL THEN held ELSE taken END,
      NULL::bigint, NULL::text;
    RETURN;
  END IF;
  IF NOT slot_live THEN
    DELETE FROM automation_runtime_run_slots s
    WHERE s.namespace = p_namespace AND s.lease_until IS NOT NULL AND s.lease_until <= p_now;
    SELECT count(*) INTO n FROM automation_runtime_run_slots s
    WHERE s.namespace = p_namespace AND s.principal_id = p_principal;
    IF n >= p_principal_limit THEN
      RETURN QUERY SELECT 'principalQuota'::text, NULL::bigint, NULL::bigint, NULL::bigint,
        NULL::text;
      RETURN;
    END IF;
    SELECT count(*) INTO n FROM automation_runtime_run_slots s WHERE s.namespace = p_namespace;
    IF n >= p_service_limit THEN
      RETURN QUERY SELECT 'serviceQuota'::text, NULL::bigint, NULL::bigint, NULL::bigint,
        NULL::text;
      RETURN;
    END IF;
  END IF;
  IF p_hold IS NOT NULL AND coalesce(p_fence, false) AND run_holds THEN
    -- A follow-up to a run still active and holding money: no new money, a zero hold.
    granted := 0;
    INSERT INTO automation_runtime_spend_holds
      (namespace, principal_id, hold_id, run_id, turn, period, amount, lease_until)
    VALUES (p_namespace, p_principal, p_hold, p_run, p_turn, p_period, 0, p_lease_until);
  ELSIF p_hold IS NOT NULL THEN
    IF p_limit IS NOT NULL THEN
      INSERT INTO automation_runtime_spend_ledgers (namespace, principal_id, period)
      VALUES (p_namespace, p_principal, p_period) ON CONFLICT DO NOTHING;
      SELECT l.spent, l.reserved INTO ledger_spent, ledger_reserved
      FROM automation_runtime_spend_ledgers l
      WHERE l.namespace = p_namespace AND l.principal_id = p_principal AND l.period = p_period
      FOR UPDATE;
      granted := p_limit - ledger_spent - ledger_reserved;
    END IF;
    IF p_run_cap IS NOT NULL THEN
      cap_left := p_run_cap - taken;
      IF granted IS NULL OR cap_left < granted THEN
        granted := cap_left;
        which := 'maxRunCost';
      END IF;
    END IF;
    IF granted IS NULL OR granted <= 0 THEN
      RETURN QUERY SELECT 'budgetExceeded'::text, NULL::bigint, NULL::bigint,
        greatest(coalesce(granted, 0), 0), which;
      RETURN;
    END IF;
    INSERT INTO automation_runtime_spend_holds
      (namespace, principal_id, hold_id, run_id, turn, period, amount, lease_until)
    VALUES (p_namespace, p_principal, p_hold, p_run, p_turn, p_period, granted, p_lease_until);
    IF p_period IS NOT NULL THEN
      UPDATE automation_runtime_spend_ledgers l SET reserved = l.reserved + granted
      WHERE l.namespace = p_namespace AND l.principal_id = p_principal AND l.period = p_period;
    END IF;
  END IF;
  IF NOT slot_live THEN
    INSERT INTO automation_runtime_run_slots (namespace, principal_id, slot_id, lease_until)
    VALUES (p_namespace, p_principal, p_slot, p_lease_until)
    ON CONFLICT (namespace, principal_id, slot_id) DO UPDATE SET lease_until = EXCLUDED.lease_until;
  END IF;
  RETURN QUERY SELECT 'reserved'::text, granted, taken + granted, NULL::bigint, NULL::text;
END
$fn$;

CREATE OR REPLACE FUNCTION automation_runtime_settle_run(
  p_namespace text, p_run text, p_principal text, p_agent text, p_turn integer,
  p_final boolean, p_cost bigint, p_input bigint, p_output bigint, p_cache_read bigint,
  p_cache_creation bigint, p_at text
) RETURNS TABLE (r_added bigint, r_released bigint, r_cost bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  t automation_runtime_spend_runs%ROWTYPE;
  h record;
  added bigint := 0;
  remaining bigint;
  taken bigint;
  released bigint := 0;
  last_period text;
  grew boolean;
  release boolean;
BEGIN
  INSERT INTO automation_runtime_spend_runs (namespace, run_id, principal_id)
  VALUES (p_namespace, p_run, p_principal) ON CONFLICT DO NOTHING;
  SELECT * INTO t FROM automation_runtime_spend_runs s
  WHERE s.namespace = p_namespace AND s.run_id = p_run FOR UPDATE;
  IF p_cost IS NOT NULL AND p_cost > t.cost THEN
    added := p_cost - t.cost;
  ELSIF p_cost IS NULL AND p_final THEN
    -- Not reported: what the ended turn held counts as spent (fail closed).
    SELECT coalesce(sum(x.amount), 0) INTO added FROM automation_runtime_spend_holds x
    WHERE x.namespace = p_namespace AND x.run_id = p_run AND x.turn <= p_turn;
  END IF;
  -- A later turn holds already (a follow-up was sent before this end was settled): the session
  -- may spend again under its ceiling, so the rest of the covered holds stays held.
  release := p_final AND NOT EXISTS (
    SELECT 1 FROM automation_runtime_spend_holds x
    WHERE x.namespace = p_namespace AND x.run_id = p_run AND x.turn > p_turn);
  grew := p_input > t.input_tokens OR p_output > t.output_tokens
    OR p_cache_read > t.cache_read_input_tokens
    OR p_cache_creation > t.cache_creation_input_tokens;
  remaining := added;
  last_period := t.period;
  FOR h IN
    SELECT x.principal_id, x.hold_id, x.period, x.amount FROM automation_runtime_spend_holds x
    WHERE x.namespace = p_namespace AND x.run_id = p_run AND x.turn <= p_turn
    ORDER BY x.turn, x.hold_id FOR UPDATE
  LOOP
    last_period := h.period;
    taken := least(remaining, h.amount);
    remaining := remaining - taken;
    IF release THEN
      released := released + h.amount - taken;
      DELETE FROM automation_runtime_spend_holds x
      WHERE x.namespace = p_namespace AND x.principal_id = h.principal_id
        AND x.hold_id = h.hold_id;
      IF h.period IS NOT NULL THEN
        UPDATE automation_runtime_spend_ledgers l
        SET spent = l.spent + taken, reserved = greatest(l.reserved - h.amount, 0)
        WHERE l.namespace = p_namespace AND l.principal_id = h.principal_id
          AND l.period = h.period;
      END IF;
    ELSIF taken > 0 THEN
      UPDATE automation_runtime_spend_holds x SET amount = x.amount - taken
      WHERE x.namespace = p_namespace AND x.principal_id = h.principal_id
        AND x.hold_id = h.hold_id;
      IF h.period IS NOT NULL THEN
        UPDATE automation_runtime_spend_ledgers l
        SET spent = l.spent + taken, reserved = greatest(l.reserved - taken, 0)
        WHERE l.namespace = p_namespace AND l.principal_id = h.principal_id
          AND l.period = h.period;
      END IF;
    END IF;
  END LOOP;
  IF remaining > 0 AND last_period IS NOT NULL THEN
    -- Beyond the holds: the provider's last request past its ceiling.
    INSERT INTO automation_runtime_spend_ledgers AS l (namespace, principal_id, period, spent)
    VALUES (p_namespace, p_principal, last_period, remaining)
    ON CONFLICT (namespace, principal_id, period) DO UPDATE SET spent = l.spent + EXCLUDED.spent;
  END IF;
  UPDATE automation_runtime_spend_runs s SET
    cost = t.cost + added,
    input_tokens = greatest(p_input, t.input_tokens),
    output_tokens = greatest(p_output, t.output_tokens),
    cache_read_input_tokens = greatest(p_cache_read, t.cache_read_input_tokens),
    cache_creation_input_tokens = greatest(p_cache_creation, t.cache_creation_input_tokens),
    period = last_period
  WHERE s.namespace = p_namespace AND s.run_id = p_run;
  IF added > 0 OR grew THEN
    INSERT INTO automation_runtime_usage
      (namespace, at, principal_id, agent_id, run_id, input_tokens, output_tokens,
       cache_read_input_tokens, cache_creation_input_tokens, cost)
    VALUES (p_namespace, p_at, p_principal, p_agent, p_run,
      greatest(p_input - t.input_tokens, 0), greatest(p_output - t.output_tokens, 0),
      greatest(p_cache_read - t.cache_read_input_tokens, 0),
      greatest(p_cache_creation - t.cache_creation_input_tokens, 0), added);
  END IF;
  RETURN QUERY SELECT added, released, t.cost + added;
END
$fn$;
`,
});
