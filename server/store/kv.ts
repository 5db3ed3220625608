/**
 * The embedded store: Deno KV in one file (`store.kv` beside the secret file), or the host's own
 * KV when no path is given. Every key lives under the bootstrap namespace. Creations and claims
 * are atomic operations with version checks, never read-then-write.
 *
 * Keys, below `["automation-runtime", namespace]`:
 *
 * - `["principal", principalId]` → {@linkcode PrincipalRecord}
 * - `["digest", bearerDigest]` → principal id (unique index)
 * - `["idempotency", scope]` → the claim or the recorded answer
 * - `["idempotency-expiry", expiresAt, scope]` → index for the purge
 * - runs, active-run slots and the audit log: see `kv/_runs.ts`
 * - `["revocations"]` → rewritten by every revocation: its versionstamp is the revocation epoch
 *
 * and below `["automation-runtime-authority"]`, shared by every namespace:
 *
 * - `["current"]` → the namespace of the bootstrap that claimed the store last
 * - `["retired", namespace]` → when a namespace stopped being current (kept after its purge, so
 *   an old bootstrap cannot claim the store back)
 *
 * One file because it is one concept: the Deno KV backend of the one `Store` interface; the run,
 * answer, event and authority records are delegated to `kv/*.ts` and `_kv_authority.ts`.
 *
 * @module
 */
import { GatewayRecords } from "./_gateway_records.ts";
import { KvAuditLog, KvRunStore } from "./kv/_runs.ts";
import { KvAnswerStore } from "./kv/_answers.ts";
import { KvRunEventStore } from "./kv/_events.ts";
import { type ChangeMarker, openChangeMarker } from "./kv/_change_marker.ts";
import type { AuditEntryInput } from "./run_types.ts";
import {
  type AuthorityState,
  type CreatePrincipalResult,
  type IdempotencyClaim,
  type IdempotencyClaimParams,
  type IdempotencyCompletion,
  type IdempotencyKeyUsed,
  IdempotencyLeaseLostError,
  type IdempotencyRecording,
  type PrincipalPageOptions,
  type PrincipalRecord,
  type PrincipalRecordPage,
  type PurgeOptions,
  type PurgeReport,
  type RecordedCreateResult,
  type RevokePrincipalResult,
  type Store,
  type StoredResponse,
  StoreUnavailableError,
  SupersededNamespaceError,
} from "./types.ts";
import {
  claimAuthority,
  pageOf,
  purgeRetired,
  readAuthorityState,
  revocationsKey,
  ROOT,
} from "./_kv_authority.ts";
import { commitKv } from "./kv/_commit.ts";

/** Options of {@linkcode openKvStore}. */
export interface KvStoreOptions {
  /** Namespace derived from the bootstrap credential. */
  namespace: string;
  /** KV file path (`:memory:` for a throwaway store); omitted: the host's default KV. */
  path?: string;
}

interface IdempotencyEntry {
  state: "pending" | "done";
  token: string;
  requestDigest: string;
  leaseUntil: number;
  expiresAt: number;
  response?: StoredResponse;
}

const MAX_ATTEMPTS = 32;
/** KV drops values on its own a while after this; the purge does it on time. */
const EXPIRY_SLACK_MS = 3_600_000;

function unavailable(error: unknown): Error {
  if (error instanceof StoreUnavailableError || error instanceof IdempotencyLeaseLostError) {
    return error;
  }
  return new StoreUnavailableError("The KV store failed", { cause: error });
}

function contention(): StoreUnavailableError {
  return new StoreUnavailableError("The KV store is too contended to commit");
}

function leaseLost(): IdempotencyLeaseLostError {
  return new IdempotencyLeaseLostError(
    "The idempotency claim was taken over before the principal was created",
  );
}

/**
 * What a live idempotency entry means for a request of `requestDigest` at `now`, or null when the
 * key counts as unused: no entry, an expired one, or an unfinished claim of the same body whose
 * lease ran out (its holder crashed), which may be taken over.
 */
function usedState(
  current: IdempotencyEntry | null,
  requestDigest: string,
  now: number,
): IdempotencyKeyUsed | null {
  if (current === null || current.expiresAt <= now) return null;
  if (current.requestDigest !== requestDigest) return { state: "conflict" };
  if (current.state === "done" && current.response !== undefined) {
    return { state: "completed", response: current.response };
  }
  if (current.leaseUntil > now) return { state: "inFlight" };
  return null;
}

