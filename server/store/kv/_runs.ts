/**
 * The run gateway's records in Deno KV. Keys, below the store's namespace root:
 *
 * - `["run", runId]` → {@linkcode StoredRunRecord}
 * - `["run-by-principal", principalId, createdAt, runId]` → true (newest first by reverse list)
 * - `["run-by-time", createdAt, runId]` → principal id (every principal's runs)
 * - `["run-slot", principalId, slotId]` → {@linkcode SlotEntry}
 * - `["run-slot-count", principalId]` and `["run-slot-count-all"]` → number
 * - `["audit", seq]` → {@linkcode AuditEntry}; `["audit-seq"]` → the last seq
 *
 * The slot counters are checked and written in the same atomic operation as the slot itself, so
 * two replicas reserving at once cannot both take the last slot.
 *
 * @module
 */
import {
  ACTIVE_RUN_STATES,
  type AuditEntry,
  type AuditEntryInput,
  type AuditListQuery,
  type AuditPage,
  decodeCursor,
  encodeCursor,
  type RunListQuery,
  type RunSlotReservation,
  type RunSlotResult,
  type RunStore,
  type StoredRunPage,
  type StoredRunRecord,
} from "../run_types.ts";
import { StoreUnavailableError } from "../types.ts";
import { commitKv } from "./_commit.ts";

/** One active-run slot: a reservation (with its lease) or a run's own (`leaseUntil` null). */
interface SlotEntry {
  leaseUntil: number | null;
}

const MAX_ATTEMPTS = 64;
/** Audit entries are kept 90 days. */
const AUDIT_TTL_MS = 90 * 86_400_000;

function fail(error: unknown): Error {
  if (error instanceof StoreUnavailableError) return error;
  return new StoreUnavailableError("The KV store failed", { cause: error });
}

function contention(): StoreUnavailableError {
  return new StoreUnavailableError("The KV store is too contended to commit");
}

function live(slot: SlotEntry | null, now: number): boolean {
  return slot !== null && (slot.leaseUntil === null || slot.leaseUntil > now);
}

/** The key of the last audit seq below `root`. */
function auditSeqKey(root: Deno.KvKey): Deno.KvKey {
  return [...root, "audit-seq"];
}

/**
 * Adds audit entries numbered after `last` (the entry of {@linkcode auditSeqKey}, read by the
 * caller) to `operation`, checked against it so that two appends can never number alike: the one
 * committing second fails and reads again. Returns the entries as they will be stored. Every
 * audit write of the KV store goes through here.
 */
function addAuditEntries(
  operation: Deno.AtomicOperation,
  root: Deno.KvKey,
  last: Deno.KvEntryMaybe<number>,
  inputs: readonly AuditEntryInput[],
): AuditEntry[] {
  const first = (last.value ?? 0) + 1;
  const entries = inputs.map((input, index): AuditEntry => ({ seq: first + index, ...input }));
  operation.check(last).set(auditSeqKey(root), first + inputs.length - 1);
  for (const entry of entries) {
    operation.set([...root, "audit", entry.seq], entry, { expireIn: AUDIT_TTL_MS });
  }
  return entries;
}

/**
 * The writer of the KV store's audit log: every commit that appends to it goes through
 * {@linkcode KvAuditLog.commit}, which numbers the entries after the last seq in the same atomic
 * commit.
 *
 * It serializes one process's commits that move the seq (the run store's audit appends and the
 * principal store's issuances), so that they never fail each other's check on the seq key: under
 * load, one in-process loser per commit would otherwise retry until it gave up. Commits of other
 * processes can still race; those retry.
 *
 * It also remembers the seq entry as its last commit left it. That entry is usually still the
 * head (one process issues), so the next commit is checked against it without reading the seq
 * first; when another handle or process moved it, the check fails, nothing is written, and the
 * caller's retry reads it. The read it saves is a round trip through Deno KV's thread for each
 * group of issuances: `POST /v1/principals` went from 0.68×, 0.98× and 0.78× of one KV commit to
 * 0.99× and 1.02× (`deno task bench --only server`, 2026-11-24; the build before the audit entry
 * existed: 1.05× to 1.42× in the same hour).
 */
