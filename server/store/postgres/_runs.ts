/**
 * The runs part of the PostgreSQL store: run records and active-run slots (tables of migration
 * `003_runs.ts`). Like the rest of the store, every write is one statement and no connection is
 * pinned: the quota reservation is one call of a PL/pgSQL function that serializes reservations
 * of a namespace with a transaction-scoped lock.
 *
 * A state-filtered list is served by the indexes on (state, creation) of migration
 * `009_runs_and_effects.ts`; the retention purge finds finished runs by their end time through
 * another of them.
 *
 * A reservation may take a spend hold in the same function call (`reserveRun`), and a run's
 * creation gives the hold of its reservation the run in its statement (`_spend.ts`).
 *
 * The events part reads which runs ended, for its purge, through {@linkcode endedRunIds}.
 * A creation and an update append the activity entries they are given in their own statement,
 * through the activity part's {@linkcode appendActivityAfter}.
 *
 * @module
 */
import type postgres from "postgres";
import {
  decodeRunCursor,
  encodeRunCursor,
  holdsRunSlot,
  invalidCursor,
  type RunListQuery,
  type RunReservation,
  type RunReservationResult,
  type RunSlotReservation,
  type RunSlotResult,
  type StoredRunPage,
  type StoredRunRecord,
} from "../run_types.ts";
import type { RunStore } from "../runs.ts";
import { type IdempotencyCompletion, IdempotencyLeaseLostError } from "../idempotency.ts";
import type { PostgresPool } from "./_pool.ts";
import { completedAfter, heldClaim } from "./_idempotency.ts";
import type { ActivityInput } from "../activity.ts";
import { appendActivityAfter } from "./_activity.ts";
import { attachHold } from "./_spend.ts";

/**
 * The query of the ids of the namespace's runs that ended before `endedBefore` (RFC 3339): the
 * accessor the events part's purge reads the runs through, inside its own statement.
 *
 * @example
 * ```ts ignore
 * await sql`DELETE FROM … WHERE run_id IN (${endedRunIds(sql, namespace, before)})`;
 * ```
 */
export function endedRunIds(
  sql: postgres.Sql,
  namespace: string,
  endedBefore: string,
): postgres.PendingQuery<postgres.Row[]> {
  return sql`SELECT run_id FROM automation_runtime_runs WHERE ${
    ended(sql, namespace, endedBefore)
  }`;
}

/**
 * The condition of a namespace's runs that ended before `endedBefore`: the end index's, less a
 * session waiting for its first turn (it holds its slot: `holdsRunSlot`).
 */
function ended(
  sql: postgres.Sql,
  namespace: string,
  endedBefore: string,
): postgres.PendingQuery<postgres.Row[]> {
  return sql`namespace = ${namespace} AND state IN ('completed', 'failed', 'cancelled')
    AND (record->>'endedAt') COLLATE "C" < ${endedBefore} AND NOT record ? 'awaitingFirstTurn'`;
}

/** The runs part of the PostgreSQL store. */
export class PostgresRuns implements RunStore {
  readonly #pool: PostgresPool;
  readonly #ns: string;

  constructor(pool: PostgresPool, namespace: string) {
    this.#pool = pool;
    this.#ns = namespace;
  }

  async reserveSlot(params: RunSlotReservation): Promise<RunSlotResult> {
    // Without a hold there is no budget to exceed.
    return (await this.reserveRun(params)).result as RunSlotResult;
  }

