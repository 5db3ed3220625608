/**
 * The answers part of the PostgreSQL store: tool answers and webhook delivery ids (tables of
 * migration `004_answers.ts`).
 * Each step is one statement: a claim is an `INSERT … ON CONFLICT DO UPDATE` whose update only
 * applies to a stale claim, so of replicas claiming at once exactly one gets the row; completing
 * and releasing check the claim's token in their `WHERE`.
 *
 * @module
 */
import {
  ANSWER_RETENTION_MS,
  type ToolAnswerClaim,
  type ToolAnswerClaimParams,
  type ToolAnswerKind,
  type ToolAnswerRecord,
  type ToolAnswerResult,
} from "../answer_types.ts";
import type { AnswerStore } from "../answers.ts";
import type { ActivityInput } from "../activity.ts";
import { type PostgresPool, RACE_ATTEMPTS } from "./_pool.ts";
import { appendActivityAfter } from "./_activity.ts";

interface AnswerRow {
  run_id: string;
  tool_use_id: string;
  kind: string;
  state: string;
  token: string;
  principal_id: string;
  result: string;
  claimed_at: string;
  answered_at: string | null;
}

function toRecord(row: AnswerRow): ToolAnswerRecord {
  const record: ToolAnswerRecord = {
    runId: row.run_id,
    toolUseId: row.tool_use_id,
    kind: row.kind as ToolAnswerKind,
    state: row.state as ToolAnswerRecord["state"],
    token: row.token,
    principalId: row.principal_id,
    result: row.result as ToolAnswerResult,
    claimedAt: Number(row.claimed_at),
  };
  if (row.answered_at !== null) record.answeredAt = row.answered_at;
  return record;
}

/** The answers part of the PostgreSQL store. */
export class PostgresAnswers implements AnswerStore {
  readonly #pool: PostgresPool;
  readonly #ns: string;
  readonly #now: () => number;

  /** `now` is the store's clock, read for the expiry of a completed answer. */
  constructor(pool: PostgresPool, namespace: string, now: () => number) {
    this.#pool = pool;
    this.#ns = namespace;
    this.#now = now;
  }

