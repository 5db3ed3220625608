/**
 * Migration 5 (registered as 4 until the migrations of parallel work are numbered at merge): tool
 * answers and webhook delivery ids.
 *
 * - `automation_runtime_tool_answers`: one row per `(run, tool use)`, claimed then answered; the
 *   primary key makes a claim an `INSERT … ON CONFLICT`, so two replicas never both win.
 * - `automation_runtime_webhook_deliveries`: ids of accepted provider webhook deliveries.
 *
 * Both carry `expires_at` (ms since the epoch) for the purge.
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds the tool answers and webhook deliveries tables.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration004 } from "./004_answers.ts";
 * assert.equal(migration004.name, "answers");
 * ```
 */
export const migration004: Migration = Object.freeze({
  version: 4,
  name: "answers",
  sql: `
CREATE TABLE automation_runtime_tool_answers (
  namespace    text   NOT NULL,
  run_id       text   NOT NULL,
  tool_use_id  text   NOT NULL,
  kind         text   NOT NULL,
  state        text   NOT NULL,
  token        text   NOT NULL,
  principal_id text   NOT NULL,
  result       text   NOT NULL,
  claimed_at   bigint NOT NULL,
  answered_at  text,
  expires_at   bigint NOT NULL,
  CONSTRAINT automation_runtime_tool_answers_pkey PRIMARY KEY (namespace, run_id, tool_use_id)
);

CREATE INDEX automation_runtime_tool_answers_expiry ON automation_runtime_tool_answers
  (namespace, expires_at);

CREATE TABLE automation_runtime_webhook_deliveries (
  namespace  text   NOT NULL,
  id         text   NOT NULL,
  expires_at bigint NOT NULL,
  CONSTRAINT automation_runtime_webhook_deliveries_pkey PRIMARY KEY (namespace, id)
);

CREATE INDEX automation_runtime_webhook_deliveries_expiry
  ON automation_runtime_webhook_deliveries (namespace, expires_at);
`,
});
