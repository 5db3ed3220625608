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
 *
 * @module
 */
import {
  type CreatePrincipalResult,
  type IdempotencyClaim,
  type IdempotencyClaimParams,
  type IdempotencyCompletion,
  type PrincipalRecord,
  type RevokePrincipalResult,
  type Store,
  type StoredResponse,
  StoreUnavailableError,
} from "./types.ts";

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

const ROOT = "automation-runtime";
const MAX_ATTEMPTS = 32;
/** KV drops values on its own a while after this; the purge does it on time. */
const EXPIRY_SLACK_MS = 3_600_000;

function unavailable(error: unknown): StoreUnavailableError {
  if (error instanceof StoreUnavailableError) return error;
  return new StoreUnavailableError("The KV store failed", { cause: error });
}

function contention(): StoreUnavailableError {
  return new StoreUnavailableError("The KV store is too contended to commit");
}

/**
 * Opens the Deno KV store for one namespace.
 *
 * @example
 * ```ts
 * import { openKvStore } from "./kv.ts";
 * const store = await openKvStore({ path: ":memory:", namespace: "0".repeat(32) });
 * console.log(store.kind); // "kv"
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
  return new KvStore(kv, options.namespace);
}

class KvStore implements Store {
  readonly kind = "kv";
  #kv: Deno.Kv;
  #root: Deno.KvKey;
  #closed = false;

  constructor(kv: Deno.Kv, namespace: string) {
    this.#kv = kv;
    this.#root = [ROOT, namespace];
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

  async createPrincipal(
    record: PrincipalRecord,
    completion?: IdempotencyCompletion,
  ): Promise<CreatePrincipalResult> {
    try {
      const idKey = this.#principalKey(record.principalId);
      const digestKey = this.#digestKey(record.bearerDigest);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const operation = this.#kv.atomic()
          .check({ key: idKey, versionstamp: null })
          .check({ key: digestKey, versionstamp: null })
          .set(idKey, record)
          .set(digestKey, record.principalId);
        if (completion !== undefined) await this.#addCompletion(operation, completion);
        const result = await operation.commit();
        if (result.ok) return "created";
        const [byId, byDigest] = await this.#kv.getMany([idKey, digestKey]);
        if (byId.versionstamp !== null || byDigest.versionstamp !== null) return "exists";
        // The idempotency claim changed underneath: build the operation again.
      }
      throw contention();
    } catch (error) {
      throw unavailable(error);
    }
  }

  async revokePrincipal(principalId: string, revokedAt: string): Promise<RevokePrincipalResult> {
    try {
      const key = this.#principalKey(principalId);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const entry = await this.#kv.get<PrincipalRecord>(key);
        if (entry.value === null) return "notFound";
        if (entry.value.revokedAt !== null) return "alreadyRevoked";
        const result = await this.#kv.atomic()
          .check(entry)
          .set(key, { ...entry.value, revokedAt })
          .commit();
        if (result.ok) return "revoked";
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
        const current = entry.value;
        if (current !== null && current.expiresAt > params.now) {
          if (current.requestDigest !== params.requestDigest) return { state: "conflict" };
          if (current.state === "done" && current.response !== undefined) {
            return { state: "completed", response: current.response };
          }
          if (current.leaseUntil > params.now) return { state: "inFlight" };
          // The holder's lease ran out (it crashed): take the claim over.
        }
        const token = crypto.randomUUID();
        const claimed: IdempotencyEntry = {
          state: "pending",
          token,
          requestDigest: params.requestDigest,
          leaseUntil: params.now + params.leaseMs,
          expiresAt: params.expiresAt,
        };
        const expireIn = Math.max(params.expiresAt - params.now, 0) + EXPIRY_SLACK_MS;
        const result = await this.#kv.atomic()
          .check(entry)
          .set(key, claimed, { expireIn })
          .set(this.#expiryKey(params.expiresAt, params.scope), true, { expireIn })
          .commit();
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
        if ((await operation.commit()).ok) return;
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
        const result = await this.#kv.atomic()
          .check(entry)
          .delete(key)
          .delete(this.#expiryKey(entry.value.expiresAt, scope))
          .commit();
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
        if ((await operation.commit()).ok && expired) deleted++;
      }
      return deleted;
    } catch (error) {
      throw unavailable(error);
    }
  }

  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
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
