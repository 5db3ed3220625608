/**
 * The notifications part of the PostgreSQL store (tables of migration `012_notifications.ts`).
 * Every step is one statement: a subscription takes the lowest free slot of its owner (a unique
 * constraint: two racing creations cannot take one slot, and the loser looks again); a delivery
 * is inserted `ON CONFLICT DO NOTHING` on its id; the due deliveries are leased by one call of
 * `automation_runtime_claim_deliveries` (migration `016_fair_notifications.ts`), which serializes
 * the claims of a namespace with a transaction-scoped lock, so two replicas never take the same
 * one, nor two of one subscription, nor more than an owner's bound; a settlement only lands while
 * its sender holds the lease.
 *
 * @module
 */
import type postgres from "postgres";
import { decodeCursor, encodeCursor } from "../run_types.ts";
import type {
  ClaimDueParams,
  NotificationStore,
  StoredDelivery,
  StoredPage,
  StoredSubscription,
} from "../notifications.ts";
import { type PostgresPool, RACE_ATTEMPTS } from "./_pool.ts";

interface DeliveryRow {
  record: StoredDelivery;
  lease_holder: string | null;
  lease_until: string | null;
}

function toDelivery(row: DeliveryRow): StoredDelivery {
  const delivery: StoredDelivery = { ...row.record };
  if (row.lease_holder !== null) delivery.leaseHolder = row.lease_holder;
  if (row.lease_until !== null) delivery.leaseUntil = Number(row.lease_until);
  return delivery;
}

function json(value: unknown): postgres.JSONValue {
  return value as postgres.JSONValue;
}

/** A delivery's record column: everything but its lease (which has columns of its own). */
function recordOf(delivery: StoredDelivery): postgres.JSONValue {
  const { leaseHolder: _holder, leaseUntil: _until, ...record } = delivery;
  return json(record);
}

/** The notifications part of the PostgreSQL store. */
export class PostgresNotifications implements NotificationStore {
  readonly #pool: PostgresPool;
  readonly #ns: string;

  constructor(pool: PostgresPool, namespace: string) {
    this.#pool = pool;
    this.#ns = namespace;
  }

