/**
 * The audit part of the KV store. Keys, below the store's namespace root:
 *
 * - `["audit", seq]` → {@linkcode AuditEntry} (expires after 90 days)
 * - `["audit-seq"]` → the last seq
 *
 * Every commit that appends entries (an append, a principal's issuance or revocation) numbers
 * them through {@linkcode auditNumbering}, which the store's commit helper applies in the same
 * atomic operation, checked against the last seq, so that two appends can never number alike.
 *
 * @module
 */
import {
  type AuditEntry,
  type AuditEntryInput,
  type AuditListQuery,
  type AuditPage,
  decodeAuditCursor,
  encodeAuditCursor,
  invalidCursor,
} from "../run_types.ts";
import type { AuditStore } from "../audit.ts";
import {
  AGAIN,
  type AuditNumbering,
  BatchedWrite,
  type KvCommits,
  storeFailure,
} from "./_commit.ts";

const NO_KEYS: readonly string[] = Object.freeze([]);

/** Audit entries are kept 90 days. */
const AUDIT_TTL_MS = 90 * 86_400_000;

/**
 * How audit entries below `root` are numbered: after the last seq, checked against it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { auditNumbering } from "./_audit.ts";
 * assert.deepEqual(auditNumbering(["r", "n"]).seqKey, ["r", "n", "audit-seq"]);
 * ```
 */
export function auditNumbering(root: Deno.KvKey): AuditNumbering {
  const seqKey: Deno.KvKey = [...root, "audit-seq"];
  return {
    seqKey,
    add(operation, last, inputs): AuditEntry[] {
      const first = (last.value ?? 0) + 1;
      const entries = inputs.map((input, index): AuditEntry => ({ seq: first + index, ...input }));
      operation.check(last).set(seqKey, first + inputs.length - 1);
      for (const entry of entries) {
        operation.set([...root, "audit", entry.seq], entry, { expireIn: AUDIT_TTL_MS });
      }
      return entries;
    },
  };
}

/** One append, as a write of a group commit: it checks nothing of its own. */
class Append extends BatchedWrite<AuditEntry> {
  readonly keys: readonly string[] = NO_KEYS;
  readonly audit: AuditEntryInput;
  readonly #commits: KvCommits;

  constructor(commits: KvCommits, input: AuditEntryInput) {
    super();
    this.#commits = commits;
    this.audit = input;
  }

  add(): void {}

  committed(entry: AuditEntry | undefined): AuditEntry {
    return entry!;
  }

  alone(): Promise<AuditEntry> {
    const commits = this.#commits;
    return commits.retry(async () => {
      const result = await commits.commitAudited(commits.kv.atomic(), [this.audit]);
      return result.ok ? result.entries[0] : AGAIN;
    });
  }
}

/** The audit part of the KV store. */
export class KvAudit implements AuditStore {
  readonly #commits: KvCommits;
  readonly #prefix: Deno.KvKey;

  constructor(commits: KvCommits, root: Deno.KvKey) {
    this.#commits = commits;
    this.#prefix = [...root, "audit"];
  }

  /**
   * Appends are group-committed ({@linkcode KvCommits.batch}): every seq comes from one counter
   * key, so entries appended at once would conflict on it; instead the entries that queue up
   * while a commit runs go in the next one, numbered in queue order.
   */
  append(input: AuditEntryInput): Promise<AuditEntry> {
    return this.#commits.batch(new Append(this.#commits, input));
  }

  async list(params: AuditListQuery): Promise<AuditPage> {
    const before = params.cursor === undefined ? null : decodeAuditCursor(params.cursor);
    if (params.cursor !== undefined && before === null) throw invalidCursor();
    try {
      const prefix = this.#prefix;
      const selector: Deno.KvListSelector = before === null
        ? { prefix }
        : { prefix, end: [...prefix, before] };
      const entries: AuditEntry[] = [];
      let more = false;
      for await (const item of this.#commits.kv.list<AuditEntry>(selector, { reverse: true })) {
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
        nextCursor: more && last !== undefined ? encodeAuditCursor(last.seq) : null,
      };
    } catch (error) {
      throw storeFailure(error);
    }
  }
}
