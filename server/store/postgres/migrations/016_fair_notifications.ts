/**
 * Migration 16: fair claims of notification deliveries.
 *
 * - `automation_runtime_claim_deliveries(...)`: leases due deliveries under a transaction-scoped
 *   advisory lock of the namespace (so each claim counts the leases the claims before it took,
 *   whichever replica made them), earliest due first, never a delivery of a subscription that
 *   has one under a live lease, none of an owner past `p_per_owner` live leases, and none of an
 *   owner in `p_skip_owners`. One call is one statement.
 * - An index of the pending deliveries by subscription and due time serves the claim's look at
 *   each subscription's earliest due delivery.
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds the fair claim function and its index.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration016 } from "./016_fair_notifications.ts";
 * assert.equal(migration016.name, "fair_notifications");
 * ```
 */
export const migration016: Migration = Object.freeze({
  version: 16,
  name: "fair_notifications",
  sql: `
CREATE INDEX automation_runtime_notify_deliveries_pending_by_subscription
  ON automation_runtime_notify_deliveries (namespace, subscription_id, next_attempt_ms)
  WHERE state = 'pending';

CREATE FUNCTION automation_runtime_claim_deliveries(
  p_namespace text, p_holder text, p_now bigint, p_lease_until bigint, p_limit integer,
  p_per_owner integer, p_skip_owners text[]
) RETURNS TABLE (claimed_record jsonb, claimed_holder text, claimed_until bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(
    hashtextextended('automation_runtime_notify_claims:' || p_namespace, 0));
  RETURN QUERY
  WITH leased AS (
    SELECT d.subscription_id, d.record->>'principalId' AS owner
    FROM automation_runtime_notify_deliveries d
    WHERE d.namespace = p_namespace AND d.state = 'pending' AND d.lease_until > p_now
  ), heads AS (
    SELECT DISTINCT ON (d.subscription_id)
      d.delivery_id, d.record->>'principalId' AS owner, d.next_attempt_ms
    FROM automation_runtime_notify_deliveries d
    WHERE d.namespace = p_namespace AND d.state = 'pending' AND d.next_attempt_ms <= p_now
      AND NOT EXISTS (SELECT 1 FROM leased l WHERE l.subscription_id = d.subscription_id)
      AND NOT (d.record->>'principalId') = ANY(p_skip_owners)
    ORDER BY d.subscription_id, d.next_attempt_ms, d.delivery_id COLLATE "C"
  ), ranked AS (
    SELECT h.delivery_id, h.next_attempt_ms,
      row_number() OVER (PARTITION BY h.owner ORDER BY h.next_attempt_ms, h.delivery_id COLLATE "C")
        + (SELECT count(*) FROM leased l WHERE l.owner = h.owner) AS place
    FROM heads h
  ), chosen AS (
    SELECT r.delivery_id FROM ranked r WHERE r.place <= p_per_owner
    ORDER BY r.next_attempt_ms, r.delivery_id COLLATE "C"
    LIMIT p_limit
  ), claimed AS (
    UPDATE automation_runtime_notify_deliveries AS d
    SET lease_holder = p_holder, lease_until = p_lease_until
    FROM chosen c
    WHERE d.namespace = p_namespace AND d.delivery_id = c.delivery_id
    RETURNING d.record, d.lease_holder, d.lease_until, d.next_attempt_ms
  )
  SELECT c.record, c.lease_holder, c.lease_until FROM claimed c
  ORDER BY c.next_attempt_ms, c.record->>'deliveryId' COLLATE "C";
END
$fn$;
`,
});
