/**
 * Applies the versioned schema migrations on start, safely when several replicas start at once.
 *
 * Everything runs in one transaction holding a transaction-scoped advisory lock: the first
 * replica creates or upgrades the schema while the others wait on the lock, then find every
 * version recorded and apply nothing. PostgreSQL DDL is transactional, so a replica that dies
 * half-way leaves the schema as it was.
 *
 * @module
 */
import type postgres from "postgres";
import { type Migration, MIGRATIONS } from "./migrations/mod.ts";

/** Advisory lock key of the schema migrations ("art-mig" in ASCII, as a bigint). */
const MIGRATION_LOCK_KEY = "107448466434407";

/** Raised when the database holds a schema newer than this build knows. */
export class SchemaVersionError extends Error {
  /** Stable error code. */
  readonly code = "schemaTooNew" as const;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import { SchemaVersionError } from "./_migrate.ts";
   * throw new SchemaVersionError("Database schema version 3 is newer than this build (2)");
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

/**
 * Brings the schema up to date and returns the versions this call applied (empty when another
 * replica, or an earlier start, already did).
 *
 * @example
 * ```ts ignore
 * import postgres from "postgres";
 * import { migratePostgres } from "./_migrate.ts";
 * const sql = postgres("postgres://app@127.0.0.1:5432/app");
 * console.log(await migratePostgres(sql)); // [1] the first time, [] after
 * await sql.end();
 * ```
 */
export async function migratePostgres(
  sql: postgres.Sql,
  options: MigrateOptions = {},
): Promise<number[]> {
  const migrations = options.migrations ?? MIGRATIONS;
  const known = migrations.at(-1)?.version ?? 0;
  return await sql.begin(async (tx) => {
    await tx.unsafe(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    // Checked first so that a role without CREATE can start once the schema is in place.
    const [{ present }] = await tx<{ present: boolean }[]>`
      SELECT to_regclass('automation_runtime_schema_migrations') IS NOT NULL AS present`;
    if (!present) {
      await tx.unsafe(`
        CREATE TABLE automation_runtime_schema_migrations (
          version    integer     PRIMARY KEY,
          name       text        NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT now()
        )`);
    }
    const rows = await tx<{ version: number }[]>`
      SELECT version FROM automation_runtime_schema_migrations ORDER BY version`;
    const applied = new Set(rows.map((row) => Number(row.version)));
    const newest = Math.max(0, ...applied);
    if (newest > known) {
      throw new SchemaVersionError(
        `Database schema version ${newest} is newer than this build supports (${known}); upgrade this replica`,
      );
    }
    const done: number[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      await tx.unsafe(migration.sql);
      await tx`
        INSERT INTO automation_runtime_schema_migrations (version, name)
        VALUES (${migration.version}, ${migration.name})`;
      done.push(migration.version);
    }
    return done;
  });
}
