/**
 * The authority part of the PostgreSQL store (the tables of migrations `002_authority.ts` and
 * `007_bootstrap_generation.ts`): the claiming namespace and its bootstrap bearer's generation
 * and digest (`automation_runtime_authority`, one row), each namespace's authority epoch (its
 * `revocations` counter) and retirement (`automation_runtime_namespaces`), and the purge of
 * retired namespaces.
 *
 * A revocation raises the counter in the statement that revokes, through
 * {@linkcode revocationCounted}; the claim that retires a namespace and the one that rotates its
 * bootstrap raise it too. Each notifies {@linkcode AUTHORITY_CHANNEL} (delivered at commit) so
 * that the lease holders on every replica wake up. The leases part renews a lease in one
 * statement with {@linkcode authorityLocked}, which locks the rows every such change writes.
 *
 * @module
 */
import type postgres from "postgres";
import {
  type AuthorityState,
  type AuthorityStore,
  type BootstrapClaim,
  bootstrapClaimOf,
  type ClaimResult,
  FIRST_EPOCH,
  type PurgeOptions,
  SupersededNamespaceError,
} from "../authority.ts";
import { ms, type PostgresPool } from "./_pool.ts";

/**
 * The channel an epoch move and an acknowledging lease renewal notify, with the payload
 * `"epoch <namespace>"` or `"ack <namespace>"`.
 */
export const AUTHORITY_CHANNEL = "automation_runtime_authority";

/**
 * A counter value as an epoch: 20 digits, so that epochs compare as strings.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { epochOf } from "./_authority.ts";
 * assert.equal(epochOf("12"), "00000000000000000012");
 * assert.equal(epochOf(null), "00000000000000000000");
 * ```
 */
export function epochOf(counter: string | null): string {
  return counter === null ? FIRST_EPOCH : counter.padStart(FIRST_EPOCH.length, "0");
}

/**
 * The upsert raising `namespace`'s epoch when the CTE named `after` returned a row, for a CTE of
 * the statement that revokes: every replica's next authority read sees the epoch move, and the
 * lease holders are notified.
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
    RETURNING n.revocations, pg_notify(${AUTHORITY_CHANNEL}, 'epoch ' || n.namespace) AS notified`;
}

/**
 * The CTEs `auth` and `ns` of the statement that renews a lease: `auth` locks the authority row
 * (`FOR SHARE`, so a claim or a rotation in progress commits first, and the row read is the
 * latest) and `ns` then locks `namespace`'s row (an upsert creating it when missing, so a
 * revocation in progress commits first). The rows come out as they are once locked, in that
 * order, which is the order a claim takes the same locks in: `SELECT … FROM ns, auth` gives the
 * columns {@linkcode stateOf} reads.
 *
 * @example
 * ```ts ignore
 * sql`WITH ${authorityLocked(sql, namespace)} SELECT … FROM ns, auth`;
 * ```
 */
export function authorityLocked(
  sql: postgres.Sql,
  namespace: string,
): postgres.PendingQuery<postgres.Row[]> {
  return sql`auth AS (
      SELECT a.namespace AS current, a.bootstrap_generation::text AS generation
      FROM (SELECT 1) AS one
      LEFT JOIN (
        SELECT namespace, bootstrap_generation FROM automation_runtime_authority
        WHERE singleton FOR SHARE
      ) AS a ON true
    ), ns AS (
      INSERT INTO automation_runtime_namespaces AS n (namespace) SELECT ${namespace} FROM auth
      ON CONFLICT (namespace) DO UPDATE SET revocations = n.revocations
      RETURNING n.revocations::text AS revocations, n.retired_at::text AS retired_at
    )`;
}

/** The columns the authority state of a namespace is made of. */
export interface AuthorityRow {
  /** The namespace that claimed the store; null: never claimed. */
  current: string | null;
  /** The generation of its bootstrap bearer. */
  generation: string | null;
  /** The namespace's counter (its epoch); null: no row. */
  revocations: string | null;
  /** When the namespace was retired; null: never. */
  retired_at: string | null;
}

