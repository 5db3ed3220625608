/**
 * The events part of the PostgreSQL store: run event logs, native logs and tail leases (tables
 * of migrations `005_events.ts` and `013_provider_interface.ts`). An append of both logs is one
 * call of `automation_runtime_append_events`, which serializes appends to one run with a
 * transaction-scoped advisory lock and notifies the channel `automation_runtime_run_events` with
 * `"<namespace> <runId>"`. An append with a `holder` calls
 * `automation_runtime_append_held_events` instead (migration `018_fenced_appends.ts`), which
 * locks the run's lease row, appends only while that holder holds it and otherwise answers one
 * row of kind `l` ({@linkcode RunLeaseLostError}): still one statement. Watchers share one `LISTEN` connection per store (held by the pool),
 * started by the first watcher.
 *
 * The purge learns which runs ended from the runs part ({@linkcode endedRunIds}).
 *
 * @module
 */
import type postgres from "postgres";
import type { RunStreamEvent } from "../../../client/contract.ts";
import type {
  AppendedBatch,
  AppendOptions,
  EventBatch,
  LogHead,
  NativeEventEntry,
  NativeEventQuery,
  RunEventEntry,
  RunEventInput,
  RunLeaseParams,
} from "../run_event_types.ts";
import { type RunEventStore, RunLeaseLostError } from "../events.ts";
import { ChannelListeners, type PostgresPool } from "./_pool.ts";
import { endedRunIds } from "./_runs.ts";

/** The channel appends notify. */
const CHANNEL = "automation_runtime_run_events";

interface EventRow {
  seq: string;
  source_id: string;
  at: string;
  event: RunStreamEvent;
}

function toEntry(row: EventRow): RunEventEntry {
  return { seq: Number(row.seq), sourceId: row.source_id, at: row.at, event: row.event };
}

interface NativeRow {
  seq: string;
  event_id: string;
  type: string;
  body: string;
}

function toNative(row: NativeRow): NativeEventEntry {
  return { seq: Number(row.seq), id: row.event_id, type: row.type, json: row.body };
}

interface AppendedRow {
  kind: "e" | "n" | "l";
  seq: string;
  id: string;
  at: string | null;
  event: RunStreamEvent | null;
  type: string | null;
  body: string | null;
}

/** The events part of the PostgreSQL store. */
export class PostgresEvents implements RunEventStore {
  readonly #pool: PostgresPool;
  readonly #ns: string;
  /** Watchers by run: the payloads are `"<namespace> <run id>"`. */
  readonly #watchers: ChannelListeners;

