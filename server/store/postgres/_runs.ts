/**
 * The run gateway's records in PostgreSQL (tables of migration `003_runs.ts`). Like the rest of
 * the store, every write is one statement and no connection is pinned: the quota reservation is
 * one call of a PL/pgSQL function that serializes reservations of a namespace with a
 * transaction-scoped lock.
 *
 * @module
 */
import type postgres from "postgres";
import {
  ACTIVE_RUN_STATES,
  type AuditAction,
  type AuditEntry,
  type AuditEntryInput,
  type AuditListQuery,
  type AuditPage,
  decodeCursor,
  encodeCursor,
  type RunListQuery,
  type RunSlotReservation,
  type RunSlotResult,
  type RunStore,
  type StoredRunPage,
  type StoredRunRecord,
} from "../run_types.ts";

/** Runs one operation on the store's current pool, mapping failures to store errors. */
export type PostgresRunner = <T>(operation: (sql: postgres.Sql) => Promise<T>) => Promise<T>;

interface AuditRow {
  seq: string;
  at: string;
  action: string;
  actor_id: string;
  subject_id: string | null;
  run_id: string | null;
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
  if (row.run_id !== null) entry.runId = row.run_id;
  return entry;
}

/**
 * The `INSERT … SELECT` of one audit row, shared by every statement that appends to the audit
 * log; callers may append a `WHERE` (to write it only with another write of the same statement)
 * and `RETURNING`.
 */
export function auditInsert(
  sql: postgres.Sql,
  namespace: string,
  input: AuditEntryInput,
): postgres.PendingQuery<postgres.Row[]> {
  return sql`
    INSERT INTO automation_runtime_audit
      (namespace, at, action, actor_id, subject_id, run_id, correlation_id, outcome)
    SELECT ${namespace}, ${input.at}, ${input.action}, ${input.actorId},
           ${input.subjectId ?? null}, ${input.runId ?? null}, ${input.correlationId},
           ${input.outcome}`;
}

/** The run part of the PostgreSQL store; the store delegates to it. */
export class PostgresRunStore implements RunStore {
  #run: PostgresRunner;
  #ns: string;

  constructor(run: PostgresRunner, namespace: string) {
    this.#run = run;
    this.#ns = namespace;
  }

