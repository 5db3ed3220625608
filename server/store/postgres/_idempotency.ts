/**
 * The idempotency part of the PostgreSQL store (table `automation_runtime_idempotency` of
 * migration `001_initial.ts`). A claim is one `INSERT … ON CONFLICT DO UPDATE` whose update only
 * takes a key that is free to take; completing and releasing check the claim's token in their
 * `WHERE`.
 *
 * The principals part writes a completion or a recording inside its own statement, through the
 * fragments this file exports ({@linkcode heldClaim}, {@linkcode completedAfter},
 * {@linkcode priorRecord}, {@linkcode recordedUnless}, {@linkcode priorSelected}), reads what the
 * key held with {@linkcode usedState}, and runs such a statement with {@linkcode recordedWrite}.
 *
 * @module
 */
import type postgres from "postgres";
import type {
  IdempotencyClaim,
  IdempotencyClaimParams,
  IdempotencyCompletion,
  IdempotencyKeyUsed,
  IdempotencyRecording,
  IdempotencyStore,
} from "../idempotency.ts";
import { ms, type PostgresPool, RACE_ATTEMPTS } from "./_pool.ts";
import { isUniqueViolation } from "./_errors.ts";

/** The columns of a record, as {@linkcode priorRecord} selects them. */
export interface PriorRecordRow {
  request_digest: string | null;
  completed: boolean | null;
  lease_until: string | null;
  expires_at: string | null;
  response_status: number | null;
  response_body: string | null;
  /** Null for a statement that predates the column (never read so). */
  begun?: boolean | null;
}

/**
 * What the record a statement saw means for a request of `requestDigest` at `now`, or null when
 * the key counts as unused (no row, an expired one, or an unfinished claim of the same body whose
 * lease ran out and that did not begin its effect: such a claim leaves the key `unsettled`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { usedState } from "./_idempotency.ts";
 * const none = {
 *   request_digest: null,
 *   completed: null,
 *   lease_until: null,
 *   expires_at: null,
 *   response_status: null,
 *   response_body: null,
 * };
 * assert.equal(usedState(none, "d", 0), null);
 * ```
 */
export function usedState(
  row: PriorRecordRow,
  requestDigest: string,
  now: number,
): IdempotencyKeyUsed | null {
  if (row.request_digest === null || Number(row.expires_at) <= now) return null;
  if (row.request_digest !== requestDigest) return { state: "conflict" };
  if (row.completed && row.response_status !== null && row.response_body !== null) {
    return {
      state: "completed",
      response: { status: row.response_status, body: row.response_body },
    };
  }
  if (Number(row.lease_until) > now) return { state: "inFlight" };
  if (row.begun === true) return { state: "unsettled" };
  return null;
}

/**
 * The query locking the unfinished claim `completion.token` holds (no row when it holds none),
 * for a CTE of a statement that completes it.
 *
 * @example
 * ```ts ignore
 * sql`WITH claim AS (${heldClaim(sql, namespace, completion)}) …`;
 * ```
 */
export function heldClaim(
  sql: postgres.Sql,
  namespace: string,
  completion: IdempotencyCompletion,
): postgres.PendingQuery<postgres.Row[]> {
  return sql`
    SELECT 1 FROM automation_runtime_idempotency
    WHERE namespace = ${namespace} AND scope = ${completion.scope}
      AND token = ${completion.token} AND NOT completed
    FOR UPDATE`;
}

/**
 * The statement completing the claim `completion.token` holds when the CTE named `after` returned
 * a row (`RETURNING 1`), for a CTE of the statement whose effect it records.
 *
 * @example
 * ```ts ignore
 * sql`…, completed AS (${completedAfter(sql, namespace, completion, "inserted")}) …`;
 * ```
 */
export function completedAfter(
  sql: postgres.Sql,
  namespace: string,
  completion: IdempotencyCompletion,
  after: string,
): postgres.PendingQuery<postgres.Row[]> {
  return sql`
    UPDATE automation_runtime_idempotency
    SET completed = true, response_status = ${completion.response.status},
        response_body = ${completion.response.body},
        expires_at = ${ms(completion.expiresAt)}
    WHERE namespace = ${namespace} AND scope = ${completion.scope}
      AND token = ${completion.token} AND NOT completed
      AND EXISTS (SELECT 1 FROM ${sql(after)})
    RETURNING 1`;
}

/**
 * The query of the record under `scope` (the columns of {@linkcode PriorRecordRow}), for a CTE.
 *
 * @example
 * ```ts ignore
 * sql`WITH prior AS (${priorRecord(sql, namespace, scope)}) …`;
 * ```
 */
export function priorRecord(
  sql: postgres.Sql,
  namespace: string,
  scope: string,
): postgres.PendingQuery<postgres.Row[]> {
  return sql`
    SELECT request_digest, completed, lease_until, expires_at, response_status, response_body,
           begun
    FROM automation_runtime_idempotency
    WHERE namespace = ${namespace} AND scope = ${scope}`;
}

