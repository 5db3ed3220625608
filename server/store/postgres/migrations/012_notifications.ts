/**
 * Migration 12: notification webhooks.
 *
 * - `automation_runtime_notify_subscriptions`: one row per subscription, in one of its owner's
 *   slots (unique per principal: a creation takes a free slot, so a principal never holds more
 *   than its limit), the record (with its encrypted secrets) as JSON.
 * - `automation_runtime_notify_deliveries`: one row per delivery, keyed by its id (derived from
 *   the subscription and the activity entry, so creating it twice writes it once), with its
 *   state, due time and lease in columns (a partial index serves the due ones) and the record as
 *   JSON.
 * - `automation_runtime_notify_cursor`: how far the activity log was turned into deliveries.
 * - The audit log gains `subscription_id` (the subscription a `webhook.*` entry concerns).
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds the notification tables.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration012 } from "./012_notifications.ts";
 * assert.equal(migration012.name, "notifications");
 * ```
 */
export const migration012: Migration = Object.freeze({
  version: 12,
  name: "notifications",
  sql: `
CREATE TABLE automation_runtime_notify_subscriptions (
  namespace       text    NOT NULL,
  subscription_id text    NOT NULL,
  principal_id    text    NOT NULL,
  slot            integer NOT NULL,
  created_at      text    NOT NULL,
  record          jsonb   NOT NULL,
  CONSTRAINT automation_runtime_notify_subscriptions_pkey PRIMARY KEY (namespace, subscription_id),
  CONSTRAINT automation_runtime_notify_subscriptions_slot UNIQUE (namespace, principal_id, slot)
);

CREATE INDEX automation_runtime_notify_subscriptions_by_time
  ON automation_runtime_notify_subscriptions
  (namespace, created_at COLLATE "C", subscription_id COLLATE "C");

CREATE INDEX automation_runtime_notify_subscriptions_by_principal
  ON automation_runtime_notify_subscriptions
  (namespace, principal_id, created_at COLLATE "C", subscription_id COLLATE "C");

CREATE TABLE automation_runtime_notify_deliveries (
  namespace       text   NOT NULL,
  delivery_id     text   NOT NULL,
  subscription_id text   NOT NULL,
  activity_seq    bigint NOT NULL,
  state           text   NOT NULL,
  next_attempt_ms bigint NOT NULL,
  created_ms      bigint NOT NULL,
  lease_holder    text,
  lease_until     bigint,
  record          jsonb  NOT NULL,
  CONSTRAINT automation_runtime_notify_deliveries_pkey PRIMARY KEY (namespace, delivery_id)
);

CREATE INDEX automation_runtime_notify_deliveries_due ON automation_runtime_notify_deliveries
  (namespace, next_attempt_ms) WHERE state = 'pending';

CREATE INDEX automation_runtime_notify_deliveries_by_subscription
  ON automation_runtime_notify_deliveries
  (namespace, subscription_id, activity_seq, delivery_id COLLATE "C");

CREATE TABLE automation_runtime_notify_cursor (
  namespace text   NOT NULL,
  seq       bigint NOT NULL,
  CONSTRAINT automation_runtime_notify_cursor_pkey PRIMARY KEY (namespace)
);

ALTER TABLE automation_runtime_audit ADD COLUMN subscription_id text;
`,
});
