/**
 * The principals part of the KV store. Keys, below the store's namespace root:
 *
 * - `["principal", principalId]` → {@linkcode PrincipalRecord}
 * - `["digest", bearerDigest]` → principal id (unique index)
 *
 * A creation or a revocation writes the other parts' records in its own atomic operation: the
 * idempotency record through `_idempotency.ts`'s accessors, the revocation epoch through
 * `_authority.ts`'s, and the audit entry numbered by the commit helper
 * ({@linkcode KvCommits.commitAudited}).
 *
 * @module
 */
import type { AuditEntryInput } from "../run_types.ts";
import type {
  CreatePrincipalResult,
  PrincipalPageOptions,
  PrincipalRecord,
  PrincipalRecordPage,
  PrincipalStore,
  RecordedCreateResult,
  RevokePrincipalResult,
} from "../principals.ts";
import {
  type IdempotencyCompletion,
  IdempotencyLeaseLostError,
  type IdempotencyRecording,
} from "../idempotency.ts";
import type { PurgeOptions } from "../authority.ts";
import { parseRfc3339 } from "../../time.ts";
import { AGAIN, BatchedWrite, type KvCommits, storeFailure } from "./_commit.ts";
import {
  addCompletion,
  addRecording,
  type IdempotencyEntry,
  idempotencyKey,
  usedState,
} from "./_idempotency.ts";
import { markRevocation } from "./_authority.ts";

const NO_AUDIT: readonly AuditEntryInput[] = Object.freeze([]);

function leaseLost(): IdempotencyLeaseLostError {
  return new IdempotencyLeaseLostError(
    "The idempotency claim was taken over before the principal was created",
  );
}

function principalKey(root: Deno.KvKey, principalId: string): Deno.KvKey {
  return [...root, "principal", principalId];
}

function digestKey(root: Deno.KvKey, digest: string): Deno.KvKey {
  return [...root, "digest", digest];
}

/**
 * The keys a new principal takes: its record's and its digest index's. Another part reads them
 * to tell why a creation it carried failed (`_trust_policies.ts`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { newPrincipalKeys } from "./_principals.ts";
 * const keys = newPrincipalKeys(["r"], { principalId: "p", bearerDigest: "d" });
 * assert.deepEqual(keys, [["r", "principal", "p"], ["r", "digest", "d"]]);
 * ```
 */
export function newPrincipalKeys(
  root: Deno.KvKey,
  record: Pick<PrincipalRecord, "principalId" | "bearerDigest">,
): [Deno.KvKey, Deno.KvKey] {
  return [principalKey(root, record.principalId), digestKey(root, record.bearerDigest)];
}

/**
 * Adds a new principal to `operation`: checks that its id and digest are free, then writes the
 * record and its digest index. Every creation goes through it, another part's included.
 *
 * @example
 * ```ts ignore
 * addNewPrincipal(operation, root, record);
 * ```
 */
export function addNewPrincipal(
  operation: Deno.AtomicOperation,
  root: Deno.KvKey,
  record: PrincipalRecord,
): void {
  const [idKey, byDigest] = newPrincipalKeys(root, record);
  operation
    .check({ key: idKey, versionstamp: null })
    .check({ key: byDigest, versionstamp: null })
    .set(idKey, record)
    .set(byDigest, record.principalId);
}

/**
 * Adds one recorded creation to `operation`: checks that the idempotency key holds `seen`
 * (null: absent) and that the id and digest are absent, then writes everything.
 */
function addRecorded(
  operation: Deno.AtomicOperation,
  root: Deno.KvKey,
  record: PrincipalRecord,
  recording: IdempotencyRecording,
  seen: Deno.KvEntryMaybe<IdempotencyEntry> | null,
): void {
  addNewPrincipal(operation, root, record);
  addRecording(operation, root, recording, seen);
}

/** Oldest first by `createdAt`, then id. */
function byCreation(a: PrincipalRecord, b: PrincipalRecord): number {
  return a.createdAt < b.createdAt
    ? -1
    : a.createdAt > b.createdAt
    ? 1
    : a.principalId < b.principalId
    ? -1
    : a.principalId > b.principalId
    ? 1
    : 0;
}

