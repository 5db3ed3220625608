/**
 * The trust policies part of the PostgreSQL store (tables `automation_runtime_trust_policies` and
 * `automation_runtime_exchanged_tokens` of migration `010_trust_policies.ts`).
 *
 * Every write is one statement. An exchange is ONE statement that locks the policy row it read
 * (`FOR SHARE`: a concurrent deletion waits for it, or, committed first, leaves it nothing to
 * lock), records the idempotency answer (through `_idempotency.ts`'s fragments), inserts the
 * token's use and the principal (through `_principals.ts`'s) and appends the audit entry (through
 * `_audit.ts`'s). The use and the principal are plain inserts: a racing exchange of the same token
 * (or a principal of the same id) makes the statement fail with a unique violation, which rolls
 * all of it back, and the next attempt sees why.
 *
 * @module
 */
import type postgres from "postgres";
import type { AuditEntryInput } from "../run_types.ts";
import type { PrincipalRecord } from "../principals.ts";
import type { IdempotencyRecording } from "../idempotency.ts";
import type {
  ExchangeResult,
  TokenUse,
  TrustPolicyPageOptions,
  TrustPolicyRecord,
  TrustPolicyRecordPage,
  TrustPolicyStore,
} from "../trust_policies.ts";
import { ms, type PostgresPool } from "./_pool.ts";
import {
  priorRecord,
  priorSelected,
  recordedUnless,
  recordedWrite,
  type RecordedWriteRow,
} from "./_idempotency.ts";
import { auditAfter } from "./_audit.ts";
import { principalInsert, principalTaken } from "./_principals.ts";

/** What the statement of an exchange reports. */
interface ExchangeRow extends RecordedWriteRow {
  policy: number;
  used: number;
  taken: number;
}

/** The trust policies part of the PostgreSQL store. */
export class PostgresTrustPolicies implements TrustPolicyStore {
  readonly #pool: PostgresPool;
  readonly #ns: string;

  constructor(pool: PostgresPool, namespace: string) {
    this.#pool = pool;
    this.#ns = namespace;
  }

  create(record: TrustPolicyRecord, audit?: AuditEntryInput): Promise<"created" | "exists"> {
    const ns = this.#ns;
    return this.#pool.run(async (sql) => {
      const inserted = await sql`
        WITH inserted AS (
          INSERT INTO automation_runtime_trust_policies (namespace, name, policy_id, record)
          VALUES (${ns}, ${record.name}, ${record.policyId},
                  ${sql.json(record as unknown as postgres.JSONValue)})
          ON CONFLICT DO NOTHING
          RETURNING 1
        )${auditAfter(sql, ns, audit, "inserted")}
        SELECT 1 FROM inserted`;
      return inserted.count === 0 ? "exists" : "created";
    });
  }

  get(name: string): Promise<TrustPolicyRecord | null> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<{ record: TrustPolicyRecord }[]>`
        SELECT record FROM automation_runtime_trust_policies
        WHERE namespace = ${this.#ns} AND name = ${name}`;
      return rows.length === 0 ? null : rows[0].record;
    });
  }

  /** A keyset page by name, in byte order (as KV orders them): `limit + 1` rows. */
  page(options: TrustPolicyPageOptions): Promise<TrustPolicyRecordPage> {
    const after = options.after;
    return this.#pool.run(async (sql) => {
      const rows = await sql<{ record: TrustPolicyRecord }[]>`
        SELECT record FROM automation_runtime_trust_policies
        WHERE namespace = ${this.#ns}
          ${after === undefined ? sql`` : sql`AND name COLLATE "C" > ${after}`}
        ORDER BY name COLLATE "C"
        LIMIT ${options.limit + 1}`;
      const records = rows.slice(0, options.limit).map((row) => row.record);
      return {
        records,
        next: rows.length > options.limit ? records.at(-1)!.name : null,
      };
    });
  }

  delete(name: string, audit?: AuditEntryInput): Promise<"deleted" | "notFound"> {
    const ns = this.#ns;
    return this.#pool.run(async (sql) => {
      const deleted = await sql`
        WITH deleted AS (
          DELETE FROM automation_runtime_trust_policies
          WHERE namespace = ${ns} AND name = ${name}
          RETURNING 1
        )${auditAfter(sql, ns, audit, "deleted")}
        SELECT 1 FROM deleted`;
      return deleted.count === 0 ? "notFound" : "deleted";
    });
  }

  /** One statement (see the module documentation), run by `recordedWrite`. */
  exchange(
    principal: PrincipalRecord,
    use: TokenUse,
    recording: IdempotencyRecording,
    audit: AuditEntryInput,
  ): Promise<ExchangeResult> {
    const ns = this.#ns;
    return this.#pool.run((sql) =>
      recordedWrite(
        recording,
        async () => {
          const [row] = await sql<ExchangeRow[]>`
            WITH prior AS (
              ${priorRecord(sql, ns, recording.scope)}
            ), policy AS (
              SELECT 1 FROM automation_runtime_trust_policies
              WHERE namespace = ${ns} AND name = ${use.policyName}
                AND policy_id = ${use.policyId}
              FOR SHARE
            ), used AS (
              SELECT 1 FROM automation_runtime_exchanged_tokens
              WHERE namespace = ${ns} AND token_digest = ${use.tokenDigest}
            ), taken AS (
              ${principalTaken(sql, ns, principal)}
            ), refused AS (
              SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM policy)
                OR EXISTS (SELECT 1 FROM used) OR EXISTS (SELECT 1 FROM taken)
            ), recorded AS (
              ${recordedUnless(sql, ns, recording, "refused")}
            ), token AS (
              INSERT INTO automation_runtime_exchanged_tokens
                (namespace, token_digest, principal_id, expires_at)
              SELECT ${ns}, ${use.tokenDigest}, ${principal.principalId}, ${ms(use.expiresAt)}
              WHERE EXISTS (SELECT 1 FROM recorded)
              RETURNING 1
            ), inserted AS (
              ${principalInsert(sql, ns, principal)}
              WHERE EXISTS (SELECT 1 FROM token)
              RETURNING 1
            )${auditAfter(sql, ns, audit, "inserted")}
            SELECT (SELECT count(*) FROM inserted)::int AS created,
                   (SELECT count(*) FROM policy)::int AS policy,
                   (SELECT count(*) FROM used)::int AS used,
                   (SELECT count(*) FROM taken)::int AS taken,
                   ${priorSelected(sql)}`;
          return row;
        },
        (row) =>
          row.policy === 0
            ? "policyGone"
            : row.used > 0
            ? "replayed"
            : row.taken > 0
            ? "exists"
            : null,
      )
    );
  }

  isTokenUsed(tokenDigest: string): Promise<boolean> {
    return this.#pool.run(async (sql) => {
      const rows = await sql`
        SELECT 1 FROM automation_runtime_exchanged_tokens
        WHERE namespace = ${this.#ns} AND token_digest = ${tokenDigest}`;
      return rows.length > 0;
    });
  }

  purgeTokenUses(now: number): Promise<number> {
    return this.#pool.run(async (sql) => {
      const deleted = await sql`
        DELETE FROM automation_runtime_exchanged_tokens
        WHERE namespace = ${this.#ns} AND expires_at <= ${ms(now)}`;
      return deleted.count;
    });
  }
}