  /** One call of `automation_runtime_reserve_run` (migration `017_spend_turns.ts`). */
  reserveRun(params: RunReservation): Promise<RunReservationResult> {
    const hold = params.hold;
    const text = (value: bigint | null | undefined) =>
      value === null || value === undefined ? null : String(value);
    return this.#pool.run(async (sql) => {
      const [row] = await sql<
        {
          r_result: string;
          r_amount: string | null;
          r_ceiling: string | null;
          r_left: string | null;
          r_limit: string | null;
        }[]
      >`
        SELECT * FROM automation_runtime_reserve_run(
          ${this.#ns}, ${params.principalId}, ${params.slotId}, ${params.principalLimit},
          ${params.serviceLimit}, ${String(params.now)}, ${String(params.now + params.leaseMs)},
          ${hold?.holdId ?? null}::text, ${hold?.runId ?? null}::text,
          ${hold?.turn ?? null}::integer, ${hold?.period ?? null}::text,
          ${text(hold?.limit)}::bigint, ${text(hold?.runCap)}::bigint,
          ${hold?.fence === true}::boolean)`;
      switch (row.r_result) {
        case "budgetExceeded":
          return {
            result: "budgetExceeded",
            limit: row.r_limit === "maxRunCost" ? "maxRunCost" : "budget",
            left: BigInt(row.r_left ?? "0"),
          };
        case "principalQuota":
        case "serviceQuota":
          return { result: row.r_result };
        default:
          return row.r_amount === null || row.r_ceiling === null ? { result: "reserved" } : {
            result: "reserved",
            hold: { amount: BigInt(row.r_amount), ceiling: BigInt(row.r_ceiling) },
          };
      }
    });
  }

  releaseSlot(principalId: string, slotId: string): Promise<void> {
    return this.#pool.run(async (sql) => {
      await sql`
        DELETE FROM automation_runtime_run_slots
        WHERE namespace = ${this.#ns} AND principal_id = ${principalId} AND slot_id = ${slotId}
          AND lease_until IS NOT NULL`;
    });
  }

  /**
   * One statement: with `completion`, it locks the idempotency claim first and writes nothing
   * unless `completion.token` still owns it; then the slots, the run, the completion and the
   * activity entries.
   */
  create(
    record: StoredRunRecord,
    slotId: string,
    completion?: IdempotencyCompletion,
    activity?: readonly ActivityInput[],
  ): Promise<void> {
    const active = holdsRunSlot(record);
    const ns = this.#ns;
    return this.#pool.run(async (sql) => {
      const [row] = await sql<{ owned: number }[]>`
        WITH claim AS (
          ${completion === undefined ? sql`SELECT 1` : heldClaim(sql, ns, completion)}
        ), dropped AS (
          DELETE FROM automation_runtime_run_slots
          WHERE namespace = ${ns} AND principal_id = ${record.principalId}
            AND slot_id = ${slotId} AND EXISTS (SELECT 1 FROM claim)
        ), slot AS (
          INSERT INTO automation_runtime_run_slots (namespace, principal_id, slot_id, lease_until)
          SELECT ${ns}, ${record.principalId}, ${record.runId}, NULL
          WHERE ${active} AND EXISTS (SELECT 1 FROM claim)
          ON CONFLICT (namespace, principal_id, slot_id) DO UPDATE SET lease_until = NULL
        ), attached AS (
          ${attachHold(sql, ns, record.principalId, slotId, record.runId)}
            AND EXISTS (SELECT 1 FROM claim)
        ), inserted AS (
          INSERT INTO automation_runtime_runs
            (namespace, run_id, principal_id, state, created_at, record)
          SELECT ${ns}, ${record.runId}, ${record.principalId}, ${record.state},
                 ${record.createdAt}, ${sql.json(record as unknown as postgres.JSONValue)}
          WHERE EXISTS (SELECT 1 FROM claim)
          ON CONFLICT (namespace, run_id) DO UPDATE SET
            state = EXCLUDED.state, record = EXCLUDED.record
          RETURNING 1
        )${
        completion === undefined
          ? sql``
          : sql`, completed AS (${completedAfter(sql, ns, completion, "inserted")})`
      }${appendActivityAfter(sql, ns, activity, "inserted")}
        SELECT (SELECT count(*) FROM claim)::int AS owned, (SELECT count(*) FROM logged) AS logged`;
      if (row.owned === 0) {
        throw new IdempotencyLeaseLostError(
          "The idempotency claim was taken over before the run was recorded",
        );
      }
    });
  }

  get(runId: string): Promise<StoredRunRecord | null> {
    return this.#pool.run(async (sql) => {
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
  update(
    record: StoredRunRecord,
    expected?: StoredRunRecord,
    activity?: readonly ActivityInput[],
  ): Promise<boolean> {
    const active = holdsRunSlot(record);
    const json = (value: StoredRunRecord) => value as unknown as postgres.JSONValue;
    return this.#pool.run(async (sql) => {
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
        )${appendActivityAfter(sql, this.#ns, activity, "updated")}
        SELECT (SELECT count(*) FROM logged) AS logged FROM updated`;
      return expected === undefined || rows.count > 0;
    });
  }

  list(params: RunListQuery): Promise<StoredRunPage> {
    const cursor = params.cursor === undefined ? null : decodeRunCursor(params.cursor);
    if (params.cursor !== undefined && cursor === null) return Promise.reject(invalidCursor());
    return this.#pool.run(async (sql) => {
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
        nextCursor: rows.length > params.limit && last !== undefined ? encodeRunCursor(last) : null,
      };
    });
  }

  /** One statement: the finished runs' rows, found by the end-time index. */
  purgeEnded(endedBefore: string): Promise<number> {
    return this.#pool.run(async (sql) => {
      const deleted = await sql`
        DELETE FROM automation_runtime_runs WHERE ${ended(sql, this.#ns, endedBefore)}`;
      return deleted.count;
    });
  }

  /** One statement: the runs' own slots (no lease) joined to their waiting records. */
  idleRuns(principalId: string | null, limit: number): Promise<StoredRunRecord[]> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<{ record: StoredRunRecord }[]>`
        SELECT r.record FROM automation_runtime_run_slots s
        JOIN automation_runtime_runs r ON r.namespace = s.namespace AND r.run_id = s.slot_id
        WHERE s.namespace = ${this.#ns} AND s.lease_until IS NULL
          ${principalId === null ? sql`` : sql`AND s.principal_id = ${principalId}`}
          AND r.record ? 'awaitingFirstTurn'
        LIMIT ${limit}`;
      return rows.map((row) => row.record);
    });
  }

  countSlots(principalId: string | null, now: number): Promise<number> {
    return this.#pool.run(async (sql) => {
      const [row] = await sql<{ count: number }[]>`
        SELECT count(*)::int AS count FROM automation_runtime_run_slots
        WHERE namespace = ${this.#ns}
          ${principalId === null ? sql`` : sql`AND principal_id = ${principalId}`}
          AND (lease_until IS NULL OR lease_until > ${String(now)})`;
      return row.count;
    });
  }
}