/** Whether a principal was revoked, or expired, at or before `cutoff` (ms). */
function isRetiredBefore(record: PrincipalRecord, cutoff: number): boolean {
  const revokedAt = record.revokedAt === null ? null : parseRfc3339(record.revokedAt);
  if (revokedAt !== null && revokedAt <= cutoff) return true;
  const expiresAt = parseRfc3339(record.expiresAt);
  return expiresAt !== null && expiresAt <= cutoff;
}

/**
 * One recorded creation, as a write of a group commit: ONE atomic step checking that the key,
 * the id and the digest are all unused, then writing the principal, its digest index, the
 * finished idempotency record (with its purge index) and the creation's audit entry. It reads
 * nothing first: a fresh key is the common case.
 */
class RecordedCreation extends BatchedWrite<RecordedCreateResult> {
  readonly keys: readonly string[];
  readonly audit: AuditEntryInput | undefined;
  readonly #commits: KvCommits;
  readonly #root: Deno.KvKey;
  readonly #record: PrincipalRecord;
  readonly #recording: IdempotencyRecording;

  constructor(
    commits: KvCommits,
    root: Deno.KvKey,
    record: PrincipalRecord,
    recording: IdempotencyRecording,
    audit: AuditEntryInput | undefined,
  ) {
    super();
    this.#commits = commits;
    this.#root = root;
    this.#record = record;
    this.#recording = recording;
    this.audit = audit;
    this.keys = [
      `principal ${record.principalId}`,
      `digest ${record.bearerDigest}`,
      `idempotency ${recording.scope}`,
    ];
  }

  add(operation: Deno.AtomicOperation): void {
    addRecorded(operation, this.#root, this.#record, this.#recording, null);
  }

  committed(): RecordedCreateResult {
    return "created";
  }

  /**
   * The creation on its own, after its group did not commit: after a failed commit of its own
   * (`failed`), it reads the key, the id and the digest once to tell why, and commits again only
   * when the key may be taken over or what failed the check is gone.
   */
  alone(failed: boolean): Promise<RecordedCreateResult> {
    const commits = this.#commits;
    const kv = commits.kv;
    const root = this.#root;
    const record = this.#record;
    const recording = this.#recording;
    const keys: [Deno.KvKey, Deno.KvKey, Deno.KvKey] = [
      idempotencyKey(root, recording.scope),
      ...newPrincipalKeys(root, record),
    ];
    const audit = this.audit === undefined ? NO_AUDIT : [this.audit];
    let seen: Deno.KvEntryMaybe<IdempotencyEntry> | null = null;
    let first = true;
    return commits.retry(async () => {
      if (!first || !failed) {
        const operation = kv.atomic();
        addRecorded(operation, root, record, recording, seen);
        if ((await commits.commitAudited(operation, audit)).ok) return "created";
      }
      first = false;
      const [current, byId, byDigest] = await kv.getMany<[IdempotencyEntry, string, string]>(
        keys,
      );
      const used = usedState(current.value, recording.requestDigest, recording.now);
      if (used !== null) return used;
      if (byId.versionstamp !== null || byDigest.versionstamp !== null) return "exists";
      seen = current;
      return AGAIN;
    });
  }
}

/** The principals part of the KV store. */
export class KvPrincipals implements PrincipalStore {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #root: Deno.KvKey;
  readonly #namespace: string;
  readonly #now: () => number;

  constructor(commits: KvCommits, root: Deno.KvKey, namespace: string, now: () => number) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#root = root;
    this.#namespace = namespace;
    this.#now = now;
  }

