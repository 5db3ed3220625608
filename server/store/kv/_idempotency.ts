/**
 * The idempotency part of the KV store. Keys, below the store's namespace root:
 *
 * - `["idempotency", scope]` → {@linkcode IdempotencyEntry}: the claim or the recorded answer
 * - `["idempotency-expiry", expiresAt, scope]` → true: the purge's index
 *
 * The principals part writes a completion or a recording in its own atomic operation, through
 * the accessors {@linkcode addCompletion} and {@linkcode addRecording}, and reads the key with
 * its own records in one `getMany` ({@linkcode idempotencyKey}, {@linkcode usedState}).
 *
 * @module
 */
import type {
  IdempotencyClaim,
  IdempotencyClaimParams,
  IdempotencyCompletion,
  IdempotencyKeyUsed,
  IdempotencyRecording,
  IdempotencyStore,
  StoredResponse,
} from "../idempotency.ts";
import { AGAIN, type KvCommits, storeFailure } from "./_commit.ts";

/** An idempotency key's record. */
export interface IdempotencyEntry {
  /** `pending` while claimed, `done` once the answer is recorded. */
  state: "pending" | "done";
  /** The claim's token ("" for a recording, which no claim held). */
  token: string;
  /** Digest of the request body. */
  requestDigest: string;
  /** Until when an unfinished claim blocks others, ms. */
  leaseUntil: number;
  /** Set by `begin`: the claim's effect may have happened, so it is never taken over. */
  begun?: true;
  /** When the record may be purged, ms. */
  expiresAt: number;
  /** The recorded answer. */
  response?: StoredResponse;
}

/** KV drops values on its own a while after this; the purge does it on time. */
const EXPIRY_SLACK_MS = 3_600_000;

/**
 * The key of `scope`'s record below `root`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { idempotencyKey } from "./_idempotency.ts";
 * assert.deepEqual(idempotencyKey(["r"], "s"), ["r", "idempotency", "s"]);
 * ```
 */
export function idempotencyKey(root: Deno.KvKey, scope: string): Deno.KvKey {
  return [...root, "idempotency", scope];
}

function expiryKey(root: Deno.KvKey, expiresAt: number, scope: string): Deno.KvKey {
  return [...root, "idempotency-expiry", expiresAt, scope];
}

/**
 * What a live idempotency entry means for a request of `requestDigest` at `now`, or null when the
 * key counts as unused: no entry, an expired one, or an unfinished claim of the same body whose
 * lease ran out (its holder crashed), which may be taken over unless it began its effect (then
 * the key is `unsettled`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { usedState } from "./_idempotency.ts";
 * assert.equal(usedState(null, "d", 0), null);
 * ```
 */
export function usedState(
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
  if (current.begun === true) return { state: "unsettled" };
  return null;
}

/**
 * Adds the finished record of `recording` to `operation`: checks that the key holds `seen` (null:
 * absent), writes the record and its purge index, and drops the index of the record it replaces.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { addRecording, idempotencyKey } from "./_idempotency.ts";
 * const kv = await Deno.openKv(":memory:");
 * const recording = {
 *   scope: "s",
 *   requestDigest: "d",
 *   now: 0,
 *   response: { status: 201, body: "{}" },
 *   expiresAt: 1,
 * };
 * const operation = kv.atomic();
 * addRecording(operation, ["r"], recording, null);
 * assert.equal((await operation.commit()).ok, true);
 * assert.equal((await kv.get(idempotencyKey(["r"], "s"))).value !== null, true);
 * kv.close();
 * ```
 */
export function addRecording(
  operation: Deno.AtomicOperation,
  root: Deno.KvKey,
  recording: IdempotencyRecording,
  seen: Deno.KvEntryMaybe<IdempotencyEntry> | null,
): void {
  const key = idempotencyKey(root, recording.scope);
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
    .set(key, entry, { expireIn })
    .set(expiryKey(root, recording.expiresAt, recording.scope), true, { expireIn });
  const replaced = seen?.value ?? null;
  if (replaced !== null && replaced.expiresAt !== recording.expiresAt) {
    operation.delete(expiryKey(root, replaced.expiresAt, recording.scope));
  }
}

/**
 * Adds the completion of a claim to `operation` when `completion.token` still owns the claim;
 * returns false (adding nothing) when it does not. `now` is the current time, ms.
 */