export class KvAuditLog {
  readonly #kv: Deno.Kv;
  readonly #root: Deno.KvKey;
  #tail: Promise<unknown> = Promise.resolve();
  /** The seq entry as this log's last successful commit left it; null: read it. */
  #last: Deno.KvEntryMaybe<number> | null = null;

  constructor(kv: Deno.Kv, root: Deno.KvKey) {
    this.#kv = kv;
    this.#root = root;
  }

  /**
   * Commits `operation` with `inputs` appended to the audit log in it; without inputs it commits
   * `operation` as it is. A commit that met a moved seq (or failed another check) is not ok and
   * writes nothing: the caller tries again.
   */
  commit(
    operation: Deno.AtomicOperation,
    inputs: readonly AuditEntryInput[],
  ): Promise<{ ok: boolean; entries: AuditEntry[] }> {
    if (inputs.length === 0) {
      return commitKv(operation).then((result) => ({ ok: result.ok, entries: [] }));
    }
    const run = async () => {
      const last = this.#last ?? await this.#kv.get<number>(auditSeqKey(this.#root));
      const entries = addAuditEntries(operation, this.#root, last, inputs);
      // Until this commit settles the seq is unknown; after a failed one it may have moved.
      this.#last = null;
      const result = await commitKv(operation);
      if (result.ok) {
        const value = entries[entries.length - 1].seq;
        this.#last = { key: last.key, value, versionstamp: result.versionstamp };
      }
      return { ok: result.ok, entries };
    };
    const result = this.#tail.then(run);
    this.#tail = result.catch(() => {});
    return result;
  }
}

/** An audit entry waiting for the next group commit. */
interface QueuedAudit {
  input: AuditEntryInput;
  done: PromiseWithResolvers<AuditEntry>;
}

/** Most audit entries in one commit: far inside KV's 1000 mutations and 800 KiB. */
const MAX_AUDIT_GROUP = 64;

/** The run part of the KV store; the store delegates to it. */
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

export class KvRunStore implements RunStore {
  #kv: Deno.Kv;
  #root: Deno.KvKey;
  #audit: KvAuditLog;
  #auditQueue: QueuedAudit[] = [];
  #auditCommitting = false;

  constructor(kv: Deno.Kv, root: Deno.KvKey, audit: KvAuditLog) {
    this.#kv = kv;
    this.#root = root;
    this.#audit = audit;
  }

  #key(...parts: Deno.KvKeyPart[]): Deno.KvKey {
    return [...this.#root, ...parts];
  }

