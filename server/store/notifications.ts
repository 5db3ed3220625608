/**
 * The notifications part of the store (`store.notifications`): webhook subscriptions, their
 * deliveries, and the one cursor that says how far the activity log has been turned into
 * deliveries.
 *
 * - **Subscriptions** hold their signing secrets encrypted (`server/notifications/secrets.ts`:
 *   the store never sees one in the clear) and take one of a principal's slots, so a principal
 *   never holds more than its limit, whichever replicas create at once.
 * - **Deliveries** are created once per (subscription, activity entry): their id is derived from
 *   both, and creating an id that exists writes nothing, so replicas that turn the same entries
 *   into deliveries at once create each once. A subscription holds at most a bound of pending
 *   deliveries (a creation past it is skipped; under replicas creating at once, by a batch at
 *   most).
 * - **One sender at a time**: a replica takes a due delivery with a lease
 *   ({@linkcode NotificationStore.claimDue}) and settles it only while it holds the lease
 *   ({@linkcode NotificationStore.settle}); a lease that lapsed (its replica died mid-send) is
 *   taken again, so a delivery goes out at least once.
 * - **Fair claims**: a subscription has at most one delivery under a live lease, and an owner at
 *   most a bound of them, whichever replicas claim at once: one owner's slow targets hold at most
 *   that many of the senders' slots, and a subscription's deliveries go out one at a time.
 * - **The failure count** of a subscription moves with each settled attempt, in one atomic step
 *   that disables the subscription at the limit ({@linkcode NotificationStore.recordOutcome}).
 *
 * @module
 */
import type {
  NotificationEvent,
  WebhookDelivery,
  WebhookDeliveryState,
  WebhookSubscription,
} from "../../wire/mod.ts";

/** A signing secret as stored: encrypted (AES-256-GCM), with when it stops signing. */
export interface EncryptedSecret {
  /** The nonce, base64 (12 bytes). */
  iv: string;
  /** The encrypted secret, base64 (with its tag). */
  ciphertext: string;
  /** When it stops signing, ms since the epoch; null: the current secret. */
  expiresAt: number | null;
}

/** A subscription as stored. */
export interface StoredSubscription extends WebhookSubscription {
  /** Its signing secrets, encrypted: the current one first, then the previous during an overlap. */
  secrets: EncryptedSecret[];
  /** Only activity entries after this seq (the log's seq when it was created) are delivered. */
  startSeq: number;
}

/** A delivery as stored. */
export interface StoredDelivery extends WebhookDelivery {
  /** The subscription's owner. */
  principalId: string;
  /** The activity entry it tells of. */
  activitySeq: number;
  /** The body every attempt sends. */
  body: string;
  /** When it was created, ms since the epoch (retries stop 24 h later). */
  createdMs: number;
  /** When its next attempt is due, ms since the epoch (meaningful while `pending`). */
  nextAttemptMs: number;
  /** The replica sending it now, if any. */
  leaseHolder?: string;
  /** Until when that replica holds it, ms since the epoch. */
  leaseUntil?: number;
}

/** Parameters of {@linkcode NotificationStore.claimDue}. */
export interface ClaimDueParams {
  /** Current time, ms since the epoch: deliveries due by then are taken. */
  now: number;
  /** The replica taking them. */
  holder: string;
  /** How long it holds each, in ms. */
  leaseMs: number;
  /** Most deliveries taken. */
  limit: number;
  /**
   * Most deliveries of one owner (subscriptions' `principalId`) under a live lease at once,
   * counting those leased before this claim by any holder.
   */
  perOwner: number;
  /**
   * Owners none of whose deliveries are taken: those the claimer already has as many attempts
   * in flight for as it allows. An attempt whose subscription was deleted mid-flight holds no
   * lease (its delivery is gone), yet it holds the claimer's slot until it ends.
   */
  skipOwners?: readonly string[];
}

/** A page of a list. */
export interface StoredPage<T> {
  /** The items. */
  items: T[];
  /** The cursor of the next page, or null. */
  nextCursor: string | null;
}

