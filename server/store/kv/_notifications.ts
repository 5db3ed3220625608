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
 * - `["notify-due", nextAttemptMs, deliveryId]` → {@linkcode DueMark} (pending deliveries by due
 *   time, with their subscription and owner, so a claim passes over busy ones without reading
 *   their records; `true` in a store written before the marks)
 * - `["notify-sub-due", subscriptionId, nextAttemptMs, deliveryId]` → the owner's id (each
 *   subscription's pending deliveries by due time: its first is the one a claim may take)
 * - `["notify-sub-lease", subscriptionId]` → {@linkcode LeaseMark}: the one delivery of the
 *   subscription under a lease
 * - `["notify-owner-lease", principalId, slot]` → {@linkcode LeaseMark}: an owner's leased
 *   deliveries, one slot each (0 to the claim's `perOwner`)
 * - `["notify-cursor"]` → the activity seq turned into deliveries so far
 *
 * Every step is one atomic operation checked against what it read. A delivery's record, its
 * pending and due keys move together; a claim checks and sets the delivery's lease, its
 * subscription's mark and a free slot of its owner in one operation, so claims on several
 * handles keep one delivery in flight per subscription and the owner's bound. A mark whose
 * `until` passed holds nothing (its sender died); settling, redelivering or deleting removes the
 * marks naming the delivery.
 *
 * One part in one file of a little over 600 lines: its keys move together in every write, and a
 * claim's checks span all of them.
 *
 * A claim reads the due keys in order, passing over those of busy subscriptions and owners
 * without reading their records, for up to {@linkcode DUE_SCAN} keys: past that, a long run of
 * busy ones (an owner whose slow targets piled up deliveries) would make every claim read them
 * all, so it looks at each subscription's first due delivery instead (one read per subscription
 * with pending deliveries), earliest first. A claim's cost so stays bounded by the number of
 * subscriptions, whatever one of them has queued.
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

/** What a due key holds: whose delivery it is. */
interface DueMark {
  subscriptionId: string;
  principalId: string;
}

/** A lease mark of a subscription or an owner's slot: the delivery and until when. */
interface LeaseMark {
  deliveryId: string;
  subscriptionId: string;
  until: number;
}

/** Due keys one claim reads at a time. */
const DUE_BATCH = 200;
/** Due keys a claim reads in due order before it looks at each subscription's first instead. */
const DUE_SCAN = 256;

/** A due delivery a claim may take: its key in the due order, whose it is, when due. */
interface Candidate {
  deliveryId: string;
  /** Its `notify-due` key. */
  dueKey: Deno.KvKey;
  /** Whose it is, when the key says (a store written before the marks does not). */
  mark: DueMark | null;
}

/** What one claim has learnt and taken so far. */
interface ClaimState {
  readonly params: ClaimDueParams;
  readonly claimed: StoredDelivery[];
  /** Subscriptions with a delivery under a live lease (or a lost race: left to the next claim). */
  readonly busy: Set<string>;
  /** Owners at their bound (or skipped by the claimer). */
  readonly full: Set<string>;
  /** Each owner's slots as read in this claim (a slot this claim took is live). */
  readonly slotsOf: Map<string, Map<number, Deno.KvEntryMaybe<LeaseMark>>>;
}

