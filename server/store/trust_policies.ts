/**
 * The trust policies part of the store (`store.trustPolicies`): the namespace's trust policies,
 * by name, and the ID tokens exchanged under them, each remembered by the digest of its issuer
 * and `jti` until it expires, so that no token is exchanged twice on any replica.
 *
 * Like the principals part, its writes carry the records of other parts into their own atomic
 * step:
 *
 * - {@linkcode TrustPolicyStore.create} and {@linkcode TrustPolicyStore.delete} take their audit
 *   entry;
 * - {@linkcode TrustPolicyStore.exchange} creates the principal an exchange issues, with the
 *   token's use, the request's idempotency record and its audit entry, in ONE atomic step that
 *   also checks that the policy is still the one the exchange read. So a token is used at most
 *   once, and a policy deleted (on any replica) before that step issues nothing more.
 *
 * @module
 */
import type { TrustPolicy } from "../../wire/mod.ts";
import type { AuditEntryInput } from "./run_types.ts";
import type { IdempotencyKeyUsed, IdempotencyRecording } from "./idempotency.ts";
import type { PrincipalRecord } from "./principals.ts";

/** A trust policy as the store keeps it: the public policy and its id. */
export interface TrustPolicyRecord extends TrustPolicy {
  /**
   * A random id given at creation: a policy deleted and created again under the same name is
   * another policy, and an exchange that read the first issues nothing under the second.
   */
  policyId: string;
}

/** The use of one ID token, written with the principal its exchange issues. */
export interface TokenUse {
  /** The policy the token was exchanged under. */
  policyName: string;
  /** That policy's {@linkcode TrustPolicyRecord.policyId}, as the exchange read it. */
  policyId: string;
  /** Lower-case hex SHA-256 of the token's issuer and `jti` (the token is never stored). */
  tokenDigest: string;
  /** Until when the use is remembered (the token's expiry and the clock skew), ms. */
  expiresAt: number;
}

/**
 * Result of {@linkcode TrustPolicyStore.exchange}: the principal was created (with the token's
 * use, the recorded answer and the audit entry), or nothing was written because the token was
 * used already (`replayed`), the policy is gone or was replaced (`policyGone`), the principal's
 * id or digest is taken (`exists`), or the idempotency key was used meanwhile (its state).
 */
export type ExchangeResult = "created" | "replayed" | "policyGone" | "exists" | IdempotencyKeyUsed;

/** Options of {@linkcode TrustPolicyStore.page}. */
export interface TrustPolicyPageOptions {
  /** Most records in the page (at least 1). */
  limit: number;
  /** Start after this name (the `next` of the previous page); omitted: the first page. */
  after?: string;
}

/** One page of trust policies. */
export interface TrustPolicyRecordPage {
  /** Up to `limit` records, by name (code unit order). */
  records: TrustPolicyRecord[];
  /** The name the next page starts after, or null after the last page. */
  next: string | null;
}

/**
 * The trust policies of the store's namespace. Creation, deletion and exchange are atomic
 * (unique constraints or version checks), never read-then-write, so replicas racing agree.
 */
export interface TrustPolicyStore {
  /**
   * Creates a policy unless its name exists; `audit`, when given, is appended in the same atomic
   * step (both or neither).
   */
  create(record: TrustPolicyRecord, audit?: AuditEntryInput): Promise<"created" | "exists">;
  /** Reads one policy by name. */
  get(name: string): Promise<TrustPolicyRecord | null>;
  /** One page of the namespace's policies, by name. */
  page(options: TrustPolicyPageOptions): Promise<TrustPolicyRecordPage>;
  /**
   * Deletes a policy; `audit`, when given, is appended in the same atomic step. From then on no
   * exchange under it creates anything, on any replica.
   */
  delete(name: string, audit?: AuditEntryInput): Promise<"deleted" | "notFound">;
  /**
   * Creates `principal` for an exchange of the token `use` names, and records `recording`'s
   * answer under its unclaimed idempotency key, in ONE atomic step that first checks that the
   * token was not used, that the policy named `use.policyName` still has `use.policyId`, that the
   * key is unused (a record that expired, or an unfinished claim of the same body whose lease
   * ran out, counts as unused) and that the principal's id and digest are free; otherwise
   * nothing is written and the result says why. `audit` is appended in the same step. Of
   * concurrent exchanges of one token, on any replicas, exactly one creates.
   */
  exchange(
    principal: PrincipalRecord,
    use: TokenUse,
    recording: IdempotencyRecording,
    audit: AuditEntryInput,
  ): Promise<ExchangeResult>;
  /**
   * Whether a token of this digest was exchanged (and its use not yet purged). A use is kept at
   * least until its `expiresAt`, past which the verifier refuses the token as expired anyway.
   */
  isTokenUsed(tokenDigest: string): Promise<boolean>;
  /** Forgets token uses that expired at or before `now` (ms); returns how many went. */
  purgeTokenUses(now: number): Promise<number>;
}
