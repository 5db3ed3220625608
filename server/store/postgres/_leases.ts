/**
 * The authority leases part of the PostgreSQL store (the table of migration
 * `014_authority_leases.ts`). A renewal is one statement: it locks the authority part's rows
 * that every claim, rotation and revocation writes ({@linkcode authorityLocked}), records the
 * lease and returns the state found under the locks. Times are the database's clock, so
 * that replicas on several machines agree on which records are dead without trusting each other's
 * clocks.
 *
 * Wake-ups: epoch moves and acknowledging renewals notify {@linkcode AUTHORITY_CHANNEL}; watchers
 * share one `LISTEN` connection per store (held by the pool, through {@linkcode ChannelListeners}),
 * started by the first watcher.
 *
 * @module
 */
import type { AuthorityState } from "../authority.ts";
import type {
  AuthorityLeaseRecord,
  AuthorityLeaseStore,
  LeaseListOptions,
  LeaseRenewal,
} from "../leases.ts";
import {
  AUTHORITY_CHANNEL,
  authorityLocked,
  type AuthorityRow,
  epochOf,
  stateOf,
} from "./_authority.ts";
import { ChannelListeners, type PostgresPool } from "./_pool.ts";

interface LeaseRow {
  holder: string;
  epoch: string;
  renewed_at: string;
  lease_ms: number;
}

/** The authority leases part of the PostgreSQL store. */
export class PostgresLeases implements AuthorityLeaseStore {
  readonly #pool: PostgresPool;
  readonly #ns: string;
  /** Listeners by namespace: the payloads are `"epoch <namespace>"` and `"ack <namespace>"`. */
  readonly #listeners: ChannelListeners;

  constructor(pool: PostgresPool, namespace: string) {
    this.#pool = pool;
    this.#ns = namespace;
    this.#listeners = new ChannelListeners(
      pool,
      AUTHORITY_CHANNEL,
      (payload) => payload.slice(payload.indexOf(" ") + 1),
    );
  }

  renew(renewal: LeaseRenewal): Promise<AuthorityState> {
    const ns = this.#ns;
    return this.#pool.run(async (sql) => {
      const [row] = await sql<AuthorityRow[]>`
        WITH ${authorityLocked(sql, ns)}, previous AS (
          SELECT epoch FROM automation_runtime_authority_leases
          WHERE namespace = ${ns} AND holder = ${renewal.holder}
        ), lease AS (
          INSERT INTO automation_runtime_authority_leases AS l
            (namespace, holder, epoch, renewed_at, lease_ms)
          SELECT ${ns}, ${renewal.holder}, ${renewal.epoch}::bigint,
                 (extract(epoch from clock_timestamp()) * 1000)::bigint, ${renewal.leaseMs} FROM ns
          ON CONFLICT (namespace, holder) DO UPDATE SET
            epoch = EXCLUDED.epoch, renewed_at = EXCLUDED.renewed_at, lease_ms = EXCLUDED.lease_ms
          RETURNING 1
        ), notified AS (
          SELECT pg_notify(${AUTHORITY_CHANNEL}, 'ack ' || ${ns})
          WHERE (SELECT epoch FROM previous) IS DISTINCT FROM ${renewal.epoch}::bigint
        )
        SELECT auth.current, auth.generation, ns.revocations, ns.retired_at,
               (SELECT count(*) FROM lease)::int AS leased,
               (SELECT count(*) FROM notified)::int AS notified
        FROM ns, auth`;
      return stateOf(ns, row);
    });
  }

  release(holder: string): Promise<void> {
    return this.#pool.run(async (sql) => {
      await sql`
        DELETE FROM automation_runtime_authority_leases
        WHERE namespace = ${this.#ns} AND holder = ${holder}`;
    });
  }

  list(options: LeaseListOptions): Promise<AuthorityLeaseRecord[]> {
    const ns = options.namespace ?? this.#ns;
    return this.#pool.run(async (sql) => {
      const rows = await sql<LeaseRow[]>`
        WITH clock AS (
          SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now
        ), dead AS (
          DELETE FROM automation_runtime_authority_leases l USING clock
          WHERE l.namespace = ${ns} AND l.renewed_at + l.lease_ms + ${options.graceMs} <= clock.now
        )
        SELECT holder, epoch::text AS epoch, renewed_at::text AS renewed_at, lease_ms
        FROM automation_runtime_authority_leases, clock
        WHERE namespace = ${ns} AND renewed_at + lease_ms + ${options.graceMs} > clock.now`;
      return rows.map((row) => ({
        holder: row.holder,
        epoch: epochOf(row.epoch),
        renewedAt: Number(row.renewed_at),
        leaseMs: row.lease_ms,
      }));
    });
  }

  purge(options: LeaseListOptions): Promise<number> {
    const ns = options.namespace ?? this.#ns;
    return this.#pool.run(async (sql) => {
      const deleted = await sql`
        DELETE FROM automation_runtime_authority_leases
        WHERE namespace = ${ns}
          AND renewed_at + lease_ms + ${options.graceMs} <= (extract(epoch from clock_timestamp()) * 1000)::bigint`;
      return deleted.count;
    });
  }

  watch(listener: () => void, options: { namespace?: string } = {}): () => void {
    return this.#listeners.watch(options.namespace ?? this.#ns, () => listener());
  }
}