/**
 * Opens the Deno KV store for one namespace.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openKvStore } from "./kv.ts";
 * const store = await openKvStore({ path: ":memory:", namespace: "0".repeat(32) });
 * assert.equal(store.kind, "kv");
 * await store.close();
 * ```
 */
export async function openKvStore(options: KvStoreOptions): Promise<Store> {
  let kv: Deno.Kv;
  try {
    kv = options.path === undefined ? await Deno.openKv() : await Deno.openKv(options.path);
  } catch (error) {
    const where = options.path === undefined ? "the default KV store" : options.path;
    throw new StoreUnavailableError(`Cannot open ${where}`, { cause: error });
  }
  const marker = options.path === undefined ? null : openChangeMarker(options.path);
  return new KvStore(kv, options.namespace, marker);
}

/** A recorded creation waiting for the next group commit. */
interface QueuedCreate {
  record: PrincipalRecord;
  recording: IdempotencyRecording;
  audit: AuditEntryInput | undefined;
  done: PromiseWithResolvers<RecordedCreateResult>;
}

/**
 * Most creations in one group commit: 3 checks and 5 mutations each (with an audit entry) stay far inside Deno KV's
 * limits of one atomic operation (100 checks, 1000 mutations, 80 KiB of keys, 800 KiB in all).
 */
const MAX_GROUP = 16;

class KvStore extends GatewayRecords implements Store {
  readonly kind = "kv";
  #kv: Deno.Kv;
  #root: Deno.KvKey;
  #closed = false;
  #queue: QueuedCreate[] = [];
  #committing = false;

  #namespace: string;
  #marker: ChangeMarker | null;
  #audit: KvAuditLog;

  constructor(kv: Deno.Kv, namespace: string, marker: ChangeMarker | null) {
    const root: Deno.KvKey = [ROOT, namespace];
    const audit = new KvAuditLog(kv, root);
    super({
      runs: new KvRunStore(kv, root, audit),
      answers: new KvAnswerStore(kv, root),
      events: new KvRunEventStore(kv, root),
    });
    this.#kv = kv;
    this.#namespace = namespace;
    this.#root = root;
    this.#marker = marker;
    this.#audit = audit;
  }

  #principalKey(principalId: string): Deno.KvKey {
    return [...this.#root, "principal", principalId];
  }

  #digestKey(digest: string): Deno.KvKey {
    return [...this.#root, "digest", digest];
  }

  #idempotencyKey(scope: string): Deno.KvKey {
    return [...this.#root, "idempotency", scope];
  }

  #expiryKey(expiresAt: number, scope: string): Deno.KvKey {
    return [...this.#root, "idempotency-expiry", expiresAt, scope];
  }

  async findPrincipalByDigest(bearerDigest: string): Promise<PrincipalRecord | null> {
    try {
      const index = await this.#kv.get<string>(this.#digestKey(bearerDigest));
      if (index.value === null) return null;
      const record = await this.#kv.get<PrincipalRecord>(this.#principalKey(index.value));
      return record.value !== null && record.value.bearerDigest === bearerDigest
        ? record.value
        : null;
    } catch (error) {
      throw unavailable(error);
    }
  }

