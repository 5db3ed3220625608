/**
 * Migration 14: authority leases.
 *
 * - `automation_runtime_authority_leases`: one row per process (or worker) of a namespace that
 *   answers from memory: the authority epoch it acknowledged (the namespace's `revocations`
 *   counter of migration 2), when the row was renewed and for how long, both in ms on the
 *   database's clock.
 *
 * A renewal locks the authority row and the namespace's row of `automation_runtime_namespaces`
 * in the statement that records the lease, and every move of the counter locks them too, so the
 * two are ordered; the claims that retire a namespace or rotate its bootstrap now move its counter
 * as well.
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds the authority lease table.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration014 } from "./014_authority_leases.ts";
 * assert.equal(migration014.version, 14);
 * ```
 */
export const migration014: Migration = Object.freeze({
  version: 14,
  name: "authority_leases",
  sql: `
CREATE TABLE automation_runtime_authority_leases (
  namespace  text    NOT NULL,
  holder     text    NOT NULL,
  epoch      bigint  NOT NULL,
  renewed_at bigint  NOT NULL,
  lease_ms   integer NOT NULL,
  PRIMARY KEY (namespace, holder)
);
`,
});
