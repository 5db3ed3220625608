/**
 * The PostgreSQL store: several replicas of the service share one database.
 *
 * - Every write is one SQL statement guarded by unique constraints, never read-then-write, so
 *   replicas racing on the same principal id or idempotency key agree. No connection is ever
 *   pinned (no `sql.begin`): see `createPrincipal` below for why.
 * - Every authenticated request reads the authority state first (one indexed statement): the
 *   namespace that claimed the store and this namespace's revocation counter, which a revocation
 *   raises in the statement that revokes. A principal cache emptied when the counter moves is
 *   therefore never stale on any replica.
 * - Connectivity failures surface as {@linkcode StoreUnavailableError} (503 `storeUnavailable`);
 *   the pool reconnects by itself once the database is back. No message ever contains the URL.
 *
 * One file because it is one concept: the PostgreSQL backend of the one `Store` interface (its
 * pool, outage handling and principal and idempotency statements); the run, answer, event and
 * authority records are delegated to `postgres/*.ts`.
 *
 * @module
 */
import type postgres from "postgres";
import type {
  AuthorityState,
  CreatePrincipalResult,
  IdempotencyClaim,
  IdempotencyClaimParams,
  IdempotencyCompletion,
  IdempotencyKeyUsed,
  IdempotencyRecording,
  PrincipalPageOptions,
  PrincipalRecord,
  PrincipalRecordPage,
  PurgeOptions,
  PurgeReport,
  RecordedCreateResult,
  RevokePrincipalResult,
  Store,
} from "./types.ts";
import { type Capability, IdempotencyLeaseLostError, StoreUnavailableError } from "./types.ts";
import { type ConnectOptions, connectPostgres } from "./postgres/_connect.ts";
import { migratePostgres } from "./postgres/_migrate.ts";
import { toStartupError, toStoreError } from "./postgres/_errors.ts";
import { guardDriverCrash } from "./postgres/_driver_guard.ts";
import { GatewayRecords } from "./_gateway_records.ts";
import { auditInsert, PostgresRunStore } from "./postgres/_runs.ts";
import type { AuditEntryInput } from "./run_types.ts";
import { PostgresAnswerStore } from "./postgres/_answers.ts";
import { PostgresRunEventStore } from "./postgres/_events.ts";
import {
  claimAuthority,
  principalPageRows,
  purgeRetired,
  readAuthorityState,
} from "./postgres/_authority.ts";

export { type ConnectOptions, isPostgresUrl, StoreUrlError } from "./postgres/_connect.ts";
export { IdempotencyLeaseLostError } from "./types.ts";
export { SchemaVersionError } from "./postgres/_migrate.ts";

/** Options of {@linkcode openPostgresStore}. */
export interface PostgresStoreOptions extends ConnectOptions {
  /** `postgres://` URL. It may hold a password; it is never logged nor put in an error. */
  url: string;
  /** Namespace derived from the bootstrap credential; every row is scoped to it. */
  namespace: string;
  /** Rows deleted per statement by `deleteExpired` (default 500). */
  deleteBatchSize?: number;
}

interface PrincipalRow {
  principal_id: string;
  bearer_digest: string;
  capabilities: string[];
  expires_at: string;
  issuer_id: string;
  created_at: string;
  revoked_at: string | null;
  nonce: string;
  agent_ids: string[] | null;
  max_active_runs: number | null;
}

interface IdempotencyRow {
  request_digest: string;
  completed: boolean;
  expires_at: string;
  response_status: number | null;
  response_body: string | null;
}

/** What the single statement of a recorded creation reports. */
interface RecordedCreateRow {
  created: number;
  taken: number;
  request_digest: string | null;
  completed: boolean | null;
  lease_until: string | null;
  expires_at: string | null;
  response_status: number | null;
  response_body: string | null;
}

/** SQLSTATE of a unique constraint violation. */
const UNIQUE_VIOLATION = "23505";

const PRINCIPAL_COLUMNS: readonly string[] = [
  "principal_id",
  "bearer_digest",
  "capabilities",
  "expires_at",
  "issuer_id",
  "created_at",
  "revoked_at",
  "nonce",
  "agent_ids",
  "max_active_runs",
];

/** How often a claim retries when the row it collided with vanished before it could be read. */
const CLAIM_ATTEMPTS = 5;

