/**
 * The principals part of the store (`store.principals`): the principals a bootstrap issued, found
 * by the SHA-256 digest of their bearer (the bearer itself is never stored).
 *
 * Two of its writes carry another part's record into the same atomic step, so that neither can be
 * stored without the other:
 *
 * - {@linkcode PrincipalStore.create} takes the idempotency record of the request (an
 *   {@linkcode IdempotencyCompletion} of a claimed key, or an {@linkcode IdempotencyRecording}
 *   under a key nobody claimed) and the creation's {@linkcode AuditEntryInput};
 * - {@linkcode PrincipalStore.revoke} takes the revocation's audit entry, and moves the authority
 *   state's epoch (see `authority.ts`) in the same step.
 *
 * The principals part writes those records through the layout the idempotency, audit and
 * authority parts of its backend own; it never defines their keys or rows itself.
 *
 * @module
 */
import type { AuditEntryInput } from "./run_types.ts";
import type {
  IdempotencyCompletion,
  IdempotencyKeyUsed,
  IdempotencyRecording,
} from "./idempotency.ts";
import type { PurgeOptions } from "./authority.ts";

import type { Capability, MonetaryAmount, PrincipalBudget } from "../../wire/mod.ts";

export { CAPABILITIES, type Capability } from "../../wire/mod.ts";

/** A principal as the store keeps it: no bearer, only its digest. */
export interface PrincipalRecord {
  /** Lower-case UUID. */
  principalId: string;
  /** Lower-case hex SHA-256 of the bearer. */
  bearerDigest: string;
  /** Granted capabilities. */
  capabilities: readonly Capability[];
  /** RFC 3339 expiry. */
  expiresAt: string;
  /** Principal id of the issuer. */
  issuerId: string;
  /** RFC 3339 creation time. */
  createdAt: string;
  /** RFC 3339 revocation time, or null while valid. */
  revokedAt: string | null;
  /**
   * Random per-principal nonce (base64url). The bearer is derived from a key that never touches
   * the store and this nonce, so an idempotent replay can rebuild the same bearer.
   */
  nonce: string;
  /**
   * Agent ids the principal may start runs on; absent or null: any. Records written before run
   * policies existed have neither field.
   */
  agentIds?: readonly string[] | null;
  /**
   * Environment ids its runs may run in; absent or null: any. Records written before the
   * resource policy existed have none of the five resource lists.
   */
  environmentIds?: readonly string[] | null;
  /** Vault ids its runs may attach; absent: none (see `runs/policy.ts`). */
  vaultIds?: readonly string[];
  /** Memory store ids its runs may mount; absent: none. */
  memoryStoreIds?: readonly string[];
  /** GitHub repositories (`owner/name`, lower case) its runs may mount; absent: none. */
  repositories?: readonly string[];
  /** File ids its runs may mount; absent: none. */
  fileIds?: readonly string[];
  /** Most runs the principal may have active at once; absent: the default. */
  maxActiveRuns?: number;
  /** Whether its runs may override the agent; absent: not. */
  allowAgentOverrides?: boolean;
  /** The most its runs may spend in each period; absent: no budget (`runs/spend.ts`). */
  budget?: PrincipalBudget;
  /** The most one of its runs may spend; absent: no such cap. */
  maxRunCost?: MonetaryAmount;
  /** The longest active stretch of one of its runs, in seconds; absent: no such limit. */
  maxRunSeconds?: number;
  /** Its name for people, when it was given one. */
  name?: string;
  /** Its metadata pairs, when it was given some. */
  metadata?: Readonly<Record<string, string>>;
}

/** Result of {@linkcode PrincipalStore.create}. */
export type CreatePrincipalResult = "created" | "exists";

/**
 * Result of {@linkcode PrincipalStore.create} with an {@linkcode IdempotencyRecording}: created
 * (and recorded), the id or digest taken (nothing written, the key left as it was), or the key
 * already used (nothing written).
 */
export type RecordedCreateResult = CreatePrincipalResult | IdempotencyKeyUsed;

/** Result of {@linkcode PrincipalStore.revoke}. */
export type RevokePrincipalResult = "revoked" | "alreadyRevoked" | "notFound";

/** Options of {@linkcode PrincipalStore.page}. */
export interface PrincipalPageOptions {
  /** Most records in the page (at least 1). */
  limit: number;
  /** Start after this position (the `next` of the previous page); omitted: the first page. */
  after?: PrincipalPosition;
}

/** A position in the list of principals: oldest first by `createdAt`, then `principalId`. */
export interface PrincipalPosition {
  /** RFC 3339 creation time of the last record seen. */
  createdAt: string;
  /** Its id. */
  principalId: string;
}

/** One page of principals. */
export interface PrincipalRecordPage {
  /** Up to `limit` records, oldest first. */
  records: PrincipalRecord[];
  /** Where the next page starts, or null after the last page. */
  next: PrincipalPosition | null;
}

/**
 * The principals of the store's namespace. Creation and revocation are atomic (unique
 * constraints or version checks), never read-then-write, so replicas racing on one id agree.
 */
export interface PrincipalStore {
  /** Finds a principal by bearer digest (revoked ones included; the caller checks). */
  findByDigest(bearerDigest: string): Promise<PrincipalRecord | null>;
  /** Reads one principal by id. */
  get(principalId: string): Promise<PrincipalRecord | null>;
  /** Lists every principal of the namespace, oldest first (by `createdAt`, then id). */
  list(): Promise<PrincipalRecord[]>;
  /** One page of the namespace's principals, in the order of {@linkcode PrincipalStore.list}. */
  page(options: PrincipalPageOptions): Promise<PrincipalRecordPage>;
  /**
   * Creates a principal unless the id (or digest) exists. When `completion` is given, the
   * idempotency claim it names is completed in the same atomic step, so an acknowledged creation
   * is never left with an unfinished claim; when `completion.token` no longer owns the claim (its
   * lease ran out and another request took it over), nothing is written and
   * `IdempotencyLeaseLostError` is thrown. `audit`, when given, is appended to the audit log in
   * the same atomic step: a creation and its audit entry are stored both or neither.
   */
  create(
    record: PrincipalRecord,
    completion?: IdempotencyCompletion,
    audit?: AuditEntryInput,
  ): Promise<CreatePrincipalResult>;
  /**
   * Creates a principal and records `recording.response` under an unclaimed idempotency key in
   * ONE atomic step, unless the key is used (a live record or a claim holding it: its state is
   * returned) or the id or digest exists (`exists`, the key left as it was); either way nothing
   * is written then. A record that expired, or an unfinished claim of the same body whose lease
   * ran out, counts as unused. Of concurrent calls on one key or one id, exactly one creates.
   * `audit`, when given, is appended in the same atomic step (both or neither).
   */
  create(
    record: PrincipalRecord,
    recording: IdempotencyRecording,
    audit?: AuditEntryInput,
  ): Promise<RecordedCreateResult>;
  /**
   * Marks a principal revoked at `revokedAt` (RFC 3339). Idempotent. When it revokes, the
   * namespace's authority epoch moves and `audit` is appended, both in the same atomic step (a
   * revocation is never unaudited, and every lease holder learns of it); otherwise nothing is
   * written.
   */
  revoke(
    principalId: string,
    revokedAt: string,
    audit?: AuditEntryInput,
  ): Promise<RevokePrincipalResult>;
  /**
   * Deletes this namespace's principals revoked or expired more than `retentionMs` before `now`;
   * returns how many went. Nothing else goes (retired namespaces: `AuthorityStore.purgeRetired`).
   */
  purgeRetired(options: PurgeOptions): Promise<number>;
}
