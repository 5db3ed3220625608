/**
 * The PostgreSQL store's cross-process authority, paging and retention (the tables of migration
 * 2), kept apart from the principal and idempotency statements of `postgres.ts`. Each function
 * is one or a few single statements on the pool it is given; the store runs them through its
 * error mapping.
 *
 * @module
 */
import type postgres from "postgres";
import {
  type AuthorityState,
  type PrincipalPageOptions,
  type PurgeOptions,
  type PurgeReport,
  SupersededNamespaceError,
} from "../types.ts";

function ms(value: number): string {
  return String(Math.floor(value));
}

/**
 * Claims the store in one statement: refused with {@linkcode SupersededNamespaceError} when
 * `namespace` was retired; otherwise the authority row names it and the namespace it replaced is
 * retired.
 *
 * @example
 * ```ts ignore
 * await claimAuthority(sql, namespace, Date.now());
 * ```
 */
export async function claimAuthority(
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

/**
 * Reads the claiming namespace and the revocation counter of `namespace` in one statement.
 *
 * @example
 * ```ts ignore
 * const { current, epoch } = await readAuthorityState(sql, namespace);
 * ```
 */
export async function readAuthorityState(
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
 * The rows of one keyset page (`limit + 1` of them, so the caller knows whether more follow),
 * ordered by `created_at` then `principal_id` in byte order, as `listPrincipals` is.
 *
 * @example
 * ```ts ignore
 * const rows = await principalPageRows(sql, namespace, sql(columns), { limit: 100 });
 * ```
 */
export function principalPageRows<Row extends postgres.Row>(
  sql: postgres.Sql,
  namespace: string,
  columns: postgres.Helper<readonly string[]>,
  options: PrincipalPageOptions,
): Promise<Row[]> {
  const after = options.after;
  return sql<Row[]>`
    SELECT ${columns} FROM automation_runtime_principals
    WHERE namespace = ${namespace} ${
    after === undefined ? sql`` : sql`
      AND (created_at COLLATE "C" > ${after.createdAt}
           OR (created_at = ${after.createdAt}
               AND principal_id COLLATE "C" > ${after.principalId}))`
  }
    ORDER BY created_at COLLATE "C", principal_id COLLATE "C"
    LIMIT ${options.limit + 1}`;
}

/**
 * Deletes the namespace's principals revoked or expired before the cutoff, then every row of each
 * namespace retired before it. Namespaces seen in the tables but never registered are registered
 * as retired now, so they go one retention period later.
 *
 * @example
 * ```ts ignore
 * await purgeRetired(sql, namespace, { now: Date.now(), retentionMs: 30 * 86_400_000 });
 * ```
 */
export async function purgeRetired(
  sql: postgres.Sql,
  namespace: string,
  options: PurgeOptions,
): Promise<PurgeReport> {
  const cutoff = options.now - options.retentionMs;
  const cutoffAt = new Date(cutoff).toISOString();
  const deleted = await sql`
    DELETE FROM automation_runtime_principals
    WHERE namespace = ${namespace}
      AND ((revoked_at IS NOT NULL AND revoked_at::timestamptz <= ${cutoffAt}::timestamptz)
           OR expires_at::timestamptz <= ${cutoffAt}::timestamptz)`;
  const [current] = await sql<{ namespace: string }[]>`
    SELECT namespace FROM automation_runtime_authority WHERE singleton`;
  // Without a claim, no namespace is known to be retired: delete nothing more.
  if (current === undefined) return { principals: deleted.count, namespaces: 0 };
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
  return { principals: deleted.count, namespaces: purged.length };
}
