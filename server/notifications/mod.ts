/**
 * Notification webhooks: signed HTTP deliveries when runs wait for an answer, end, or get an
 * answer. The pieces, one file each:
 *
 * - `targets.ts`: where a delivery may go (public addresses only, unless allowed), checked at
 *   creation and before every attempt;
 * - `secrets.ts`: signing secrets, sealed under a key derived from the authority key;
 * - `payload.ts`: which activity entries are events, and the `standard` and `slack` bodies;
 * - `subscriptions.ts`: the service behind the routes;
 * - `dispatcher.ts`: the activity log turned into deliveries, on every replica, each once;
 * - `sender.ts`: due deliveries sent by one replica at a time, signed, retried for 24 h, and the
 *   subscription disabled after 20 failures in a row.
 *
 * {@linkcode Notifications} assembles them for one server.
 *
 * @module
 */
import type { RuntimeLogger } from "../log.ts";
import { appendAudit } from "../runs/audit.ts";
import type { Store } from "../store/types.ts";
import { NotificationDispatcher } from "./dispatcher.ts";
import { SecretBox } from "./secrets.ts";
import { NotificationSender, RETRY_DELAYS_MS } from "./sender.ts";
import { DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL, Subscriptions } from "./subscriptions.ts";
import { type ResolveHost, resolveWithDns } from "./targets.ts";

export { DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL, Subscriptions } from "./subscriptions.ts";
export type { SubscriptionCall } from "./subscriptions.ts";

/** Default pending deliveries one subscription may hold. */
export const DEFAULT_MAX_PENDING_DELIVERIES = 1_000;
/**
 * Default time between the passes of the dispatcher and the sender when nothing wakes them, in
 * ms: the store's watch wakes the dispatcher when the activity log grows, and the dispatcher
 * wakes this replica's sender when it created deliveries, so the poll only finds what another
 * replica created (and the retries that came due) and costs an idle replica three store calls
 * each time.
 */
export const NOTIFICATION_POLL_MS = 5_000;

/** The operator's settings of notifications (`serve` settings). */
export interface NotificationSettings {
  /**
   * Whether targets may be loopback, private, link-local or metadata addresses (default false:
   * refused). For tests and local bridges only.
   */
  allowPrivateTargets?: boolean;
  /** Subscriptions one principal may hold (default 10). */
  maxSubscriptionsPerPrincipal?: number;
  /** Pending deliveries one subscription may hold (default 1000); past it, new ones are skipped. */
  maxPendingDeliveries?: number;
}

/** Options of {@linkcode Notifications}. */
export interface NotificationsOptions extends NotificationSettings {
  /** The store. */
  store: Store;
  /** Log sink. */
  logger: RuntimeLogger;
  /** The bootstrap: its authority key seals the secrets, its principal reads every run. */
  bootstrap: { authorityKey: Uint8Array; namespace: string; principalId: string };
  /** The clock, ms since the epoch. */
  now: () => number;
  /** The service's public URL: deliveries link to its console (`<url>/console/`). */
  publicUrl?: string;
  /** Test seams: the DNS lookup, the retry delays, the pass interval, trusted certificates. */
  seams?: {
    resolve?: ResolveHost;
    retryDelaysMs?: readonly number[];
    pollMs?: number;
    caCerts?: readonly string[];
  };
}

/** The notifications of one server: the routes' service, the dispatcher and the sender. */
export class Notifications {
  /** The service behind the routes. */
  readonly subscriptions: Subscriptions;
  readonly #dispatcher: NotificationDispatcher;
  readonly #sender: NotificationSender;

  /** Assembles the pieces; {@linkcode Notifications.start} starts the background work. */
  constructor(options: NotificationsOptions) {
    const { store, logger, now } = options;
    const box = new SecretBox(options.bootstrap.authorityKey, options.bootstrap.namespace);
    const resolve = options.seams?.resolve ?? resolveWithDns;
    const allowPrivateTargets = options.allowPrivateTargets ?? false;
    const pollMs = options.seams?.pollMs ?? NOTIFICATION_POLL_MS;
    this.subscriptions = new Subscriptions({
      store,
      box,
      allowPrivateTargets,
      resolve,
      maxPerPrincipal: options.maxSubscriptionsPerPrincipal ??
        DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL,
      audit: (entry) => appendAudit(store, logger, entry),
    });
    this.#sender = new NotificationSender({
      store,
      logger,
      box,
      now,
      allowPrivateTargets,
      resolve,
      bootstrapPrincipalId: options.bootstrap.principalId,
      retryDelaysMs: options.seams?.retryDelaysMs ?? RETRY_DELAYS_MS,
      pollMs,
      ...(options.seams?.caCerts !== undefined ? { caCerts: [...options.seams.caCerts] } : {}),
    });
    const base = options.publicUrl?.replace(/\/+$/, "");
    this.#dispatcher = new NotificationDispatcher({
      store,
      logger,
      bootstrapPrincipalId: options.bootstrap.principalId,
      now,
      ...(base !== undefined ? { consoleUrl: `${base}/console/` } : {}),
      maxPending: options.maxPendingDeliveries ?? DEFAULT_MAX_PENDING_DELIVERIES,
      pollMs,
      onEnqueued: () => this.#sender.wake(),
    });
  }

  /** Starts dispatching and sending. */
  start(): void {
    this.#dispatcher.start();
    this.#sender.start();
  }

  /** Stops both (passes under way finish). */
  async stop(): Promise<void> {
    await Promise.all([this.#dispatcher.stop(), this.#sender.stop()]);
  }
}
