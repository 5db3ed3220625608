/**
 * Migration 2: what every replica agrees on across processes and bootstrap rotations.
 *
 * - `automation_runtime_authority`: one row, the namespace of the bootstrap that claimed the
 *   store last. A replica whose namespace differs runs with a rotated-away bootstrap and refuses
 *   every bearer.
 * - `automation_runtime_namespaces`: one row per namespace seen: its revocation counter (the
 *   epoch every authenticated request reads), when it was retired, when its records were purged.
 *   A retired row is kept after the purge, so an old bootstrap cannot claim the store back.
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Creates `automation_runtime_authority` and `automation_runtime_namespaces`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration002 } from "./002_authority.ts";
 * assert.equal(migration002.version, 2);
 * ```
 */
export const migration002: Migration = Object.freeze({
  version: 2,
  name: "authority",
  sql: `
CREATE TABLE automation_runtime_authority (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  namespace  text    NOT NULL,
  claimed_at bigint  NOT NULL
);

CREATE TABLE automation_runtime_namespaces (
  namespace   text   PRIMARY KEY,
  revocations bigint NOT NULL DEFAULT 0,
  retired_at  bigint,
  purged_at   bigint
);
`,
});
