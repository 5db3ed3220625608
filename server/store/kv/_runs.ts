/**
 * The runs part of the KV store: run records and active-run slots. Keys, below the store's
 * namespace root:
 *
 * - `["run", runId]` → {@linkcode StoredRunRecord}
 * - `["run-by-principal", principalId, createdAt, runId]` → true (newest first by reverse list)
 * - `["run-by-time", createdAt, runId]` → principal id (every principal's runs)
 * - `["run-slot", principalId, slotId]` → {@linkcode SlotEntry}
 * - `["run-slot-count", principalId]` and `["run-slot-count-all"]` → number
 *
 * The slot counters are checked and written in the same atomic operation as the slot itself, so
 * two replicas reserving at once cannot both take the last slot.
 *
 * The events part reads which runs ended, for its purge, through {@linkcode runsEndedBefore}.
 *
 * @module
 */
import {
  ACTIVE_RUN_STATES,
  decodeCursor,
  encodeCursor,
  type RunListQuery,
  type RunSlotReservation,
  type RunSlotResult,
  type StoredRunPage,
  type StoredRunRecord,
} from "../run_types.ts";
import type { RunStore } from "../runs.ts";
import { AGAIN, type KvCommits, storeFailure } from "./_commit.ts";

/** One active-run slot: a reservation (with its lease) or a run's own (`leaseUntil` null). */
interface SlotEntry {
  leaseUntil: number | null;
}

function live(slot: SlotEntry | null, now: number): boolean {
  return slot !== null && (slot.leaseUntil === null || slot.leaseUntil > now);
}

/**
 * Adds to `operation` the run's own slot (kept while the run is active) and moves both active-run
 * counters by `delta`, never below zero.
 */
function setRunSlot(
  operation: Deno.AtomicOperation,
  keys: { runSlotKey: Deno.KvKey; countKey: Deno.KvKey; allKey: Deno.KvKey },
  active: boolean,
  delta: number,
  count: Deno.KvEntryMaybe<number>,
  all: Deno.KvEntryMaybe<number>,
): void {
  if (active) operation.set(keys.runSlotKey, { leaseUntil: null } satisfies SlotEntry);
  else operation.delete(keys.runSlotKey);
  if (delta === 0) return;
  operation
    .set(keys.countKey, Math.max((count.value ?? 0) + delta, 0))
    .set(keys.allKey, Math.max((all.value ?? 0) + delta, 0));
}

/**
 * The ids of the runs below `root` that ended before `endedBefore` (RFC 3339): the accessor the
 * events part's purge reads the runs through.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runsEndedBefore } from "./_runs.ts";
 * const kv = await Deno.openKv(":memory:");
 * assert.deepEqual(await Array.fromAsync(runsEndedBefore(kv, ["r"], "2026-01-01")), []);
 * kv.close();
 * ```
 */
export async function* runsEndedBefore(
  kv: Deno.Kv,
  root: Deno.KvKey,
  endedBefore: string,
): AsyncGenerator<string> {
  for await (const entry of kv.list<StoredRunRecord>({ prefix: [...root, "run"] })) {
    const record = entry.value;
    if (
      ACTIVE_RUN_STATES.has(record.state) || record.endedAt === undefined ||
      record.endedAt >= endedBefore
    ) continue;
    yield record.runId;
  }
}

/** The runs part of the KV store. */
export class KvRuns implements RunStore {
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

