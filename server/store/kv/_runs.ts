/**
 * The runs part of the KV store: run records, their indexes, and active-run slots. Keys, below
 * the store's namespace root:
 *
 * - `["run", runId]` → {@linkcode StoredRunRecord}
 * - `["run-by-principal", principalId, createdAt, runId]` → true (newest first by reverse list)
 * - `["run-by-time", createdAt, runId]` → principal id (every principal's runs)
 * - `["run-by-state", state, createdAt, runId]` → principal id (a state-filtered list of all)
 * - `["run-by-principal-state", principalId, state, createdAt, runId]` → true
 * - `["run-by-end", endedAt, runId]` → true (finished runs, for the retention purge)
 * - `["run-index-version"]` → 1 once every run has its state and end keys (see below)
 * - `["run-slot", principalId, slotId]` → {@linkcode SlotEntry}
 * - `["run-slot-count", principalId]` and `["run-slot-count-all"]` → number
 *
 * The state and end keys (the "state keys") follow the record: every write of a record checks
 * the record it replaces and moves its state keys in the same atomic operation, so a
 * state-filtered list reads only the runs in that state, and the purge only the finished ones.
 * A store written before these keys existed gets them from {@linkcode KvRuns.purgeEnded} (the
 * periodic cleanup), which then writes `run-index-version`; until then the lists and the purge
 * scan the runs instead. A store without runs writes it before its first run.
 *
 * The slot counters are checked and written in the same atomic operation as the slot itself, so
 * two replicas reserving at once cannot both take the last slot. Every step that moves them runs
 * in one lane of the commit helper (`KvCommits.inLane`), so this process's steps never lose a
 * race on the service-wide counter to each other; an update that moves no counter (most: the
 * tail's progress) neither checks them nor waits in the lane.
 *
 * The events part reads which runs ended, for its purge, through {@linkcode runsEndedBefore}.
 * A creation and an update append the activity entries they are given in their own atomic
 * operation, through the activity log's accessor ({@linkcode KvActivityLog}).
 *
 * A reservation may take a spend hold in the same atomic operation ({@linkcode KvRuns.reserveRun}:
 * the slot, both counters, the hold and its ledger), and a run's creation gives the hold of its
 * reservation the run; the spend part (`_spend.ts`) lays out those keys, and reads a run's
 * recorded turns through {@linkcode recordedTurns}.
 *
 * One part in one file of a little over 600 lines: its keys move together in every write.
 *
 * @module
 */
import {
  decodeRunCursor,
  encodeRunCursor,
  holdsRunSlot,
  invalidCursor,
  type RunListQuery,
  type RunReservation,
  type RunReservationResult,
  type RunSlotReservation,
  type RunSlotResult,
  type StoredRunPage,
  type StoredRunRecord,
} from "../run_types.ts";
import type { RunStore } from "../runs.ts";
import { type IdempotencyCompletion, IdempotencyLeaseLostError } from "../idempotency.ts";
import { AGAIN, type KvCommits, storeFailure } from "./_commit.ts";
import { addCompletion } from "./_idempotency.ts";
import type { ActivityInput } from "../activity.ts";
import type { KvActivityLog } from "./_activity.ts";
import {
  addHold,
  attachHold,
  existingHold,
  holdAmount,
  type HoldState,
  type HoldValue,
  readHoldState,
  startHoldKey,
  sweepHolds,
} from "./_spend.ts";

/** One active-run slot: a reservation (with its lease) or a run's own (`leaseUntil` null). */
interface SlotEntry {
  leaseUntil: number | null;
}

/** The lane of every step that moves the active-run counters. */
const SLOT_LANE = "run-slot-count-all";

/** What `run-index-version` holds once every run has its state keys. */
const INDEX_VERSION = 1;

/** Most keys of one `getMany`. */
const GET_MANY = 10;

/** What a step returns when it has to move the counters, so must run again in the lane. */
const TO_LANE: unique symbol = Symbol("to lane");