function toRecord(row: PrincipalRow): PrincipalRecord {
  const record: PrincipalRecord = {
    principalId: row.principal_id,
    bearerDigest: row.bearer_digest,
    capabilities: row.capabilities as Capability[],
    expiresAt: row.expires_at,
    issuerId: row.issuer_id,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    nonce: row.nonce,
  };
  if (row.agent_ids !== null) record.agentIds = row.agent_ids;
  if (row.max_active_runs !== null) record.maxActiveRuns = row.max_active_runs;
  return record;
}

function ms(value: number): string {
  return String(Math.floor(value));
}

function isUniqueViolation(error: unknown): boolean {
  return error instanceof Error && error.name === "PostgresError" &&
    (error as { code?: unknown }).code === UNIQUE_VIOLATION;
}

/**
 * What the idempotency row a statement saw means for a request of `requestDigest` at `now`, or
 * null when the key counts as unused (no row, an expired one, or an unfinished claim of the same
 * body whose lease ran out).
 */
function usedState(
  row: RecordedCreateRow,
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
  return null;
}

/** Shortest time between two pool replacements caused by connect timeouts, in ms. */
const REFRESH_INTERVAL_MS = 5_000;

/** Options of the store class. */
interface PostgresStoreInit {
  /** Opens a fresh pool (the first one, and replacements). */
  connect: () => postgres.Sql;
  /** The pool the migration ran on, used first. */
  sql: postgres.Sql;
  /** Namespace of every row. */
  namespace: string;
  /** Rows per purge statement. */
  deleteBatchSize?: number;
}

/**
 * A {@linkcode Store} on PostgreSQL; built by {@linkcode openPostgresStore}.
 *
 * The pool is replaced by a fresh one when a connection may be wedged: after the driver crash
 * caught by `_driver_guard.ts`, and after a connect timeout (postgres.js 3.4.9 can leave a
 * connection that lost its socket mid-write unable to ever send its handshake again). The old
 * pool gets one second to finish what runs on it; anything still hanging there then fails and
 * is answered 503.
 */
class PostgresStore extends GatewayRecords implements Store {
  /** Backend name. */
  readonly kind: string = "postgres";
  #sql: postgres.Sql;
  #connect: () => postgres.Sql;
  #ns: string;
  #batch: number;
  #closed = false;
  #lastRefresh = Number.NEGATIVE_INFINITY;
  #retiring = new Set<Promise<void>>();
  #unguard: () => void;
  /** The event part, whose LISTEN connection `close()` ends. */
  #events: PostgresRunEventStore;