  async findByDigest(bearerDigest: string): Promise<PrincipalRecord | null> {
    try {
      const index = await this.#kv.get<string>(digestKey(this.#root, bearerDigest));
      if (index.value === null) return null;
      const record = await this.#kv.get<PrincipalRecord>(principalKey(this.#root, index.value));
      return record.value !== null && record.value.bearerDigest === bearerDigest
        ? record.value
        : null;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async get(principalId: string): Promise<PrincipalRecord | null> {
    try {
      return (await this.#kv.get<PrincipalRecord>(principalKey(this.#root, principalId))).value;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async list(): Promise<PrincipalRecord[]> {
    try {
      const records: PrincipalRecord[] = [];
      const prefix = [...this.#root, "principal"];
      for await (const entry of this.#kv.list<PrincipalRecord>({ prefix })) {
        records.push(entry.value);
      }
      return records.sort(byCreation);
    } catch (error) {
      throw storeFailure(error);
    }
  }

  /**
   * KV keeps principals by id, not by creation, so a page is cut from the sorted list; the purge
   * keeps that list to live principals and those within the retention period.
   */
  async page(options: PrincipalPageOptions): Promise<PrincipalRecordPage> {
    const all = await this.list();
    const after = options.after;
    let start = 0;
    if (after !== undefined) {
      while (
        start < all.length &&
        (all[start].createdAt < after.createdAt ||
          (all[start].createdAt === after.createdAt && all[start].principalId <= after.principalId))
      ) start++;
    }
    const records = all.slice(start, start + options.limit);
    const last = records.at(-1);
    const next = start + options.limit < all.length && last !== undefined
      ? { createdAt: last.createdAt, principalId: last.principalId }
      : null;
    return { records, next };
  }

  create(
    record: PrincipalRecord,
    completion?: IdempotencyCompletion,
    audit?: AuditEntryInput,
  ): Promise<CreatePrincipalResult>;
  create(
    record: PrincipalRecord,
    recording: IdempotencyRecording,
    audit?: AuditEntryInput,
  ): Promise<RecordedCreateResult>;
  create(
    record: PrincipalRecord,
    idempotency?: IdempotencyCompletion | IdempotencyRecording,
    audit?: AuditEntryInput,
  ): Promise<RecordedCreateResult> {
    if (idempotency !== undefined && "requestDigest" in idempotency) {
      // Issuances are group-committed: see `KvCommits.batch`.
      return this.#commits.batch(
        new RecordedCreation(this.#commits, this.#root, record, idempotency, audit),
      );
    }
    const [idKey, indexKey] = newPrincipalKeys(this.#root, record);
    const inputs = audit === undefined ? NO_AUDIT : [audit];
    return this.#commits.retry(async () => {
      const operation = this.#kv.atomic();
      addNewPrincipal(operation, this.#root, record);
      if (
        idempotency !== undefined &&
        !(await addCompletion(this.#kv, operation, this.#root, idempotency, this.#now()))
      ) {
        // Like PostgreSQL: a claim taken over meanwhile belongs to another request now.
        throw leaseLost();
      }
      if ((await this.#commits.commitAudited(operation, inputs)).ok) return "created";
      const [byId, byDigest] = await this.#kv.getMany([idKey, indexKey]);
      if (byId.versionstamp !== null || byDigest.versionstamp !== null) return "exists";
      // The idempotency claim or the audit seq changed underneath: build the operation again.
      return AGAIN;
    });
  }

  revoke(
    principalId: string,
    revokedAt: string,
    audit?: AuditEntryInput,
  ): Promise<RevokePrincipalResult> {
    const key = principalKey(this.#root, principalId);
    const inputs = audit === undefined ? NO_AUDIT : [audit];
    return this.#commits.retry(async () => {
      const entry = await this.#kv.get<PrincipalRecord>(key);
      if (entry.value === null) return "notFound";
      if (entry.value.revokedAt !== null) return "alreadyRevoked";
      const operation = this.#kv.atomic().check(entry).set(key, { ...entry.value, revokedAt });
      markRevocation(operation, this.#namespace, revokedAt);
      return (await this.#commits.commitAudited(operation, inputs)).ok ? "revoked" : AGAIN;
    });
  }

  /** Deletes each retired principal with its digest index, checked against the record read. */
  async purgeRetired(options: PurgeOptions): Promise<number> {
    const cutoff = options.now - options.retentionMs;
    try {
      let principals = 0;
      const prefix = [...this.#root, "principal"];
      for await (const entry of this.#kv.list<PrincipalRecord>({ prefix })) {
        if (!isRetiredBefore(entry.value, cutoff)) continue;
        const result = await this.#commits.commit(
          this.#kv.atomic().check(entry)
            .delete(entry.key)
            .delete(digestKey(this.#root, entry.value.bearerDigest)),
        );
        if (result.ok) principals++;
      }
      return principals;
    } catch (error) {
      throw storeFailure(error);
    }
  }
}