function live(slot: SlotEntry | null, now: number): boolean {
  return slot !== null && (slot.leaseUntil === null || slot.leaseUntil > now);
}

/** Whether a run holds its slot (and so has no end key and is never purged). */
function isActive(record: StoredRunRecord): boolean {
  return holdsRunSlot(record);
}

/** The state keys of `record` (see the module doc) with their values. */
function stateKeys(root: Deno.KvKey, record: StoredRunRecord): [Deno.KvKey, unknown][] {
  const { state, createdAt, runId, principalId } = record;
  const keys: [Deno.KvKey, unknown][] = [
    [[...root, "run-by-state", state, createdAt, runId], principalId],
    [[...root, "run-by-principal-state", principalId, state, createdAt, runId], true],
  ];
  if (!isActive(record) && record.endedAt !== undefined) {
    keys.push([[...root, "run-by-end", record.endedAt, runId], true]);
  }
  return keys;
}

/** Every key of `record` but its slot: the record, its two orders and its state keys. */
function recordKeys(root: Deno.KvKey, record: StoredRunRecord): [Deno.KvKey, unknown][] {
  return [
    [[...root, "run", record.runId], record],
    [[...root, "run-by-principal", record.principalId, record.createdAt, record.runId], true],
    [[...root, "run-by-time", record.createdAt, record.runId], record.principalId],
    ...stateKeys(root, record),
  ];
}

/**
 * Adds to `operation` what turns the state keys of `before` (null: none) into `after`'s: nothing
 * when they are the same keys (a write that changes no state, such as the tail's progress).
 */