  reserveRunSlot(params: RunSlotReservation): Promise<RunSlotResult> {
    return this.#run(async (sql) => {
      const [row] = await sql<{ result: RunSlotResult }[]>`
        SELECT automation_runtime_reserve_run_slot(
          ${this.#ns}, ${params.principalId}, ${params.slotId}, ${params.principalLimit},
          ${params.serviceLimit}, ${String(params.now)},
          ${String(params.now + params.leaseMs)}) AS result`;
      return row.result;
    });
  }

  releaseRunSlot(principalId: string, slotId: string): Promise<void> {
    return this.#run(async (sql) => {
      await sql`
        DELETE FROM automation_runtime_run_slots
        WHERE namespace = ${this.#ns} AND principal_id = ${principalId} AND slot_id = ${slotId}
          AND lease_until IS NOT NULL`;
    });
  }

  createRun(record: StoredRunRecord, slotId: string): Promise<void> {
    const active = ACTIVE_RUN_STATES.has(record.state);
    return this.#run(async (sql) => {
      await sql`
        WITH dropped AS (
          DELETE FROM automation_runtime_run_slots
          WHERE namespace = ${this.#ns} AND principal_id = ${record.principalId}
            AND slot_id = ${slotId}
        ), slot AS (
          INSERT INTO automation_runtime_run_slots (namespace, principal_id, slot_id, lease_until)
          SELECT ${this.#ns}, ${record.principalId}, ${record.runId}, NULL WHERE ${active}
          ON CONFLICT (namespace, principal_id, slot_id) DO UPDATE SET lease_until = NULL
        )
        INSERT INTO automation_runtime_runs
          (namespace, run_id, principal_id, state, created_at, record)
        VALUES (${this.#ns}, ${record.runId}, ${record.principalId}, ${record.state},
                ${record.createdAt}, ${sql.json(record as unknown as postgres.JSONValue)})
        ON CONFLICT (namespace, run_id) DO UPDATE SET
          state = EXCLUDED.state, record = EXCLUDED.record`;
    });
  }

  getRun(runId: string): Promise<StoredRunRecord | null> {
    return this.#run(async (sql) => {
      const rows = await sql<{ record: StoredRunRecord }[]>`
        SELECT record FROM automation_runtime_runs
        WHERE namespace = ${this.#ns} AND run_id = ${runId}`;
      return rows.length === 0 ? null : rows[0].record;
    });
  }

  /**
   * One statement: the record's update (with `expected`, only while the stored record equals it,
   * by `jsonb` equality), and the slot change only when the update happened.
   */
  updateRun(record: StoredRunRecord, expected?: StoredRunRecord): Promise<boolean> {
    const active = ACTIVE_RUN_STATES.has(record.state);
    const json = (value: StoredRunRecord) => value as unknown as postgres.JSONValue;
    return this.#run(async (sql) => {
      const rows = await sql`
        WITH updated AS (
          UPDATE automation_runtime_runs
          SET state = ${record.state}, record = ${sql.json(json(record))}
          WHERE namespace = ${this.#ns} AND run_id = ${record.runId}
            ${expected === undefined ? sql`` : sql`AND record = ${sql.json(json(expected))}`}
          RETURNING 1
        ), freed AS (
          DELETE FROM automation_runtime_run_slots
          WHERE namespace = ${this.#ns} AND principal_id = ${record.principalId}
            AND slot_id = ${record.runId} AND NOT ${active}
            AND EXISTS (SELECT 1 FROM updated)
        ), kept AS (
          INSERT INTO automation_runtime_run_slots (namespace, principal_id, slot_id, lease_until)
          SELECT ${this.#ns}, ${record.principalId}, ${record.runId}, NULL
          WHERE ${active} AND EXISTS (SELECT 1 FROM updated)
          ON CONFLICT (namespace, principal_id, slot_id) DO UPDATE SET lease_until = NULL
        )
        SELECT 1 FROM updated`;
      return expected === undefined || rows.count > 0;
    });
  }

  listRuns(params: RunListQuery): Promise<StoredRunPage> {
    return this.#run(async (sql) => {
      const after = params.cursor === undefined ? null : decodeCursor(params.cursor);
      const cursor = after !== null && after.length === 2 &&
          typeof after[0] === "string" && typeof after[1] === "string"
        ? { createdAt: after[0], runId: after[1] }
        : null;
      const rows = await sql<{ record: StoredRunRecord }[]>`
        SELECT record FROM automation_runtime_runs
        WHERE namespace = ${this.#ns}
          ${
        params.principalId === undefined ? sql`` : sql`AND principal_id = ${params.principalId}`
      }
          ${params.state === undefined ? sql`` : sql`AND state = ${params.state}`}
          ${
        cursor === null ? sql`` : sql`AND (created_at COLLATE "C", run_id COLLATE "C") <
                    (${cursor.createdAt} COLLATE "C", ${cursor.runId} COLLATE "C")`
      }
        ORDER BY created_at COLLATE "C" DESC, run_id COLLATE "C" DESC
        LIMIT ${params.limit + 1}`;
      const runs = rows.slice(0, params.limit).map((row) => row.record);
      const last = runs.at(-1);
      return {
        runs,
        nextCursor: rows.length > params.limit && last !== undefined
          ? encodeCursor([last.createdAt, last.runId])
          : null,
      };
    });
  }

  countRunSlots(principalId: string | null, now: number): Promise<number> {
    return this.#run(async (sql) => {
      const [row] = await sql<{ count: number }[]>`
        SELECT count(*)::int AS count FROM automation_runtime_run_slots
        WHERE namespace = ${this.#ns}
          ${principalId === null ? sql`` : sql`AND principal_id = ${principalId}`}
          AND (lease_until IS NULL OR lease_until > ${String(now)})`;
      return row.count;
    });
  }

  appendAudit(input: AuditEntryInput): Promise<AuditEntry> {
    return this.#run(async (sql) => {
      const [row] = await sql<{ seq: string }[]>`${
        auditInsert(sql, this.#ns, input)
      } RETURNING seq`;
      return { seq: Number(row.seq), ...input };
    });
  }

  listAudit(params: AuditListQuery): Promise<AuditPage> {
    return this.#run(async (sql) => {
      const after = params.cursor === undefined ? null : decodeCursor(params.cursor);
      const before = after !== null && typeof after[0] === "number" ? after[0] : null;
      const rows = await sql<AuditRow[]>`
        SELECT seq, at, action, actor_id, subject_id, run_id, correlation_id, outcome
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
          ? encodeCursor([last.seq])
          : null,
      };
    });
  }
}