/**
 * The authority state of `namespace` from its row: current when the store was never claimed or
 * names it, and it was never retired; the bootstrap generation the store holds when current.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stateOf } from "./_authority.ts";
 * const row = { current: null, generation: null, revocations: "3", retired_at: null };
 * assert.deepEqual(stateOf("n", row), {
 *   current: true,
 *   epoch: "00000000000000000003",
 *   bootstrapGeneration: 0,
 * });
 * ```
 */
export function stateOf(namespace: string, row: AuthorityRow): AuthorityState {
  const mine = row.current === null || row.current === namespace;
  return {
    current: mine && row.retired_at === null,
    epoch: epochOf(row.revocations),
    bootstrapGeneration: mine ? Number(row.generation ?? 0) : 0,
  };
}

/**
 * Claims the store for `namespace` in one statement: refused with
 * {@linkcode SupersededNamespaceError} when `namespace` was retired; otherwise the authority row
 * names it (with the bootstrap's generation and digest, when it is new or changes namespace) and
 * the namespace it replaced is retired and its epoch moves (its lease holders are notified).
 */
async function claimNamespace(
  sql: postgres.Sql,
  namespace: string,
  now: number,
  bootstrap: BootstrapClaim | undefined,
): Promise<ClaimResult> {
  const [row] = await sql<{
    retired_at: string | null;
    replaced: string | null;
    epoch: string | null;
  }[]>`
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
      INSERT INTO automation_runtime_namespaces AS n (namespace, retired_at, revocations)
      SELECT namespace, ${ms(now)}, 1 FROM prior
      WHERE namespace <> ${namespace} AND EXISTS (SELECT 1 FROM claimed)
      ON CONFLICT (namespace) DO UPDATE SET
        retired_at = EXCLUDED.retired_at, revocations = n.revocations + 1
      WHERE n.retired_at IS NULL
      RETURNING n.namespace, n.revocations,
        pg_notify(${AUTHORITY_CHANNEL}, 'epoch ' || n.namespace) AS notified
    )
    SELECT (SELECT retired_at FROM retired)::text AS retired_at,
           (SELECT namespace FROM registered) AS replaced,
           (SELECT revocations FROM registered)::text AS epoch`;
  if (row.retired_at !== null) {
    throw new SupersededNamespaceError(
      `This bootstrap was replaced on the store at ${
        new Date(Number(row.retired_at)).toISOString()
      }; start with the current bootstrap credential`,
    );
  }
  return {
    moved: row.replaced === null ? null : { namespace: row.replaced, epoch: epochOf(row.epoch) },
  };
}

/** Attempts of a bootstrap claim that lost a race to another replica's claim. */
const CLAIM_ATTEMPTS = 8;

/**
 * Claims the store for `namespace`, then, with `bootstrap`, takes the bootstrap over in the same
 * namespace: a compare-and-set on the authority row, decided by `bootstrapClaimOf` (a later
 * generation takes over, and moves the namespace's epoch in the same statement; an earlier one,
 * or another bearer of the same generation, is refused).
 */
async function claimAuthority(
  sql: postgres.Sql,
  namespace: string,
  now: number,
  bootstrap: BootstrapClaim | undefined,
): Promise<ClaimResult> {
  const claimed = await claimNamespace(sql, namespace, now, bootstrap);
  if (bootstrap === undefined) return claimed;
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const [held] = await sql<
      { namespace: string; generation: string; digest: string | null }[]
    >`
      SELECT namespace, bootstrap_generation::text AS generation, bootstrap_digest AS digest
      FROM automation_runtime_authority WHERE singleton`;
    // Another namespace claimed the store meanwhile: this process runs superseded, as any
    // process whose namespace was replaced after it started.
    if (held === undefined || held.namespace !== namespace) return claimed;
    const generation = Number(held.generation);
    const decision = bootstrapClaimOf({ generation, bootstrap: held.digest }, bootstrap);
    if (decision === "held") return claimed;
    const rotated = decision === "rotated";
    const [row] = await sql<{ updated: number; epoch: string | null }[]>`
      WITH updated AS (
        UPDATE automation_runtime_authority
        SET bootstrap_generation = ${bootstrap.generation}, bootstrap_digest = ${bootstrap.digest},
            claimed_at = CASE WHEN ${rotated} THEN ${ms(now)} ELSE claimed_at END
        WHERE singleton AND namespace = ${namespace}
          AND bootstrap_generation = ${generation}
          AND bootstrap_digest IS NOT DISTINCT FROM ${held.digest}::text
        RETURNING 1
      ), rotated AS (
        SELECT 1 FROM updated WHERE ${rotated}
      ), epoch AS (
        ${revocationCounted(sql, namespace, "rotated")}
      )
      SELECT (SELECT count(*) FROM updated)::int AS updated,
             (SELECT revocations FROM epoch)::text AS epoch`;
    if (row.updated === 1) {
      return row.epoch === null ? claimed : { moved: { namespace, epoch: epochOf(row.epoch) } };
    }
  }
  throw new Error("The store's bootstrap changed on every attempt to claim it");
}

