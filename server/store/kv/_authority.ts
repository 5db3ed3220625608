/**
 * The authority part of the KV store: the claiming namespace, the authority epoch and the purge
 * of retired namespaces. Keys:
 *
 * - `["automation-runtime-authority", "current"]`: the namespace that claimed the store last, and
 *   the generation and digest of its bootstrap bearer (absent in a claim that named none);
 * - `["automation-runtime-authority", "retired", ns]`: when a namespace stopped being current,
 *   kept after its purge so an old bootstrap cannot claim the store back;
 * - `["automation-runtime", ns, "revocations"]`: rewritten by every revocation, in the atomic
 *   write that revokes (the principals part adds it through {@linkcode markRevocation}), and by
 *   the claim that retires the namespace or rotates its bootstrap; its versionstamp is the
 *   namespace's authority epoch.
 *
 * The leases part reads the same two keys, in the atomic step that renews a lease, through
 * {@linkcode authorityKeys} and {@linkcode authorityStateOf}.
 *
 * Every other key of a namespace lives below `["automation-runtime", ns]`
 * ({@linkcode namespaceRoot}), laid out by the part that owns it; the purge of a retired
 * namespace deletes that whole range.
 *
 * @module
 */
import type {
  AuthorityState,
  AuthorityStore,
  BootstrapClaim,
  ClaimResult,
  PurgeOptions,
} from "../authority.ts";
import { bootstrapClaimOf, FIRST_EPOCH, SupersededNamespaceError } from "../authority.ts";
import { AGAIN, type KvCommits, storeFailure, wakesWatchers, whileBusy } from "./_commit.ts";

/** First part of every key of a namespace. */
const ROOT = "automation-runtime";
const AUTHORITY = "automation-runtime-authority";
const CURRENT_KEY: Deno.KvKey = [AUTHORITY, "current"];
/** Keys deleted per atomic operation when a retired namespace is purged (KV allows 1000). */
const PURGE_BATCH = 500;

interface CurrentEntry {
  namespace: string;
  claimedAt: number;
  /** The generation of the bootstrap bearer holding the store; absent: 0. */
  generation?: number;
  /** The hex SHA-256 of that bearer; absent: not recorded. */
  bootstrap?: string;
}

interface RetiredEntry {
  retiredAt: number;
  purgedAt: number | null;
}

/**
 * The key every record of `namespace` lives below.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { namespaceRoot } from "./_authority.ts";
 * assert.deepEqual(namespaceRoot("n"), ["automation-runtime", "n"]);
 * ```
 */
export function namespaceRoot(namespace: string): Deno.KvKey {
  return [ROOT, namespace];
}

function revocationsKey(namespace: string): Deno.KvKey {
  return [ROOT, namespace, "revocations"];
}

/**
 * The keys a namespace's authority state is read from (the claiming namespace, the epoch), for
 * a `getMany` whose entries {@linkcode authorityStateOf} turns into the state.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { authorityKeys } from "./_authority.ts";
 * assert.deepEqual(authorityKeys("n")[1], ["automation-runtime", "n", "revocations"]);
 * ```
 */
export function authorityKeys(namespace: string): readonly [Deno.KvKey, Deno.KvKey] {
  return [CURRENT_KEY, revocationsKey(namespace)];
}

/**
 * The authority state of `namespace` from the entries of {@linkcode authorityKeys}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { authorityStateOf } from "./_authority.ts";
 * const none = { key: [], value: null, versionstamp: null };
 * assert.deepEqual(authorityStateOf("n", none, none), {
 *   current: true,
 *   epoch: "00000000000000000000",
 *   bootstrapGeneration: 0,
 * });
 * ```
 */
export function authorityStateOf(
  namespace: string,
  current: Deno.KvEntryMaybe<unknown>,
  epoch: Deno.KvEntryMaybe<unknown>,
): AuthorityState {
  const claimed = current.value as CurrentEntry | null;
  const mine = claimed === null || claimed.namespace === namespace;
  return {
    current: mine,
    epoch: epoch.versionstamp ?? FIRST_EPOCH,
    bootstrapGeneration: mine ? claimed?.generation ?? 0 : 0,
  };
}

function retiredKey(namespace: string): Deno.KvKey {
  return [AUTHORITY, "retired", namespace];
}

/**
 * Adds to `operation` the move of `namespace`'s authority epoch, for a write that must hold on
 * every replica before it is answered (a revocation, the claim that retires the namespace or
 * rotates its bootstrap).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { markRevocation } from "./_authority.ts";
 * const kv = await Deno.openKv(":memory:");
 * const before = await kv.get(["automation-runtime", "n", "revocations"]);
 * await markRevocation(kv.atomic(), "n", "2026-01-01T00:00:00.000Z").commit();
 * const after = await kv.get(["automation-runtime", "n", "revocations"]);
 * assert.notEqual(after.versionstamp, before.versionstamp);
 * kv.close();
 * ```
 */
