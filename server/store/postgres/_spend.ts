/**
 * The spend part of the PostgreSQL store (what it keeps: see `../spend.ts`; tables and functions
 * of migrations `015_spend.ts` and `017_spend_turns.ts`). Every write is one statement: a settlement is one call of
 * `automation_runtime_settle_run`, which locks the run's totals row first, so two replicas
 * settling one report apply it once; a release deletes the hold and gives its amount back in one
 * statement. Holds are taken by the runs part's reservation (`automation_runtime_reserve_run`)
 * and given their run by its creation, through {@linkcode attachHold}.
 *
 * `bigint` columns come back as strings from the driver and are read with `BigInt`.
 *
 * @module
 */
import type postgres from "postgres";
import type {
  RunSettlement,
  SettlementResult,
  SpendHold,
  SpendLedger,
  SpendStore,
  UsageQuery,
  UsageSum,
} from "../spend.ts";
import type { PostgresPool } from "./_pool.ts";

interface HoldRow {
  principal_id: string;
  hold_id: string;
  run_id: string | null;
  turn: number;
  period: string | null;
  amount: string;
  lease_until: string;
}

function toHold(row: HoldRow): SpendHold {
  return {
    principalId: row.principal_id,
    holdId: row.hold_id,
    runId: row.run_id,
    turn: row.turn,
    period: row.period,
    amount: BigInt(row.amount),
    leaseUntil: Number(row.lease_until),
  };
}

const HOLD_COLUMNS = [
  "principal_id",
  "hold_id",
  "run_id",
  "turn",
  "period",
  "amount",
  "lease_until",
];

/**
 * The statement fragment that gives a start's hold (named after its slot) its run: the runs
 * part's creation runs it in its own statement, when its claim holds.
 *
 * @example
 * ```ts ignore
 * sql`WITH attached AS (${attachHold(sql, ns, principalId, slotId, runId)}) SELECT 1`;
 * ```
 */
export function attachHold(
  sql: postgres.Sql,
  namespace: string,
  principalId: string,
  slotId: string,
  runId: string,
): postgres.PendingQuery<postgres.Row[]> {
  return sql`
    UPDATE automation_runtime_spend_holds SET run_id = ${runId}
    WHERE namespace = ${namespace} AND principal_id = ${principalId} AND hold_id = ${slotId}
      AND run_id IS NULL`;
}

/** The spend part of the PostgreSQL store. */
export class PostgresSpend implements SpendStore {
  readonly #pool: PostgresPool;
  readonly #ns: string;

  constructor(pool: PostgresPool, namespace: string) {
    this.#pool = pool;
    this.#ns = namespace;
  }

  async ledger(principalId: string, period: string): Promise<SpendLedger> {
    return (await this.ledgers([{ principalId, period }]))[0];
  }