  reserveSlot(params: RunSlotReservation): Promise<RunSlotResult> {
    const slotKey = this.#key("run-slot", params.principalId, params.slotId);
    const countKey = this.#key("run-slot-count", params.principalId);
    const allKey = this.#key("run-slot-count-all");
    let swept = false;
    return this.#commits.retry(async () => {
      const [slot, count, all] = await this.#kv.getMany<[SlotEntry, number, number]>([
        slotKey,
        countKey,
        allKey,
      ]);
      if (live(slot.value, params.now)) return "reserved";
      const lapsed = slot.value !== null;
      const principalCount = (count.value ?? 0) - (lapsed ? 1 : 0);
      const serviceCount = (all.value ?? 0) - (lapsed ? 1 : 0);
      const refusal: RunSlotResult | null = principalCount >= params.principalLimit
        ? "principalQuota"
        : serviceCount >= params.serviceLimit
        ? "serviceQuota"
        : null;
      if (refusal !== null) {
        if (swept) return refusal;
        swept = true;
        await this.#sweep(refusal === "principalQuota" ? params.principalId : null, params.now);
        return AGAIN;
      }
      const result = await this.#commits.commit(
        this.#kv.atomic()
          .check(slot, count, all)
          .set(slotKey, { leaseUntil: params.now + params.leaseMs } satisfies SlotEntry)
          .set(countKey, principalCount + 1)
          .set(allKey, serviceCount + 1),
      );
      return result.ok ? "reserved" : AGAIN;
    });
  }

  /** Drops lapsed reservations of one principal (or of all), each with its counters. */
  async #sweep(principalId: string | null, now: number): Promise<void> {
    const prefix = principalId === null
      ? this.#key("run-slot")
      : this.#key("run-slot", principalId);
    for await (const entry of this.#kv.list<SlotEntry>({ prefix })) {
      if (live(entry.value, now)) continue;
      const owner = entry.key[entry.key.length - 2] as string;
      await this.#dropSlot(
        owner,
        entry.key[entry.key.length - 1] as string,
        (slot) => slot !== null && !live(slot, now),
      );
    }
  }

  /** Deletes a slot and decrements both counters, when `when` approves the slot as read. */
  #dropSlot(
    principalId: string,
    slotId: string,
    when: (slot: SlotEntry | null) => boolean,
  ): Promise<void> {
    const slotKey = this.#key("run-slot", principalId, slotId);
    const countKey = this.#key("run-slot-count", principalId);
    const allKey = this.#key("run-slot-count-all");
    return this.#commits.retry(async () => {
      const [slot, count, all] = await this.#kv.getMany<[SlotEntry, number, number]>([
        slotKey,
        countKey,
        allKey,
      ]);
      if (slot.value === null || !when(slot.value)) return;
      const result = await this.#commits.commit(
        this.#kv.atomic()
          .check(slot, count, all)
          .delete(slotKey)
          .set(countKey, Math.max((count.value ?? 1) - 1, 0))
          .set(allKey, Math.max((all.value ?? 1) - 1, 0)),
      );
      return result.ok ? undefined : AGAIN;
    });
  }

  releaseSlot(principalId: string, slotId: string): Promise<void> {
    return this.#dropSlot(principalId, slotId, (slot) => slot?.leaseUntil !== null);
  }

  async countSlots(principalId: string | null, now: number): Promise<number> {
    try {
      const prefix = principalId === null
        ? this.#key("run-slot")
        : this.#key("run-slot", principalId);
      let count = 0;
      for await (const entry of this.#kv.list<SlotEntry>({ prefix })) {
        if (live(entry.value, now)) count++;
      }
      return count;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  create(record: StoredRunRecord, slotId: string): Promise<void> {
    const reservationKey = this.#key("run-slot", record.principalId, slotId);
    const runSlotKey = this.#key("run-slot", record.principalId, record.runId);
    const countKey = this.#key("run-slot-count", record.principalId);
    const allKey = this.#key("run-slot-count-all");
    const active = ACTIVE_RUN_STATES.has(record.state);
    return this.#commits.retry(async () => {
      const [reservation, runSlot, count, all] = await this.#kv.getMany<
        [SlotEntry, SlotEntry, number, number]
      >([reservationKey, runSlotKey, countKey, allKey]);
      // Slots before and after: the reservation goes, the run's own slot comes when active.
      const before = (reservation.value !== null ? 1 : 0) + (runSlot.value !== null ? 1 : 0);
      const after = active ? 1 : 0;
      const delta = after - before;
      const operation = this.#kv.atomic()
        .check(reservation, runSlot, count, all)
        .set(this.#key("run", record.runId), record)
        .set(
          this.#key("run-by-principal", record.principalId, record.createdAt, record.runId),
          true,
        )
        .set(this.#key("run-by-time", record.createdAt, record.runId), record.principalId)
        .delete(reservationKey);
      setRunSlot(operation, { runSlotKey, countKey, allKey }, active, delta, count, all);
      return (await this.#commits.commit(operation)).ok ? undefined : AGAIN;
    });
  }

  async get(runId: string): Promise<StoredRunRecord | null> {
    try {
      return (await this.#kv.get<StoredRunRecord>(this.#key("run", runId))).value;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  update(record: StoredRunRecord, expected?: StoredRunRecord): Promise<boolean> {
    const runKey = this.#key("run", record.runId);
    const runSlotKey = this.#key("run-slot", record.principalId, record.runId);
    const countKey = this.#key("run-slot-count", record.principalId);
    const allKey = this.#key("run-slot-count-all");
    const active = ACTIVE_RUN_STATES.has(record.state);
    // Both come from stored values, so equal records serialize alike (same key order).
    const wanted = expected === undefined ? undefined : JSON.stringify(expected);
    return this.#commits.retry(async () => {
      const [current, runSlot, count, all] = await this.#kv.getMany<
        [StoredRunRecord, SlotEntry, number, number]
      >([runKey, runSlotKey, countKey, allKey]);
      if (wanted !== undefined && JSON.stringify(current.value) !== wanted) return false;
      const delta = (active ? 1 : 0) - (runSlot.value !== null ? 1 : 0);
      const operation = this.#kv.atomic().check(runSlot, count, all);
      // The compare-and-set: the record must not change between the comparison and the commit.
      if (wanted !== undefined) operation.check(current);
      operation.set(runKey, record);
      setRunSlot(operation, { runSlotKey, countKey, allKey }, active, delta, count, all);
      return (await this.#commits.commit(operation)).ok ? true : AGAIN;
    });
  }

  async list(params: RunListQuery): Promise<StoredRunPage> {
    try {
      const prefix = params.principalId === undefined
        ? this.#key("run-by-time")
        : this.#key("run-by-principal", params.principalId);
      const after = params.cursor === undefined ? null : decodeCursor(params.cursor);
      const selector: Deno.KvListSelector = after === null
        ? { prefix }
        : { prefix, end: [...prefix, ...after] };
      const runs: StoredRunRecord[] = [];
      let last: StoredRunRecord | null = null;
      let more = false;
      for await (const entry of this.#kv.list({ ...selector }, { reverse: true, batchSize: 100 })) {
        const runId = entry.key[entry.key.length - 1] as string;
        const record = (await this.#kv.get<StoredRunRecord>(this.#key("run", runId))).value;
        if (record === null) continue;
        if (params.state !== undefined && record.state !== params.state) continue;
        if (runs.length === params.limit) {
          more = true;
          break;
        }
        runs.push(record);
        last = record;
      }
      return {
        runs,
        nextCursor: more && last !== null ? encodeCursor([last.createdAt, last.runId]) : null,
      };
    } catch (error) {
      throw storeFailure(error);
    }
  }
}
