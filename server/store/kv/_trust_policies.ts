/**
 * The trust policies part of the KV store. Keys, below the store's namespace root:
 *
 * - `["trust-policy", name]` → {@linkcode TrustPolicyRecord}
 * - `["exchanged-token", tokenDigest]` → {@linkcode TokenUseEntry} (expires with the token)
 *
 * An exchange writes the new principal (through `_principals.ts`'s accessors), the token's use,
 * the idempotency record (through `_idempotency.ts`'s) and the audit entry (numbered by the
 * commit helper) in one atomic operation, checked against the policy entry it read.
 *
 * @module
 */
import type { AuditEntryInput } from "../run_types.ts";
import type { PrincipalRecord } from "../principals.ts";
import type { IdempotencyRecording } from "../idempotency.ts";
import type {
  ExchangeResult,
  TokenUse,
  TrustPolicyPageOptions,
  TrustPolicyRecord,
  TrustPolicyRecordPage,
  TrustPolicyStore,
} from "../trust_policies.ts";
import { AGAIN, type KvCommits, storeFailure } from "./_commit.ts";
import { addNewPrincipal, newPrincipalKeys } from "./_principals.ts";
import { addRecording, type IdempotencyEntry, idempotencyKey, usedState } from "./_idempotency.ts";

/** What the store remembers of an exchanged token. */
interface TokenUseEntry {
  /** The principal the exchange created. */
  principalId: string;
  /** Until when the use counts, ms. */
  expiresAt: number;
}

/**
 * Kept a minute past its expiry, so KV's own expiry never drops a use that still counts (an
 * expired use is kept until the purge or KV drops it: its token is refused as expired anyway).
 */
const EXPIRY_SLACK_MS = 60_000;

const NO_AUDIT: readonly AuditEntryInput[] = Object.freeze([]);

/** The trust policies part of the KV store. */
export class KvTrustPolicies implements TrustPolicyStore {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #root: Deno.KvKey;
  readonly #prefix: Deno.KvKey;

  constructor(commits: KvCommits, root: Deno.KvKey) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#root = root;
    this.#prefix = [...root, "trust-policy"];
  }

  #policyKey(name: string): Deno.KvKey {
    return [...this.#prefix, name];
  }

  #tokenKey(digest: string): Deno.KvKey {
    return [...this.#root, "exchanged-token", digest];
  }

  create(record: TrustPolicyRecord, audit?: AuditEntryInput): Promise<"created" | "exists"> {
    const key = this.#policyKey(record.name);
    const inputs = audit === undefined ? NO_AUDIT : [audit];
    return this.#commits.retry(async () => {
      const operation = this.#kv.atomic().check({ key, versionstamp: null }).set(key, record);
      if ((await this.#commits.commitAudited(operation, inputs)).ok) return "created";
      const current = await this.#kv.get(key);
      // The name is taken, or the audit seq moved underneath: build the operation again.
      return current.versionstamp !== null ? "exists" : AGAIN;
    });
  }

  async get(name: string): Promise<TrustPolicyRecord | null> {
    try {
      return (await this.#kv.get<TrustPolicyRecord>(this.#policyKey(name))).value;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async page(options: TrustPolicyPageOptions): Promise<TrustPolicyRecordPage> {
    try {
      const prefix = this.#prefix;
      const selector: Deno.KvListSelector = options.after === undefined
        ? { prefix }
        : { prefix, start: [...prefix, options.after] };
      const records: TrustPolicyRecord[] = [];
      let more = false;
      for await (const entry of this.#kv.list<TrustPolicyRecord>(selector)) {
        if (entry.value.name === options.after) continue;
        if (records.length === options.limit) {
          more = true;
          break;
        }
        records.push(entry.value);
      }
      return { records, next: more ? records.at(-1)!.name : null };
    } catch (error) {
      throw storeFailure(error);
    }
  }

  delete(name: string, audit?: AuditEntryInput): Promise<"deleted" | "notFound"> {
    const key = this.#policyKey(name);
    const inputs = audit === undefined ? NO_AUDIT : [audit];
    return this.#commits.retry(async () => {
      const entry = await this.#kv.get<TrustPolicyRecord>(key);
      if (entry.versionstamp === null) return "notFound";
      const operation = this.#kv.atomic().check(entry).delete(key);
      return (await this.#commits.commitAudited(operation, inputs)).ok ? "deleted" : AGAIN;
    });
  }

  /**
   * Reads the idempotency key, the policy, the token's use and the principal's id and digest,
   * answers from them when one says no, else commits everything checked against what it read;
   * a failed commit (something changed since) reads them all again.
   */
  exchange(
    principal: PrincipalRecord,
    use: TokenUse,
    recording: IdempotencyRecording,
    audit: AuditEntryInput,
  ): Promise<ExchangeResult> {
    const kv = this.#kv;
    const root = this.#root;
    const now = recording.now;
    const keys: [Deno.KvKey, Deno.KvKey, Deno.KvKey, Deno.KvKey, Deno.KvKey] = [
      idempotencyKey(root, recording.scope),
      this.#policyKey(use.policyName),
      this.#tokenKey(use.tokenDigest),
      ...newPrincipalKeys(root, principal),
    ];
    const useEntry: TokenUseEntry = {
      principalId: principal.principalId,
      expiresAt: use.expiresAt,
    };
    const expireIn = Math.max(use.expiresAt - now, 0) + EXPIRY_SLACK_MS;
    return this.#commits.retry(async () => {
      const [key, policy, used, byId, byDigest] = await kv.getMany<
        [IdempotencyEntry, TrustPolicyRecord, TokenUseEntry, string, string]
      >(keys);
      const held = usedState(key.value, recording.requestDigest, now);
      if (held !== null) return held;
      if (policy.value?.policyId !== use.policyId) return "policyGone";
      if (used.versionstamp !== null) return "replayed";
      if (byId.versionstamp !== null || byDigest.versionstamp !== null) return "exists";
      const operation = kv.atomic()
        .check(policy)
        .check(used)
        .set(keys[2], useEntry, { expireIn });
      addNewPrincipal(operation, root, principal);
      addRecording(operation, root, recording, key);
      // A failed commit: something read changed since, or the audit seq moved; look again.
      return (await this.#commits.commitAudited(operation, [audit])).ok ? "created" : AGAIN;
    });
  }

  async isTokenUsed(tokenDigest: string): Promise<boolean> {
    try {
      const entry = await this.#kv.get<TokenUseEntry>(this.#tokenKey(tokenDigest));
      return entry.versionstamp !== null;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async purgeTokenUses(now: number): Promise<number> {
    try {
      let purged = 0;
      const prefix = [...this.#root, "exchanged-token"];
      for await (const entry of this.#kv.list<TokenUseEntry>({ prefix })) {
        if (entry.value.expiresAt > now) continue;
        const result = await this.#commits.commit(this.#kv.atomic().check(entry).delete(entry.key));
        if (result.ok) purged++;
      }
      return purged;
    } catch (error) {
      throw storeFailure(error);
    }
  }
}
