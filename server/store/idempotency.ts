/**
 * The idempotency part of the store (`store.idempotency`): one record per idempotency key scope,
 * holding the digest of the request body and, once finished, the recorded response. Nothing secret
 * is kept: the body is a digest, and a recorded response never holds a bearer.
 *
 * A key goes claim → complete (or release). A handler whose effect is itself a store write
 * records the response in that write instead: `PrincipalStore.create` takes an
 * {@linkcode IdempotencyCompletion} or an {@linkcode IdempotencyRecording} and writes it in the
 * same atomic step as the principal, and `RunStore.create` a completion with the run.
 *
 * A handler whose effect lies outside the store (a message sent to the provider) marks its claim
 * `begun` right before it ({@linkcode IdempotencyStore.begin}): a begun claim is never taken over
 * when its lease runs out, so a retry with the key can never repeat the effect. If the handler
 * ends without an answer to record (a store failure after the effect, a crash), the key stays
 * `unsettled` ({@linkcode IdempotencyStore.abandon}) until it expires: the effect happened at
 * most once, and the caller is told so rather than given a second one.
 *
 * @module
 */

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
  | { state: "completed"; response: StoredResponse }
  /**
   * The key's request began its effect and ended without an answer recorded (its lease is over):
   * the effect may have happened, and is never tried again under this key.
   */
  | { state: "unsettled" };

/** What an already used idempotency key holds: the claim states other than `claimed`. */
export type IdempotencyKeyUsed = Exclude<IdempotencyClaim, { state: "claimed" }>;

/** Parameters of {@linkcode IdempotencyStore.claim}. */
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
 * creation: `PrincipalStore.create` writes the principal and the finished answer under the key in
 * one atomic step, or writes nothing when the key is already used.
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

/** The idempotency records of the store's namespace. Every step is atomic across replicas. */
export interface IdempotencyStore {
  /** Claims a key atomically: of concurrent claims on one key, exactly one is `claimed`. */
  claim(params: IdempotencyClaimParams): Promise<IdempotencyClaim>;
  /**
   * Marks a claimed key `begun`: its request is about to do what must not be done twice. From
   * then on the claim is never taken over: while its lease holds a claim on the key is
   * `inFlight`, after that `unsettled`, until it is completed. Returns false, writing nothing,
   * when `token` no longer owns the claim.
   */
  begin(scope: string, token: string): Promise<boolean>;
  /** Records the response of a claimed key (begun or not). Ignored when the token no longer owns the claim. */
  complete(completion: IdempotencyCompletion): Promise<void>;
  /**
   * What the key holds for a request of `requestDigest` at `now`, without writing anything: its
   * used state, or null when the key counts as unused. For a route whose refusals are not
   * recorded (the token exchange: an anonymous caller must not make the store write), so that a
   * refused retry still gets a recorded answer of the same request.
   */
  lookup(scope: string, requestDigest: string, now: number): Promise<IdempotencyKeyUsed | null>;
  /**
   * Drops an unfinished claim so the request can be retried (5xx, shared-check failures). A begun
   * claim is dropped too: release one only when its effect surely did not happen.
   */
  release(scope: string, token: string): Promise<void>;
  /**
   * Ends the lease of a begun claim `token` owns, whose request ended without an answer to record
   * while its effect may have happened: from `now` on a claim on the key is `unsettled`. A no-op
   * for a claim that is not begun or not owned.
   */
  abandon(scope: string, token: string, now: number): Promise<void>;
  /** Deletes records that expired before `now`; returns how many went. */
  purgeExpired(now: number): Promise<number>;
}

/**
 * Raised by `PrincipalStore.create` when the idempotency claim it should complete was taken over
 * (its lease ran out) before the principal was created; nothing was written.
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
   * import { IdempotencyLeaseLostError } from "./idempotency.ts";
   * const error = new IdempotencyLeaseLostError("The idempotency claim was taken over");
   * assert.equal(error.name, "IdempotencyLeaseLostError");
   * ```
   */
  constructor(message: string) {
    super(message);
    this.name = "IdempotencyLeaseLostError";
  }
}