/**
 * Reads the claiming namespace, its bootstrap generation, and the epoch and retirement of
 * `namespace` in one statement.
 */
async function readAuthorityState(
  sql: postgres.Sql,
  namespace: string,
): Promise<AuthorityState> {
  const [row] = await sql<
    AuthorityRow[]
  >`
    SELECT a.namespace AS current, a.bootstrap_generation::text AS generation,
           n.revocations::text AS revocations, n.retired_at::text AS retired_at
    FROM (SELECT 1) AS one
    LEFT JOIN automation_runtime_authority AS a ON a.singleton
    LEFT JOIN automation_runtime_namespaces AS n ON n.namespace = ${namespace}`;
  return stateOf(namespace, row);
}

/**
 * The tables whose rows of a namespace the purge deletes: one `DELETE` each, all in one statement
 * with the update that marks the namespace purged. Every table with a namespace column but the
 * authority's own two (`tests/store/postgres_schema_test.ts` keeps the list whole).
 */
export const PURGED_TABLES: readonly string[] = [
  "automation_runtime_principals",
  "automation_runtime_idempotency",
  "automation_runtime_runs",
  "automation_runtime_run_slots",
  "automation_runtime_audit",
  "automation_runtime_run_events",
  "automation_runtime_run_leases",
  "automation_runtime_authority_leases",
  "automation_runtime_spend_ledgers",
  "automation_runtime_spend_holds",
  "automation_runtime_spend_runs",
  "automation_runtime_usage",
  "automation_runtime_tool_answers",
  "automation_runtime_webhook_deliveries",
  "automation_runtime_native_events",
  "automation_runtime_trust_policies",
  "automation_runtime_exchanged_tokens",
  "automation_runtime_activity",
  "automation_runtime_activity_seq",
  "automation_runtime_notify_subscriptions",
  "automation_runtime_notify_deliveries",
  "automation_runtime_notify_cursor",
];

/**
 * The CTEs `, purge_<i> AS (DELETE …)` deleting the rows of the namespaces in the CTE `due` from
 * each of {@linkcode PURGED_TABLES}.
 */
function purgeDeletes(sql: postgres.Sql): postgres.PendingQuery<postgres.Row[]> {
  return PURGED_TABLES.reduce(
    (ctes, table, i) =>
      sql`${ctes}, ${sql(`purge_${i}`)} AS (
      DELETE FROM ${sql(table)} WHERE namespace IN (SELECT namespace FROM due)
    )`,
    sql``,
  );
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
    )${purgeDeletes(sql)}
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

  claim(now: number, bootstrap?: BootstrapClaim): Promise<ClaimResult> {
    return this.#pool.run((sql) => claimAuthority(sql, this.#ns, now, bootstrap));
  }

  readState(): Promise<AuthorityState> {
    return this.#pool.run((sql) => readAuthorityState(sql, this.#ns));
  }

  /**
   * Deletes every row of each namespace retired more than the retention ago (the namespace's
   * rows in every part's table are the namespace's own: one statement drops them all).
   */
  purgeRetired(options: PurgeOptions): Promise<number> {
    return this.#pool.run((sql) => purgeNamespaces(sql, options));
  }
}
