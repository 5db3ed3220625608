/**
 * The principals part of the PostgreSQL store (table `automation_runtime_principals` of
 * migration `001_initial.ts`).
 *
 * - Every write is one SQL statement guarded by unique constraints, never read-then-write, so
 *   replicas racing on the same principal id or idempotency key agree. No connection is pinned
 *   (see `_pool.ts` for why).
 * - A creation writes the request's idempotency record and its audit entry in its own statement,
 *   through the fragments of `_idempotency.ts` and `_audit.ts`; a revocation raises the
 *   namespace's revocation counter (`_authority.ts`) and appends its audit entry likewise. Each
 *   is stored with its effect, both or neither.
 *
 * @module
 */
import type postgres from "postgres";
import type { AuditEntryInput } from "../run_types.ts";
import type {
  Capability,
  CreatePrincipalResult,
  PrincipalPageOptions,
  PrincipalRecord,
  PrincipalRecordPage,
  PrincipalStore,
  RecordedCreateResult,
  RevokePrincipalResult,
} from "../principals.ts";
import {
  type IdempotencyCompletion,
  IdempotencyLeaseLostError,
  type IdempotencyRecording,
} from "../idempotency.ts";
import type { PurgeOptions } from "../authority.ts";
import {
  RESOURCE_POLICY_FIELDS,
  type ResourcePolicyField,
  type SpendPolicy,
} from "../../../wire/mod.ts";
import type { PostgresPool } from "./_pool.ts";
import {
  completedAfter,
  heldClaim,
  priorRecord,
  priorSelected,
  recordedUnless,
  recordedWrite,
  type RecordedWriteRow,
} from "./_idempotency.ts";
import { auditAfter } from "./_audit.ts";
import { revocationCounted } from "./_authority.ts";

interface PrincipalRow {
  principal_id: string;
  bearer_digest: string;
  capabilities: string[];
  expires_at: string;
  issuer_id: string;
  created_at: string;
  revoked_at: string | null;
  nonce: string;
  agent_ids: string[] | null;
  max_active_runs: number | null;
  name: string | null;
  metadata: Record<string, string> | null;
  resource_policy: ResourcePolicyLists | null;
  allow_agent_overrides: boolean | null;
  spend_policy: SpendPolicy | null;
}

/** The resource policy lists of a principal, as its `resource_policy` column holds them. */
type ResourcePolicyLists = Partial<Record<ResourcePolicyField, string[]>>;

/** The `resource_policy` value of a record: its lists, or null when it has none. */
function resourcePolicyOf(record: PrincipalRecord): ResourcePolicyLists | null {
  const lists: ResourcePolicyLists = {};
  let any = false;
  for (const field of RESOURCE_POLICY_FIELDS) {
    const list = record[field];
    if (list) {
      lists[field] = [...list];
      any = true;
    }
  }
  return any ? lists : null;
}

/** The `spend_policy` value of a record: its spend limits, or null when it has none. */
function spendPolicyOf(record: PrincipalRecord): SpendPolicy | null {
  const policy: SpendPolicy = {};
  if (record.budget !== undefined) policy.budget = record.budget;
  if (record.maxRunCost !== undefined) policy.maxRunCost = record.maxRunCost;
  if (record.maxRunSeconds !== undefined) policy.maxRunSeconds = record.maxRunSeconds;
  return Object.keys(policy).length === 0 ? null : policy;
}

/** What the single statement of a recorded creation reports. */
interface RecordedCreateRow extends RecordedWriteRow {
  taken: number;
}

const PRINCIPAL_COLUMNS: readonly string[] = [
  "principal_id",
  "bearer_digest",
  "capabilities",
  "expires_at",
  "issuer_id",
  "created_at",
  "revoked_at",
  "nonce",
  "agent_ids",
  "max_active_runs",
  "name",
  "metadata",
  "resource_policy",
  "allow_agent_overrides",
  "spend_policy",
];

