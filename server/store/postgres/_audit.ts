/**
 * The audit part of the PostgreSQL store (table `automation_runtime_audit` of migration
 * `003_runs.ts`, its `seq` a sequence, so replicas appending at once never number alike).
 *
 * A write of another part that must be audited appends its entry in its own statement, through
 * {@linkcode auditAfter}: both or neither.
 *
 * @module
 */
import type postgres from "postgres";
import {
  type AuditAction,
  type AuditEntry,
  type AuditEntryInput,
  type AuditListQuery,
  type AuditPage,
  decodeAuditCursor,
  encodeAuditCursor,
  type ExchangedToken,
  invalidCursor,
} from "../run_types.ts";
import type { AuditStore } from "../audit.ts";
import type { PostgresPool } from "./_pool.ts";

interface AuditRow {
  seq: string;
  at: string;
  action: string;
  actor_id: string;
  subject_id: string | null;
  subject_name: string | null;
  run_id: string | null;
  trust_policy: string | null;
  subscription_id: string | null;
  token: ExchangedToken | null;
  correlation_id: string;
  outcome: string;
}

function toAuditEntry(row: AuditRow): AuditEntry {
  const entry: AuditEntry = {
    seq: Number(row.seq),
    at: row.at,
    action: row.action as AuditAction,
    actorId: row.actor_id,
    correlationId: row.correlation_id,
    outcome: row.outcome,
  };
  if (row.subject_id !== null) entry.subjectId = row.subject_id;
  if (row.subject_name !== null) entry.subjectName = row.subject_name;
  if (row.run_id !== null) entry.runId = row.run_id;
  if (row.trust_policy !== null) entry.trustPolicy = row.trust_policy;
  if (row.subscription_id !== null) entry.subscriptionId = row.subscription_id;
  if (row.token !== null) entry.token = row.token;
  return entry;
}

/** The `INSERT … SELECT` of one audit row; callers may append a `WHERE` and `RETURNING`. */
function auditInsert(
  sql: postgres.Sql,
  namespace: string,
  input: AuditEntryInput,
): postgres.PendingQuery<postgres.Row[]> {
  return sql`
    INSERT INTO automation_runtime_audit
      (namespace, at, action, actor_id, subject_id, subject_name, run_id, trust_policy,
       subscription_id, token, correlation_id, outcome)
    SELECT ${namespace}, ${input.at}, ${input.action}, ${input.actorId},
           ${input.subjectId ?? null}, ${input.subjectName ?? null}::text, ${input.runId ?? null},
           ${input.trustPolicy ?? null}::text, ${input.subscriptionId ?? null}::text,
           ${
    input.token === undefined ? null : sql.json(input.token as unknown as postgres.JSONValue)
  }::jsonb,
           ${input.correlationId}, ${input.outcome}`;
}

/**
 * The CTE `, audited AS (…)` appending `audit` when the CTE named `after` returned a row, so a
 * write of another part and its audit entry commit in one statement, both or neither; nothing
 * without an entry.
 *
 * @example
 * ```ts ignore
 * await sql`WITH updated AS (…)${auditAfter(sql, namespace, entry, "updated")} SELECT 1`;
 * ```
 */
export function auditAfter(
  sql: postgres.Sql,
  namespace: string,
  audit: AuditEntryInput | undefined,
  after: string,
): postgres.PendingQuery<postgres.Row[]> {
  if (audit === undefined) return sql``;
  return sql`, audited AS (
    ${auditInsert(sql, namespace, audit)}
    WHERE EXISTS (SELECT 1 FROM ${sql(after)})
  )`;
}

/** The audit part of the PostgreSQL store. */
export class PostgresAudit implements AuditStore {
  readonly #pool: PostgresPool;
  readonly #ns: string;

  constructor(pool: PostgresPool, namespace: string) {
    this.#pool = pool;
    this.#ns = namespace;
  }

  append(input: AuditEntryInput): Promise<AuditEntry> {
    return this.#pool.run(async (sql) => {
      const [row] = await sql<{ seq: string }[]>`${
        auditInsert(sql, this.#ns, input)
      } RETURNING seq`;
      return { seq: Number(row.seq), ...input };
    });
  }

  list(params: AuditListQuery): Promise<AuditPage> {
    const before = params.cursor === undefined ? null : decodeAuditCursor(params.cursor);
    if (params.cursor !== undefined && before === null) return Promise.reject(invalidCursor());
    return this.#pool.run(async (sql) => {
      const rows = await sql<AuditRow[]>`
        SELECT seq, at, action, actor_id, subject_id, subject_name, run_id, trust_policy,
               subscription_id, token,
               correlation_id, outcome
        FROM automation_runtime_audit
        WHERE namespace = ${this.#ns}
          ${before === null ? sql`` : sql`AND seq < ${String(before)}`}
          ${params.action === undefined ? sql`` : sql`AND action = ${params.action}`}
          ${
        params.principalId === undefined
          ? sql``
          : sql`AND (actor_id = ${params.principalId} OR subject_id = ${params.principalId})`
      }
        ORDER BY seq DESC
        LIMIT ${params.limit + 1}`;
      const entries = rows.slice(0, params.limit).map(toAuditEntry);
      const last = entries.at(-1);
      return {
        entries,
        nextCursor: rows.length > params.limit && last !== undefined
          ? encodeAuditCursor(last.seq)
          : null,
      };
    });
  }
}