  constructor(init: PostgresStoreInit) {
    // The parts run their statements through this store's pool and outage handling; the store
    // exists only once `super` returns, hence the late-bound `self`.
    let self: PostgresStore | null = null;
    const run = <T>(operation: (sql: postgres.Sql) => Promise<T>): Promise<T> =>
      self!.#run(operation);
    const events = new PostgresRunEventStore(run, init.namespace, () => self!.#sql);
    super({
      runs: new PostgresRunStore(run, init.namespace),
      answers: new PostgresAnswerStore(run, init.namespace),
      events,
    });
    self = this;
    this.#events = events;
    this.#sql = init.sql;
    this.#connect = init.connect;
    this.#ns = init.namespace;
    this.#batch = init.deleteBatchSize ?? 500;
    this.#unguard = guardDriverCrash(() => this.#refresh());
  }

  #refresh(): void {
    if (this.#closed) return;
    this.#lastRefresh = performance.now();
    const old = this.#sql;
    this.#sql = this.#connect();
    const retired: Promise<void> = old.end({ timeout: 1 }).catch(() => {}).finally(() => {
      this.#retiring.delete(retired);
    });
    this.#retiring.add(retired);
  }

  async #run<T>(operation: (sql: postgres.Sql) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError("PostgreSQL store is closed");
    try {
      return await operation(this.#sql);
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (
        code === "CONNECT_TIMEOUT" && performance.now() - this.#lastRefresh > REFRESH_INTERVAL_MS
      ) {
        this.#refresh();
      }
      throw toStoreError(error);
    }
  }

  /** Finds a principal by bearer digest, revoked ones included. Always reads the database. */
  findPrincipalByDigest(bearerDigest: string): Promise<PrincipalRecord | null> {
    return this.#run(async (sql) => {
      const rows = await sql<PrincipalRow[]>`
        SELECT ${sql(PRINCIPAL_COLUMNS)} FROM automation_runtime_principals
        WHERE namespace = ${this.#ns} AND bearer_digest = ${bearerDigest}`;
      return rows.length === 0 ? null : toRecord(rows[0]);
    });
  }

  /** Reads one principal by id. */
  getPrincipal(principalId: string): Promise<PrincipalRecord | null> {
    return this.#run(async (sql) => {
      const rows = await sql<PrincipalRow[]>`
        SELECT ${sql(PRINCIPAL_COLUMNS)} FROM automation_runtime_principals
        WHERE namespace = ${this.#ns} AND principal_id = ${principalId}`;
      return rows.length === 0 ? null : toRecord(rows[0]);
    });
  }

  /** Lists the namespace's principals, oldest first (by `createdAt`, then id, as KV does). */
  listPrincipals(): Promise<PrincipalRecord[]> {
    return this.#run(async (sql) => {
      const rows = await sql<PrincipalRow[]>`
        SELECT ${sql(PRINCIPAL_COLUMNS)} FROM automation_runtime_principals
        WHERE namespace = ${this.#ns}
        ORDER BY created_at COLLATE "C", principal_id COLLATE "C"`;
      return rows.map(toRecord);
    });
  }

  /**
   * Inserts a principal unless its id or digest exists (the unique constraints decide, so two
   * replicas racing on one id create it once). With `completion`, the same statement locks the
   * idempotency claim, inserts only while `completion.token` still owns it, and completes it only
   * when the insert happened; a claim taken over meanwhile writes nothing and throws
   * {@linkcode IdempotencyLeaseLostError}.
   *
   * Every write of this store is a single statement: postgres.js 3.4.9 can crash the process
   * when the backend of a pinned connection (`sql.begin`, `sql.reserve`) dies mid-write
   * (porsager/postgres#1208), so the store never pins one.
   */
  createPrincipal(
    record: PrincipalRecord,
    completion?: IdempotencyCompletion,
    audit?: AuditEntryInput,
  ): Promise<CreatePrincipalResult>;
  /**
   * Creates a principal and records the answer under an unclaimed idempotency key, in one
   * statement: see {@linkcode PostgresStore.#createRecorded}.
   */
  createPrincipal(
    record: PrincipalRecord,
    recording: IdempotencyRecording,
    audit?: AuditEntryInput,
  ): Promise<RecordedCreateResult>;
  createPrincipal(
    record: PrincipalRecord,
    idempotency?: IdempotencyCompletion | IdempotencyRecording,
    audit?: AuditEntryInput,
  ): Promise<RecordedCreateResult> {
    if (idempotency !== undefined && "requestDigest" in idempotency) {
      return this.#createRecorded(record, idempotency, audit);
    }
    const completion = idempotency;
    return this.#run(async (sql) => {
      if (completion === undefined) {
        const inserted = await sql`
          WITH inserted AS (
            ${this.#principalInsert(sql, record)}
            ON CONFLICT DO NOTHING
            RETURNING 1
          )${this.#auditAfter(sql, audit, "inserted")}
          SELECT 1 FROM inserted`;
        return inserted.count === 0 ? "exists" : "created";
      }
      const [row] = await sql<{ owned: number; created: number; completed: number }[]>`
        WITH claim AS (
          SELECT 1 FROM automation_runtime_idempotency
          WHERE namespace = ${this.#ns} AND scope = ${completion.scope}
            AND token = ${completion.token} AND NOT completed
          FOR UPDATE
        ), inserted AS (
          ${this.#principalInsert(sql, record)}
          WHERE EXISTS (SELECT 1 FROM claim)
          ON CONFLICT DO NOTHING
          RETURNING 1
        ), completed AS (
          UPDATE automation_runtime_idempotency
          SET completed = true, response_status = ${completion.response.status},
              response_body = ${completion.response.body},
              expires_at = ${ms(completion.expiresAt)}
          WHERE namespace = ${this.#ns} AND scope = ${completion.scope}
            AND token = ${completion.token} AND NOT completed
            AND EXISTS (SELECT 1 FROM inserted)
          RETURNING 1
        )${this.#auditAfter(sql, audit, "completed")}
        SELECT (SELECT count(*) FROM claim)::int AS owned,
               (SELECT count(*) FROM inserted)::int AS created,
               (SELECT count(*) FROM completed)::int AS completed`;
      if (row.owned === 0) {
        throw new IdempotencyLeaseLostError(
          "The idempotency claim was taken over before the principal was created",
        );
      }
      if (row.created === 0) return "exists";
      if (row.completed === 0) throw new Error("The idempotency claim was not completed");
      return "created";
    });
  }

  /**
   * The CTE `, audited AS (…)` appending `audit` when the CTE named `after` returned a row, so a
   * creation or revocation and its audit entry commit in one statement, both or neither; nothing
   * without one.
   */
  #auditAfter(
    sql: postgres.Sql,
    audit: AuditEntryInput | undefined,
    after: "inserted" | "completed" | "updated",
  ): postgres.PendingQuery<postgres.Row[]> {
    if (audit === undefined) return sql``;
    return sql`, audited AS (
      ${auditInsert(sql, this.#ns, audit)}
      WHERE EXISTS (SELECT 1 FROM ${sql(after)})
    )`;
  }

  /**
   * The `INSERT … SELECT` of one principal row, shared by every statement that creates a
   * principal; callers append their `WHERE`, `ON CONFLICT` and `RETURNING`.
   */
  #principalInsert(
    sql: postgres.Sql,
    record: PrincipalRecord,
  ): postgres.PendingQuery<postgres.Row[]> {
    return sql`
      INSERT INTO automation_runtime_principals
        (namespace, principal_id, bearer_digest, capabilities, expires_at, issuer_id,
         created_at, revoked_at, nonce, agent_ids, max_active_runs)
      SELECT ${this.#ns}, ${record.principalId}, ${record.bearerDigest},
             ${sql.array([...record.capabilities])}, ${record.expiresAt}, ${record.issuerId},
             ${record.createdAt}, ${record.revokedAt}, ${record.nonce},
             ${record.agentIds ? sql.array([...record.agentIds]) : null}::text[],
             ${record.maxActiveRuns ?? null}::integer`;
  }

  /**
   * A recorded creation as ONE statement (no pinned connection). It reads the key's row and
   * whether the id or digest is taken; writes the finished idempotency record only when the key
   * is unused and neither is taken (an upsert whose conflict arm re-checks the row it collided
   * with, so of two statements racing on one key exactly one writes it); and inserts the
   * principal only when the record was written. The principal insert has no `ON CONFLICT`: a
   * racing creation of the same id under another key makes it fail with a unique violation,
   * which rolls back the whole statement, record included, and the next attempt sees the
   * principal. An attempt that wrote nothing and saw no reason (a race it lost) is retried with
   * a fresh snapshot.
   */
  #createRecorded(
    record: PrincipalRecord,
    recording: IdempotencyRecording,
    audit: AuditEntryInput | undefined,
  ): Promise<RecordedCreateResult> {
    return this.#run(async (sql) => {
      const now = ms(recording.now);
      for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
        let row: RecordedCreateRow;
        try {
          [row] = await sql<RecordedCreateRow[]>`
            WITH prior AS (
              SELECT request_digest, completed, lease_until, expires_at, response_status,
                     response_body
              FROM automation_runtime_idempotency
              WHERE namespace = ${this.#ns} AND scope = ${recording.scope}
            ), taken AS (
              SELECT 1 FROM automation_runtime_principals
              WHERE namespace = ${this.#ns}
                AND (principal_id = ${record.principalId}
                     OR bearer_digest = ${record.bearerDigest})
            ), recorded AS (
              INSERT INTO automation_runtime_idempotency AS i
                (namespace, scope, request_digest, token, completed, lease_until, expires_at,
                 response_status, response_body)
              SELECT ${this.#ns}, ${recording.scope}, ${recording.requestDigest},
                     ${crypto.randomUUID()}, true, ${now}, ${ms(recording.expiresAt)},
                     ${recording.response.status}, ${recording.response.body}
              WHERE NOT EXISTS (SELECT 1 FROM taken)
              ON CONFLICT (namespace, scope) DO UPDATE SET
                request_digest = EXCLUDED.request_digest, token = EXCLUDED.token,
                completed = true, lease_until = EXCLUDED.lease_until,
                expires_at = EXCLUDED.expires_at, response_status = EXCLUDED.response_status,
                response_body = EXCLUDED.response_body
              WHERE i.expires_at <= ${now}
                 OR (NOT i.completed AND i.lease_until <= ${now}
                     AND i.request_digest = EXCLUDED.request_digest)
              RETURNING 1
            ), inserted AS (
              ${this.#principalInsert(sql, record)}
              WHERE EXISTS (SELECT 1 FROM recorded)
              RETURNING 1
            )${this.#auditAfter(sql, audit, "inserted")}
            SELECT (SELECT count(*) FROM inserted)::int AS created,
                   (SELECT count(*) FROM taken)::int AS taken,
                   prior.request_digest, prior.completed, prior.lease_until, prior.expires_at,
                   prior.response_status, prior.response_body
            FROM (SELECT 1) AS one LEFT JOIN prior ON true`;
        } catch (error) {
          // A creation of the same id or digest committed meanwhile: look again.
          if (isUniqueViolation(error)) continue;
          throw error;
        }
        if (row.created > 0) return "created";
        const used = usedState(row, recording.requestDigest, recording.now);
        if (used !== null) return used;
        if (row.taken > 0) return "exists";
        // Another statement wrote the key after this one's snapshot: look again.
      }
      return { state: "inFlight" };
    });
  }

  /**
   * Revokes a principal in one statement, its audit entry included; the update and the existence
   * check share a snapshot, so a concurrent revoke answers `alreadyRevoked` and never a false
   * `revoked`.
   */
  revokePrincipal(
    principalId: string,
    revokedAt: string,
    audit?: AuditEntryInput,
  ): Promise<RevokePrincipalResult> {
    return this.#run(async (sql) => {
      const [row] = await sql<{ revoked: number; present: number }[]>`
        WITH updated AS (
          UPDATE automation_runtime_principals SET revoked_at = ${revokedAt}
          WHERE namespace = ${this.#ns} AND principal_id = ${principalId} AND revoked_at IS NULL
          RETURNING 1
        ), epoch AS (
          INSERT INTO automation_runtime_namespaces AS n (namespace, revocations)
          SELECT ${this.#ns}, 1 WHERE EXISTS (SELECT 1 FROM updated)
          ON CONFLICT (namespace) DO UPDATE SET revocations = n.revocations + 1
          RETURNING 1
        )${this.#auditAfter(sql, audit, "updated")}
        SELECT (SELECT count(*) FROM updated)::int AS revoked,
               (SELECT count(*) FROM automation_runtime_principals
                WHERE namespace = ${this.#ns} AND principal_id = ${principalId})::int AS present`;
      if (row.revoked > 0) return "revoked";
      return row.present > 0 ? "alreadyRevoked" : "notFound";
    });
  }

  /**
   * Claims a key with one `INSERT ... ON CONFLICT DO UPDATE`: a new key, an expired record, or an
   * unfinished claim of the same body whose lease ran out is taken; anything else is read back
   * and reported.
   */
  claimIdempotency(params: IdempotencyClaimParams): Promise<IdempotencyClaim> {
    return this.#run(async (sql) => {
      const now = ms(params.now);
      for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
        const token = crypto.randomUUID();
        const taken = await sql<{ token: string }[]>`
          INSERT INTO automation_runtime_idempotency AS i
            (namespace, scope, request_digest, token, completed, lease_until, expires_at)
          VALUES (${this.#ns}, ${params.scope}, ${params.requestDigest}, ${token}, false,
                  ${ms(params.now + params.leaseMs)}, ${ms(params.expiresAt)})
          ON CONFLICT (namespace, scope) DO UPDATE SET
            request_digest = EXCLUDED.request_digest, token = EXCLUDED.token, completed = false,
            lease_until = EXCLUDED.lease_until, expires_at = EXCLUDED.expires_at,
            response_status = NULL, response_body = NULL
          WHERE i.expires_at <= ${now}
             OR (NOT i.completed AND i.lease_until <= ${now}
                 AND i.request_digest = EXCLUDED.request_digest)
          RETURNING i.token`;
        if (taken.length > 0 && taken[0].token === token) return { state: "claimed", token };
        const rows = await sql<IdempotencyRow[]>`
          SELECT request_digest, completed, expires_at, response_status, response_body
          FROM automation_runtime_idempotency
          WHERE namespace = ${this.#ns} AND scope = ${params.scope}`;
        const row = rows[0];
        if (row === undefined || Number(row.expires_at) <= params.now) continue;
        if (row.request_digest !== params.requestDigest) return { state: "conflict" };
        if (row.completed && row.response_status !== null && row.response_body !== null) {
          return {
            state: "completed",
            response: { status: row.response_status, body: row.response_body },
          };
        }
        return { state: "inFlight" };
      }
      return { state: "inFlight" };
    });
  }

  /** Records the response of a claimed key; a no-op when `token` no longer owns the claim. */
  completeIdempotency(completion: IdempotencyCompletion): Promise<void> {
    return this.#run(async (sql) => {
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
  releaseIdempotency(scope: string, token: string): Promise<void> {
    return this.#run(async (sql) => {
      await sql`
        DELETE FROM automation_runtime_idempotency
        WHERE namespace = ${this.#ns} AND scope = ${scope} AND token = ${token}
          AND NOT completed`;
    });
  }

  /**
   * Deletes expired idempotency records in small batches, each its own short statement that
   * skips rows other transactions hold, so a large purge never blocks requests.
   */
  deleteExpired(now: number): Promise<number> {
    return this.#run(async (sql) => {
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

  // -- Cross-process authority, paging and retention: see postgres/_authority.ts.

  /** Claims the store for this namespace: see `claimAuthority` in `postgres/_authority.ts`. */
  claimAuthority(now: number): Promise<void> {
    return this.#run((sql) => claimAuthority(sql, this.#ns, now));
  }

  /** Reads the authority state in one statement. */
  readAuthorityState(): Promise<AuthorityState> {
    return this.#run((sql) => readAuthorityState(sql, this.#ns));
  }

  /** Null: another replica's commit cannot be seen without a round trip. */
  changeMarker(): null {
    return null;
  }

  /** A keyset page, in the order of {@linkcode PostgresStore.listPrincipals}. */
  listPrincipalPage(options: PrincipalPageOptions): Promise<PrincipalRecordPage> {
    return this.#run(async (sql) => {
      const rows = await principalPageRows<PrincipalRow>(
        sql,
        this.#ns,
        sql(PRINCIPAL_COLUMNS),
        options,
      );
      const records = rows.slice(0, options.limit).map(toRecord);
      const last = records.at(-1);
      return {
        records,
        next: rows.length > options.limit && last !== undefined
          ? { createdAt: last.createdAt, principalId: last.principalId }
          : null,
      };
    });
  }

  /** Deletes retired principals and namespaces: see `purgeRetired` in `postgres/_authority.ts`. */
  purgeRetired(options: PurgeOptions): Promise<PurgeReport> {
    return this.#run((sql) => purgeRetired(sql, this.#ns, options));
  }

  /** Closes the pool, letting running queries finish (up to 5 s). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#unguard();
    await this.#events.close();
    await Promise.all([this.#sql.end({ timeout: 5 }), ...this.#retiring]);
  }
}

/**
 * Connects, migrates the schema (under an advisory lock, so replicas may start together) and
 * returns the store. Fails with one clear line, never naming the URL, when the database cannot
 * be reached or refuses the login.
 *
 * @example
 * ```ts ignore
 * import { openPostgresStore } from "./postgres.ts";
 * const store = await openPostgresStore({
 *   url: Deno.env.get("AUTOMATION_RUNTIME_STORE")!,
 *   namespace: "0123456789abcdef0123456789abcdef",
 * });
 * await store.close();
 * ```
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const connect = () => connectPostgres(options.url, options);
  let sql: postgres.Sql;
  try {
    sql = connect();
  } catch (error) {
    throw error instanceof Error && error.name === "NotCapable" ? toStartupError(error) : error;
  }
  try {
    await migratePostgres(sql);
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    if (error instanceof Error && error.name === "SchemaVersionError") throw error;
    throw toStartupError(error);
  }
  return new PostgresStore({
    connect,
    sql,
    namespace: options.namespace,
    deleteBatchSize: options.deleteBatchSize,
  });
}
