/**
 * Migration 7: the store records which bootstrap bearer holds it, so a rotated bearer
 * (`init --rotate`: same namespace, next generation) is refused on every replica.
 *
 * - `automation_runtime_authority.bootstrap_generation`: the generation of the bearer that
 *   claimed the store last (0: one without a generation, or a claim that named none);
 * - `automation_runtime_authority.bootstrap_digest`: the SHA-256 (hex) of that bearer, so two
 *   different bearers of one generation cannot both hold the store (null: not recorded).
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds `bootstrap_generation` and `bootstrap_digest` to `automation_runtime_authority`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration007 } from "./007_bootstrap_generation.ts";
 * assert.equal(migration007.version, 7);
 * ```
 */
export const migration007: Migration = Object.freeze({
  version: 7,
  name: "bootstrap_generation",
  sql: `
ALTER TABLE automation_runtime_authority
  ADD COLUMN bootstrap_generation bigint NOT NULL DEFAULT 0,
  ADD COLUMN bootstrap_digest text;
`,
});
