/**
 * The versioned schema migrations of the PostgreSQL store, in order.
 *
 * Each migration is a TypeScript module holding its SQL as a string, so the schema ships inside
 * the package and loads the same way from a local checkout, a compiled binary or JSR, with no
 * file-system or network read at start. A migration is never edited once released: a schema
 * change is a new file with the next version number, appended to {@linkcode MIGRATIONS}.
 *
 * @module
 */
import { migration001 } from "./001_initial.ts";
import { migration002 } from "./002_authority.ts";
import { migration003 } from "./003_runs.ts";
import { migration004 } from "./004_answers.ts";
import { migration005 } from "./005_events.ts";
import { migration006 } from "./006_principal_names.ts";
import { migration007 } from "./007_bootstrap_generation.ts";
import { migration008 } from "./008_resource_policy.ts";
import { migration009 } from "./009_runs_and_effects.ts";
import { migration010 } from "./010_trust_policies.ts";
import { migration011 } from "./011_activity.ts";
import { migration012 } from "./012_notifications.ts";
import { migration013 } from "./013_provider_interface.ts";
import { migration014 } from "./014_authority_leases.ts";
import { migration015 } from "./015_spend.ts";
import { migration016 } from "./016_fair_notifications.ts";
import { migration017 } from "./017_spend_turns.ts";
import { migration018 } from "./018_fenced_appends.ts";

/** One schema migration. */
export interface Migration {
  /** Version number, starting at 1, without gaps. */
  readonly version: number;
  /** Short snake_case name, also the file's suffix. */
  readonly name: string;
  /** SQL run inside the migration transaction. */
  readonly sql: string;
}

/**
 * Every migration, oldest first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MIGRATIONS } from "./mod.ts";
 * assert.deepEqual(
 *   MIGRATIONS.map((migration) => migration.version),
 *   [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18],
 * );
 * ```
 */
export const MIGRATIONS: readonly Migration[] = Object.freeze([
  migration001,
  migration002,
  migration003,
  migration004,
  migration005,
  migration006,
  migration007,
  migration008,
  migration009,
  migration010,
  migration011,
  migration012,
  migration013,
  migration014,
  migration015,
  migration016,
  migration017,
  migration018,
]);