  async getPrincipal(principalId: string): Promise<PrincipalRecord | null> {
    try {
      return (await this.#kv.get<PrincipalRecord>(this.#principalKey(principalId))).value;
    } catch (error) {
      throw unavailable(error);
    }
  }

  async listPrincipals(): Promise<PrincipalRecord[]> {
    try {
      const records: PrincipalRecord[] = [];
      const prefix = [...this.#root, "principal"];
      for await (const entry of this.#kv.list<PrincipalRecord>({ prefix })) {
        records.push(entry.value);
      }
      return records.sort((a, b) =>
        a.createdAt < b.createdAt
          ? -1
          : a.createdAt > b.createdAt
          ? 1
          : a.principalId < b.principalId
          ? -1
          : a.principalId > b.principalId
          ? 1
          : 0
      );
    } catch (error) {
      throw unavailable(error);
    }
  }

  createPrincipal(
    record: PrincipalRecord,
    completion?: IdempotencyCompletion,
    audit?: AuditEntryInput,
  ): Promise<CreatePrincipalResult>;
  createPrincipal(
    record: PrincipalRecord,
    recording: IdempotencyRecording,
    audit?: AuditEntryInput,
  ): Promise<RecordedCreateResult>;
  async createPrincipal(
    record: PrincipalRecord,
    idempotency?: IdempotencyCompletion | IdempotencyRecording,
    audit?: AuditEntryInput,
  ): Promise<RecordedCreateResult> {
    try {
      if (idempotency !== undefined && "requestDigest" in idempotency) {
        return await this.#createRecorded(record, idempotency, audit);
      }
      const idKey = this.#principalKey(record.principalId);
      const digestKey = this.#digestKey(record.bearerDigest);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const operation = this.#kv.atomic()
          .check({ key: idKey, versionstamp: null })
          .check({ key: digestKey, versionstamp: null })
          .set(idKey, record)
          .set(digestKey, record.principalId);
        if (idempotency !== undefined && !(await this.#addCompletion(operation, idempotency))) {
          // Like PostgreSQL: a claim taken over meanwhile belongs to another request now.
          throw leaseLost();
        }
        if (await this.#commitWithAudit(operation, audit === undefined ? [] : [audit])) {
          return "created";
        }
        const [byId, byDigest] = await this.#kv.getMany([idKey, digestKey]);
        if (byId.versionstamp !== null || byDigest.versionstamp !== null) return "exists";
        // The idempotency claim or the audit seq changed underneath: build the operation again.
      }
      throw contention();
    } catch (error) {
      throw unavailable(error);
    }
  }

  /**
   * A recorded creation is ONE atomic commit checking that the key, the id and the digest are
   * all unused, then writing the principal, its digest index and the finished idempotency record
   * (with its purge index), and the creation's audit entry. It reads nothing first but the audit
   * log's last seq: a fresh key is the common case.
   *
   * Creations are group-committed: while one commit is running, the creations that arrive queue
   * up, and the next commit carries all of them (up to {@linkcode MAX_GROUP}, none sharing a key
   * with another), so a busy server pays the fixed cost of a commit once per group instead of
   * once per request. Each creation stays all-or-nothing. When a group's checks fail, every
   * member is retried alone ({@linkcode KvStore.#createAlone}), which tells why.
   */
  #createRecorded(
    record: PrincipalRecord,
    recording: IdempotencyRecording,
    audit: AuditEntryInput | undefined,
  ): Promise<RecordedCreateResult> {
    const done = Promise.withResolvers<RecordedCreateResult>();
    this.#queue.push({ record, recording, audit, done });
    if (!this.#committing) this.#commitGroups();
    return done.promise;
  }

  /** Commits queued creations group by group until the queue is empty. Never rejects. */
  async #commitGroups(): Promise<void> {
    this.#committing = true;
    try {
      while (this.#queue.length > 0) {
        const group = this.#takeGroup();
        let committed = false;
        try {
          const operation = this.#kv.atomic();
          for (const item of group) this.#addRecorded(operation, item.record, item.recording, null);
          committed = await this.#commitWithAudit(
            operation,
            group.flatMap((item) => item.audit ?? []),
          );
        } catch (error) {
          if (group.length === 1) {
            group[0].done.reject(unavailable(error));
            continue;
          }
          // A group may exceed a limit of the host's KV that one creation does not: go alone.
        }
        if (committed) {
          for (const item of group) item.done.resolve("created");
          continue;
        }
        for (const item of group) {
          this.#createAlone(item, group.length === 1).then(
            item.done.resolve,
            (error) => item.done.reject(unavailable(error)),
          );
        }
      }
    } finally {
      this.#committing = false;
    }
  }

  /** Takes the next group off the queue: queue order, no two members sharing a key. */
  #takeGroup(): QueuedCreate[] {
    const group: QueuedCreate[] = [];
    const rest: QueuedCreate[] = [];
    const keys = new Set<string>();
    for (const item of this.#queue) {
      const id = `p${item.record.principalId}`;
      const digest = `d${item.record.bearerDigest}`;
      const scope = `i${item.recording.scope}`;
      if (group.length >= MAX_GROUP || keys.has(id) || keys.has(digest) || keys.has(scope)) {
        rest.push(item);
        continue;
      }
      keys.add(id).add(digest).add(scope);
      group.push(item);
    }
    this.#queue = rest;
    return group;
  }

  /** Commits `operation` with `audit` appended to the audit log in it; whether it committed. */
  async #commitWithAudit(
    operation: Deno.AtomicOperation,
    audit: readonly AuditEntryInput[],
  ): Promise<boolean> {
    return (await this.#audit.commit(operation, audit)).ok;
  }

  /**
   * Adds one recorded creation to `operation`: checks that the key holds `seen` (null: absent)
   * and that the id and digest are absent, then writes everything.
   */
  #addRecorded(
    operation: Deno.AtomicOperation,
    record: PrincipalRecord,
    recording: IdempotencyRecording,
    seen: Deno.KvEntryMaybe<IdempotencyEntry> | null,
  ): void {
    const idKey = this.#principalKey(record.principalId);
    const digestKey = this.#digestKey(record.bearerDigest);
    const key = this.#idempotencyKey(recording.scope);
    const expireIn = Math.max(recording.expiresAt - recording.now, 0) + EXPIRY_SLACK_MS;
    const entry: IdempotencyEntry = {
      state: "done",
      // No claim ever held this record, so no token owns it.
      token: "",
      requestDigest: recording.requestDigest,
      leaseUntil: recording.now,
      expiresAt: recording.expiresAt,
      response: recording.response,
    };
    operation
      .check({ key, versionstamp: seen?.versionstamp ?? null })
      .check({ key: idKey, versionstamp: null })
      .check({ key: digestKey, versionstamp: null })
      .set(idKey, record)
      .set(digestKey, record.principalId)
      .set(key, entry, { expireIn })
      .set(this.#expiryKey(recording.expiresAt, recording.scope), true, { expireIn });
    const replaced = seen?.value ?? null;
    if (replaced !== null && replaced.expiresAt !== recording.expiresAt) {
      operation.delete(this.#expiryKey(replaced.expiresAt, recording.scope));
    }
  }

  /**
   * One recorded creation on its own: after a failed commit (`failed`), reads the key, the id
   * and the digest once to tell why, and commits again only when the key may be taken over or
   * what failed the check is gone.
   */
  async #createAlone(item: QueuedCreate, failed: boolean): Promise<RecordedCreateResult> {
    const { record, recording, audit } = item;
    const keys: [Deno.KvKey, Deno.KvKey, Deno.KvKey] = [
      this.#idempotencyKey(recording.scope),
      this.#principalKey(record.principalId),
      this.#digestKey(record.bearerDigest),
    ];
    let seen: Deno.KvEntryMaybe<IdempotencyEntry> | null = null;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      if (attempt > 0 || !failed) {
        const operation = this.#kv.atomic();
        this.#addRecorded(operation, record, recording, seen);
        if (await this.#commitWithAudit(operation, audit === undefined ? [] : [audit])) {
          return "created";
        }
      }
      const [current, byId, byDigest] = await this.#kv.getMany<
        [IdempotencyEntry, string, string]
      >(keys);
      const used = usedState(current.value, recording.requestDigest, recording.now);
      if (used !== null) return used;
      if (byId.versionstamp !== null || byDigest.versionstamp !== null) return "exists";
      seen = current;
    }
    throw contention();
  }

  async revokePrincipal(
    principalId: string,
    revokedAt: string,
    audit?: AuditEntryInput,
  ): Promise<RevokePrincipalResult> {
    try {
      const key = this.#principalKey(principalId);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const entry = await this.#kv.get<PrincipalRecord>(key);
        if (entry.value === null) return "notFound";
        if (entry.value.revokedAt !== null) return "alreadyRevoked";
        const operation = this.#kv.atomic()
          .check(entry)
          .set(key, { ...entry.value, revokedAt })
          // A new versionstamp on the epoch: every process's next request sees the revocation.
          .set(revocationsKey(this.#namespace), revokedAt);
        if (await this.#commitWithAudit(operation, audit === undefined ? [] : [audit])) {
          return "revoked";
        }
      }
      throw contention();
    } catch (error) {
      throw unavailable(error);
    }
  }

  async claimIdempotency(params: IdempotencyClaimParams): Promise<IdempotencyClaim> {
    try {
      const key = this.#idempotencyKey(params.scope);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const entry = await this.#kv.get<IdempotencyEntry>(key);
        const used = usedState(entry.value, params.requestDigest, params.now);
        if (used !== null) return used;
        const token = crypto.randomUUID();
        const claimed: IdempotencyEntry = {
          state: "pending",
          token,
          requestDigest: params.requestDigest,
          leaseUntil: params.now + params.leaseMs,
          expiresAt: params.expiresAt,
        };
        const expireIn = Math.max(params.expiresAt - params.now, 0) + EXPIRY_SLACK_MS;
        const result = await commitKv(
          this.#kv.atomic()
            .check(entry)
            .set(key, claimed, { expireIn })
            .set(this.#expiryKey(params.expiresAt, params.scope), true, { expireIn }),
        );
        if (result.ok) return { state: "claimed", token };
      }
      throw contention();
    } catch (error) {
      throw unavailable(error);
    }
  }

  async completeIdempotency(completion: IdempotencyCompletion): Promise<void> {
    try {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const operation = this.#kv.atomic();
        if (!(await this.#addCompletion(operation, completion))) return;
        if ((await commitKv(operation)).ok) return;
      }
      throw contention();
    } catch (error) {
      throw unavailable(error);
    }
  }

  async releaseIdempotency(scope: string, token: string): Promise<void> {
    try {
      const key = this.#idempotencyKey(scope);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const entry = await this.#kv.get<IdempotencyEntry>(key);
        if (
          entry.value === null || entry.value.state !== "pending" || entry.value.token !== token
        ) {
          return;
        }
        const result = await commitKv(
          this.#kv.atomic()
            .check(entry)
            .delete(key)
            .delete(this.#expiryKey(entry.value.expiresAt, scope)),
        );
        if (result.ok) return;
      }
      throw contention();
    } catch (error) {
      throw unavailable(error);
    }
  }

  async deleteExpired(now: number): Promise<number> {
    try {
      const prefix = [...this.#root, "idempotency-expiry"];
      let deleted = 0;
      const entries = this.#kv.list<boolean>({ start: prefix, end: [...prefix, now + 1] });
      for await (const index of entries) {
        const scope = index.key[index.key.length - 1] as string;
        const key = this.#idempotencyKey(scope);
        const entry = await this.#kv.get<IdempotencyEntry>(key);
        const operation = this.#kv.atomic().check(entry).delete(index.key);
        const expired = entry.value !== null && entry.value.expiresAt <= now;
        if (expired) operation.delete(key);
        if ((await commitKv(operation)).ok && expired) deleted++;
      }
      return deleted;
    } catch (error) {
      throw unavailable(error);
    }
  }

  // -- Cross-process authority, paging and retention: see _kv_authority.ts.

  async claimAuthority(now: number): Promise<void> {
    try {
      await claimAuthority(this.#kv, this.#namespace, now);
    } catch (error) {
      if (error instanceof SupersededNamespaceError) throw error;
      throw unavailable(error);
    }
  }

  async readAuthorityState(): Promise<AuthorityState> {
    try {
      return await readAuthorityState(this.#kv, this.#namespace);
    } catch (error) {
      throw unavailable(error);
    }
  }

  /** The KV file's WAL-index commit counter (see `kv/_change_marker.ts`); null in memory. */
  changeMarker(): number | null {
    return this.#closed || this.#marker === null ? null : this.#marker.read();
  }

  async listPrincipalPage(options: PrincipalPageOptions): Promise<PrincipalRecordPage> {
    return pageOf(await this.listPrincipals(), options);
  }

  async purgeRetired(options: PurgeOptions): Promise<PurgeReport> {
    try {
      return await purgeRetired(this.#kv, this.#namespace, options);
    } catch (error) {
      throw unavailable(error);
    }
  }

  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#marker?.close();
      this.#kv.close();
    }
    return Promise.resolve();
  }

  /**
   * Adds the completion of a claim to an atomic operation when `token` still owns the claim;
   * returns false (adding nothing) when it does not.
   */
  async #addCompletion(
    operation: Deno.AtomicOperation,
    completion: IdempotencyCompletion,
  ): Promise<boolean> {
    const key = this.#idempotencyKey(completion.scope);
    const entry = await this.#kv.get<IdempotencyEntry>(key);
    const current = entry.value;
    if (current === null || current.state !== "pending" || current.token !== completion.token) {
      return false;
    }
    const expireIn = Math.max(completion.expiresAt - Date.now(), 0) + EXPIRY_SLACK_MS;
    operation.check(entry).set(key, {
      ...current,
      state: "done",
      expiresAt: completion.expiresAt,
      response: completion.response,
    }, { expireIn });
    if (current.expiresAt !== completion.expiresAt) {
      operation.delete(this.#expiryKey(current.expiresAt, completion.scope));
      operation.set(this.#expiryKey(completion.expiresAt, completion.scope), true, { expireIn });
    }
    return true;
  }
}