function toRecord(row: PrincipalRow): PrincipalRecord {
  const record: PrincipalRecord = {
    principalId: row.principal_id,
    bearerDigest: row.bearer_digest,
    capabilities: row.capabilities as Capability[],
    expiresAt: row.expires_at,
    issuerId: row.issuer_id,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    nonce: row.nonce,
  };
  if (row.agent_ids !== null) record.agentIds = row.agent_ids;
  if (row.max_active_runs !== null) record.maxActiveRuns = row.max_active_runs;
  if (row.name !== null) record.name = row.name;
  if (row.metadata !== null) record.metadata = row.metadata;
  if (row.resource_policy !== null) Object.assign(record, row.resource_policy);
  if (row.allow_agent_overrides === true) record.allowAgentOverrides = true;
  if (row.spend_policy !== null) Object.assign(record, row.spend_policy);
  return record;
}

/**
 * The `INSERT … SELECT` of one principal row, shared by every statement that creates a
 * principal (the trust policies part's exchange included); callers append their `WHERE`,
 * `ON CONFLICT` and `RETURNING`.
 *
 * @example
 * ```ts ignore
 * sql`WITH inserted AS (${principalInsert(sql, namespace, record)} RETURNING 1) …`;
 * ```
 */
export function principalInsert(
  sql: postgres.Sql,
  namespace: string,
  record: PrincipalRecord,
): postgres.PendingQuery<postgres.Row[]> {
  const policy = resourcePolicyOf(record);
  const spend = spendPolicyOf(record);
  return sql`
    INSERT INTO automation_runtime_principals
      (namespace, principal_id, bearer_digest, capabilities, expires_at, issuer_id,
       created_at, revoked_at, nonce, agent_ids, max_active_runs, name, metadata,
       resource_policy, allow_agent_overrides, spend_policy)
    SELECT ${namespace}, ${record.principalId}, ${record.bearerDigest},
           ${sql.array([...record.capabilities])}, ${record.expiresAt}, ${record.issuerId},
           ${record.createdAt}, ${record.revokedAt}, ${record.nonce},
           ${record.agentIds ? sql.array([...record.agentIds]) : null}::text[],
           ${record.maxActiveRuns ?? null}::integer, ${record.name ?? null}::text,
           ${
    record.metadata === undefined
      ? null
      : sql.json(record.metadata as unknown as postgres.JSONValue)
  }::jsonb,
           ${policy === null ? null : sql.json(policy)}::jsonb,
           ${record.allowAgentOverrides === true ? true : null}::boolean,
           ${spend === null ? null : sql.json(spend as unknown as postgres.JSONValue)}::jsonb`;
}

/**
 * The query of the principals holding `record`'s id or digest (none: both are free), for a CTE
 * of a statement that creates it.
 *
 * @example
 * ```ts ignore
 * sql`WITH taken AS (${principalTaken(sql, namespace, record)}) …`;
 * ```
 */
export function principalTaken(
  sql: postgres.Sql,
  namespace: string,
  record: PrincipalRecord,
): postgres.PendingQuery<postgres.Row[]> {
  return sql`
    SELECT 1 FROM automation_runtime_principals
    WHERE namespace = ${namespace}
      AND (principal_id = ${record.principalId} OR bearer_digest = ${record.bearerDigest})`;
}

/** The principals part of the PostgreSQL store. */
export class PostgresPrincipals implements PrincipalStore {
  readonly #pool: PostgresPool;
  readonly #ns: string;

  constructor(pool: PostgresPool, namespace: string) {
    this.#pool = pool;
    this.#ns = namespace;
  }

