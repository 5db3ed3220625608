/**
 * The authority part of the PostgreSQL store (the tables of migration `002_authority.ts`): the
 * claiming namespace (`automation_runtime_authority`, one row), each namespace's revocation
 * counter and retirement (`automation_runtime_namespaces`), and the purge of retired namespaces.
 *
 * A revocation raises the counter in the statement that revokes, through
 * {@linkcode revocationCounted}.
 *
 * @module
 */
import type postgres from "postgres";
import {
  type AuthorityState,
  type AuthorityStore,
  type PurgeOptions,
  SupersededNamespaceError,
} from "../authority.ts";
import { ms, type PostgresPool } from "./_pool.ts";

/**
 * The upsert raising `namespace`'s revocation counter when the CTE named `after` returned a row,
 * for a CTE of the statement that revokes: every replica's next authority read sees the epoch
 * move.
 *
 * @example
 * ```ts ignore
 * sql`WITH updated AS (…), epoch AS (${revocationCounted(sql, namespace, "updated")}) …`;
 * ```
 */
export function revocationCounted(
  sql: postgres.Sql,
  namespace: string,
  after: string,
): postgres.PendingQuery<postgres.Row[]> {
  return sql`
    INSERT INTO automation_runtime_namespaces AS n (namespace, revocations)
    SELECT ${namespace}, 1 WHERE EXISTS (SELECT 1 FROM ${sql(after)})
    ON CONFLICT (namespace) DO UPDATE SET revocations = n.revocations + 1
    RETURNING 1`;
}

/**
 * Claims the store in one statement: refused with {@linkcode SupersededNamespaceError} when
 * `namespace` was retired; otherwise the authority row names it and the namespace it replaced is
 * retired.
 */
async function claimAuthority(
  sql: postgres.Sql,
  namespace: string,
  now: number,
): Promise<void> {
  const [row] = await sql<{ retired_at: string | null }[]>`
    WITH retired AS (
      SELECT retired_at FROM automation_runtime_namespaces
      WHERE namespace = ${namespace} AND retired_at IS NOT NULL
    ), prior AS (
      SELECT namespace FROM automation_runtime_authority WHERE singleton
    ), claimed AS (
      INSERT INTO automation_runtime_authority AS a (singleton, namespace, claimed_at)
      SELECT true, ${namespace}, ${ms(now)} WHERE NOT EXISTS (SELECT 1 FROM retired)
      ON CONFLICT (singleton) DO UPDATE SET
        namespace = EXCLUDED.namespace, claimed_at = EXCLUDED.claimed_at
      WHERE a.namespace <> EXCLUDED.namespace
      RETURNING 1
    ), registered AS (
      INSERT INTO automation_runtime_namespaces (namespace, retired_at)
      SELECT namespace, ${ms(now)} FROM prior
      WHERE namespace <> ${namespace} AND EXISTS (SELECT 1 FROM claimed)
      ON CONFLICT (namespace) DO UPDATE SET retired_at = EXCLUDED.retired_at
      WHERE automation_runtime_namespaces.retired_at IS NULL
      RETURNING 1
    )
    SELECT (SELECT retired_at FROM retired)::text AS retired_at,
           (SELECT count(*) FROM registered)::int AS registered`;
  if (row.retired_at !== null) {
    throw new SupersededNamespaceError(
      `This bootstrap was replaced on the store at ${
        new Date(Number(row.retired_at)).toISOString()
      }; start with the current bootstrap credential`,
    );
  }
}

/** Reads the claiming namespace and the revocation counter of `namespace` in one statement. */
async function readAuthorityState(
  sql: postgres.Sql,
  namespace: string,
): Promise<AuthorityState> {
  const [row] = await sql<{ current: string | null; revocations: string | null }[]>`
    SELECT (SELECT namespace FROM automation_runtime_authority WHERE singleton) AS current,
           (SELECT revocations FROM automation_runtime_namespaces
            WHERE namespace = ${namespace})::text AS revocations`;
  return {
    current: row.current === null || row.current === namespace,
    epoch: `${row.current}/${row.revocations}`,
  };
}

/**
 * Deletes every row of each namespace retired before the cutoff. Namespaces seen in the tables but
 * never registered are registered as retired now, so they go one retention period later.
 */
async function purgeNamespaces(
  sql: postgres.Sql,
  options: PurgeOptions,
): Promise<number> {
  const cutoff = options.now - options.retentionMs;
  const [current] = await sql<{ namespace: string }[]>`
    SELECT namespace FROM automation_runtime_authority WHERE singleton`;
  // Without a claim, no namespace is known to be retired: delete nothing.
  if (current === undefined) return 0;
  await sql`
    INSERT INTO automation_runtime_namespaces (namespace, retired_at)
    SELECT DISTINCT namespace, ${ms(options.now)}::bigint FROM (
      SELECT namespace FROM automation_runtime_principals
      UNION SELECT namespace FROM automation_runtime_idempotency
      UNION SELECT namespace FROM automation_runtime_runs
      UNION SELECT namespace FROM automation_runtime_audit
    ) AS seen
    WHERE namespace <> ${current.namespace}
    ON CONFLICT (namespace) DO UPDATE SET retired_at = EXCLUDED.retired_at
    WHERE automation_runtime_namespaces.retired_at IS NULL`;
  const purged = await sql<{ namespace: string }[]>`
    WITH due AS (
      SELECT namespace FROM automation_runtime_namespaces
      WHERE retired_at IS NOT NULL AND retired_at <= ${ms(cutoff)}
        AND purged_at IS NULL AND namespace <> ${current.namespace}
    ), principals AS (
      DELETE FROM automation_runtime_principals WHERE namespace IN (SELECT namespace FROM due)
    ), idempotency AS (
      DELETE FROM automation_runtime_idempotency WHERE namespace IN (SELECT namespace FROM due)
    ), runs AS (
      DELETE FROM automation_runtime_runs WHERE namespace IN (SELECT namespace FROM due)
    ), slots AS (
      DELETE FROM automation_runtime_run_slots WHERE namespace IN (SELECT namespace FROM due)
    ), audit AS (
      DELETE FROM automation_runtime_audit WHERE namespace IN (SELECT namespace FROM due)
    ), run_events AS (
      DELETE FROM automation_runtime_run_events WHERE namespace IN (SELECT namespace FROM due)
    ), run_leases AS (
      DELETE FROM automation_runtime_run_leases WHERE namespace IN (SELECT namespace FROM due)
    )
    UPDATE automation_runtime_namespaces SET purged_at = ${ms(options.now)}
    WHERE namespace IN (SELECT namespace FROM due)
    RETURNING namespace`;
  return purged.length;
}

/** The authority part of the PostgreSQL store. */
export class PostgresAuthority implements AuthorityStore {
  readonly #pool: PostgresPool;
  readonly #ns: string;

  constructor(pool: PostgresPool, namespace: string) {
    this.#pool = pool;
    this.#ns = namespace;
  }

  claim(now: number): Promise<void> {
    return this.#pool.run((sql) => claimAuthority(sql, this.#ns, now));
  }

  readState(): Promise<AuthorityState> {
    return this.#pool.run((sql) => readAuthorityState(sql, this.#ns));
  }

  /** Null: another replica's commit cannot be seen without a round trip. */
  changeMarker(): null {
    return null;
  }

  /**
   * Deletes every row of each namespace retired more than the retention ago (the namespace's
   * rows in every part's table are the namespace's own: one statement drops them all).
   */
  purgeRetired(options: PurgeOptions): Promise<number> {
    return this.#pool.run((sql) => purgeNamespaces(sql, options));
  }
}
