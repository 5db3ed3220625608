/**
 * The one storage interface the service talks to. Every backend (Deno KV, PostgreSQL) implements
 * it and passes the contract suite in `tests/store/contract.ts`.
 *
 * Nothing secret is stored in plaintext: principals are found by the SHA-256 digest of their
 * bearer, and idempotency records hold a digest of the request body. All records live under a
 * namespace derived from the bootstrap credential, so rotating the bootstrap (`init --force`)
 * orphans every record minted under the old one.
 *
 * @module
 */
import type { Capability } from "../../wire/mod.ts";
import type { AuditEntryInput, RunStore } from "./run_types.ts";
import type { AnswerStore } from "./answer_types.ts";
import type { RunEventStore } from "./run_event_types.ts";

export * from "./run_types.ts";
export * from "./answer_types.ts";
export * from "./run_event_types.ts";

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
  /** Most runs the principal may have active at once; absent: the default. */
  maxActiveRuns?: number;
}

/** A recorded handler response, replayed for a repeated idempotency key. */
export interface StoredResponse {
  /** HTTP status. */
  status: number;
  /** Response body text (JSON). Never holds a bearer: see the principals route. */
  body: string;
}

/** What a claim on an idempotency key found. */
export type IdempotencyClaim =
  /** The caller owns the key now and must complete or release it with `token`. */
  | { state: "claimed"; token: string }
  /** Another request holds the key and has not finished. */
  | { state: "inFlight" }
  /** The key was used with a different request body. */
  | { state: "conflict" }
  /** The key finished earlier with this response. */
  | { state: "completed"; response: StoredResponse };

/** Parameters of {@linkcode Store.claimIdempotency}. */
export interface IdempotencyClaimParams {
  /** Opaque scope key: a digest over (principal, method, path, key). */
  scope: string;
  /** Lower-case hex SHA-256 of the raw request body. */
  requestDigest: string;
  /** Current time, ms since epoch. */
  now: number;
  /**
   * How long an unfinished claim blocks others, in ms; after that a new claim takes it over
   * (the first holder crashed).
   */
  leaseMs: number;
  /** When the record may be purged, ms since epoch (24 h after the claim). */
  expiresAt: number;
}

/** Completion of a claimed idempotency key, written atomically with the handler's effect. */
export interface IdempotencyCompletion {
  /** Scope of the claim. */
  scope: string;
  /** Token returned by the claim. */
  token: string;
  /** The response to record. */
  response: StoredResponse;
  /** When the record may be purged, ms since epoch. */
  expiresAt: number;
}

/**
 * An idempotency key that no request claimed, to be recorded together with a principal's
 * creation: {@linkcode Store.createPrincipal} writes the principal and the finished answer under
 * the key in one atomic step, or writes nothing when the key is already used.
 */
export interface IdempotencyRecording {
  /** Opaque scope key: a digest over (principal, method, path, key). */
  scope: string;
  /** Lower-case hex SHA-256 of the raw request body. */
  requestDigest: string;
  /** Current time, ms since epoch: records that expired before it count as unused. */
  now: number;
  /** The answer to record when the principal is created. */
  response: StoredResponse;
  /** When the record may be purged, ms since epoch. */
  expiresAt: number;
}

/** What an already used idempotency key holds: the claim states other than `claimed`. */
export type IdempotencyKeyUsed = Exclude<IdempotencyClaim, { state: "claimed" }>;

/** Result of {@linkcode Store.createPrincipal}. */
export type CreatePrincipalResult = "created" | "exists";

/**
 * Result of {@linkcode Store.createPrincipal} with an {@linkcode IdempotencyRecording}: created
 * (and recorded), the id or digest taken (nothing written, the key left as it was), or the key
 * already used (nothing written).
 */
export type RecordedCreateResult = CreatePrincipalResult | IdempotencyKeyUsed;

/** Result of {@linkcode Store.revokePrincipal}. */
export type RevokePrincipalResult = "revoked" | "alreadyRevoked" | "notFound";

/**
 * What a process must read before it answers an authenticated request, so that a revocation or
 * a bootstrap rotation made by any other process on the store holds for it at once.
 */
export interface AuthorityState {
  /**
   * False once another bootstrap claimed the store ({@linkcode Store.claimAuthority} with another
   * namespace): this process runs with a rotated-away bootstrap and must refuse every bearer.
   */
  readonly current: boolean;
  /** Opaque; changes whenever a principal of this namespace is revoked or the store is claimed. */
  readonly epoch: string;
}

/** Options of {@linkcode Store.purgeRetired}. */
export interface PurgeOptions {
  /** Current time, ms since epoch. */
  now: number;
  /** How long revoked and expired principals and retired namespaces are kept, in ms. */
  retentionMs: number;
}

/** What {@linkcode Store.purgeRetired} deleted. */
export interface PurgeReport {
  /** Revoked or expired principals of this namespace deleted. */
  principals: number;
  /** Retired namespaces whose every record was deleted. */
  namespaces: number;
}

/** Options of {@linkcode Store.listPrincipalPage}. */
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
 * Raised by {@linkcode Store.claimAuthority} when the namespace was claimed before and then
 * replaced by another one: the bootstrap it derives from was rotated away from.
 */