export function markRevocation(
  operation: Deno.AtomicOperation,
  namespace: string,
  revokedAt: string,
): Deno.AtomicOperation {
  // A new versionstamp on the epoch: the commit's versionstamp is the new epoch. It wakes this
  // process's lease holders too (another server on the same store object must hear of it).
  return wakesWatchers(operation.set(revocationsKey(namespace), revokedAt));
}

/** The authority part of the KV store. */
export class KvAuthority implements AuthorityStore {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #namespace: string;
  /** The keys of {@linkcode KvAuthority.readState}, built once. */
  readonly #stateKeys: readonly [Deno.KvKey, Deno.KvKey];

  constructor(commits: KvCommits, namespace: string) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#namespace = namespace;
    this.#stateKeys = authorityKeys(namespace);
  }

  claim(now: number, bootstrap?: BootstrapClaim): Promise<ClaimResult> {
    const kv = this.#kv;
    const namespace = this.#namespace;
    return this.#commits.retry(async () => {
      // Workers of `deno serve --parallel` open one SQLite file at the same instant; the first
      // access of one of them can find the file locked (seen 1 start in 3 with two workers).
      const [current, retired] = await whileBusy(() =>
        kv.getMany<[CurrentEntry, RetiredEntry]>([CURRENT_KEY, retiredKey(namespace)])
      );
      if (retired.value !== null) {
        throw new SupersededNamespaceError(
          `This bootstrap was replaced on the store at ${
            new Date(retired.value.retiredAt).toISOString()
          }; start with the current bootstrap credential`,
        );
      }
      const held = current.value;
      let next: CurrentEntry;
      /** The namespace whose processes must learn of this claim before the claimer answers. */
      let moved: string | null = null;
      if (held?.namespace === namespace) {
        if (bootstrap === undefined) return { moved: null };
        const decision = bootstrapClaimOf(held, bootstrap);
        if (decision === "held") return { moved: null };
        next = { ...held, generation: bootstrap.generation, bootstrap: bootstrap.digest };
        if (decision === "rotated") {
          next.claimedAt = now;
          moved = namespace;
        }
      } else {
        next = {
          namespace,
          claimedAt: now,
          ...(bootstrap === undefined
            ? {}
            : { generation: bootstrap.generation, bootstrap: bootstrap.digest }),
        };
      }
      const operation = kv.atomic().check(current).check(retired).set(CURRENT_KEY, next);
      if (held !== null && held.namespace !== namespace) {
        operation.set(
          retiredKey(held.namespace),
          { retiredAt: now, purgedAt: null } satisfies RetiredEntry,
        );
        moved = held.namespace;
      }
      if (moved !== null) markRevocation(operation, moved, new Date(now).toISOString());
      const result = await this.#commits.commit(operation);
      if (!result.ok) return AGAIN;
      return { moved: moved === null ? null : { namespace: moved, epoch: result.versionstamp } };
    });
  }

  /** The claiming namespace and the epoch of this namespace in one `getMany`. */
  async readState(): Promise<AuthorityState> {
    try {
      const [current, epoch] = await this.#kv.getMany(this.#stateKeys);
      return authorityStateOf(this.#namespace, current, epoch);
    } catch (error) {
      throw storeFailure(error);
    }
  }

  /**
   * Finds every namespace under the root by skipping from one to the next (a key
   * `[ROOT, ns + "\0"]` sorts after every key below `[ROOT, ns]`), so the scan reads one key per
   * namespace, not every record.
   */
  async purgeRetired(options: PurgeOptions): Promise<number> {
    const kv = this.#kv;
    const commits = this.#commits;
    const cutoff = options.now - options.retentionMs;
    try {
      const current = (await kv.get<CurrentEntry>(CURRENT_KEY)).value;
      // Without a claim, no namespace is known to be retired: delete nothing.
      if (current === null) return 0;
      let purged = 0;
      let start: Deno.KvKey | undefined;
      while (true) {
        const selector = start === undefined ? { prefix: [ROOT] } : { prefix: [ROOT], start };
        const [first] = await Array.fromAsync(kv.list(selector, { limit: 1 }));
        if (first === undefined) return purged;
        const namespace = first.key[1];
        if (typeof namespace !== "string") return purged;
        start = [ROOT, namespace + "\0"];
        if (namespace === current.namespace) continue;
        const retired = await kv.get<RetiredEntry>(retiredKey(namespace));
        if (retired.value === null) {
          await commits.commit(
            kv.atomic().check(retired).set(
              retiredKey(namespace),
              { retiredAt: options.now, purgedAt: null } satisfies RetiredEntry,
            ),
          );
          continue;
        }
        if (retired.value.retiredAt > cutoff) continue;
        while (true) {
          const keys = await Array.fromAsync(
            kv.list({ prefix: namespaceRoot(namespace) }, { limit: PURGE_BATCH }),
            (entry) => entry.key,
          );
          if (keys.length === 0) break;
          const operation = kv.atomic();
          for (const key of keys) operation.delete(key);
          await commits.commit(operation);
        }
        await commits.commit(
          kv.atomic().set(
            retiredKey(namespace),
            { ...retired.value, purgedAt: options.now } satisfies RetiredEntry,
          ),
        );
        purged++;
      }
    } catch (error) {
      throw storeFailure(error);
    }
  }
}
