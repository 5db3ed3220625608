/**
 * PostgreSQL store schema: migrations run once even when replicas start together, and a schema
 * newer than the build is refused.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import { migratePostgres } from "../../server/store/postgres/_migrate.ts";
import { MIGRATIONS } from "../../server/store/postgres/migrations/mod.ts";
import { PURGED_TABLES } from "../../server/store/postgres/_authority.ts";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";

const ignore = ignorePostgresTests();

async function query<T>(url: string, text: string): Promise<T[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return [...await sql.unsafe(text)] as T[];
  } finally {
    await sql.end();
  }
}

Deno.test({
  name: `postgres: eight replicas starting at once migrate the schema once${skipNote()}`,
  ignore,
  async fn() {
    await using db = await createTestDatabase();
    const stores = await Promise.all(
      Array.from(
        { length: 8 },
        () => openPostgresStore({ url: db.url, namespace: "a".repeat(32) }),
      ),
    );
    try {
      const rows = await query<{ version: number; name: string }>(
        db.url,
        "SELECT version, name FROM automation_runtime_schema_migrations ORDER BY version",
      );
      assert.deepEqual(
        rows.map((row) => ({ version: row.version, name: row.name })),
        MIGRATIONS.map((m) => ({ version: m.version, name: m.name })),
      );
      assert.deepEqual(await stores[0].principals.list(), []);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  },
});

Deno.test({
  name: `postgres: a restart applies no migration twice${skipNote()}`,
  ignore,
  async fn() {
    await using db = await createTestDatabase();
    const sql = postgres(db.url, { max: 2, onnotice: () => {} });
    try {
      await migratePostgres(sql);
      const first = await sql<{ version: number; applied_at: Date }[]>`
        SELECT version, applied_at FROM automation_runtime_schema_migrations ORDER BY version`;
      await migratePostgres(sql);
      const second = await sql<{ version: number; applied_at: Date }[]>`
        SELECT version, applied_at FROM automation_runtime_schema_migrations ORDER BY version`;
      assert.deepEqual([...second], [...first]);
      assert.deepEqual(first.map((row) => row.version), MIGRATIONS.map((m) => m.version));
    } finally {
      await sql.end();
    }
  },
});

Deno.test({
  name: `postgres: a schema newer than this build is refused at start${skipNote()}`,
  ignore,
  async fn() {
    await using db = await createTestDatabase();
    const first = await openPostgresStore({ url: db.url, namespace: "a".repeat(32) });
    await first.close();
    await query(
      db.url,
      "INSERT INTO automation_runtime_schema_migrations (version, name) VALUES (999, 'future')",
    );
    await assert.rejects(
      openPostgresStore({ url: db.url, namespace: "a".repeat(32) }),
      (error: Error) => {
        assert.equal(error.name, "SchemaVersionError");
        assert.match(error.message, /schema version 999 is newer than this build supports/);
        return true;
      },
    );
  },
});

Deno.test({
  name:
    `postgres: the namespace purge covers every table that holds a namespace's rows${skipNote()}`,
  ignore,
  async fn() {
    await using db = await createTestDatabase();
    const store = await openPostgresStore({ url: db.url, namespace: "a".repeat(32) });
    try {
      const rows = await query<{ table_name: string }>(
        db.url,
        `SELECT table_name FROM information_schema.columns
         WHERE column_name = 'namespace' AND table_schema = current_schema()
           AND table_name LIKE 'automation\\_runtime\\_%'`,
      );
      // The authority's own two tables say which namespaces exist and which are retired.
      const own = new Set(["automation_runtime_authority", "automation_runtime_namespaces"]);
      const holding = rows.map((row) => row.table_name).filter((name) => !own.has(name)).sort();
      assert.deepEqual([...PURGED_TABLES].sort(), holding);
    } finally {
      await store.close();
    }
  },
});
