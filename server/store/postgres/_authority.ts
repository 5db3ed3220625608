/**
 * The authority part of the PostgreSQL store (the tables of migrations `002_authority.ts` and
 * `007_bootstrap_generation.ts`): the claiming namespace and its bootstrap bearer's generation
 * and digest (`automation_runtime_authority`, one row), each namespace's revocation
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
  type BootstrapClaim,
  bootstrapClaimOf,
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
 * Claims the store for `namespace` in one statement: refused with
 * {@linkcode SupersededNamespaceError} when `namespace` was retired; otherwise the authority row
 * names it (with the bootstrap's generation and digest, when it is new or changes namespace) and
 * the namespace it replaced is retired.
 */
async function claimNamespace(
  sql: postgres.Sql,
  namespace: string,
  now: number,
  bootstrap: BootstrapClaim | undefined,
): Promise<void> {
  const [row] = await sql<{ retired_at: string | null }[]>`
    WITH retired AS (
      SELECT retired_at FROM automation_runtime_namespaces
      WHERE namespace = ${namespace} AND retired_at IS NOT NULL
    ), prior AS (
      SELECT namespace FROM automation_runtime_authority WHERE singleton
    ), claimed AS (
      INSERT INTO automation_runtime_authority AS a
        (singleton, namespace, claimed_at, bootstrap_generation, bootstrap_digest)
      SELECT true, ${namespace}, ${ms(now)}, ${bootstrap?.generation ?? 0},
             ${bootstrap?.digest ?? null}::text
      WHERE NOT EXISTS (SELECT 1 FROM retired)
      ON CONFLICT (singleton) DO UPDATE SET
        namespace = EXCLUDED.namespace, claimed_at = EXCLUDED.claimed_at,
        bootstrap_generation = EXCLUDED.bootstrap_generation,
        bootstrap_digest = EXCLUDED.bootstrap_digest
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

/** Attempts of a bootstrap claim that lost a race to another replica's claim. */
const CLAIM_ATTEMPTS = 8;

/**
 * Claims the store for `namespace`, then, with `bootstrap`, takes the bootstrap over in the same
 * namespace: a compare-and-set on the authority row, decided by `bootstrapClaimOf` (a later
 * generation takes over; an earlier one, or another bearer of the same generation, is refused).
 */
async function claimAuthority(
  sql: postgres.Sql,
  namespace: string,
  now: number,
  bootstrap: BootstrapClaim | undefined,
): Promise<void> {
  await claimNamespace(sql, namespace, now, bootstrap);
  if (bootstrap === undefined) return;
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const [held] = await sql<
      { namespace: string; generation: string; digest: string | null }[]
    >`
      SELECT namespace, bootstrap_generation::text AS generation, bootstrap_digest AS digest
      FROM automation_runtime_authority WHERE singleton`;
    // Another namespace claimed the store meanwhile: this process runs superseded, as any
    // process whose namespace was replaced after it started.
    if (held === undefined || held.namespace !== namespace) return;
    const generation = Number(held.generation);
    const decision = bootstrapClaimOf({ generation, bootstrap: held.digest }, bootstrap);
    if (decision === "held") return;
    const updated = await sql`
      UPDATE automation_runtime_authority
      SET bootstrap_generation = ${bootstrap.generation}, bootstrap_digest = ${bootstrap.digest},
          claimed_at = CASE WHEN ${decision === "rotated"} THEN ${ms(now)} ELSE claimed_at END
      WHERE singleton AND namespace = ${namespace}
        AND bootstrap_generation = ${generation}
        AND bootstrap_digest IS NOT DISTINCT FROM ${held.digest}::text
      RETURNING 1`;
    if (updated.length === 1) return;
  }
  throw new Error("The store's bootstrap changed on every attempt to claim it");
}

/**
 * Reads the claiming namespace, its bootstrap generation and the revocation counter of
 * `namespace` in one statement.
 */
async function readAuthorityState(
  sql: postgres.Sql,
  namespace: string,
): Promise<AuthorityState> {
  const [row] = await sql<
    { current: string | null; generation: string | null; revocations: string | null }[]
  >`
    SELECT a.namespace AS current, a.bootstrap_generation::text AS generation,
           (SELECT revocations FROM automation_runtime_namespaces
            WHERE namespace = ${namespace})::text AS revocations
    FROM (SELECT 1) AS one
    LEFT JOIN automation_runtime_authority AS a ON a.singleton`;
  const mine = row.current === null || row.current === namespace;
  return {
    current: mine,
    epoch: `${row.current}/${row.generation}/${row.revocations}`,
    bootstrapGeneration: mine ? Number(row.generation ?? 0) : 0,
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

  claim(now: number, bootstrap?: BootstrapClaim): Promise<void> {
    return this.#pool.run((sql) => claimAuthority(sql, this.#ns, now, bootstrap));
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