  /** Finds a principal by bearer digest, revoked ones included. Always reads the database. */
  findByDigest(bearerDigest: string): Promise<PrincipalRecord | null> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<PrincipalRow[]>`
        SELECT ${sql(PRINCIPAL_COLUMNS)} FROM automation_runtime_principals
        WHERE namespace = ${this.#ns} AND bearer_digest = ${bearerDigest}`;
      return rows.length === 0 ? null : toRecord(rows[0]);
    });
  }

  get(principalId: string): Promise<PrincipalRecord | null> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<PrincipalRow[]>`
        SELECT ${sql(PRINCIPAL_COLUMNS)} FROM automation_runtime_principals
        WHERE namespace = ${this.#ns} AND principal_id = ${principalId}`;
      return rows.length === 0 ? null : toRecord(rows[0]);
    });
  }

  /** Oldest first (by `createdAt`, then id, in byte order, as KV does). */
  list(): Promise<PrincipalRecord[]> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<PrincipalRow[]>`
        SELECT ${sql(PRINCIPAL_COLUMNS)} FROM automation_runtime_principals
        WHERE namespace = ${this.#ns}
        ORDER BY created_at COLLATE "C", principal_id COLLATE "C"`;
      return rows.map(toRecord);
    });
  }

  /** A keyset page: `limit + 1` rows, so it knows whether more follow. */
  page(options: PrincipalPageOptions): Promise<PrincipalRecordPage> {
    const after = options.after;
    return this.#pool.run(async (sql) => {
      const rows = await sql<PrincipalRow[]>`
        SELECT ${sql(PRINCIPAL_COLUMNS)} FROM automation_runtime_principals
        WHERE namespace = ${this.#ns} ${
        after === undefined ? sql`` : sql`
          AND (created_at COLLATE "C" > ${after.createdAt}
               OR (created_at = ${after.createdAt}
                   AND principal_id COLLATE "C" > ${after.principalId}))`
      }
        ORDER BY created_at COLLATE "C", principal_id COLLATE "C"
        LIMIT ${options.limit + 1}`;
      const records = rows.slice(0, options.limit).map(toRecord);
      const last = records.at(-1);
      return {
        records,
        next: rows.length > options.limit && last !== undefined
          ? { createdAt: last.createdAt, principalId: last.principalId }
          : null,
      };
    });
  }

  /**
   * Inserts a principal unless its id or digest exists (the unique constraints decide, so two
   * replicas racing on one id create it once). With `completion`, the same statement locks the
   * idempotency claim, inserts only while `completion.token` still owns it, and completes it only
   * when the insert happened; a claim taken over meanwhile writes nothing and throws
   * {@linkcode IdempotencyLeaseLostError}.
   */
  create(
    record: PrincipalRecord,
    completion?: IdempotencyCompletion,
    audit?: AuditEntryInput,
  ): Promise<CreatePrincipalResult>;
  /**
   * Creates a principal and records the answer under an unclaimed idempotency key, in one
   * statement: see {@linkcode PostgresPrincipals.#createRecorded}.
   */
  create(
    record: PrincipalRecord,
    recording: IdempotencyRecording,
    audit?: AuditEntryInput,
  ): Promise<RecordedCreateResult>;
  create(
    record: PrincipalRecord,
    idempotency?: IdempotencyCompletion | IdempotencyRecording,
    audit?: AuditEntryInput,
  ): Promise<RecordedCreateResult> {
    if (idempotency !== undefined && "requestDigest" in idempotency) {
      return this.#createRecorded(record, idempotency, audit);
    }
    const completion = idempotency;
    const ns = this.#ns;
    return this.#pool.run(async (sql) => {
      if (completion === undefined) {
        const inserted = await sql`
          WITH inserted AS (
            ${principalInsert(sql, ns, record)}
            ON CONFLICT DO NOTHING
            RETURNING 1
          )${auditAfter(sql, ns, audit, "inserted")}
          SELECT 1 FROM inserted`;
        return inserted.count === 0 ? "exists" : "created";
      }
      const [row] = await sql<{ owned: number; created: number; completed: number }[]>`
        WITH claim AS (
          ${heldClaim(sql, ns, completion)}
        ), inserted AS (
          ${principalInsert(sql, ns, record)}
          WHERE EXISTS (SELECT 1 FROM claim)
          ON CONFLICT DO NOTHING
          RETURNING 1
        ), completed AS (
          ${completedAfter(sql, ns, completion, "inserted")}
        )${auditAfter(sql, ns, audit, "completed")}
        SELECT (SELECT count(*) FROM claim)::int AS owned,
               (SELECT count(*) FROM inserted)::int AS created,
               (SELECT count(*) FROM completed)::int AS completed`;
      if (row.owned === 0) {
        throw new IdempotencyLeaseLostError(
          "The idempotency claim was taken over before the principal was created",
        );
      }
      if (row.created === 0) return "exists";
      if (row.completed === 0) throw new Error("The idempotency claim was not completed");
      return "created";
    });
  }

  /**
   * A recorded creation as ONE statement (no pinned connection). It reads the key's record and
   * whether the id or digest is taken; writes the finished idempotency record only when the key
   * is unused and neither is taken; and inserts the principal only when the record was written.
   * The principal insert has no `ON CONFLICT`: a racing creation of the same id under another
   * key makes it fail with a unique violation, which rolls back the whole statement, record
   * included, and the next attempt sees the principal. An attempt that wrote nothing and saw no
   * reason (a race it lost) is retried with a fresh snapshot.
   */
  #createRecorded(
    record: PrincipalRecord,
    recording: IdempotencyRecording,
    audit: AuditEntryInput | undefined,
  ): Promise<RecordedCreateResult> {
    const ns = this.#ns;
    return this.#pool.run((sql) =>
      recordedWrite(
        recording,
        async () => {
          const [row] = await sql<RecordedCreateRow[]>`
            WITH prior AS (
              ${priorRecord(sql, ns, recording.scope)}
            ), taken AS (
              ${principalTaken(sql, ns, record)}
            ), recorded AS (
              ${recordedUnless(sql, ns, recording, "taken")}
            ), inserted AS (
              ${principalInsert(sql, ns, record)}
              WHERE EXISTS (SELECT 1 FROM recorded)
              RETURNING 1
            )${auditAfter(sql, ns, audit, "inserted")}
            SELECT (SELECT count(*) FROM inserted)::int AS created,
                   (SELECT count(*) FROM taken)::int AS taken,
                   ${priorSelected(sql)}`;
          return row;
        },
        (row) => row.taken > 0 ? "exists" : null,
      )
    );
  }

  /**
   * Revokes a principal in one statement, its epoch move and audit entry included; the update and
   * the existence check share a snapshot, so a concurrent revoke answers `alreadyRevoked` and
   * never a false `revoked`.
   */
  revoke(
    principalId: string,
    revokedAt: string,
    audit?: AuditEntryInput,
  ): Promise<RevokePrincipalResult> {
    const ns = this.#ns;
    return this.#pool.run(async (sql) => {
      const [row] = await sql<{ revoked: number; present: number }[]>`
        WITH updated AS (
          UPDATE automation_runtime_principals SET revoked_at = ${revokedAt}
          WHERE namespace = ${ns} AND principal_id = ${principalId} AND revoked_at IS NULL
          RETURNING 1
        ), epoch AS (
          ${revocationCounted(sql, ns, "updated")}
        )${auditAfter(sql, ns, audit, "updated")}
        SELECT (SELECT count(*) FROM updated)::int AS revoked,
               (SELECT count(*) FROM automation_runtime_principals
                WHERE namespace = ${ns} AND principal_id = ${principalId})::int AS present`;
      if (row.revoked > 0) return "revoked";
      return row.present > 0 ? "alreadyRevoked" : "notFound";
    });
  }

  /** Deletes the namespace's principals revoked or expired before the cutoff, in one statement. */
  purgeRetired(options: PurgeOptions): Promise<number> {
    const cutoffAt = new Date(options.now - options.retentionMs).toISOString();
    return this.#pool.run(async (sql) => {
      const deleted = await sql`
        DELETE FROM automation_runtime_principals
        WHERE namespace = ${this.#ns}
          AND ((revoked_at IS NOT NULL AND revoked_at::timestamptz <= ${cutoffAt}::timestamptz)
               OR expires_at::timestamptz <= ${cutoffAt}::timestamptz)`;
      return deleted.count;
    });
  }
}
