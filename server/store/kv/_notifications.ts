/**
 * The notifications part of the KV store. Keys, below the store's namespace root:
 *
 * - `["notify-sub", subscriptionId]` → {@linkcode StoredSubscription}
 * - `["notify-sub-slot", principalId, slot]` → subscription id (a principal's slots, 0 to the
 *   limit: a creation takes a free one, checked absent in its commit)
 * - `["notify-sub-by-time", createdAt, subscriptionId]` and
 *   `["notify-sub-by-principal", principalId, createdAt, subscriptionId]` → true (the lists)
 * - `["notify-delivery", deliveryId]` → {@linkcode StoredDelivery}
 * - `["notify-by-sub", subscriptionId, activitySeq, deliveryId]` → true (a subscription's
 *   deliveries, newest last)
 * - `["notify-pending", subscriptionId, deliveryId]` → true (its pending ones, counted against
 *   the bound)
 * - `["notify-due", nextAttemptMs, deliveryId]` → true (pending deliveries by due time)
 * - `["notify-cursor"]` → the activity seq turned into deliveries so far
 *
 * Every step is one atomic operation checked against what it read. A delivery's record, its
 * pending and due keys move together.
 *
 * @module
 */
import { decodeCursor, encodeCursor } from "../run_types.ts";
import type {
  ClaimDueParams,
  NotificationStore,
  StoredDelivery,
  StoredPage,
  StoredSubscription,
} from "../notifications.ts";
import { AGAIN, type KvCommits, storeFailure } from "./_commit.ts";

/** The notifications part of the KV store. */
export class KvNotifications implements NotificationStore {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #root: Deno.KvKey;