  ledgers(keys: readonly { principalId: string; period: string }[]): Promise<SpendLedger[]> {
    if (keys.length === 0) return Promise.resolve([]);
    return this.#pool.run(async (sql) => {
      const rows = await sql<
        { principal_id: string; period: string; spent: string; reserved: string }[]
      >`
        SELECT principal_id, period, spent, reserved FROM automation_runtime_spend_ledgers
        WHERE namespace = ${this.#ns}
          AND principal_id = ANY(${sql.array(keys.map((key) => key.principalId))})
          AND period = ANY(${sql.array(keys.map((key) => key.period))})`;
      const found = new Map(rows.map((row) => [`${row.principal_id}\n${row.period}`, row]));
      return keys.map((key) => {
        const row = found.get(`${key.principalId}\n${key.period}`);
        return row === undefined
          ? { spent: 0n, reserved: 0n }
          : { spent: BigInt(row.spent), reserved: BigInt(row.reserved) };
      });
    });
  }

  release(principalId: string, holdId: string): Promise<void> {
    return this.#pool.run(async (sql) => {
      await sql`
        WITH gone AS (
          DELETE FROM automation_runtime_spend_holds
          WHERE namespace = ${this.#ns} AND principal_id = ${principalId} AND hold_id = ${holdId}
          RETURNING period, amount
        )
        UPDATE automation_runtime_spend_ledgers l
        SET reserved = greatest(l.reserved - gone.amount, 0)
        FROM gone
        WHERE l.namespace = ${this.#ns} AND l.principal_id = ${principalId}
          AND l.period = gone.period`;
    });
  }

  settle(report: RunSettlement): Promise<SettlementResult> {
    return this.#pool.run(async (sql) => {
      const tokens = report.tokens;
      const [row] = await sql<{ r_added: string; r_released: string; r_cost: string }[]>`
        SELECT * FROM automation_runtime_settle_run(
          ${this.#ns}, ${report.runId}, ${report.principalId}, ${report.agentId},
          ${report.turn}::integer, ${report.final}::boolean,
          ${report.cost === null ? null : String(report.cost)}::bigint,
          ${String(tokens.inputTokens)}::bigint, ${String(tokens.outputTokens)}::bigint,
          ${String(tokens.cacheReadInputTokens)}::bigint,
          ${String(tokens.cacheCreationInputTokens)}::bigint, ${report.at})`;
      return {
        costAdded: BigInt(row.r_added),
        released: BigInt(row.r_released),
        cost: BigInt(row.r_cost),
      };
    });
  }

  runHolds(runId: string): Promise<SpendHold[]> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<HoldRow[]>`
        SELECT ${sql(HOLD_COLUMNS)} FROM automation_runtime_spend_holds
        WHERE namespace = ${this.#ns} AND run_id = ${runId}
        ORDER BY turn, hold_id`;
      return rows.map(toHold);
    });
  }

  openHolds(limit: number): Promise<SpendHold[]> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<HoldRow[]>`
        SELECT ${sql(HOLD_COLUMNS)} FROM automation_runtime_spend_holds
        WHERE namespace = ${this.#ns} AND run_id IS NOT NULL
        ORDER BY run_id, turn
        LIMIT ${limit}`;
      return rows.map(toHold);
    });
  }

  usage(query: UsageQuery): Promise<UsageSum[]> {
    return this.#pool.run(async (sql) => {
      const key = query.groupBy === "principal"
        ? sql`principal_id`
        : query.groupBy === "agent"
        ? sql`agent_id`
        : sql`substr(at, 1, 10)`;
      const rows = await sql<
        {
          key: string;
          cost: string;
          input: string;
          output: string;
          cache_read: string;
          cache_creation: string;
        }[]
      >`
        SELECT ${key} AS key, sum(cost)::text AS cost, sum(input_tokens)::text AS input,
               sum(output_tokens)::text AS output,
               sum(cache_read_input_tokens)::text AS cache_read,
               sum(cache_creation_input_tokens)::text AS cache_creation
        FROM automation_runtime_usage
        WHERE namespace = ${this.#ns}
          ${query.principalId === undefined ? sql`` : sql`AND principal_id = ${query.principalId}`}
          AND at COLLATE "C" >= ${query.from} AND at COLLATE "C" < ${query.to}
        GROUP BY ${key}
        ORDER BY ${key} COLLATE "C"
        LIMIT ${query.maxGroups + 1}`;
      if (rows.length > query.maxGroups) throw new RangeError("Too many usage groups");
      return rows.map((row) => ({
        key: row.key,
        cost: BigInt(row.cost),
        inputTokens: Number(row.input),
        outputTokens: Number(row.output),
        cacheReadInputTokens: Number(row.cache_read),
        cacheCreationInputTokens: Number(row.cache_creation),
      }));
    });
  }

  purge(before: string): Promise<number> {
    return this.#pool.run(async (sql) => {
      const deleted = await sql`
        DELETE FROM automation_runtime_usage
        WHERE namespace = ${this.#ns} AND at COLLATE "C" < ${before}`;
      await sql`
        DELETE FROM automation_runtime_spend_ledgers
        WHERE namespace = ${this.#ns} AND (
          (period LIKE 'day:%' AND substr(period, 5) COLLATE "C" < ${before.slice(0, 10)}) OR
          (period LIKE 'month:%' AND substr(period, 7) COLLATE "C" < ${before.slice(0, 7)}))`;
      await sql`
        DELETE FROM automation_runtime_spend_runs t
        WHERE t.namespace = ${this.#ns}
          AND NOT EXISTS (
            SELECT 1 FROM automation_runtime_runs r
            WHERE r.namespace = t.namespace AND r.run_id = t.run_id)
          AND NOT EXISTS (
            SELECT 1 FROM automation_runtime_spend_holds h
            WHERE h.namespace = t.namespace AND h.run_id = t.run_id)`;
      return deleted.count;
    });
  }
}