  createSubscription(subscription: StoredSubscription, maxPerPrincipal: number): Promise<boolean> {
    const ns = this.#ns;
    const owner = subscription.principalId;
    return this.#pool.run(async (sql) => {
      for (let attempt = 0; attempt < RACE_ATTEMPTS; attempt++) {
        const [row] = await sql<{ created: string; used: string }[]>`
          WITH created AS (
            INSERT INTO automation_runtime_notify_subscriptions
              (namespace, subscription_id, principal_id, slot, created_at, record)
            SELECT ${ns}, ${subscription.subscriptionId}, ${owner}, slot,
                   ${subscription.createdAt}, ${sql.json(json(subscription))}
            FROM generate_series(0, ${maxPerPrincipal - 1}) AS slot
            WHERE NOT EXISTS (
              SELECT 1 FROM automation_runtime_notify_subscriptions
              WHERE namespace = ${ns} AND principal_id = ${owner} AND slot = slot.slot
            )
            ORDER BY slot LIMIT 1
            ON CONFLICT DO NOTHING
            RETURNING 1
          )
          SELECT (SELECT count(*) FROM created) AS created,
                 (SELECT count(*) FROM automation_runtime_notify_subscriptions
                  WHERE namespace = ${ns} AND principal_id = ${owner}) AS used`;
        if (Number(row.created) === 1) return true;
        if (Number(row.used) >= maxPerPrincipal) return false;
        // A racing creation took the slot this one chose: look again.
      }
      return false;
    });
  }

  getSubscription(subscriptionId: string): Promise<StoredSubscription | null> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<{ record: StoredSubscription }[]>`
        SELECT record FROM automation_runtime_notify_subscriptions
        WHERE namespace = ${this.#ns} AND subscription_id = ${subscriptionId}`;
      return rows.length === 0 ? null : rows[0].record;
    });
  }

  listSubscriptions(params: {
    principalId?: string;
    limit: number;
    cursor?: string;
  }): Promise<StoredPage<StoredSubscription>> {
    const after = params.cursor === undefined ? null : decodeCursor(params.cursor);
    return this.#pool.run(async (sql) => {
      const rows = await sql<{ record: StoredSubscription }[]>`
        SELECT record FROM automation_runtime_notify_subscriptions
        WHERE namespace = ${this.#ns}
          ${
        params.principalId === undefined ? sql`` : sql`AND principal_id = ${params.principalId}`
      }
          ${
        after === null || after.length !== 2 ? sql`` : sql`AND (created_at COLLATE "C",
              subscription_id COLLATE "C") > (${String(after[0])} COLLATE "C",
              ${String(after[1])} COLLATE "C")`
      }
        ORDER BY created_at COLLATE "C", subscription_id COLLATE "C"
        LIMIT ${params.limit + 1}`;
      const items = rows.slice(0, params.limit).map((row) => row.record);
      const last = items.at(-1);
      return {
        items,
        nextCursor: rows.length > params.limit && last !== undefined
          ? encodeCursor([last.createdAt, last.subscriptionId])
          : null,
      };
    });
  }

  updateSubscription(next: StoredSubscription, expected: StoredSubscription): Promise<boolean> {
    return this.#pool.run(async (sql) => {
      const rows = await sql`
        UPDATE automation_runtime_notify_subscriptions SET record = ${sql.json(json(next))}
        WHERE namespace = ${this.#ns} AND subscription_id = ${next.subscriptionId}
          AND record = ${sql.json(json(expected))}
        RETURNING 1`;
      return rows.length === 1;
    });
  }

  recordOutcome(
    subscriptionId: string,
    ok: boolean,
    at: string,
    disableAfter: number,
  ): Promise<{ disabled: boolean } | null> {
    return this.#pool.run(async (sql) => {
      // A disabled subscription counts no more: it is disabled once, by one call (the row lock
      // orders the calls).
      const rows = await sql<{ state: string; failures: number; moved: boolean }[]>`
        WITH old AS (
          SELECT record FROM automation_runtime_notify_subscriptions
          WHERE namespace = ${this.#ns} AND subscription_id = ${subscriptionId}
          FOR UPDATE
        ), updated AS (
          UPDATE automation_runtime_notify_subscriptions AS s
          SET record = CASE
            WHEN s.record->>'state' <> 'active' THEN s.record
            WHEN ${ok} THEN s.record || '{"consecutiveFailures": 0}'::jsonb
            WHEN (s.record->>'consecutiveFailures')::int + 1 >= ${disableAfter}
              THEN s.record || jsonb_build_object(
                'consecutiveFailures', (s.record->>'consecutiveFailures')::int + 1,
                'state', 'disabled', 'disabledAt', ${at}::text)
            ELSE s.record || jsonb_build_object(
              'consecutiveFailures', (s.record->>'consecutiveFailures')::int + 1)
          END
          FROM old
          WHERE s.namespace = ${this.#ns} AND s.subscription_id = ${subscriptionId}
          RETURNING s.record->>'state' AS state,
                    (s.record->>'consecutiveFailures')::int AS failures,
                    (old.record->>'state') = 'active' AS moved
        )
        SELECT state, failures, moved FROM updated`;
      if (rows.length === 0) return null;
      const row = rows[0];
      return { disabled: !ok && row.moved && row.state === "disabled" };
    });
  }

  deleteSubscription(subscriptionId: string): Promise<boolean> {
    return this.#pool.run(async (sql) => {
      const [row] = await sql<{ gone: string }[]>`
        WITH gone AS (
          DELETE FROM automation_runtime_notify_subscriptions
          WHERE namespace = ${this.#ns} AND subscription_id = ${subscriptionId}
          RETURNING subscription_id
        ), deliveries AS (
          DELETE FROM automation_runtime_notify_deliveries
          WHERE namespace = ${this.#ns} AND subscription_id IN (SELECT subscription_id FROM gone)
        )
        SELECT count(*) AS gone FROM gone`;
      return Number(row.gone) > 0;
    });
  }

  enqueue(deliveries: readonly StoredDelivery[], maxPending: number): Promise<number> {
    const ns = this.#ns;
    return this.#pool.run(async (sql) => {
      let created = 0;
      for (const delivery of deliveries) {
        const rows = await sql`
          INSERT INTO automation_runtime_notify_deliveries
            (namespace, delivery_id, subscription_id, activity_seq, state, next_attempt_ms,
             created_ms, record)
          SELECT ${ns}, ${delivery.deliveryId}, ${delivery.subscriptionId},
                 ${String(delivery.activitySeq)}, ${delivery.state},
                 ${String(delivery.nextAttemptMs)}, ${String(delivery.createdMs)},
                 ${sql.json(recordOf(delivery))}
          WHERE (
            SELECT count(*) FROM automation_runtime_notify_deliveries
            WHERE namespace = ${ns} AND subscription_id = ${delivery.subscriptionId}
              AND state = 'pending'
          ) < ${maxPending}
          ON CONFLICT (namespace, delivery_id) DO NOTHING
          RETURNING 1`;
        created += rows.length;
      }
      return created;
    });
  }

  claimDue(params: ClaimDueParams): Promise<StoredDelivery[]> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<
        { claimed_record: StoredDelivery; claimed_holder: string; claimed_until: string }[]
      >`
        SELECT * FROM automation_runtime_claim_deliveries(
          ${this.#ns}, ${params.holder}, ${String(params.now)},
          ${String(params.now + params.leaseMs)}, ${params.limit}, ${params.perOwner},
          ${sql.array([...(params.skipOwners ?? [])])}::text[])`;
      return rows.map((row) =>
        toDelivery({
          record: row.claimed_record,
          lease_holder: row.claimed_holder,
          lease_until: row.claimed_until,
        })
      );
    });
  }

  settle(delivery: StoredDelivery, holder: string): Promise<boolean> {
    return this.#pool.run(async (sql) => {
      const rows = await sql`
        UPDATE automation_runtime_notify_deliveries
        SET state = ${delivery.state}, next_attempt_ms = ${String(delivery.nextAttemptMs)},
            record = ${sql.json(recordOf(delivery))}, lease_holder = NULL, lease_until = NULL
        WHERE namespace = ${this.#ns} AND delivery_id = ${delivery.deliveryId}
          AND lease_holder = ${holder}
        RETURNING 1`;
      return rows.length === 1;
    });
  }

  getDelivery(subscriptionId: string, deliveryId: string): Promise<StoredDelivery | null> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<DeliveryRow[]>`
        SELECT record, lease_holder, lease_until FROM automation_runtime_notify_deliveries
        WHERE namespace = ${this.#ns} AND delivery_id = ${deliveryId}
          AND subscription_id = ${subscriptionId}`;
      return rows.length === 0 ? null : toDelivery(rows[0]);
    });
  }

  listDeliveries(
    subscriptionId: string,
    params: { limit: number; cursor?: string },
  ): Promise<StoredPage<StoredDelivery>> {
    const before = params.cursor === undefined ? null : decodeCursor(params.cursor);
    return this.#pool.run(async (sql) => {
      const rows = await sql<DeliveryRow[]>`
        SELECT record, lease_holder, lease_until FROM automation_runtime_notify_deliveries
        WHERE namespace = ${this.#ns} AND subscription_id = ${subscriptionId}
          ${
        before === null || before.length !== 2
          ? sql``
          : sql`AND (activity_seq, delivery_id COLLATE "C") <
              (${String(before[0])}::bigint, ${String(before[1])} COLLATE "C")`
      }
        ORDER BY activity_seq DESC, delivery_id COLLATE "C" DESC
        LIMIT ${params.limit + 1}`;
      const items = rows.slice(0, params.limit).map(toDelivery);
      const last = items.at(-1);
      return {
        items,
        nextCursor: rows.length > params.limit && last !== undefined
          ? encodeCursor([last.activitySeq, last.deliveryId])
          : null,
      };
    });
  }

  redeliver(
    subscriptionId: string,
    deliveryId: string,
    now: number,
  ): Promise<StoredDelivery | null> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<DeliveryRow[]>`
        UPDATE automation_runtime_notify_deliveries
        SET state = 'pending', next_attempt_ms = ${String(now)}, lease_holder = NULL,
            lease_until = NULL,
            record = record || jsonb_build_object(
              'state', 'pending', 'nextAttemptMs', ${now}::bigint,
              'nextAttemptAt', ${new Date(now).toISOString()}::text)
        WHERE namespace = ${this.#ns} AND delivery_id = ${deliveryId}
          AND subscription_id = ${subscriptionId}
        RETURNING record, lease_holder, lease_until`;
      return rows.length === 0 ? null : toDelivery(rows[0]);
    });
  }

  readCursor(): Promise<number> {
    return this.#pool.run(async (sql) => {
      const rows = await sql<{ seq: string }[]>`
        SELECT seq FROM automation_runtime_notify_cursor WHERE namespace = ${this.#ns}`;
      return rows.length === 0 ? 0 : Number(rows[0].seq);
    });
  }

  advanceCursor(from: number, to: number): Promise<boolean> {
    return this.#pool.run(async (sql) => {
      const rows = await sql`
        INSERT INTO automation_runtime_notify_cursor AS c (namespace, seq)
        SELECT ${this.#ns}, ${String(to)} WHERE ${from} = 0
        ON CONFLICT (namespace) DO UPDATE SET seq = EXCLUDED.seq WHERE c.seq = ${String(from)}
        RETURNING 1`;
      if (rows.length === 1) return true;
      if (from === 0) return false;
      const moved = await sql`
        UPDATE automation_runtime_notify_cursor SET seq = ${String(to)}
        WHERE namespace = ${this.#ns} AND seq = ${String(from)}
        RETURNING 1`;
      return moved.length === 1;
    });
  }

  purge(before: number): Promise<number> {
    return this.#pool.run(async (sql) => {
      const deleted = await sql`
        DELETE FROM automation_runtime_notify_deliveries
        WHERE namespace = ${this.#ns} AND state <> 'pending' AND created_ms < ${String(before)}`;
      return deleted.count;
    });
  }
}