/** Whether a lease mark holds at `now`. */
function holds(mark: LeaseMark | null, now: number): boolean {
  return mark !== null && mark.until > now;
}

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

  /** A delivery's keys: its place in its subscription's list, its pending key, its due keys. */
  #deliveryKeys(
    delivery: Pick<
      StoredDelivery,
      "subscriptionId" | "activitySeq" | "deliveryId" | "nextAttemptMs"
    >,
  ): Deno.KvKey[] {
    return [
      this.#key(
        "notify-by-sub",
        delivery.subscriptionId,
        delivery.activitySeq,
        delivery.deliveryId,
      ),
      this.#key("notify-pending", delivery.subscriptionId, delivery.deliveryId),
      ...this.#dueKeys(delivery),
    ];
  }

  /** A pending delivery's two due keys: in the due order, and in its subscription's. */
  #dueKeys(
    delivery: Pick<StoredDelivery, "subscriptionId" | "deliveryId" | "nextAttemptMs">,
  ): Deno.KvKey[] {
    return [
      this.#key("notify-due", delivery.nextAttemptMs, delivery.deliveryId),
      this.#key(
        "notify-sub-due",
        delivery.subscriptionId,
        delivery.nextAttemptMs,
        delivery.deliveryId,
      ),
    ];
  }

  /** Adds to `operation` the index keys of `next`, replacing those of `previous`. */
  #moveDelivery(
    operation: Deno.AtomicOperation,
    previous: StoredDelivery | null,
    next: StoredDelivery,
  ): void {
    if (previous !== null && previous.state === "pending") {
      for (const key of this.#dueKeys(previous)) operation.delete(key);
    }
    operation.set(this.#key("notify-delivery", next.deliveryId), next);
    const [bySub, pending, due, subDue] = this.#deliveryKeys(next);
    operation.set(bySub, true);
    if (next.state === "pending") {
      const mark: DueMark = { subscriptionId: next.subscriptionId, principalId: next.principalId };
      operation.set(pending, true).set(due, mark).set(subDue, next.principalId);
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
      // Its delivery in flight, if any, holds its owner's share no more.
      const subMark = await this.#kv.get<LeaseMark>(this.#key("notify-sub-lease", subscriptionId));
      if (subMark.value !== null) operation.check(subMark).delete(subMark.key);
      for (const entry of (await this.#ownerSlots(record.principalId)).values()) {
        if (entry.value?.subscriptionId === subscriptionId) {
          operation.check(entry).delete(entry.key);
        }
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
          ...(record !== null ? this.#dueKeys(record) : []),
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
    const state: ClaimState = {
      params,
      claimed: [],
      busy: new Set(),
      full: new Set(params.skipOwners),
      slotsOf: new Map(),
    };
    try {
      // In due order, for a while.
      const prefix = this.#key("notify-due");
      const due = this.#kv.list<DueMark | true>(
        { prefix, end: [...prefix, params.now + 1] },
        { batchSize: DUE_BATCH },
      );
      let read = 0;
      let cut = false;
      for await (const entry of due) {
        if (state.claimed.length === params.limit) return state.claimed;
        if (read++ === DUE_SCAN) {
          cut = true;
          break;
        }
        await this.#tryClaim(state, {
          deliveryId: entry.key[entry.key.length - 1] as string,
          dueKey: entry.key,
          mark: entry.value === true ? null : entry.value,
        });
      }
      if (!cut || state.claimed.length === params.limit) return state.claimed;
      // Then each subscription's first due delivery, earliest first.
      for (const candidate of await this.#heads(state)) {
        if (state.claimed.length === params.limit) break;
        await this.#tryClaim(state, candidate);
      }
      return state.claimed;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  /**
   * The first due delivery of each subscription that is neither busy nor of a full owner, as far
   * as `state` knows, earliest due first: one read per subscription with pending deliveries.
   */
  async #heads(state: ClaimState): Promise<Candidate[]> {
    const heads: { candidate: Candidate; at: number }[] = [];
    const prefix = this.#key("notify-sub-due");
    let start: Deno.KvKey | null = null;
    for (;;) {
      let first: Deno.KvEntry<string> | undefined;
      const selector = start === null ? { prefix } : { prefix, start };
      for await (const entry of this.#kv.list<string>(selector, { limit: 1 })) first = entry;
      if (first === undefined) break;
      const [subscriptionId, at, deliveryId] = first.key.slice(prefix.length) as [
        string,
        number,
        string,
      ];
      // Past every key of this subscription: its id and a NUL sort after them all.
      start = [...prefix, `${subscriptionId}\u0000`];
      if (at > state.params.now) continue;
      if (state.busy.has(subscriptionId) || state.full.has(first.value)) continue;
      heads.push({
        at,
        candidate: {
          deliveryId,
          dueKey: this.#key("notify-due", at, deliveryId),
          mark: { subscriptionId, principalId: first.value },
        },
      });
    }
    heads.sort((a, b) => a.at - b.at || (a.candidate.deliveryId < b.candidate.deliveryId ? -1 : 1));
    return heads.map((head) => head.candidate);
  }

  /**
   * Leases `candidate` to the claim's holder unless its subscription is busy or its owner full
   * (learning which on the way); drops a due key its delivery no longer matches.
   */
  async #tryClaim(state: ClaimState, candidate: Candidate): Promise<void> {
    const { params, busy, full, slotsOf } = state;
    const { now, holder } = params;
    const { mark } = candidate;
    if (mark !== null && (busy.has(mark.subscriptionId) || full.has(mark.principalId))) return;
    const key = this.#key("notify-delivery", candidate.deliveryId);
    const current = await this.#kv.get<StoredDelivery>(key);
    const record = current.value;
    if (record === null || record.state !== "pending") {
      // Due keys their delivery no longer matches: drop them.
      const operation = this.#kv.atomic().delete(candidate.dueKey);
      if (mark !== null) {
        const at = candidate.dueKey[candidate.dueKey.length - 2] as number;
        operation.delete(
          this.#key("notify-sub-due", mark.subscriptionId, at, candidate.deliveryId),
        );
      }
      await this.#commits.commit(operation);
      return;
    }
    const { subscriptionId, principalId } = record;
    if (busy.has(subscriptionId) || full.has(principalId)) return;
    const subKey = this.#key("notify-sub-lease", subscriptionId);
    const subMark = await this.#kv.get<LeaseMark>(subKey);
    if ((record.leaseUntil !== undefined && record.leaseUntil > now) || holds(subMark.value, now)) {
      busy.add(subscriptionId);
      return;
    }
    let slots = slotsOf.get(principalId);
    if (slots === undefined) {
      slots = await this.#ownerSlots(principalId);
      slotsOf.set(principalId, slots);
    }
    let slot = -1;
    for (let i = 0; i < params.perOwner && slot === -1; i++) {
      if (!holds(slots.get(i)?.value ?? null, now)) slot = i;
    }
    if (slot === -1) {
      full.add(principalId);
      return;
    }
    const until = now + params.leaseMs;
    const slotKey = this.#key("notify-owner-lease", principalId, slot);
    const slotEntry = slots.get(slot) ?? { key: slotKey, value: null, versionstamp: null };
    const leased: StoredDelivery = { ...record, leaseHolder: holder, leaseUntil: until };
    const lease: LeaseMark = { deliveryId: candidate.deliveryId, subscriptionId, until };
    const result = await this.#commits.commit(
      this.#kv.atomic()
        .check(current, subMark, slotEntry)
        .set(key, leased)
        .set(subKey, lease)
        .set(slotKey, lease),
    );
    busy.add(subscriptionId);
    if (result.ok) {
      state.claimed.push(leased);
      slots.set(slot, { key: slotKey, value: lease, versionstamp: result.versionstamp });
    } else {
      // Another claim won a race here: the owner's slots are read again if met again.
      slotsOf.delete(principalId);
    }
  }

  /** An owner's lease slots, by slot number. */
  async #ownerSlots(principalId: string): Promise<Map<number, Deno.KvEntryMaybe<LeaseMark>>> {
    const slots = new Map<number, Deno.KvEntryMaybe<LeaseMark>>();
    const prefix = this.#key("notify-owner-lease", principalId);
    for await (const entry of this.#kv.list<LeaseMark>({ prefix })) {
      slots.set(entry.key[entry.key.length - 1] as number, entry);
    }
    return slots;
  }

  /**
   * Adds to `operation` the removal of the lease marks naming `delivery` (its subscription's,
   * its owner's slot), each checked as read.
   */
  async #releaseMarks(
    operation: Deno.AtomicOperation,
    delivery: Pick<StoredDelivery, "deliveryId" | "subscriptionId" | "principalId">,
  ): Promise<void> {
    const subMark = await this.#kv.get<LeaseMark>(
      this.#key("notify-sub-lease", delivery.subscriptionId),
    );
    if (subMark.value?.deliveryId === delivery.deliveryId) {
      operation.check(subMark).delete(subMark.key);
    }
    for (const entry of (await this.#ownerSlots(delivery.principalId)).values()) {
      if (entry.value?.deliveryId === delivery.deliveryId) operation.check(entry).delete(entry.key);
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
      await this.#releaseMarks(operation, record);
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
      await this.#releaseMarks(operation, record);
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