  claim(params: ToolAnswerClaimParams): Promise<ToolAnswerClaim> {
    return this.#pool.run(async (sql) => {
      const token = crypto.randomUUID();
      const staleBefore = String(params.now - params.staleMs);
      const expires = String(params.now + ANSWER_RETENTION_MS);
      for (let attempt = 0; attempt < RACE_ATTEMPTS; attempt++) {
        const [row] = await sql<(Partial<AnswerRow> & { claimed: string | null })[]>`
          WITH old AS (
            SELECT run_id, tool_use_id, kind, state, token, principal_id, result, claimed_at,
                   answered_at
            FROM automation_runtime_tool_answers
            WHERE namespace = ${this.#ns} AND run_id = ${params.runId}
              AND tool_use_id = ${params.toolUseId}
          ), claim AS (
            INSERT INTO automation_runtime_tool_answers AS a
              (namespace, run_id, tool_use_id, kind, state, token, principal_id, result,
               claimed_at, answered_at, expires_at)
            VALUES (${this.#ns}, ${params.runId}, ${params.toolUseId}, ${params.kind}, 'claimed',
                    ${token}, ${params.principalId}, ${params.result}, ${String(params.now)},
                    NULL, ${expires})
            ON CONFLICT (namespace, run_id, tool_use_id) DO UPDATE SET
              kind = EXCLUDED.kind, token = EXCLUDED.token, principal_id = EXCLUDED.principal_id,
              result = EXCLUDED.result, claimed_at = EXCLUDED.claimed_at,
              expires_at = EXCLUDED.expires_at
            WHERE a.state = 'claimed' AND a.claimed_at <= ${staleBefore}
            RETURNING token
          )
          SELECT (SELECT token FROM claim) AS claimed, old.*
          FROM (SELECT 1) AS one LEFT JOIN old ON true`;
        if (row.claimed !== null) {
          return row.run_id !== null && row.run_id !== undefined && row.state === "claimed"
            ? { state: "claimed", token, recovered: toRecord(row as AnswerRow) }
            : { state: "claimed", token };
        }
        // Someone holds the row; read it as committed now (the statement's snapshot may predate it).
        const rows = await sql<AnswerRow[]>`
          SELECT run_id, tool_use_id, kind, state, token, principal_id, result, claimed_at,
                 answered_at
          FROM automation_runtime_tool_answers
          WHERE namespace = ${this.#ns} AND run_id = ${params.runId}
            AND tool_use_id = ${params.toolUseId}`;
        if (rows.length > 0) return { state: "taken", record: toRecord(rows[0]) };
        // Released in between: try again.
      }
      throw new Error("tool answer claim kept racing with releases");
    });
  }

  complete(
    runId: string,
    toolUseId: string,
    token: string,
    final: { principalId: string; result: ToolAnswerResult; answeredAt: string },
    activity?: readonly ActivityInput[],
  ): Promise<boolean> {
    return this.#pool.run(async (sql) => {
      const expires = String(this.#now() + ANSWER_RETENTION_MS);
      const rows = await sql`
        WITH completed AS (
          UPDATE automation_runtime_tool_answers
          SET state = 'answered', principal_id = ${final.principalId}, result = ${final.result},
              answered_at = ${final.answeredAt}, expires_at = ${expires}
          WHERE namespace = ${this.#ns} AND run_id = ${runId} AND tool_use_id = ${toolUseId}
            AND state = 'claimed' AND token = ${token}
          RETURNING 1
        )${appendActivityAfter(sql, this.#ns, activity, "completed")}
        SELECT (SELECT count(*) FROM logged) AS logged FROM completed`;
      return rows.length === 1;
    });
  }

  release(runId: string, toolUseId: string, token: string): Promise<void> {
    return this.#pool.run(async (sql) => {
      await sql`
        DELETE FROM automation_runtime_tool_answers
        WHERE namespace = ${this.#ns} AND run_id = ${runId} AND tool_use_id = ${toolUseId}
          AND state = 'claimed' AND token = ${token}`;
    });
  }

  get(runId: string, toolUseId: string): Promise<ToolAnswerRecord | null> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<AnswerRow[]>`
        SELECT run_id, tool_use_id, kind, state, token, principal_id, result, claimed_at,
               answered_at
        FROM automation_runtime_tool_answers
        WHERE namespace = ${this.#ns} AND run_id = ${runId} AND tool_use_id = ${toolUseId}`;
      return rows.length === 0 ? null : toRecord(rows[0]);
    });
  }

  list(runId: string): Promise<ToolAnswerRecord[]> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<AnswerRow[]>`
        SELECT run_id, tool_use_id, kind, state, token, principal_id, result, claimed_at,
               answered_at
        FROM automation_runtime_tool_answers
        WHERE namespace = ${this.#ns} AND run_id = ${runId}
        ORDER BY tool_use_id COLLATE "C" LIMIT 1000`;
      return rows.map(toRecord);
    });
  }

  recordWebhookDelivery(id: string, now: number, ttlMs: number): Promise<boolean> {
    return this.#pool.run(async (sql) => {
      const rows = await sql`
        INSERT INTO automation_runtime_webhook_deliveries AS d (namespace, id, expires_at)
        VALUES (${this.#ns}, ${id}, ${String(now + ttlMs)})
        ON CONFLICT (namespace, id) DO UPDATE SET expires_at = EXCLUDED.expires_at
        WHERE d.expires_at <= ${String(now)}
        RETURNING 1`;
      return rows.length === 1;
    });
  }

  purge(now: number): Promise<number> {
    return this.#pool.run(async (sql) => {
      const answers = await sql`
        DELETE FROM automation_runtime_tool_answers
        WHERE namespace = ${this.#ns} AND expires_at <= ${String(now)}`;
      const deliveries = await sql`
        DELETE FROM automation_runtime_webhook_deliveries
        WHERE namespace = ${this.#ns} AND expires_at <= ${String(now)}`;
      return answers.count + deliveries.count;
    });
  }
}