export async function addCompletion(
  kv: Deno.Kv,
  operation: Deno.AtomicOperation,
  root: Deno.KvKey,
  completion: IdempotencyCompletion,
  now: number,
): Promise<boolean> {
  const key = idempotencyKey(root, completion.scope);
  const entry = await kv.get<IdempotencyEntry>(key);
  const current = entry.value;
  if (current === null || current.state !== "pending" || current.token !== completion.token) {
    return false;
  }
  const expireIn = Math.max(completion.expiresAt - now, 0) + EXPIRY_SLACK_MS;
  operation.check(entry).set(key, {
    ...current,
    state: "done",
    expiresAt: completion.expiresAt,
    response: completion.response,
  }, { expireIn });
  if (current.expiresAt !== completion.expiresAt) {
    operation.delete(expiryKey(root, current.expiresAt, completion.scope));
    operation.set(expiryKey(root, completion.expiresAt, completion.scope), true, { expireIn });
  }
  return true;
}

/** The idempotency part of the KV store. */
export class KvIdempotency implements IdempotencyStore {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #root: Deno.KvKey;
  readonly #now: () => number;

  constructor(commits: KvCommits, root: Deno.KvKey, now: () => number) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#root = root;
    this.#now = now;
  }

  claim(params: IdempotencyClaimParams): Promise<IdempotencyClaim> {
    const key = idempotencyKey(this.#root, params.scope);
    return this.#commits.retry(async () => {
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
      const result = await this.#commits.commit(
        this.#kv.atomic()
          .check(entry)
          .set(key, claimed, { expireIn })
          .set(expiryKey(this.#root, params.expiresAt, params.scope), true, { expireIn }),
      );
      return result.ok ? { state: "claimed", token } : AGAIN;
    });
  }

  begin(scope: string, token: string): Promise<boolean> {
    return this.#change(scope, token, (entry) => entry.begun === true ? null : { begun: true });
  }

  abandon(scope: string, token: string, now: number): Promise<void> {
    return this.#change(
      scope,
      token,
      (entry) => entry.begun === true && entry.leaseUntil > now ? { leaseUntil: now } : null,
    ).then(() => {});
  }

  /**
   * Writes `change(entry)` over the unfinished claim `token` owns (nothing when it returns null);
   * false when `token` owns no unfinished claim of the key.
   */
  #change(
    scope: string,
    token: string,
    change: (entry: IdempotencyEntry) => Partial<IdempotencyEntry> | null,
  ): Promise<boolean> {
    const key = idempotencyKey(this.#root, scope);
    return this.#commits.retry(async () => {
      const entry = await this.#kv.get<IdempotencyEntry>(key);
      const current = entry.value;
      if (current === null || current.state !== "pending" || current.token !== token) return false;
      const changed = change(current);
      if (changed === null) return true;
      const expireIn = Math.max(current.expiresAt - this.#now(), 0) + EXPIRY_SLACK_MS;
      const result = await this.#commits.commit(
        this.#kv.atomic().check(entry).set(key, { ...current, ...changed }, { expireIn }),
      );
      return result.ok ? true : AGAIN;
    });
  }

  async lookup(
    scope: string,
    requestDigest: string,
    now: number,
  ): Promise<IdempotencyKeyUsed | null> {
    try {
      const entry = await this.#kv.get<IdempotencyEntry>(idempotencyKey(this.#root, scope));
      return usedState(entry.value, requestDigest, now);
    } catch (error) {
      throw storeFailure(error);
    }
  }

  complete(completion: IdempotencyCompletion): Promise<void> {
    return this.#commits.retry(async () => {
      const operation = this.#kv.atomic();
      if (!(await addCompletion(this.#kv, operation, this.#root, completion, this.#now()))) return;
      return (await this.#commits.commit(operation)).ok ? undefined : AGAIN;
    });
  }

  release(scope: string, token: string): Promise<void> {
    const key = idempotencyKey(this.#root, scope);
    return this.#commits.retry(async () => {
      const entry = await this.#kv.get<IdempotencyEntry>(key);
      if (entry.value === null || entry.value.state !== "pending" || entry.value.token !== token) {
        return;
      }
      const result = await this.#commits.commit(
        this.#kv.atomic()
          .check(entry)
          .delete(key)
          .delete(expiryKey(this.#root, entry.value.expiresAt, scope)),
      );
      return result.ok ? undefined : AGAIN;
    });
  }

  async purgeExpired(now: number): Promise<number> {
    try {
      const prefix = [...this.#root, "idempotency-expiry"];
      let deleted = 0;
      const entries = this.#kv.list<boolean>({ start: prefix, end: [...prefix, now + 1] });
      for await (const index of entries) {
        const scope = index.key[index.key.length - 1] as string;
        const key = idempotencyKey(this.#root, scope);
        const entry = await this.#kv.get<IdempotencyEntry>(key);
        const operation = this.#kv.atomic().check(entry).delete(index.key);
        const expired = entry.value !== null && entry.value.expiresAt <= now;
        if (expired) operation.delete(key);
        if ((await this.#commits.commit(operation)).ok && expired) deleted++;
      }
      return deleted;
    } catch (error) {
      throw storeFailure(error);
    }
  }
}
