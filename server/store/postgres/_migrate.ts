/**
 * Applies the versioned schema migrations on start, safely when several replicas start at once.
 *
 * The whole upgrade is one `DO` statement, so it runs in one transaction holding a
 * transaction-scoped advisory lock: the first replica creates or upgrades the schema while the
 * others wait on the lock, then find every version recorded and apply nothing. PostgreSQL DDL is
 * transactional, so a replica that dies half-way leaves the schema as it was. Being a single
 * statement, it never pins a pooled connection (see `postgres.ts` for why that matters).
 *
 * @module
 */
import type postgres from "postgres";
import { type Migration, MIGRATIONS } from "./migrations/mod.ts";

/** Advisory lock key of the schema migrations ("art-mig" read as a number). */
const MIGRATION_LOCK_KEY = "107448466434407";

/** SQLSTATE the migration raises when the database is ahead of this build. */
const SCHEMA_TOO_NEW = "AR001";

/** Raised when the database holds a schema newer than this build knows. */
export class SchemaVersionError extends Error {
  /** Stable error code. */
  readonly code = "schemaTooNew" as const;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { SchemaVersionError } from "./_migrate.ts";
   * const error = new SchemaVersionError("Database schema version 3 is newer than this build (2)");
   * assert.equal(error.name, "SchemaVersionError");
   * ```
   */
  constructor(message: string) {
    super(message);
    this.name = "SchemaVersionError";
  }
}

/** Options of {@linkcode migratePostgres}. */
export interface MigrateOptions {
  /** Migrations to apply, oldest first (defaults to {@linkcode MIGRATIONS}). */
  migrations?: readonly Migration[];
}

function step(migration: Migration, index: number): string {
  if (migration.version !== index + 1 || !/^[a-z0-9_]+$/.test(migration.name)) {
    throw new Error(`Migration ${index + 1} is misnumbered or misnamed`);
  }
  const tag = `$automation_runtime_migration_${migration.version}$`;
  if (migration.sql.includes(tag)) throw new Error(`Migration ${migration.version} holds ${tag}`);
  return `
  IF NOT EXISTS (
    SELECT 1 FROM automation_runtime_schema_migrations WHERE version = ${migration.version}
  ) THEN
    EXECUTE ${tag}${migration.sql}${tag};
    INSERT INTO automation_runtime_schema_migrations (version, name)
    VALUES (${migration.version}, '${migration.name}');
  END IF;`;
}

/**
 * The one statement that brings the schema up to date.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migrationStatement } from "./_migrate.ts";
 * assert.equal(migrationStatement().startsWith("DO "), true);
 * ```
 */
export function migrationStatement(options: MigrateOptions = {}): string {
  const migrations = options.migrations ?? MIGRATIONS;
  const known = migrations.length;
  return `DO $automation_runtime_migrate$
DECLARE
  newest integer;
BEGIN
  PERFORM pg_advisory_xact_lock(${MIGRATION_LOCK_KEY});
  -- Checked first so that a role without CREATE can start once the schema is in place.
  IF to_regclass('automation_runtime_schema_migrations') IS NULL THEN
    CREATE TABLE automation_runtime_schema_migrations (
      version    integer     PRIMARY KEY,
      name       text        NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    );
  END IF;
  SELECT coalesce(max(version), 0) INTO newest FROM automation_runtime_schema_migrations;
  IF newest > ${known} THEN
    RAISE EXCEPTION 'Database schema version % is newer than this build supports (${known}); upgrade this replica', newest
      USING ERRCODE = '${SCHEMA_TOO_NEW}';
  END IF;${migrations.map(step).join("")}
END
$automation_runtime_migrate$`;
}

/**
 * Brings the schema up to date; a no-op when another replica, or an earlier start, already did.
 * Throws {@linkcode SchemaVersionError} when the database is ahead of this build.
 *
 * @example
 * ```ts ignore
 * import postgres from "postgres";
 * import { migratePostgres } from "./_migrate.ts";
 * const sql = postgres("postgres://app@127.0.0.1:5432/app");
 * await migratePostgres(sql);
 * await sql.end();
 * ```
 */
export async function migratePostgres(
  sql: postgres.Sql,
  options: MigrateOptions = {},
): Promise<void> {
  try {
    await sql.unsafe(migrationStatement(options));
  } catch (error) {
    if ((error as { code?: unknown }).code === SCHEMA_TOO_NEW) {
      throw new SchemaVersionError((error as Error).message);
    }
    throw error;
  }
}
