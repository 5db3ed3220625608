/**
 * The PostgreSQL store: several replicas of the service share one database.
 * {@linkcode openPostgresStore} connects, migrates the schema and assembles the parts, one file
 * each, over one connection pool:
 *
 * - `_principals.ts`, `_idempotency.ts`, `_authority.ts`, `_leases.ts`, `_runs.ts`, `_audit.ts`,
 *   `_events.ts`, `_answers.ts`, `_trust_policies.ts`, `_activity.ts`, `_notifications.ts`,
 *   `_spend.ts`: each part's statements over its own tables (a part that writes another's rows in
 *   one statement uses the SQL fragments that part's file exports);
 * - `_pool.ts`: every connection (the pool, its replacement when wedged, `LISTEN`) and every
 *   statement's error mapping (`_errors.ts`), with `_driver_guard.ts` against the driver's
 *   known crashes;
 * - `_migrate.ts` and `migrations/`: the versioned schema.
 *
 * A replica answers authenticated requests under an authority lease it renews in one statement
 * (or, without one, reads the authority state first: one indexed statement): the namespace that
 * claimed the store and this namespace's epoch, which a revocation raises in the statement that
 * revokes. A principal cache emptied when the epoch moves is therefore never stale on any replica
 * once the revocation has waited for the leases. Connectivity failures surface as `StoreUnavailableError`
 * (503 `storeUnavailable`); the pool reconnects by itself once the database is back. No message
 * ever contains the URL.
 *
 * @module
 */
import type postgres from "postgres";
import type { Store } from "../types.ts";
import { type ConnectOptions, connectPostgres, PostgresPool } from "./_pool.ts";
import { migratePostgres } from "./_migrate.ts";
import { toStartupError } from "./_errors.ts";
import { PostgresPrincipals } from "./_principals.ts";
import { PostgresIdempotency } from "./_idempotency.ts";
import { PostgresAuthority } from "./_authority.ts";
import { PostgresLeases } from "./_leases.ts";
import { PostgresRuns } from "./_runs.ts";
import { PostgresAudit } from "./_audit.ts";
import { PostgresEvents } from "./_events.ts";
import { PostgresAnswers } from "./_answers.ts";
import { PostgresTrustPolicies } from "./_trust_policies.ts";
import { PostgresActivity } from "./_activity.ts";
import { PostgresNotifications } from "./_notifications.ts";
import { PostgresSpend } from "./_spend.ts";

export { type ConnectOptions, isPostgresUrl, StoreUrlError } from "./_pool.ts";
export { SchemaVersionError } from "./_migrate.ts";

/** Options of {@linkcode openPostgresStore}. */
export interface PostgresStoreOptions extends ConnectOptions {
  /** `postgres://` URL. It may hold a password; it is never logged nor put in an error. */
  url: string;
  /** Namespace derived from the bootstrap credential; every row is scoped to it. */
  namespace: string;
  /** Rows deleted per statement by the idempotency purge (default 500). */
  deleteBatchSize?: number;
  /**
   * The store's clock, ms since the epoch (default `Date.now`): read only where a write's expiry
   * is not given by its caller.
   */
  now?: () => number;
}

/**
 * Connects, migrates the schema (under an advisory lock, so replicas may start together) and
 * returns the store. Fails with one clear line, never naming the URL, when the database cannot
 * be reached or refuses the login.
 *
 * @example
 * ```ts ignore
 * import { openPostgresStore } from "./mod.ts";
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
  const pool = new PostgresPool(sql, connect);
  const namespace = options.namespace;
  return Object.freeze({
    kind: "postgres",
    principals: new PostgresPrincipals(pool, namespace),
    idempotency: new PostgresIdempotency(pool, namespace, options.deleteBatchSize ?? 500),
    authority: new PostgresAuthority(pool, namespace),
    leases: new PostgresLeases(pool, namespace),
    runs: new PostgresRuns(pool, namespace),
    audit: new PostgresAudit(pool, namespace),
    events: new PostgresEvents(pool, namespace),
    answers: new PostgresAnswers(pool, namespace, options.now ?? Date.now),
    trustPolicies: new PostgresTrustPolicies(pool, namespace),
    activity: new PostgresActivity(pool, namespace),
    notifications: new PostgresNotifications(pool, namespace),
    spend: new PostgresSpend(pool, namespace),
    close: (): Promise<void> => pool.close(),
  });
}