/**
 * The upsert writing the finished record of `recording` unless the CTE named `unless` returned a
 * row, and only while the key is unused (its conflict arm re-checks the row it collided with, so
 * of two statements racing on one key exactly one writes it); `RETURNING 1` when it wrote.
 *
 * @example
 * ```ts ignore
 * sql`…, recorded AS (${recordedUnless(sql, namespace, recording, "taken")}) …`;
 * ```
 */
export function recordedUnless(
  sql: postgres.Sql,
  namespace: string,
  recording: IdempotencyRecording,
  unless: string,
): postgres.PendingQuery<postgres.Row[]> {
  const now = ms(recording.now);
  return sql`
    INSERT INTO automation_runtime_idempotency AS i
      (namespace, scope, request_digest, token, completed, lease_until, expires_at,
       response_status, response_body)
    SELECT ${namespace}, ${recording.scope}, ${recording.requestDigest},
           ${crypto.randomUUID()}, true, ${now}, ${ms(recording.expiresAt)},
           ${recording.response.status}, ${recording.response.body}
    WHERE NOT EXISTS (SELECT 1 FROM ${sql(unless)})
    ON CONFLICT (namespace, scope) DO UPDATE SET
      request_digest = EXCLUDED.request_digest, token = EXCLUDED.token,
      completed = true, lease_until = EXCLUDED.lease_until,
      expires_at = EXCLUDED.expires_at, response_status = EXCLUDED.response_status,
      response_body = EXCLUDED.response_body
    WHERE i.expires_at <= ${now}
       OR (NOT i.completed AND NOT i.begun AND i.lease_until <= ${now}
           AND i.request_digest = EXCLUDED.request_digest)
    RETURNING 1`;
}

/**
 * The tail of a recorded write's final `SELECT`: the columns of {@linkcode PriorRecordRow} from
 * the CTE named `prior` ({@linkcode priorRecord}), one row whether or not the key had a record.
 *
 * @example
 * ```ts ignore
 * sql`… SELECT (SELECT count(*) FROM inserted)::int AS created, ${priorSelected(sql)}`;
 * ```
 */
export function priorSelected(sql: postgres.Sql): postgres.PendingQuery<postgres.Row[]> {
  return sql`
    prior.request_digest, prior.completed, prior.lease_until, prior.expires_at,
    prior.response_status, prior.response_body, prior.begun
    FROM (SELECT 1) AS one LEFT JOIN prior ON true`;
}

/** What a recorded write's statement reports: its creation count and the key's prior record. */
export interface RecordedWriteRow extends PriorRecordRow {
  /** Rows the write created (0: it wrote nothing). */
  created: number;
}

/**
 * Runs a recorded write until it decides. A recorded write is ONE statement that writes an effect
 * and the finished record of `recording` ({@linkcode recordedUnless}), or nothing, and reports
 * what it created beside the key's prior record. The answer is `created`; else what the key held
 * ({@linkcode usedState}); else the write's own reason (`refusal`). A statement that met a
 * racing commit (a unique violation, which rolled all of it back) or saw no reason (another
 * statement wrote the key after its snapshot) is run again, at most {@linkcode RACE_ATTEMPTS}
 * times; then the key counts as in flight.
 *
 * @example
 * ```ts ignore
 * const refusal = (row: Row) => row.taken > 0 ? "exists" : null;
 * return await recordedWrite(recording, () => statement(sql), refusal);
 * ```
 */
export async function recordedWrite<R extends RecordedWriteRow, T extends string>(
  recording: IdempotencyRecording,
  statement: () => Promise<R>,
  refusal: (row: R) => T | null,
): Promise<"created" | T | IdempotencyKeyUsed> {
  for (let attempt = 0; attempt < RACE_ATTEMPTS; attempt++) {
    let row: R;
    try {
      row = await statement();
    } catch (error) {
      if (isUniqueViolation(error)) continue;
      throw error;
    }
    if (row.created > 0) return "created";
    const used = usedState(row, recording.requestDigest, recording.now);
    if (used !== null) return used;
    const refused = refusal(row);
    if (refused !== null) return refused;
  }
  return { state: "inFlight" };
}

/** The idempotency part of the PostgreSQL store. */
export class PostgresIdempotency implements IdempotencyStore {
  readonly #pool: PostgresPool;
  readonly #ns: string;
  readonly #batch: number;

  /** `batch` is the number of rows each statement of the purge deletes. */
  constructor(pool: PostgresPool, namespace: string, batch: number) {
    this.#pool = pool;
    this.#ns = namespace;
    this.#batch = batch;
  }

