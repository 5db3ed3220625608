/**
 * The activity part of the PostgreSQL store (tables and function of migration
 * `011_activity.ts`). An append is one call of `automation_runtime_append_activity`, which takes
 * the namespace's seq row as its lock, numbers the entries after the last committed one and
 * notifies the channel `automation_runtime_activity`. The runs and answers parts call it inside
 * their own statements through {@linkcode appendActivityAfter}, so an entry commits with the
 * change it reports, both or neither. Watchers share one `LISTEN` connection per store (held by
 * the pool), started by the first watcher.
 *
 * @module
 */
import type postgres from "postgres";
import {
  ACTIVITY_SCAN_LIMIT,
  type ActivityInput,
  type ActivityListParams,
  type ActivityPage,
  type ActivityRecord,
  type ActivityStore,
} from "../activity.ts";
import { ChannelListeners, type PostgresPool } from "./_pool.ts";

/** The channel appends notify. */
const CHANNEL = "automation_runtime_activity";

interface EntryRow {
  seq: string;
  entry: ActivityRecord;
}

function toRecord(row: EntryRow): ActivityRecord {
  return { ...row.entry, seq: Number(row.seq) } as ActivityRecord;
}

function json(inputs: readonly ActivityInput[]): postgres.JSONValue {
  return inputs as unknown as postgres.JSONValue;
}

/**
 * The CTE `, <name> AS (…)` appending `inputs` to the activity log when the CTE named `after`
 * returned a row (or always, when `after` is null); an empty one without inputs. The statement must
 * read `<name>` (such as `(SELECT count(*) FROM logged)`), or PostgreSQL never runs it.
 *
 * @example
 * ```ts ignore
 * await sql`WITH updated AS (…)${appendActivityAfter(sql, ns, inputs, "updated")}
 *   SELECT (SELECT count(*) FROM logged), 1 FROM updated`;
 * ```
 */
export function appendActivityAfter(
  sql: postgres.Sql,
  namespace: string,
  inputs: readonly ActivityInput[] | undefined,
  after: string | null,
): postgres.PendingQuery<postgres.Row[]> {
  const entries = inputs ?? [];
  // Without entries the statement stays as it was: no call, nothing to plan.
  if (entries.length === 0) return sql`, logged AS (SELECT NULL::bigint AS seq WHERE false)`;
  const guarded = after === null
    ? sql`${sql.json(json(entries))}`
    : sql`CASE WHEN EXISTS (SELECT 1 FROM ${sql(after)}) THEN ${
      sql.json(json(entries))
    }::jsonb ELSE '[]'::jsonb END`;
  return sql`, logged AS (
    SELECT seq FROM automation_runtime_append_activity(${namespace}, ${guarded})
  )`;
}

/** The activity part of the PostgreSQL store. */
export class PostgresActivity implements ActivityStore {
  readonly #pool: PostgresPool;
  readonly #ns: string;
  /** Watchers of this namespace: the payloads are `"<namespace> <last seq>"`. */
  readonly #watchers: ChannelListeners;

  constructor(pool: PostgresPool, namespace: string) {
    this.#pool = pool;
    this.#ns = namespace;
    this.#watchers = new ChannelListeners(pool, CHANNEL, (payload) => {
      const space = payload.indexOf(" ");
      return space === -1 || payload.slice(0, space) !== namespace ? null : namespace;
    });
  }

  append(inputs: readonly ActivityInput[]): Promise<ActivityRecord[]> {
    if (inputs.length === 0) return Promise.resolve([]);
    return this.#pool.run(async (sql) => {
      const rows = await sql<EntryRow[]>`
        SELECT seq, entry FROM automation_runtime_append_activity(${this.#ns}, ${
        sql.json(json(inputs))
      })`;
      return rows.map(toRecord);
    });
  }

  list(params: ActivityListParams): Promise<ActivityPage> {
    return this.#pool.run(async (sql) => {
      if (params.principalId === undefined) {
        const rows = await sql<EntryRow[]>`
          SELECT seq, entry FROM automation_runtime_activity
          WHERE namespace = ${this.#ns} AND seq > ${String(params.after)}
          ORDER BY seq LIMIT ${params.limit}`;
        const entries = rows.map(toRecord);
        return { entries, last: entries.at(-1)?.seq ?? params.after };
      }
      // Like the KV store: look at most ACTIVITY_SCAN_LIMIT entries on, and say how far the look went.
      const rows = await sql<(EntryRow & { principal_id: string })[]>`
        SELECT seq, principal_id,
               CASE WHEN principal_id = ${params.principalId} THEN entry ELSE NULL END AS entry
        FROM automation_runtime_activity
        WHERE namespace = ${this.#ns} AND seq > ${String(params.after)}
        ORDER BY seq LIMIT ${ACTIVITY_SCAN_LIMIT}`;
      const entries: ActivityRecord[] = [];
      let last = params.after;
      for (const row of rows) {
        if (row.principal_id === params.principalId) entries.push(toRecord(row));
        last = Number(row.seq);
        if (entries.length === params.limit) break;
      }
      return { entries, last };
    });
  }

  listRun(runId: string, limit: number): Promise<ActivityRecord[]> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<EntryRow[]>`
        SELECT seq, entry FROM (
          SELECT seq, entry FROM automation_runtime_activity
          WHERE namespace = ${this.#ns} AND run_id = ${runId}
          ORDER BY seq DESC LIMIT ${limit}
        ) latest ORDER BY seq`;
      return rows.map(toRecord);
    });
  }

  head(): Promise<number> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<{ last_seq: string }[]>`
        SELECT last_seq FROM automation_runtime_activity_seq WHERE namespace = ${this.#ns}`;
      return rows.length === 0 ? 0 : Number(rows[0].last_seq);
    });
  }

  watch(listener: (last?: number) => void): () => void {
    return this.#watchers.watch(this.#ns, (payload) => {
      const last = Number(payload.slice(payload.indexOf(" ") + 1));
      listener(Number.isSafeInteger(last) ? last : undefined);
    });
  }

  purge(before: string): Promise<number> {
    return this.#pool.run(async (sql) => {
      const deleted = await sql`
        DELETE FROM automation_runtime_activity
        WHERE namespace = ${this.#ns} AND at < ${before}`;
      return deleted.count;
    });
  }
}
