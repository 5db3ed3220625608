/**
 * Migration 8: the resource policy of principals. One `jsonb` column, `resource_policy`, holds
 * the lists a principal was issued with (`environmentIds`, `vaultIds`, `memoryStoreIds`,
 * `repositories`, `fileIds`); null for principals issued before it existed (read as no
 * resource lists: any environment, nothing to attach) and for the lists it leaves out.
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds the resource policy column.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration008 } from "./008_resource_policy.ts";
 * assert.equal(migration008.name, "resource_policy");
 * ```
 */
export const migration008: Migration = Object.freeze({
  version: 8,
  name: "resource_policy",
  sql: `
ALTER TABLE automation_runtime_principals ADD COLUMN resource_policy jsonb;
`,
});
