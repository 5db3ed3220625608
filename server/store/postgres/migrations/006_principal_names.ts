/**
 * Migration 6: principals get a name and metadata, and the audit log the name of the principal an
 * entry is about.
 *
 * - `automation_runtime_principals.name` (null: none) and `metadata` (a JSON object of strings;
 *   null: none).
 * - `automation_runtime_audit.subject_name`: the subject's name on `principal.issued` and
 *   `principal.revoked` entries (null: none).
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds `name` and `metadata` to the principals and `subject_name` to the audit log.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration006 } from "./006_principal_names.ts";
 * assert.equal(migration006.version, 6);
 * ```
 */
export const migration006: Migration = Object.freeze({
  version: 6,
  name: "principal_names",
  sql: `
ALTER TABLE automation_runtime_principals
  ADD COLUMN name text,
  ADD COLUMN metadata jsonb;

ALTER TABLE automation_runtime_audit
  ADD COLUMN subject_name text;
`,
});