function moveStateKeys(
  operation: Deno.AtomicOperation,
  root: Deno.KvKey,
  before: StoredRunRecord | null,
  after: StoredRunRecord,
): void {
  const wanted = stateKeys(root, after);
  const had = new Set(
    before === null ? [] : stateKeys(root, before).map(([key]) => JSON.stringify(key)),
  );
  const kept = new Set<string>();
  for (const [key, value] of wanted) {
    const name = JSON.stringify(key);
    kept.add(name);
    if (!had.has(name)) operation.set(key, value);
  }
  if (before === null) return;
  for (const [key] of stateKeys(root, before)) {
    if (!kept.has(JSON.stringify(key))) operation.delete(key);
  }
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

async function indexed(kv: Deno.Kv, root: Deno.KvKey): Promise<boolean> {
  return (await kv.get<number>([...root, "run-index-version"])).value === INDEX_VERSION;
}

/** The finished runs below `root` that ended before `endedBefore`, with their end key if any. */
async function* endedRuns(
  kv: Deno.Kv,
  root: Deno.KvKey,
  endedBefore: string,
): AsyncGenerator<{ runId: string; endKey?: Deno.KvKey }> {
  if (await indexed(kv, root)) {
    const prefix = [...root, "run-by-end"];
    for await (const entry of kv.list({ start: prefix, end: [...prefix, endedBefore] })) {
      yield { runId: entry.key[entry.key.length - 1] as string, endKey: entry.key };
    }
    return;
  }
  for await (const entry of kv.list<StoredRunRecord>({ prefix: [...root, "run"] })) {
    const record = entry.value;
    if (isActive(record) || record.endedAt === undefined || record.endedAt >= endedBefore) {
      continue;
    }
    yield { runId: record.runId };
  }
}

/**
 * The ids of the runs below `root` that ended before `endedBefore` (RFC 3339): the accessor the
 * events part's purge reads the runs through. Reads the end keys only (every run when the store
 * predates them).
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
  for await (const { runId } of endedRuns(kv, root, endedBefore)) yield runId;
}

/**
 * How many turns a run recorded (null: no such run): the accessor the spend part reads a hold's
 * run through.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { recordedTurns } from "./_runs.ts";
 * const kv = await Deno.openKv(":memory:");
 * assert.equal(await recordedTurns(kv, ["r"], "sesn_1"), null);
 * kv.close();
 * ```
 */
export async function recordedTurns(
  kv: Deno.Kv,
  root: Deno.KvKey,
  runId: string,
): Promise<number | null> {
  const record = (await kv.get<StoredRunRecord>([...root, "run", runId])).value;
  return record === null ? null : record.turns ?? 1;
}

/** The runs part of the KV store. */
export class KvRuns implements RunStore {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #root: Deno.KvKey;
  readonly #now: () => number;
  /** Known to hold `run-index-version` (it is never taken back). */
  #indexed = false;
  /** Whether a creation looked for it yet (once per handle: a new store writes it then). */
  #checkedOnCreate = false;

  readonly #activity: KvActivityLog;

  constructor(commits: KvCommits, root: Deno.KvKey, now: () => number, activity: KvActivityLog) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#root = root;
    this.#now = now;
    this.#activity = activity;
  }

  #key(...parts: Deno.KvKeyPart[]): Deno.KvKey {
    return [...this.#root, ...parts];
  }

  #counterKeys(principalId: string): { countKey: Deno.KvKey; allKey: Deno.KvKey } {
    return {
      countKey: this.#key("run-slot-count", principalId),
      allKey: this.#key("run-slot-count-all"),
    };
  }

  async reserveSlot(params: RunSlotReservation): Promise<RunSlotResult> {
    // Without a hold there is no budget to exceed.
    return (await this.reserveRun(params)).result as RunSlotResult;
  }

  reserveRun(params: RunReservation): Promise<RunReservationResult> {
    const slotKey = this.#key("run-slot", params.principalId, params.slotId);
    const { countKey, allKey } = this.#counterKeys(params.principalId);
    const request = params.hold;
    let swept = false;
    let sweptHolds = false;
    return this.#commits.inLane(
      SLOT_LANE,
      () =>
        this.#commits.retry(async (): Promise<RunReservationResult | typeof AGAIN> => {
          const [slot, count, all] = await this.#kv.getMany<[SlotEntry, number, number]>([
            slotKey,
            countKey,
            allKey,
          ]);
          const hold: HoldState | null = request === undefined
            ? null
            : await readHoldState(this.#kv, this.#root, params.principalId, request);
          const slotLive = live(slot.value, params.now);
          const held = hold === null ? null : existingHold(hold);
          if (slotLive && (hold === null || held !== null)) {
            return held === null ? { result: "reserved" } : { result: "reserved", hold: held };
          }
          const lapsed = slot.value !== null && !slotLive;
          const principalCount = (count.value ?? 0) - (lapsed ? 1 : 0);
          const serviceCount = (all.value ?? 0) - (lapsed ? 1 : 0);
          const refusal: RunSlotResult | null = slotLive
            ? null
            : principalCount >= params.principalLimit
            ? "principalQuota"
            : serviceCount >= params.serviceLimit
            ? "serviceQuota"
            : null;
          if (refusal !== null) {
            if (swept) return { result: refusal as "principalQuota" | "serviceQuota" };
            swept = true;
            await this.#sweep(refusal === "principalQuota" ? params.principalId : null, params.now);
            return AGAIN;
          }
          const granted = hold === null ? null : holdAmount(hold);
          if (granted !== null && "left" in granted) {
            if (sweptHolds) return { result: "budgetExceeded", ...granted };
            sweptHolds = true;
            await sweepHolds(
              this.#commits,
              this.#root,
              params.principalId,
              params.now,
              (runId) => recordedTurns(this.#kv, this.#root, runId),
            );
            return AGAIN;
          }
          const leaseUntil = params.now + params.leaseMs;
          const operation = this.#kv.atomic();
          if (!slotLive) {
            // A slot that holds already (a follow-up racing another) only gains its hold.
            operation.check(slot, count, all)
              .set(slotKey, { leaseUntil } satisfies SlotEntry)
              .set(countKey, principalCount + 1)
              .set(allKey, serviceCount + 1);
          }
          if (hold !== null && granted !== null) {
            addHold(operation, this.#root, params.principalId, hold, granted.amount, leaseUntil);
          }
          if (!(await this.#commits.commit(operation)).ok) return AGAIN;
          return granted === null ? { result: "reserved" } : { result: "reserved", hold: granted };
        }),
    );
  }

  /** Drops lapsed reservations of one principal (or of all), each with its counters. In lane. */
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

  /**
   * Deletes a slot and decrements both counters, when `when` approves the slot as read. Runs in
   * the caller's lane: the caller is in {@linkcode SLOT_LANE} already.
   */
  #dropSlot(
    principalId: string,
    slotId: string,
    when: (slot: SlotEntry | null) => boolean,
  ): Promise<void> {
    const slotKey = this.#key("run-slot", principalId, slotId);
    const { countKey, allKey } = this.#counterKeys(principalId);
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
    return this.#commits.inLane(
      SLOT_LANE,
      () => this.#dropSlot(principalId, slotId, (slot) => slot?.leaseUntil !== null),
    );
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

  /** Reads the runs' own slots (no lease), then their records, ten at a time. */
  async idleRuns(principalId: string | null, limit: number): Promise<StoredRunRecord[]> {
    try {
      const prefix = principalId === null
        ? this.#key("run-slot")
        : this.#key("run-slot", principalId);
      const idle: StoredRunRecord[] = [];
      let ids: string[] = [];
      const take = async (): Promise<void> => {
        const records = await this.#kv.getMany<StoredRunRecord[]>(
          ids.map((runId) => this.#key("run", runId)),
        );
        ids = [];
        for (const { value } of records) {
          if (value?.awaitingFirstTurn === true && idle.length < limit) idle.push(value);
        }
      };
      for await (const entry of this.#kv.list<SlotEntry>({ prefix })) {
        if (idle.length >= limit) break;
        if (entry.value.leaseUntil !== null) continue;
        ids.push(entry.key[entry.key.length - 1] as string);
        if (ids.length === GET_MANY) await take();
      }
      if (ids.length > 0) await take();
      return idle;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  create(
    record: StoredRunRecord,
    slotId: string,
    completion?: IdempotencyCompletion,
    activity?: readonly ActivityInput[],
  ): Promise<void> {
    const reservationKey = this.#key("run-slot", record.principalId, slotId);
    const runSlotKey = this.#key("run-slot", record.principalId, record.runId);
    const { countKey, allKey } = this.#counterKeys(record.principalId);
    const active = isActive(record);
    return this.#activity.serial(
      activity,
      () =>
        this.#commits.inLane(SLOT_LANE, () =>
          this.#commits.retry(async () => {
            const plan = await this.#activity.read(activity);
            if (!this.#checkedOnCreate) {
              this.#checkedOnCreate = true;
              await this.#isIndexed();
            }
            const [existing, reservation, runSlot, count, all, hold] = await this.#kv.getMany<
              [StoredRunRecord, SlotEntry, SlotEntry, number, number, HoldValue]
            >([
              this.#key("run", record.runId),
              reservationKey,
              runSlotKey,
              countKey,
              allKey,
              startHoldKey(this.#root, record.principalId, slotId),
            ]);
            // Slots before and after: the reservation goes, the run's own slot comes when active.
            const before = (reservation.value !== null ? 1 : 0) + (runSlot.value !== null ? 1 : 0);
            const delta = (active ? 1 : 0) - before;
            const operation = this.#kv.atomic().check(existing, reservation, runSlot, count, all);
            for (const [key, value] of recordKeys(this.#root, record)) operation.set(key, value);
            if (existing.value !== null) {
              moveStateKeys(operation, this.#root, existing.value, record);
            }
            operation.delete(reservationKey);
            setRunSlot(operation, { runSlotKey, countKey, allKey }, active, delta, count, all);
            attachHold(operation, this.#root, record.principalId, slotId, hold, record.runId);
            if (
              completion !== undefined &&
              !await addCompletion(this.#kv, operation, this.#root, completion, this.#now())
            ) {
              throw new IdempotencyLeaseLostError(
                "The idempotency claim was taken over before the run was recorded",
              );
            }
            this.#activity.add(operation, plan);
            return (await this.#commits.commit(operation)).ok ? undefined : AGAIN;
          })),
    );
  }

  async get(runId: string): Promise<StoredRunRecord | null> {
    try {
      return (await this.#kv.get<StoredRunRecord>(this.#key("run", runId))).value;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  /**
   * Writes the record and its state keys over the one it read (always checked, so its state
   * keys move exactly); an update that frees or takes the run's slot moves the counters too, in
   * the slot lane.
   */
  update(
    record: StoredRunRecord,
    expected?: StoredRunRecord,
    activity?: readonly ActivityInput[],
  ): Promise<boolean> {
    // Appending activity entries, it runs in the activity log's lane (then the slot lane).
    return this.#activity.serial(activity, () => this.#update(record, expected, activity));
  }

  async #update(
    record: StoredRunRecord,
    expected: StoredRunRecord | undefined,
    activity: readonly ActivityInput[] | undefined,
  ): Promise<boolean> {
    const runKey = this.#key("run", record.runId);
    const runSlotKey = this.#key("run-slot", record.principalId, record.runId);
    const { countKey, allKey } = this.#counterKeys(record.principalId);
    const active = isActive(record);
    // Both come from stored values, so equal records serialize alike (same key order).
    const wanted = expected === undefined ? undefined : JSON.stringify(expected);
    const step =
      (inLane: boolean) => async (): Promise<boolean | typeof AGAIN | typeof TO_LANE> => {
        const [current, runSlot] = await this.#kv.getMany<[StoredRunRecord, SlotEntry]>([
          runKey,
          runSlotKey,
        ]);
        if (wanted !== undefined && JSON.stringify(current.value) !== wanted) return false;
        const delta = (active ? 1 : 0) - (runSlot.value !== null ? 1 : 0);
        if (delta !== 0 && !inLane) return TO_LANE;
        const plan = await this.#activity.read(activity);
        // The record must not change between the read and the commit: its state keys move by it.
        const operation = this.#kv.atomic().check(current, runSlot).set(runKey, record);
        moveStateKeys(operation, this.#root, current.value, record);
        if (delta === 0) {
          if (active) operation.set(runSlotKey, { leaseUntil: null } satisfies SlotEntry);
        } else {
          const [count, all] = await this.#kv.getMany<[number, number]>([countKey, allKey]);
          operation.check(count, all);
          setRunSlot(operation, { runSlotKey, countKey, allKey }, active, delta, count, all);
        }
        this.#activity.add(operation, plan);
        return (await this.#commits.commit(operation)).ok ? true : AGAIN;
      };
    const outside = await this.#commits.retry(step(false));
    if (outside !== TO_LANE) return outside;
    const inside = await this.#commits.inLane(SLOT_LANE, () => this.#commits.retry(step(true)));
    // In the lane a step never asks for it again.
    return inside === true;
  }

  async list(params: RunListQuery): Promise<StoredRunPage> {
    const after = params.cursor === undefined ? null : decodeRunCursor(params.cursor);
    if (params.cursor !== undefined && after === null) throw invalidCursor();
    try {
      const state = params.state;
      const byState = state !== undefined && await this.#isIndexed();
      const principalId = params.principalId;
      const prefix = byState
        ? principalId === undefined
          ? this.#key("run-by-state", state)
          : this.#key("run-by-principal-state", principalId, state)
        : principalId === undefined
        ? this.#key("run-by-time")
        : this.#key("run-by-principal", principalId);
      const selector: Deno.KvListSelector = after === null
        ? { prefix }
        : { prefix, end: [...prefix, after.createdAt, after.runId] };
      const runs: StoredRunRecord[] = [];
      let more = false;
      const wanted = (record: StoredRunRecord | null): record is StoredRunRecord =>
        record !== null && (state === undefined || record.state === state);
      // Index entries are read in order and their records ten at a time; the state is checked
      // again on the record (an index entry of a record changed meanwhile is passed over).
      let ids: string[] = [];
      const take = async (): Promise<boolean> => {
        const records = await this.#kv.getMany<StoredRunRecord[]>(
          ids.map((runId) => this.#key("run", runId)),
        );
        ids = [];
        for (const entry of records) {
          if (!wanted(entry.value)) continue;
          if (runs.length === params.limit) return more = true;
          runs.push(entry.value);
        }
        return false;
      };
      for await (
        const entry of this.#kv.list(selector, { reverse: true, batchSize: params.limit + 1 })
      ) {
        ids.push(entry.key[entry.key.length - 1] as string);
        if (ids.length === Math.min(GET_MANY, params.limit + 1 - runs.length) && await take()) {
          break;
        }
      }
      if (!more && ids.length > 0) await take();
      const last = runs.at(-1);
      return {
        runs,
        nextCursor: more && last !== undefined ? encodeRunCursor(last) : null,
      };
    } catch (error) {
      throw storeFailure(error);
    }
  }

  /**
   * Whether every run has its state keys: `run-index-version` says so, or there is no run yet (a
   * new store), and then it is written at once.
   */
  async #isIndexed(): Promise<boolean> {
    if (this.#indexed) return true;
    if (await indexed(this.#kv, this.#root)) return this.#indexed = true;
    for await (const _ of this.#kv.list({ prefix: this.#key("run") }, { limit: 1 })) return false;
    await this.#commits.commit(
      this.#kv.atomic().set(this.#key("run-index-version"), INDEX_VERSION),
    );
    return this.#indexed = true;
  }

  /**
   * Deletes the runs that ended before `endedBefore` (RFC 3339), each record with its orders and
   * state keys in one atomic operation checked against the record (a run woken meanwhile
   * stays). A store written before the state keys existed gets them first.
   */
  async purgeEnded(endedBefore: string): Promise<number> {
    try {
      if (!await this.#isIndexed()) await this.#index();
      let deleted = 0;
      for await (const { runId, endKey } of endedRuns(this.#kv, this.#root, endedBefore)) {
        const runKey = this.#key("run", runId);
        const gone = await this.#commits.retry(async () => {
          const entry = await this.#kv.get<StoredRunRecord>(runKey);
          const record = entry.value;
          const operation = this.#kv.atomic().check(entry);
          if (
            record === null || isActive(record) || record.endedAt === undefined ||
            record.endedAt >= endedBefore
          ) {
            // A stale end key (its run woke or is gone): dropped, the run kept.
            if (endKey === undefined) return false;
            operation.delete(endKey);
            return (await this.#commits.commit(operation)).ok ? false : AGAIN;
          }
          for (const [key] of recordKeys(this.#root, record)) operation.delete(key);
          return (await this.#commits.commit(operation)).ok ? true : AGAIN;
        });
        if (gone) deleted++;
      }
      return deleted;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  /** Writes the state keys of every run, then `run-index-version`. */
  async #index(): Promise<void> {
    for await (const entry of this.#kv.list<StoredRunRecord>({ prefix: this.#key("run") })) {
      const runKey = entry.key;
      let read: Deno.KvEntryMaybe<StoredRunRecord> = entry;
      await this.#commits.retry(async () => {
        if (read.value === null) return;
        const operation = this.#kv.atomic().check(read);
        for (const [key, value] of stateKeys(this.#root, read.value)) operation.set(key, value);
        if ((await this.#commits.commit(operation)).ok) return;
        read = await this.#kv.get<StoredRunRecord>(runKey);
        return AGAIN;
      });
    }
    await this.#commits.commit(
      this.#kv.atomic().set(this.#key("run-index-version"), INDEX_VERSION),
    );
    this.#indexed = true;
  }
}
