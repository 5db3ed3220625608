/**
 * The Deno KV store's cross-process authority, paging and retention, kept apart from the
 * principal and idempotency writes of `kv.ts` (its module doc lists the keys):
 *
 * - `["automation-runtime-authority", "current"]`: the namespace that claimed the store last;
 * - `["automation-runtime-authority", "retired", ns]`: when a namespace stopped being current,
 *   kept after its purge so an old bootstrap cannot claim the store back;
 * - `["automation-runtime", ns, "revocations"]`: rewritten by every revocation, in the atomic
 *   write that revokes; its versionstamp is the revocation epoch.
 *
 * @module
 */
import { parseRfc3339 } from "../time.ts";
import {
  type AuthorityState,
  type PrincipalPageOptions,
  type PrincipalRecord,
  type PrincipalRecordPage,
  type PurgeOptions,
  type PurgeReport,
  StoreUnavailableError,
  SupersededNamespaceError,
} from "./types.ts";
import { commitKv, whileBusy } from "./kv/_commit.ts";

/** First part of every key of a namespace. */
export const ROOT = "automation-runtime";
const AUTHORITY = "automation-runtime-authority";
const CURRENT_KEY: Deno.KvKey = [AUTHORITY, "current"];
/** Keys deleted per atomic operation when a retired namespace is purged (KV allows 1000). */
const PURGE_BATCH = 500;
const MAX_ATTEMPTS = 32;

interface CurrentEntry {
  namespace: string;
  claimedAt: number;
}

interface RetiredEntry {
  retiredAt: number;
  purgedAt: number | null;
}

/**
 * The key whose versionstamp is the revocation epoch of `namespace`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { revocationsKey } from "./_kv_authority.ts";
 * assert.deepEqual(revocationsKey("n"), ["automation-runtime", "n", "revocations"]);
 * ```
 */
export function revocationsKey(namespace: string): Deno.KvKey {
  return [ROOT, namespace, "revocations"];
}

function retiredKey(namespace: string): Deno.KvKey {
  return [AUTHORITY, "retired", namespace];
}

/**
 * Claims the store for `namespace` (see `Store.claimAuthority`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { claimAuthority, readAuthorityState } from "./_kv_authority.ts";
 * const kv = await Deno.openKv(":memory:");
 * await claimAuthority(kv, "a", 0);
 * await claimAuthority(kv, "b", 1);
 * assert.equal((await readAuthorityState(kv, "a")).current, false);
 * await assert.rejects(() => claimAuthority(kv, "a", 2));
 * kv.close();
 * ```
 */
export async function claimAuthority(kv: Deno.Kv, namespace: string, now: number): Promise<void> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
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
    if (current.value?.namespace === namespace) return;
    const operation = kv.atomic().check(current).check(retired)
      .set(CURRENT_KEY, { namespace, claimedAt: now } satisfies CurrentEntry);
    if (current.value !== null) {
      operation.set(
        retiredKey(current.value.namespace),
        { retiredAt: now, purgedAt: null } satisfies RetiredEntry,
      );
    }
    if ((await commitKv(operation)).ok) return;
  }
  throw new StoreUnavailableError("The KV store is too contended to commit");
}

/**
 * Reads the claiming namespace and the revocation epoch of `namespace` in one `getMany`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readAuthorityState } from "./_kv_authority.ts";
 * const kv = await Deno.openKv(":memory:");
 * assert.equal((await readAuthorityState(kv, "a")).current, true); // never claimed
 * kv.close();
 * ```
 */
export async function readAuthorityState(
  kv: Deno.Kv,
  namespace: string,
): Promise<AuthorityState> {
  const [current, revocations] = await kv.getMany<[CurrentEntry, string]>([
    CURRENT_KEY,
    revocationsKey(namespace),
  ]);
  return {
    current: current.value === null || current.value.namespace === namespace,
    epoch: `${current.versionstamp}/${revocations.versionstamp}`,
  };
}

/**
 * One page of a list sorted oldest first. KV keeps principals by id, not by creation, so a page
 * is cut from the sorted list; the purge keeps that list to live principals and those within the
 * retention period.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pageOf } from "./_kv_authority.ts";
 * const page = pageOf([], { limit: 10 });
 * assert.deepEqual(page, { records: [], next: null });
 * ```
 */
export function pageOf(
  all: readonly PrincipalRecord[],
  options: PrincipalPageOptions,
): PrincipalRecordPage {
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

/**
 * Deletes the namespace's principals revoked or expired before the cutoff (with their digest
 * index), then every key of each namespace retired before it (see `Store.purgeRetired`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { purgeRetired } from "./_kv_authority.ts";
 * const kv = await Deno.openKv(":memory:");
 * const report = await purgeRetired(kv, "a", { now: Date.now(), retentionMs: 86_400_000 });
 * assert.deepEqual(report, { principals: 0, namespaces: 0 });
 * kv.close();
 * ```
 */
export async function purgeRetired(
  kv: Deno.Kv,
  namespace: string,
  options: PurgeOptions,
): Promise<PurgeReport> {
  const cutoff = options.now - options.retentionMs;
  let principals = 0;
  for await (const entry of kv.list<PrincipalRecord>({ prefix: [ROOT, namespace, "principal"] })) {
    if (!isRetiredBefore(entry.value, cutoff)) continue;
    const result = await commitKv(
      kv.atomic().check(entry)
        .delete(entry.key)
        .delete([ROOT, namespace, "digest", entry.value.bearerDigest]),
    );
    if (result.ok) principals++;
  }
  return { principals, namespaces: await purgeNamespaces(kv, options.now, cutoff) };
}

/**
 * Finds every namespace under the root by skipping from one to the next (a key
 * `[ROOT, ns + "\0"]` sorts after every key below `[ROOT, ns]`), so the scan reads one key per
 * namespace, not every record.
 */
async function purgeNamespaces(kv: Deno.Kv, now: number, cutoff: number): Promise<number> {
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
      await commitKv(
        kv.atomic().check(retired)
          .set(retiredKey(namespace), { retiredAt: now, purgedAt: null } satisfies RetiredEntry),
      );
      continue;
    }
    if (retired.value.retiredAt > cutoff) continue;
    while (true) {
      const keys = await Array.fromAsync(
        kv.list({ prefix: [ROOT, namespace] }, { limit: PURGE_BATCH }),
        (entry) => entry.key,
      );
      if (keys.length === 0) break;
      const operation = kv.atomic();
      for (const key of keys) operation.delete(key);
      await commitKv(operation);
    }
    await commitKv(
      kv.atomic().set(
        retiredKey(namespace),
        { ...retired.value, purgedAt: now } satisfies RetiredEntry,
      ),
    );
    purged++;
  }
}

/** Whether a principal was revoked, or expired, at or before `cutoff` (ms). */
function isRetiredBefore(record: PrincipalRecord, cutoff: number): boolean {
  const revokedAt = record.revokedAt === null ? null : parseRfc3339(record.revokedAt);
  if (revokedAt !== null && revokedAt <= cutoff) return true;
  const expiresAt = parseRfc3339(record.expiresAt);
  return expiresAt !== null && expiresAt <= cutoff;
}