/** The notifications of the store's namespace. */
export interface NotificationStore {
  /**
   * Records a subscription in one of its owner's `maxPerPrincipal` slots; false (nothing
   * written) when every slot is taken.
   */
  createSubscription(subscription: StoredSubscription, maxPerPrincipal: number): Promise<boolean>;
  /** Reads one subscription. */
  getSubscription(subscriptionId: string): Promise<StoredSubscription | null>;
  /** Lists subscriptions oldest first (one principal's, or every one), in cursor pages. */
  listSubscriptions(params: {
    principalId?: string;
    limit: number;
    cursor?: string;
  }): Promise<StoredPage<StoredSubscription>>;
  /**
   * Replaces a subscription while it still equals `expected` (a compare-and-set); false when
   * another writer changed it or it is gone.
   */
  updateSubscription(next: StoredSubscription, expected: StoredSubscription): Promise<boolean>;
  /**
   * Counts one settled attempt in one atomic step: a success sets the failures in a row to 0, a
   * failure adds one and, reaching `disableAfter`, disables the subscription (`disabledAt: at`).
   * Answers whether this very call disabled it; null for a subscription that is gone.
   */
  recordOutcome(
    subscriptionId: string,
    ok: boolean,
    at: string,
    disableAfter: number,
  ): Promise<{ disabled: boolean } | null>;
  /** Deletes a subscription, its slot and its deliveries; false when it was gone. */
  deleteSubscription(subscriptionId: string): Promise<boolean>;
  /**
   * Creates the deliveries whose id does not exist yet, skipping those of a subscription that
   * holds `maxPending` pending deliveries already; answers how many it created.
   */
  enqueue(deliveries: readonly StoredDelivery[], maxPending: number): Promise<number>;
  /**
   * Takes up to `limit` pending deliveries due by `now` that no live lease holds, leasing each
   * to `holder` until `now + leaseMs`, earliest due first, and fairly: never a delivery of a
   * subscription that has one under a live lease (leased by this claim or before it, by any
   * holder), none of an owner who has `perOwner` under live leases, and none of `skipOwners`'.
   * Claims on several handles at once keep both bounds. A lease ends when its delivery is
   * settled, redelivered or deleted, or when it lapses.
   */
  claimDue(params: ClaimDueParams): Promise<StoredDelivery[]>;
  /**
   * Writes a delivery after an attempt (its state, attempts and next attempt) and drops its
   * lease, only while `holder` holds the lease; false otherwise (it wrote nothing).
   */
  settle(delivery: StoredDelivery, holder: string): Promise<boolean>;
  /** Reads one delivery of a subscription. */
  getDelivery(subscriptionId: string, deliveryId: string): Promise<StoredDelivery | null>;
  /** Lists a subscription's deliveries newest first, in cursor pages. */
  listDeliveries(
    subscriptionId: string,
    params: { limit: number; cursor?: string },
  ): Promise<StoredPage<StoredDelivery>>;
  /**
   * Makes a delivery pending again, due at `now`, and drops its lease: the next sender sends it
   * once more, with the same id. Null when it is gone.
   */
  redeliver(
    subscriptionId: string,
    deliveryId: string,
    now: number,
  ): Promise<StoredDelivery | null>;
  /** The activity seq up to which entries were turned into deliveries (0 at first). */
  readCursor(): Promise<number>;
  /** Moves the cursor from `from` to `to` while it still stands at `from`; whether it moved. */
  advanceCursor(from: number, to: number): Promise<boolean>;
  /** Deletes delivered and failed deliveries created before `before` (ms); answers how many. */
  purge(before: number): Promise<number>;
}

/** The events a delivery can tell of, as stored (the wire's list). */
export type { NotificationEvent, WebhookDeliveryState };

/**
 * The public form of a stored subscription: the secrets and the start seq left out.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { publicSubscription } from "./notifications.ts";
 * const shown = publicSubscription({
 *   subscriptionId: "sub_1", principalId: "p", url: "https://example.com/hook",
 *   events: ["run.completed"], format: "standard", state: "active", consecutiveFailures: 0,
 *   createdAt: "2026-01-01T00:00:00.000Z", startSeq: 4,
 *   secrets: [{ iv: "x", ciphertext: "y", expiresAt: null }],
 * });
 * assert.equal("secrets" in shown, false);
 * assert.equal("startSeq" in shown, false);
 * ```
 */
export function publicSubscription(stored: StoredSubscription): WebhookSubscription {
  const { secrets: _secrets, startSeq: _start, ...rest } = stored;
  return rest;
}

/**
 * The public form of a stored delivery: its body, lease and times in ms left out.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { publicDelivery } from "./notifications.ts";
 * const shown = publicDelivery({
 *   deliveryId: "msg_1", subscriptionId: "sub_1", eventType: "run.completed", runId: "sesn_1",
 *   createdAt: "2026-01-01T00:00:00.000Z", state: "pending", attempts: [], principalId: "p",
 *   activitySeq: 3, body: "{}", createdMs: 0, nextAttemptMs: 0, leaseHolder: "h",
 * });
 * assert.deepEqual(Object.keys(shown).sort(), [
 *   "attempts", "createdAt", "deliveryId", "eventType", "runId", "state", "subscriptionId",
 * ]);
 * ```
 */
export function publicDelivery(stored: StoredDelivery): WebhookDelivery {
  const {
    principalId: _owner,
    activitySeq: _seq,
    body: _body,
    createdMs: _created,
    nextAttemptMs: _next,
    leaseHolder: _holder,
    leaseUntil: _until,
    ...rest
  } = stored;
  return rest;
}