  constructor(commits: KvCommits, root: Deno.KvKey) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#root = root;
  }

  #key(...parts: Deno.KvKeyPart[]): Deno.KvKey {
    return [...this.#root, ...parts];
  }

  #deliveryKeys(delivery: StoredDelivery): Deno.KvKey[] {
    return [
      this.#key(
        "notify-by-sub",
        delivery.subscriptionId,
        delivery.activitySeq,
        delivery.deliveryId,
      ),
      this.#key("notify-pending", delivery.subscriptionId, delivery.deliveryId),
      this.#key("notify-due", delivery.nextAttemptMs, delivery.deliveryId),
    ];
  }

  /** Adds to `operation` the index keys of `next`, replacing those of `previous`. */
  #moveDelivery(
    operation: Deno.AtomicOperation,
    previous: StoredDelivery | null,
    next: StoredDelivery,
  ): void {
    if (previous !== null && previous.state === "pending") {
      operation.delete(this.#key("notify-due", previous.nextAttemptMs, previous.deliveryId));
    }
    operation.set(this.#key("notify-delivery", next.deliveryId), next);
    const [bySub, pending, due] = this.#deliveryKeys(next);
    operation.set(bySub, true);
    if (next.state === "pending") {
      operation.set(pending, true).set(due, true);
    } else {
      operation.delete(pending);
    }
  }

  createSubscription(subscription: StoredSubscription, maxPerPrincipal: number): Promise<boolean> {
    const owner = subscription.principalId;
    return this.#commits.retry(async () => {
      const taken = new Set<number>();
      const slots = this.#kv.list({ prefix: this.#key("notify-sub-slot", owner) });
      for await (const entry of slots) taken.add(entry.key[entry.key.length - 1] as number);
      let slot = 0;
      while (taken.has(slot)) slot++;
      if (slot >= maxPerPrincipal) return false;
      const slotKey = this.#key("notify-sub-slot", owner, slot);
      const recordKey = this.#key("notify-sub", subscription.subscriptionId);
      const result = await this.#commits.commit(
        this.#kv.atomic()
          .check({ key: slotKey, versionstamp: null }, { key: recordKey, versionstamp: null })
          .set(slotKey, subscription.subscriptionId)
          .set(recordKey, subscription)
          .set(
            this.#key("notify-sub-by-time", subscription.createdAt, subscription.subscriptionId),
            true,
          )
          .set(
            this.#key(
              "notify-sub-by-principal",
              owner,
              subscription.createdAt,
              subscription.subscriptionId,
            ),
            true,
          ),
      );
      return result.ok ? true : AGAIN;
    });
  }

  async getSubscription(subscriptionId: string): Promise<StoredSubscription | null> {
    try {
      return (await this.#kv.get<StoredSubscription>(this.#key("notify-sub", subscriptionId)))
        .value;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  /**
   * One page of records found through the index keys `selector` lists (the record's id is each
   * key's last part, read with `read`); the next cursor from the last record, by `cursorOf`.
   */
  async #page<T>(
    selector: Deno.KvListSelector,
    options: { limit: number; reverse: boolean },
    read: (id: string) => Promise<T | null>,
    cursorOf: (last: T) => (string | number)[],
  ): Promise<StoredPage<T>> {
    const items: T[] = [];
    let more = false;
    const list = this.#kv.list(selector, { reverse: options.reverse, batchSize: 100 });
    for await (const entry of list) {
      const record = await read(entry.key[entry.key.length - 1] as string);
      if (record === null) continue;
      if (items.length === options.limit) {
        more = true;
        break;
      }
      items.push(record);
    }
    const last = items.at(-1);
    return { items, nextCursor: more && last !== undefined ? encodeCursor(cursorOf(last)) : null };
  }

  async listSubscriptions(params: {
    principalId?: string;
    limit: number;
    cursor?: string;
  }): Promise<StoredPage<StoredSubscription>> {
    try {
      const prefix = params.principalId === undefined
        ? this.#key("notify-sub-by-time")
        : this.#key("notify-sub-by-principal", params.principalId);
      const after = params.cursor === undefined ? null : decodeCursor(params.cursor);
      const selector: Deno.KvListSelector = after === null
        ? { prefix }
        : { prefix, start: [...prefix, ...after, ""] };
      return await this.#page<StoredSubscription>(
        selector,
        { limit: params.limit, reverse: false },
        async (id) => (await this.#kv.get<StoredSubscription>(this.#key("notify-sub", id))).value,
        (last) => [last.createdAt, last.subscriptionId],
      );
    } catch (error) {
      throw storeFailure(error);
    }
  }

  updateSubscription(next: StoredSubscription, expected: StoredSubscription): Promise<boolean> {
    const key = this.#key("notify-sub", next.subscriptionId);
    const wanted = JSON.stringify(expected);
    return this.#commits.retry(async () => {
      const current = await this.#kv.get<StoredSubscription>(key);
      if (JSON.stringify(current.value) !== wanted) return false;
      const result = await this.#commits.commit(this.#kv.atomic().check(current).set(key, next));
      return result.ok ? true : AGAIN;
    });
  }

  recordOutcome(
    subscriptionId: string,
    ok: boolean,
    at: string,
    disableAfter: number,
  ): Promise<{ disabled: boolean } | null> {
    const key = this.#key("notify-sub", subscriptionId);
    return this.#commits.retry(async () => {
      const current = await this.#kv.get<StoredSubscription>(key);
      const record = current.value;
      if (record === null) return null;
      // A disabled subscription counts no more: it is disabled once, by one call.
      if (record.state !== "active") return { disabled: false };
      const failures = ok ? 0 : record.consecutiveFailures + 1;
      const disabling = !ok && failures >= disableAfter;
      if (failures === record.consecutiveFailures && !disabling) return { disabled: false };
      const next: StoredSubscription = {
        ...record,
        consecutiveFailures: failures,
        ...(disabling ? { state: "disabled" as const, disabledAt: at } : {}),
      };
      const result = await this.#commits.commit(this.#kv.atomic().check(current).set(key, next));
      return result.ok ? { disabled: disabling } : AGAIN;
    });
  }

  async deleteSubscription(subscriptionId: string): Promise<boolean> {
    const key = this.#key("notify-sub", subscriptionId);
    const removed = await this.#commits.retry(async () => {
      const current = await this.#kv.get<StoredSubscription>(key);
      const record = current.value;
      if (record === null) return false;
      const operation = this.#kv.atomic().check(current).delete(key)
        .delete(this.#key("notify-sub-by-time", record.createdAt, subscriptionId))
        .delete(
          this.#key(
            "notify-sub-by-principal",
            record.principalId,
            record.createdAt,
            subscriptionId,
          ),
        );
      const slots = this.#kv.list<string>({
        prefix: this.#key("notify-sub-slot", record.principalId),
      });
      for await (const slot of slots) {
        if (slot.value === subscriptionId) operation.check(slot).delete(slot.key);
      }
      return (await this.#commits.commit(operation)).ok ? true : AGAIN;
    });
    if (!removed) return false;
    await this.#deleteDeliveries(subscriptionId);
    return true;
  }

  /** Deletes every delivery of a (deleted) subscription, in batches. */
  async #deleteDeliveries(subscriptionId: string): Promise<void> {
    try {
      const deletes = this.#commits.deletions();
      const prefix = this.#key("notify-by-sub", subscriptionId);
      for await (const entry of this.#kv.list({ prefix })) {
        const deliveryId = entry.key[entry.key.length - 1] as string;
        const key = this.#key("notify-delivery", deliveryId);
        const record = (await this.#kv.get<StoredDelivery>(key)).value;
        await deletes.delete(
          entry.key,
          key,
          this.#key("notify-pending", subscriptionId, deliveryId),
          ...(record !== null ? [this.#key("notify-due", record.nextAttemptMs, deliveryId)] : []),
        );
      }
      await deletes.flush();
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async enqueue(deliveries: readonly StoredDelivery[], maxPending: number): Promise<number> {
    let created = 0;
    const pendingOf = new Map<string, number>();
    for (const delivery of deliveries) {
      const subscriptionId = delivery.subscriptionId;
      let pending = pendingOf.get(subscriptionId);
      if (pending === undefined) {
        pending = 0;
        const prefix = this.#key("notify-pending", subscriptionId);
        try {
          for await (const _ of this.#kv.list({ prefix }, { limit: maxPending })) pending++;
        } catch (error) {
          throw storeFailure(error);
        }
      }
      if (pending >= maxPending) {
        pendingOf.set(subscriptionId, pending);
        continue;
      }
      const key = this.#key("notify-delivery", delivery.deliveryId);
      const made = await this.#commits.retry(async () => {
        const operation = this.#kv.atomic().check({ key, versionstamp: null });
        this.#moveDelivery(operation, null, delivery);
        if ((await this.#commits.commit(operation)).ok) return true;
        // Checked absent: a failed commit means the id exists (another replica made it).
        return (await this.#kv.get(key)).value !== null ? false : AGAIN;
      });
      if (made) created++;
      pendingOf.set(subscriptionId, pending + (made ? 1 : 0));
    }
    return created;
  }

  async claimDue(params: ClaimDueParams): Promise<StoredDelivery[]> {
    try {
      const claimed: StoredDelivery[] = [];
      const prefix = this.#key("notify-due");
      const due = this.#kv.list(
        { prefix, end: [...prefix, params.now + 1] },
        { limit: params.limit * 4 },
      );
      for await (const entry of due) {
        if (claimed.length === params.limit) break;
        const deliveryId = entry.key[entry.key.length - 1] as string;
        const key = this.#key("notify-delivery", deliveryId);
        const current = await this.#kv.get<StoredDelivery>(key);
        const record = current.value;
        if (record === null || record.state !== "pending") {
          // A due key its delivery no longer matches: drop it.
          await this.#commits.commit(this.#kv.atomic().delete(entry.key));
          continue;
        }
        if (record.leaseUntil !== undefined && record.leaseUntil > params.now) continue;
        const leased: StoredDelivery = {
          ...record,
          leaseHolder: params.holder,
          leaseUntil: params.now + params.leaseMs,
        };
        const result = await this.#commits.commit(
          this.#kv.atomic().check(current).set(key, leased),
        );
        if (result.ok) claimed.push(leased);
      }
      return claimed;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  settle(delivery: StoredDelivery, holder: string): Promise<boolean> {
    const key = this.#key("notify-delivery", delivery.deliveryId);
    return this.#commits.retry(async () => {
      const current = await this.#kv.get<StoredDelivery>(key);
      const record = current.value;
      if (record === null || record.leaseHolder !== holder) return false;
      const { leaseHolder: _holder, leaseUntil: _until, ...next } = delivery;
      const operation = this.#kv.atomic().check(current);
      this.#moveDelivery(operation, record, next);
      return (await this.#commits.commit(operation)).ok ? true : AGAIN;
    });
  }

  async getDelivery(subscriptionId: string, deliveryId: string): Promise<StoredDelivery | null> {
    try {
      const record = (await this.#kv.get<StoredDelivery>(this.#key("notify-delivery", deliveryId)))
        .value;
      return record !== null && record.subscriptionId === subscriptionId ? record : null;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async listDeliveries(
    subscriptionId: string,
    params: { limit: number; cursor?: string },
  ): Promise<StoredPage<StoredDelivery>> {
    try {
      const prefix = this.#key("notify-by-sub", subscriptionId);
      const before = params.cursor === undefined ? null : decodeCursor(params.cursor);
      const selector: Deno.KvListSelector = before === null
        ? { prefix }
        : { prefix, end: [...prefix, ...before] };
      return await this.#page<StoredDelivery>(
        selector,
        { limit: params.limit, reverse: true },
        async (id) => (await this.#kv.get<StoredDelivery>(this.#key("notify-delivery", id))).value,
        (last) => [last.activitySeq, last.deliveryId],
      );
    } catch (error) {
      throw storeFailure(error);
    }
  }

  redeliver(
    subscriptionId: string,
    deliveryId: string,
    now: number,
  ): Promise<StoredDelivery | null> {
    const key = this.#key("notify-delivery", deliveryId);
    return this.#commits.retry(async () => {
      const current = await this.#kv.get<StoredDelivery>(key);
      const record = current.value;
      if (record === null || record.subscriptionId !== subscriptionId) return null;
      const { leaseHolder: _holder, leaseUntil: _until, ...rest } = record;
      const next: StoredDelivery = {
        ...rest,
        state: "pending",
        nextAttemptMs: now,
        nextAttemptAt: new Date(now).toISOString(),
      };
      const operation = this.#kv.atomic().check(current);
      this.#moveDelivery(operation, record, next);
      return (await this.#commits.commit(operation)).ok ? next : AGAIN;
    });
  }

  async readCursor(): Promise<number> {
    try {
      return (await this.#kv.get<number>(this.#key("notify-cursor"))).value ?? 0;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  advanceCursor(from: number, to: number): Promise<boolean> {
    const key = this.#key("notify-cursor");
    return this.#commits.retry(async () => {
      const current = await this.#kv.get<number>(key);
      if ((current.value ?? 0) !== from) return false;
      const result = await this.#commits.commit(this.#kv.atomic().check(current).set(key, to));
      return result.ok ? true : AGAIN;
    });
  }

  async purge(before: number): Promise<number> {
    try {
      let deleted = 0;
      const deletes = this.#commits.deletions();
      for await (
        const entry of this.#kv.list<StoredDelivery>({
          prefix: this.#key("notify-delivery"),
        })
      ) {
        const record = entry.value;
        if (record.state === "pending" || record.createdMs >= before) continue;
        await deletes.delete(entry.key, ...this.#deliveryKeys(record));
        deleted++;
      }
      await deletes.flush();
      return deleted;
    } catch (error) {
      throw storeFailure(error);
    }
  }
}