  async reserveRunSlot(params: RunSlotReservation): Promise<RunSlotResult> {
    try {
      const slotKey = this.#key("run-slot", params.principalId, params.slotId);
      const countKey = this.#key("run-slot-count", params.principalId);
      const allKey = this.#key("run-slot-count-all");
      let swept = false;
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
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
          continue;
        }
        const result = await commitKv(
          this.#kv.atomic()
            .check(slot, count, all)
            .set(slotKey, { leaseUntil: params.now + params.leaseMs } satisfies SlotEntry)
            .set(countKey, principalCount + 1)
            .set(allKey, serviceCount + 1),
        );
        if (result.ok) return "reserved";
      }
      throw contention();
    } catch (error) {
      throw fail(error);
    }
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
  async #dropSlot(
    principalId: string,
    slotId: string,
    when: (slot: SlotEntry | null) => boolean,
  ): Promise<void> {
    const slotKey = this.#key("run-slot", principalId, slotId);
    const countKey = this.#key("run-slot-count", principalId);
    const allKey = this.#key("run-slot-count-all");
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const [slot, count, all] = await this.#kv.getMany<[SlotEntry, number, number]>([
        slotKey,
        countKey,
        allKey,
      ]);
      if (slot.value === null || !when(slot.value)) return;
      const result = await commitKv(
        this.#kv.atomic()
          .check(slot, count, all)
          .delete(slotKey)
          .set(countKey, Math.max((count.value ?? 1) - 1, 0))
          .set(allKey, Math.max((all.value ?? 1) - 1, 0)),
      );
      if (result.ok) return;
    }
    throw contention();
  }

  async releaseRunSlot(principalId: string, slotId: string): Promise<void> {
    try {
      await this.#dropSlot(principalId, slotId, (slot) => slot?.leaseUntil !== null);
    } catch (error) {
      throw fail(error);
    }
  }

  async createRun(record: StoredRunRecord, slotId: string): Promise<void> {
    try {
      const reservationKey = this.#key("run-slot", record.principalId, slotId);
      const runSlotKey = this.#key("run-slot", record.principalId, record.runId);
      const countKey = this.#key("run-slot-count", record.principalId);
      const allKey = this.#key("run-slot-count-all");
      const active = ACTIVE_RUN_STATES.has(record.state);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
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
        if ((await commitKv(operation)).ok) return;
      }
      throw contention();
    } catch (error) {
      throw fail(error);
    }
  }

  async getRun(runId: string): Promise<StoredRunRecord | null> {
    try {
      return (await this.#kv.get<StoredRunRecord>(this.#key("run", runId))).value;
    } catch (error) {
      throw fail(error);
    }
  }

  async updateRun(record: StoredRunRecord, expected?: StoredRunRecord): Promise<boolean> {
    try {
      const runKey = this.#key("run", record.runId);
      const runSlotKey = this.#key("run-slot", record.principalId, record.runId);
      const countKey = this.#key("run-slot-count", record.principalId);
      const allKey = this.#key("run-slot-count-all");
      const active = ACTIVE_RUN_STATES.has(record.state);
      // Both come from stored values, so equal records serialize alike (same key order).
      const wanted = expected === undefined ? undefined : JSON.stringify(expected);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
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
        if ((await commitKv(operation)).ok) return true;
      }
      throw contention();
    } catch (error) {
      throw fail(error);
    }
  }

  async listRuns(params: RunListQuery): Promise<StoredRunPage> {
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
      throw fail(error);
    }
  }

  async countRunSlots(principalId: string | null, now: number): Promise<number> {
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
      throw fail(error);
    }
  }

  /**
   * Appends are group-committed: every seq comes from one counter key, so entries appended at
   * once would conflict on it; instead the entries that queue up while a commit runs go in the
   * next one, numbered in queue order (one commit per group rather than per entry).
   */
  appendAudit(input: AuditEntryInput): Promise<AuditEntry> {
    const done = Promise.withResolvers<AuditEntry>();
    this.#auditQueue.push({ input, done });
    if (!this.#auditCommitting) this.#commitAudit();
    return done.promise;
  }

  /** Commits queued audit entries group by group until the queue is empty. Never rejects. */
  async #commitAudit(): Promise<void> {
    this.#auditCommitting = true;
    try {
      while (this.#auditQueue.length > 0) {
        const group = this.#auditQueue.splice(0, MAX_AUDIT_GROUP);
        try {
          const entries = await this.#appendGroup(group.map((item) => item.input));
          group.forEach((item, index) => item.done.resolve(entries[index]));
        } catch (error) {
          for (const item of group) item.done.reject(fail(error));
        }
      }
    } finally {
      this.#auditCommitting = false;
    }
  }

  async #appendGroup(inputs: AuditEntryInput[]): Promise<AuditEntry[]> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const result = await this.#audit.commit(this.#kv.atomic(), inputs);
      if (result.ok) return result.entries;
    }
    throw contention();
  }

  async listAudit(params: AuditListQuery): Promise<AuditPage> {
    try {
      const prefix = this.#key("audit");
      const after = params.cursor === undefined ? null : decodeCursor(params.cursor);
      const before = after !== null && typeof after[0] === "number" ? after[0] : null;
      const selector: Deno.KvListSelector = before === null
        ? { prefix }
        : { prefix, end: [...prefix, before] };
      const entries: AuditEntry[] = [];
      let more = false;
      for await (const item of this.#kv.list<AuditEntry>(selector, { reverse: true })) {
        const entry = item.value;
        if (params.action !== undefined && entry.action !== params.action) continue;
        if (
          params.principalId !== undefined && entry.actorId !== params.principalId &&
          entry.subjectId !== params.principalId
        ) continue;
        if (entries.length === params.limit) {
          more = true;
          break;
        }
        entries.push(entry);
      }
      const last = entries.at(-1);
      return {
        entries,
        nextCursor: more && last !== undefined ? encodeCursor([last.seq]) : null,
      };
    } catch (error) {
      throw fail(error);
    }
  }
}
