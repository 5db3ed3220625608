/**
 * The embedded store: Deno KV in one file (`store.kv` beside the secret file), or the host's own
 * KV when no path is given. {@linkcode openKvStore} opens the file and assembles the parts, one
 * file each, over one commit helper:
 *
 * - `_principals.ts`, `_idempotency.ts`, `_authority.ts`, `_leases.ts` (with `_change_marker.ts`),
 *   `_runs.ts`, `_audit.ts`, `_events.ts`, `_answers.ts`, `_trust_policies.ts`, `_activity.ts`,
 *   `_notifications.ts`, `_spend.ts`: each part's keys, laid out and read by its file only (a part
 *   that writes another's records in one atomic operation uses the small accessors that file
 *   exports);
 * - `_watch.ts`: the wake-ups of the events and activity parts (Deno KV's `watch` on a seq key);
 * - `_commit.ts`: every commit, with the busy-file wait, the one retry budget, the error mapping,
 *   the audit log's numbering and the one group-commit queue.
 *
 * Every key of a namespace lives below `["automation-runtime", namespace]`; the authority's own
 * keys below `["automation-runtime-authority"]`, shared by every namespace. Creations and claims
 * are atomic operations with version checks, never read-then-write.
 *
 * @module
 */
import type { Store } from "../types.ts";
import { StoreUnavailableError } from "../types.ts";
import { openChangeMarker } from "./_change_marker.ts";
import { KvCommits, whileBusy } from "./_commit.ts";
import { auditNumbering, KvAudit } from "./_audit.ts";
import { KvAuthority, namespaceRoot } from "./_authority.ts";
import { KvLeases } from "./_leases.ts";
import { KvPrincipals } from "./_principals.ts";
import { KvIdempotency } from "./_idempotency.ts";
import { KvRuns, recordedTurns } from "./_runs.ts";
import { KvEvents } from "./_events.ts";
import { KvAnswers } from "./_answers.ts";
import { KvTrustPolicies } from "./_trust_policies.ts";
import { KvActivity, KvActivityLog } from "./_activity.ts";
import { KvNotifications } from "./_notifications.ts";
import { KvSpend } from "./_spend.ts";

/** Options of {@linkcode openKvStore}. */
export interface KvStoreOptions {
  /** Namespace derived from the bootstrap credential. */
  namespace: string;
  /** KV file path (`:memory:` for a throwaway store); omitted: the host's default KV. */
  path?: string;
  /**
   * The store's clock, ms since the epoch (default `Date.now`): read only where a write's expiry
   * is not given by its caller.
   */
  now?: () => number;
}

/**
 * Opens the Deno KV store for one namespace.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openKvStore } from "./mod.ts";
 * const store = await openKvStore({ path: ":memory:", namespace: "0".repeat(32) });
 * assert.equal(store.kind, "kv");
 * assert.equal(await store.principals.get(crypto.randomUUID()), null);
 * await store.close();
 * ```
 */
export async function openKvStore(options: KvStoreOptions): Promise<Store> {
  let kv: Deno.Kv;
  try {
    // Workers of `deno serve --parallel` open one new file at the same instant, and SQLite can
    // find it locked while another handle sets it up (measured: 25 of 400 opens by four
    // workers at once, Deno 2.9.6); the open waits that out like a busy commit.
    const path = options.path;
    kv = await (path === undefined ? Deno.openKv() : whileBusy(() => Deno.openKv(path)));
  } catch (error) {
    const where = options.path === undefined ? "the default KV store" : options.path;
    throw new StoreUnavailableError(`Cannot open ${where}`, { cause: error });
  }
  const marker = options.path === undefined ? null : openChangeMarker(options.path);
  const now = options.now ?? Date.now;
  const root = namespaceRoot(options.namespace);
  const commits = new KvCommits(kv, auditNumbering(root));
  const activity = new KvActivityLog(commits, root);
  let closed = false;
  return Object.freeze({
    kind: "kv",
    principals: new KvPrincipals(commits, root, options.namespace, now),
    idempotency: new KvIdempotency(commits, root, now),
    authority: new KvAuthority(commits, options.namespace),
    leases: new KvLeases(commits, options.namespace, marker),
    runs: new KvRuns(commits, root, now, activity),
    audit: new KvAudit(commits, root),
    events: new KvEvents(commits, root),
    answers: new KvAnswers(commits, root, activity),
    trustPolicies: new KvTrustPolicies(commits, root),
    activity: new KvActivity(commits, root, activity),
    notifications: new KvNotifications(commits, root),
    spend: new KvSpend(commits, root, (runId) => recordedTurns(kv, root, runId)),
    close(): Promise<void> {
      if (!closed) {
        closed = true;
        // The marker reads null from now on: a closed store wakes no watcher.
        marker?.close();
        kv.close();
      }
      return Promise.resolve();
    },
  });
}