  /**
   * Claims a key with one `INSERT ... ON CONFLICT DO UPDATE`: a new key, an expired record, or an
   * unfinished claim of the same body whose lease ran out is taken; anything else is read back
   * and reported.
   */
  claim(params: IdempotencyClaimParams): Promise<IdempotencyClaim> {
    return this.#pool.run(async (sql) => {
      const now = ms(params.now);
      for (let attempt = 0; attempt < RACE_ATTEMPTS; attempt++) {
        const token = crypto.randomUUID();
        const taken = await sql<{ token: string }[]>`
          INSERT INTO automation_runtime_idempotency AS i
            (namespace, scope, request_digest, token, completed, lease_until, expires_at)
          VALUES (${this.#ns}, ${params.scope}, ${params.requestDigest}, ${token}, false,
                  ${ms(params.now + params.leaseMs)}, ${ms(params.expiresAt)})
          ON CONFLICT (namespace, scope) DO UPDATE SET
            request_digest = EXCLUDED.request_digest, token = EXCLUDED.token, completed = false,
            lease_until = EXCLUDED.lease_until, expires_at = EXCLUDED.expires_at,
            response_status = NULL, response_body = NULL, begun = false
          WHERE i.expires_at <= ${now}
             OR (NOT i.completed AND NOT i.begun AND i.lease_until <= ${now}
                 AND i.request_digest = EXCLUDED.request_digest)
          RETURNING i.token`;
        if (taken.length > 0 && taken[0].token === token) return { state: "claimed", token };
        const [row] = await sql<PriorRecordRow[]>`${priorRecord(sql, this.#ns, params.scope)}`;
        if (row === undefined || Number(row.expires_at) <= params.now) continue;
        // A row is there and live: it is used, whatever its lease says (it is not ours to take).
        return usedState(row, params.requestDigest, params.now) ?? { state: "inFlight" };
      }
      return { state: "inFlight" };
    });
  }

  /** Marks the unfinished claim `token` owns as begun; false when it owns none. */
  begin(scope: string, token: string): Promise<boolean> {
    return this.#pool.run(async (sql) => {
      const rows = await sql`
        UPDATE automation_runtime_idempotency SET begun = true
        WHERE namespace = ${this.#ns} AND scope = ${scope} AND token = ${token}
          AND NOT completed
        RETURNING 1`;
      return rows.length > 0;
    });
  }

  /** Ends the lease of the begun claim `token` owns: the key is `unsettled` from `now` on. */
  abandon(scope: string, token: string, now: number): Promise<void> {
    return this.#pool.run(async (sql) => {
      await sql`
        UPDATE automation_runtime_idempotency SET lease_until = ${ms(now)}
        WHERE namespace = ${this.#ns} AND scope = ${scope} AND token = ${token}
          AND NOT completed AND begun AND lease_until > ${ms(now)}`;
    });
  }

  /** Reads the key's record and says what it means (no write). */
  lookup(scope: string, requestDigest: string, now: number): Promise<IdempotencyKeyUsed | null> {
    return this.#pool.run(async (sql) => {
      const [row] = await sql<PriorRecordRow[]>`${priorRecord(sql, this.#ns, scope)}`;
      return row === undefined ? null : usedState(row, requestDigest, now);
    });
  }

  /** Records the response of a claimed key; a no-op when `token` no longer owns the claim. */
  complete(completion: IdempotencyCompletion): Promise<void> {
    return this.#pool.run(async (sql) => {
      await sql`
        UPDATE automation_runtime_idempotency
        SET completed = true, response_status = ${completion.response.status},
            response_body = ${completion.response.body},
            expires_at = ${ms(completion.expiresAt)}
        WHERE namespace = ${this.#ns} AND scope = ${completion.scope}
          AND token = ${completion.token} AND NOT completed`;
    });
  }

  /** Drops an unfinished claim held by `token`. */
  release(scope: string, token: string): Promise<void> {
    return this.#pool.run(async (sql) => {
      await sql`
        DELETE FROM automation_runtime_idempotency
        WHERE namespace = ${this.#ns} AND scope = ${scope} AND token = ${token}
          AND NOT completed`;
    });
  }

  /**
   * Deletes expired records in small batches, each its own short statement that skips rows other
   * transactions hold, so a large purge never blocks requests.
   */
  purgeExpired(now: number): Promise<number> {
    return this.#pool.run(async (sql) => {
      let total = 0;
      while (true) {
        const result = await sql`
          DELETE FROM automation_runtime_idempotency
          WHERE (namespace, scope) IN (
            SELECT namespace, scope FROM automation_runtime_idempotency
            WHERE namespace = ${this.#ns} AND expires_at <= ${ms(now)}
            LIMIT ${this.#batch}
            FOR UPDATE SKIP LOCKED
          )`;
        total += result.count;
        if (result.count < this.#batch) return total;
      }
    });
  }
}