export class SupersededNamespaceError extends Error {
  /** Stable error code. */
  readonly code = "bootstrapSuperseded" as const;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { SupersededNamespaceError } from "./types.ts";
   * assert.equal(new SupersededNamespaceError("rotated").code, "bootstrapSuperseded");
   * ```
   */
  constructor(message: string) {
    super(message);
    this.name = "SupersededNamespaceError";
  }
}

/**
 * The storage interface (principals, idempotency, authority, and the run gateway's
 * {@linkcode RunStore} part). Implementations must be safe under concurrent calls from several
 * processes sharing the backend: creation and claims are atomic (unique constraints or atomic
 * checks), never read-then-write.
 */
export interface Store extends RunStore, AnswerStore, RunEventStore {
  /** Backend name for logs, such as `kv` or `postgres`. */
  readonly kind: string;
  /** Finds a principal by bearer digest (revoked ones included; the caller checks). */
  findPrincipalByDigest(bearerDigest: string): Promise<PrincipalRecord | null>;
  /** Reads one principal by id. */
  getPrincipal(principalId: string): Promise<PrincipalRecord | null>;
  /** Lists every principal of the namespace, oldest first. */
  listPrincipals(): Promise<PrincipalRecord[]>;
  /**
   * Creates a principal unless the id (or digest) exists. When `completion` is given, the
   * idempotency record is completed in the same atomic step, so an acknowledged creation is
   * never left with an unfinished claim; when `completion.token` no longer owns the claim (its
   * lease ran out and another request took it over), nothing is written and
   * {@linkcode IdempotencyLeaseLostError} is thrown. `audit`, when given, is appended to the
   * audit log in the same atomic step: a creation and its audit entry are stored both or neither.
   */
  createPrincipal(
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
  createPrincipal(
    record: PrincipalRecord,
    recording: IdempotencyRecording,
    audit?: AuditEntryInput,
  ): Promise<RecordedCreateResult>;
  /**
   * Marks a principal revoked at `revokedAt` (RFC 3339). Idempotent. When it revokes, `audit` is
   * appended in the same atomic step (a revocation is never unaudited); otherwise nothing is.
   */
  revokePrincipal(
    principalId: string,
    revokedAt: string,
    audit?: AuditEntryInput,
  ): Promise<RevokePrincipalResult>;
  /** Claims an idempotency key atomically. */
  claimIdempotency(params: IdempotencyClaimParams): Promise<IdempotencyClaim>;
  /** Records the response of a claimed key. Ignored when the token no longer owns the claim. */
  completeIdempotency(completion: IdempotencyCompletion): Promise<void>;
  /** Drops an unfinished claim so the request can be retried (5xx, shared-check failures). */
  releaseIdempotency(scope: string, token: string): Promise<void>;
  /** Deletes idempotency records that expired before `now`; returns how many went. */
  deleteExpired(now: number): Promise<number>;
  // -- Cross-process authority, paging and retention (one concern: what every replica agrees on).
  /**
   * Declares this namespace the store's current one: a process started with a rotated bootstrap
   * takes the store over, and the namespace it replaced is retired (its processes then see
   * `current: false`). Throws {@linkcode SupersededNamespaceError} when this namespace was
   * itself retired before, so an old bootstrap cannot take the store back.
   */
  claimAuthority(now: number): Promise<void>;
  /**
   * Reads the authority state in one round trip. A store never claimed counts as current.
   * Every authenticated request reads it first (see `server/authenticator.ts`).
   */
  readAuthorityState(): Promise<AuthorityState>;
  /**
   * A marker read synchronously, without a round trip, that is equal on two calls only when no
   * process committed anything to the store in between; null when the backend cannot tell that
   * without a round trip (remote and in-memory KV, PostgreSQL). While it stays equal, an
   * authority state read after the first call is still current, and the authenticator does not
   * read it again.
   */
  changeMarker(): number | null;
  /** One page of the namespace's principals, oldest first (by `createdAt`, then id). */
  listPrincipalPage(options: PrincipalPageOptions): Promise<PrincipalRecordPage>;
  /**
   * Deletes this namespace's principals revoked or expired more than `retentionMs` ago, and
   * every record of a namespace retired more than `retentionMs` ago. A namespace other than the
   * current one that was never retired counts as retired from this call on. Nothing else goes.
   */
  purgeRetired(options: PurgeOptions): Promise<PurgeReport>;
  /** Releases connections and files. */
  close(): Promise<void>;
}

/** Raised by a backend that cannot reach its storage; the server answers 503 `storeUnavailable`. */
export class StoreUnavailableError extends Error {
  /** Stable error code. */
  readonly code = "storeUnavailable" as const;
  /**
   * Creates the error; `message` must not contain connection strings or passwords.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { StoreUnavailableError } from "./types.ts";
   * const error = new StoreUnavailableError("database unreachable");
   * assert.equal(error.name, "StoreUnavailableError");
   * ```
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "StoreUnavailableError";
  }
}

/**
 * Raised by {@linkcode Store.createPrincipal} when the idempotency claim it should complete was
 * taken over (its lease ran out) before the principal was created; nothing was written.
 */
export class IdempotencyLeaseLostError extends Error {
  /** Stable error code. */
  readonly code = "idempotencyLeaseLost" as const;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { IdempotencyLeaseLostError } from "./types.ts";
   * const error = new IdempotencyLeaseLostError("The idempotency claim was taken over");
   * assert.equal(error.name, "IdempotencyLeaseLostError");
   * ```
   */
  constructor(message: string) {
    super(message);
    this.name = "IdempotencyLeaseLostError";
  }
}
