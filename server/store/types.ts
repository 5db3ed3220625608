/**
 * The one storage interface the service talks to: a {@linkcode Store} is its parts, one per kind
 * of record, and callers use the part they need (`store.principals.findByDigest(digest)`,
 * `store.runs.get(runId)`, `store.audit.append(entry)`). Every backend (Deno KV in `kv/`,
 * PostgreSQL in `postgres/`) implements every part and passes the contract suite in
 * `tests/store/contract.ts`, part by part.
 *
 * Each part's interface, and the records only it uses, is in its own file: `principals.ts`,
 * `idempotency.ts`, `authority.ts`, `leases.ts`, `runs.ts`, `audit.ts`, `events.ts`,
 * `answers.ts`, `trust_policies.ts`, `activity.ts`, `notifications.ts`, `spend.ts`. The records
 * several parts or the wire share are in `run_types.ts`, `answer_types.ts` and
 * `run_event_types.ts`. This module re-exports them all.
 *
 * Nothing secret is stored in plaintext: principals are found by the SHA-256 digest of their
 * bearer, and idempotency records hold a digest of the request body. All records live under a
 * namespace derived from the bootstrap credential, so rotating the bootstrap (`init --force`)
 * orphans every record minted under the old one.
 *
 * @module
 */
import type { PrincipalStore } from "./principals.ts";
import type { IdempotencyStore } from "./idempotency.ts";
import type { AuthorityStore } from "./authority.ts";
import type { AuthorityLeaseStore } from "./leases.ts";
import type { RunStore } from "./runs.ts";
import type { AuditStore } from "./audit.ts";
import type { RunEventStore } from "./events.ts";
import type { AnswerStore } from "./answers.ts";
import type { TrustPolicyStore } from "./trust_policies.ts";
import type { ActivityStore } from "./activity.ts";
import type { NotificationStore } from "./notifications.ts";
import type { SpendStore } from "./spend.ts";

export * from "./principals.ts";
export * from "./idempotency.ts";
export * from "./authority.ts";
export * from "./leases.ts";
export * from "./runs.ts";
export * from "./audit.ts";
export * from "./events.ts";
export * from "./answers.ts";
export * from "./trust_policies.ts";
export * from "./activity.ts";
export * from "./notifications.ts";
export * from "./spend.ts";
export * from "./run_types.ts";
export * from "./answer_types.ts";
export * from "./run_event_types.ts";

/** The parts of a store, by name. */
export interface StoreParts {
  /** Principals, found by bearer digest; creation and revocation. */
  readonly principals: PrincipalStore;
  /** Idempotency keys: claim, complete, release, purge. */
  readonly idempotency: IdempotencyStore;
  /** The claiming namespace, the authority epoch, retired namespaces. */
  readonly authority: AuthorityStore;
  /** The authority leases of the processes answering from memory, and their wake-ups. */
  readonly leases: AuthorityLeaseStore;
  /** Run records and active-run slots. */
  readonly runs: RunStore;
  /** The audit log. */
  readonly audit: AuditStore;
  /** Run event logs, tail leases and their wake-ups. */
  readonly events: RunEventStore;
  /** Tool answers and webhook delivery ids. */
  readonly answers: AnswerStore;
  /** Trust policies, and the ID tokens exchanged under them. */
  readonly trustPolicies: TrustPolicyStore;
  /** The activity log: changes across runs, for the activity feed and the inbox. */
  readonly activity: ActivityStore;
  /** Notification webhooks: subscriptions, their deliveries, the dispatch cursor. */
  readonly notifications: NotificationStore;
  /** Spend ledgers, holds, settlements and usage entries. */
  readonly spend: SpendStore;
}

/** The name of one part of a store. */
export type StorePartName = keyof StoreParts;

/**
 * Every part name, in the order of {@linkcode StoreParts}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { STORE_PARTS } from "./types.ts";
 * assert.equal(STORE_PARTS.length, 12);
 * assert.ok(STORE_PARTS.includes("principals"));
 * ```
 */
export const STORE_PARTS: readonly StorePartName[] = Object.freeze(
  [
    "principals",
    "idempotency",
    "authority",
    "leases",
    "runs",
    "audit",
    "events",
    "answers",
    "trustPolicies",
    "activity",
    "notifications",
    "spend",
  ] as const,
);

/**
 * The store of one namespace: its parts, the backend's name and `close`. Every part is safe under
 * concurrent calls from several processes sharing the backend: creations and claims are atomic
 * (unique constraints or version checks), never read-then-write. Every call that cannot reach the
 * storage fails with {@linkcode StoreUnavailableError}.
 */
export interface Store extends StoreParts {
  /** Backend name for logs, such as `kv` or `postgres`. */
  readonly kind: string;
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