  constructor(pool: PostgresPool, namespace: string) {
    this.#pool = pool;
    this.#ns = namespace;
    this.#watchers = new ChannelListeners(pool, CHANNEL, (payload) => {
      const space = payload.indexOf(" ");
      return space === -1 || payload.slice(0, space) !== namespace
        ? null
        : payload.slice(space + 1);
    });
  }

  async append(runId: string, events: readonly RunEventInput[]): Promise<RunEventEntry[]> {
    return (await this.appendBatch(runId, { events })).events;
  }

  appendBatch(
    runId: string,
    batch: EventBatch,
    options: AppendOptions = {},
  ): Promise<AppendedBatch> {
    const native = batch.native ?? [];
    const holder = options.holder;
    if (batch.events.length === 0 && native.length === 0 && holder === undefined) {
      return Promise.resolve({ events: [], native: [] });
    }
    return this.#pool.run(async (sql) => {
      const events = sql.json(batch.events as unknown as postgres.JSONValue);
      const natives = sql.json(native as unknown as postgres.JSONValue);
      const rows = holder === undefined
        ? await sql<AppendedRow[]>`
          SELECT kind, seq, id, at, event, type, body FROM automation_runtime_append_events(
            ${this.#ns}, ${runId}, ${events}, ${natives})`
        : await sql<AppendedRow[]>`
          SELECT kind, seq, id, at, event, type, body FROM automation_runtime_append_held_events(
            ${this.#ns}, ${runId}, ${holder}, ${events}, ${natives})`;
      const appended: AppendedBatch = { events: [], native: [] };
      for (const row of rows) {
        if (row.kind === "l") throw new RunLeaseLostError(runId);
        if (row.kind === "e") {
          appended.events.push({
            seq: Number(row.seq),
            sourceId: row.id,
            at: row.at!,
            event: row.event!,
          });
        } else {
          appended.native.push({
            seq: Number(row.seq),
            id: row.id,
            type: row.type!,
            json: row.body!,
          });
        }
      }
      return appended;
    });
  }

  list(runId: string, after: number, limit: number): Promise<RunEventEntry[]> {
    // A page of no entries is empty (PostgreSQL refuses a negative LIMIT).
    if (!(limit >= 1)) return Promise.resolve([]);
    return this.#pool.run(async (sql) => {
      const rows = await sql<EventRow[]>`
        SELECT seq, source_id, at, event FROM automation_runtime_run_events
        WHERE namespace = ${this.#ns} AND run_id = ${runId} AND seq > ${String(after)}
        ORDER BY seq LIMIT ${limit}`;
      return rows.map(toEntry);
    });
  }

  listNative(runId: string, query: NativeEventQuery): Promise<NativeEventEntry[]> {
    if (!(query.limit >= 1)) return Promise.resolve([]);
    return this.#pool.run(async (sql) => {
      const rows = query.order === "asc"
        ? await sql<NativeRow[]>`
          SELECT seq, event_id, type, body FROM automation_runtime_native_events
          WHERE namespace = ${this.#ns} AND run_id = ${runId}
            AND seq > ${String(query.after ?? 0)}
          ORDER BY seq LIMIT ${query.limit}`
        : await sql<NativeRow[]>`
          SELECT seq, event_id, type, body FROM automation_runtime_native_events
          WHERE namespace = ${this.#ns} AND run_id = ${runId}
            AND seq < ${String(query.before ?? Number.MAX_SAFE_INTEGER)}
          ORDER BY seq DESC LIMIT ${query.limit}`;
      return rows.map(toNative);
    });
  }

  acquireLease(params: RunLeaseParams): Promise<boolean> {
    return this.#pool.run(async (sql) => {
      const rows = await sql`
        INSERT INTO automation_runtime_run_leases AS lease (namespace, run_id, holder, lease_until)
        VALUES (${this.#ns}, ${params.runId}, ${params.holder},
                ${String(params.now + params.ttlMs)})
        ON CONFLICT (namespace, run_id) DO UPDATE
          SET holder = EXCLUDED.holder, lease_until = EXCLUDED.lease_until
          WHERE lease.holder = EXCLUDED.holder OR lease.lease_until <= ${String(params.now)}
        RETURNING holder`;
      return rows.length === 1;
    });
  }

  releaseLease(runId: string, holder: string): Promise<void> {
    return this.#pool.run(async (sql) => {
      await sql`
        DELETE FROM automation_runtime_run_leases
        WHERE namespace = ${this.#ns} AND run_id = ${runId} AND holder = ${holder}`;
    });
  }

  watch(runId: string, listener: (last?: number, head?: LogHead) => void): () => void {
    return this.#watchers.watch(runId, () => listener());
  }

  purge(endedBefore: string): Promise<number> {
    return this.#pool.run(async (sql) => {
      const deleted = await sql`
        WITH ended AS (
          ${endedRunIds(sql, this.#ns, endedBefore)}
        ), leases AS (
          DELETE FROM automation_runtime_run_leases
          WHERE namespace = ${this.#ns} AND run_id IN (SELECT run_id FROM ended)
        ), native AS (
          DELETE FROM automation_runtime_native_events
          WHERE namespace = ${this.#ns} AND run_id IN (SELECT run_id FROM ended)
        )
        DELETE FROM automation_runtime_run_events
        WHERE namespace = ${this.#ns} AND run_id IN (SELECT run_id FROM ended)`;
      return deleted.count;
    });
  }
}
