/**
 * The PostgreSQL runs part reads only what it needs: a state-filtered list and the retention
 * purge are served by indexes, not by reading every run ever stored. The table's own counters
 * (`pg_stat_user_tables`: rows read by sequential scans plus rows fetched through indexes) tell:
 * 20,000 stored runs, 20 of them running, then two state-filtered lists and one purge must read a
 * few dozen rows, not thousands. A full scan afterwards shows the counters do count.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";

const RUNS = 20_000;

/** Rows of the runs table read so far, by sequential scans and through indexes. */
async function rowsRead(url: string): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ read: string }[]>`
      SELECT (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::text AS read
      FROM pg_stat_user_tables WHERE relname = 'automation_runtime_runs'`;
    return Number(row.read);
  } finally {
    await sql.end();
  }
}

/** The counters once they moved from `before` (a closed connection reports them soon after). */
async function movedFrom(url: string, before: number): Promise<number> {
  let now = before;
  for (let i = 0; i < 50 && now === before; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    now = await rowsRead(url);
  }
  return now;
}

Deno.test({
  name: `postgres: a state-filtered run list and the run purge read through indexes${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const namespace = "c".repeat(32);
    const setup = await openPostgresStore({ url: db.url, namespace });
    await setup.close();
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      // One run in a thousand is running; the others ended on 2 January, some of them long ago.
      await sql`
        INSERT INTO automation_runtime_runs
          (namespace, run_id, principal_id, state, created_at, record)
        SELECT ${namespace}, 'sesn_' || g, 'p' || (g % 10),
               CASE WHEN g % 1000 = 0 THEN 'running' ELSE 'completed' END, created, jsonb_build_object(
                 'runId', 'sesn_' || g, 'principalId', 'p' || (g % 10), 'agentId', 'a',
                 'environmentId', 'e', 'lastEventSeq', 0, 'createdAt', created,
                 'updatedAt', created,
                 'state', CASE WHEN g % 1000 = 0 THEN 'running' ELSE 'completed' END,
                 'endedAt', CASE WHEN g % 1000 = 0 THEN NULL
                            WHEN g <= 10 THEN '2025-01-01T00:00:00.000Z'
                            ELSE '2026-01-02T00:00:00.000Z' END)
        FROM generate_series(1, ${RUNS}::int) AS g,
             LATERAL (SELECT to_char(timestamp '2026-01-01' + g * interval '1 second',
                                     'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created) AS t`;
      await sql`ANALYZE automation_runtime_runs`;
    } finally {
      await sql.end();
    }
    const before = await rowsRead(db.url);
    const store = await openPostgresStore({ url: db.url, namespace });
    try {
      const page = await store.runs.list({ state: "running", limit: 5 });
      assert.deepEqual(page.runs.map((run) => run.runId), [
        "sesn_20000",
        "sesn_19000",
        "sesn_18000",
        "sesn_17000",
        "sesn_16000",
      ]);
      const own = await store.runs.list({ state: "running", principalId: "p0", limit: 100 });
      assert.equal(own.runs.length, RUNS / 1000);
      assert.equal(await store.runs.purgeEnded("2025-06-01T00:00:00.000Z"), 10);
    } finally {
      // Closing ends the store's connections, which reports their table counters.
      await store.close();
    }
    const after = await movedFrom(db.url, before);
    assert.ok(after - before < 200, `${after - before} rows read for 35`);
    // The control: reading every run moves the counters by the table's size.
    const scan = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      await scan`SELECT count(*) FROM automation_runtime_runs WHERE record->>'agentId' = 'x'`;
    } finally {
      await scan.end();
    }
    assert.ok((await movedFrom(db.url, after)) - after >= RUNS - 10);
  },
});
