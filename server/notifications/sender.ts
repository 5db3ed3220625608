/**
 * Sending deliveries. Every replica runs a sender with 4 slots: a pass claims due deliveries no
 * other replica holds as slots come free (`store.notifications.claimDue`, leased for 60 s), and
 * fairly: at most one delivery of a subscription in flight, and at most 2 of one owner's, across
 * replicas (the store counts the live leases) and at this replica (the pass counts its attempts:
 * one whose subscription was deleted mid-flight holds no lease, yet holds its slot until it
 * ends). So an owner whose targets answer slowly, or never (a tarpit holds an attempt for its
 * 10 s), holds at most 2 slots however many subscriptions it makes, deletes or re-creates, and
 * another owner's delivery takes a free slot at once: a slot that comes free, a wake
 * (the dispatcher created deliveries) or the poll claims again while attempts are under way. For
 * each delivery, in order:
 *
 * 1. reads its subscription: gone or disabled, or its owner revoked or expired since (it would
 *    not get the delivery made now), the delivery fails without an attempt;
 * 2. checks the target again on the addresses its host resolves to now (`targets.ts`) unless
 *    private targets are allowed;
 * 3. opens the subscription's secrets that still sign (the current one, and the previous one
 *    for 24 h after a rotation) and signs the body per Standard Webhooks (`webhook-id` is the
 *    delivery's id on every attempt, `webhook-timestamp` the attempt's second,
 *    `webhook-signature` one `v1,` signature per secret);
 * 4. POSTs it to one of the addresses step 2 checked, never resolving the name again
 *    (`_pinned_post.ts`: a name that answers the check with a public address and the connection
 *    with a private one, DNS rebinding, gets nothing), or through the outbound proxy when
 *    `HTTPS_PROXY`/`HTTP_PROXY` names one (10 s timeout, redirects not followed: a 3xx is a
 *    failure), reading none of the answer's body;
 * 5. settles it while it still holds the lease: a 2xx is `delivered`; otherwise the attempt is
 *    kept (status or error) and the next one is due after a growing delay (5 s, 30 s, 2 min,
 *    10 min, 30 min, 1 h, 2 h, then every 4 h), until 24 h after the delivery was created: then
 *    it is `failed`;
 * 6. counts the outcome on the subscription: a success sets its failures in a row to 0; a failure
 *    adds one, and the 20th in a row disables it, with a `webhook.disabled` audit entry (written
 *    by the one replica whose count disabled it).
 *
 * A replica that dies mid-send leaves its lease to lapse; another replica sends the delivery then
 * (at least once). A pass runs when this replica's dispatcher created deliveries, and every 5 s;
 * it lasts while it has deliveries in flight.
 *
 * @module
 */
import type { RuntimeLogger } from "../log.ts";
import { Passes } from "./_passes.ts";
import { ownerReach } from "./dispatcher.ts";
import { appendAudit } from "../runs/audit.ts";
import type { DeliveryAttempt } from "../../wire/mod.ts";
import type { Store, StoredDelivery, StoredSubscription } from "../store/types.ts";
import type { SecretBox } from "./secrets.ts";
import { type ResolveHost, resolveTarget, TargetRefusedError } from "./targets.ts";

/** The delays between attempts, in ms; the last repeats. */
export const RETRY_DELAYS_MS: readonly number[] = Object.freeze([
  5_000,
  30_000,
  120_000,
  600_000,
  1_800_000,
  3_600_000,
  7_200_000,
  14_400_000,
]);
/** How long a delivery is retried, from its creation, in ms: 24 h. */
export const RETRY_WINDOW_MS = 86_400_000;
/** Failed attempts in a row that disable a subscription. */
export const DISABLE_AFTER_FAILURES = 20;
/** How long one attempt may take, in ms. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** How long a sender holds a delivery, in ms (longer than an attempt). */
const LEASE_MS = 60_000;
/** Attempts a replica makes at once (its slots). */
export const SENDER_SLOTS = 4;
/**
 * Attempts to one owner's targets in flight at once, across replicas: fewer than the slots, so
 * one owner's slow targets always leave slots to the others.
 */
export const OWNER_IN_FLIGHT = 2;
/** Attempts a delivery keeps (the latest). */
const KEPT_ATTEMPTS = 50;
/** Who acts in the audit entry of a disabling. */
const SYSTEM_ACTOR = "runtime";

/** Options of {@linkcode NotificationSender}. */
export interface NotificationSenderOptions {
  /** The store. */
  store: Store;
  /** Log sink (never a secret, a body or a URL). */
  logger: RuntimeLogger;
  /** Opens the subscriptions' secrets. */
  box: SecretBox;
  /** The clock, ms since the epoch. */
  now: () => number;
  /** Whether targets may be loopback, private, link-local or metadata addresses. */
  allowPrivateTargets: boolean;
  /** Resolves a host's addresses (DNS). */
  resolve: ResolveHost;
  /** The bootstrap principal's id (it has no principal record, and is never revoked). */
  bootstrapPrincipalId: string;
  /** Delays between attempts (default {@linkcode RETRY_DELAYS_MS}). */
  retryDelaysMs?: readonly number[];
  /** Time between passes when nothing wakes it, in ms. */
  pollMs: number;
  /** Root certificates trusted besides Deno's for `https` targets (tests). */
  caCerts?: string[];
}

/** Sends this replica's share of the due deliveries (see the module doc). */
export class NotificationSender {
  /** This replica's lease holder id. */
  readonly holder: string = crypto.randomUUID();
  readonly #options: NotificationSenderOptions;
  readonly #store: Store;
  readonly #delays: readonly number[];
  readonly #passes: Passes;
  /** Resolves the running pass's wait for news (a wake). */
  #woken: (() => void) | null = null;

  /** Creates the sender; {@linkcode NotificationSender.start} starts it. */
  constructor(options: NotificationSenderOptions) {
    this.#options = options;
    this.#store = options.store;
    this.#delays = options.retryDelaysMs ?? RETRY_DELAYS_MS;
    this.#passes = new Passes(() => this.pass(), {
      pollMs: options.pollMs,
      logger: options.logger,
      failure: "notification sending failed",
    });
  }

  /** Starts the periodic pass. */
  start(): void {
    this.#passes.start();
  }

  /**
   * Claims again soon: within the pass under way when it has free slots, else in a pass (one
   * at a time; a wake during a pass runs one more after it).
   */
  wake(): void {
    this.#woken?.();
    this.#passes.wake();
  }

  /**
   * Claims due deliveries into the free slots and sends them (steps 1 to 6 of the module doc),
   * claiming again whenever a slot comes free, a wake comes or the poll interval passed while
   * some are in flight; ends when nothing is in flight and nothing more was due.
   */
  async pass(): Promise<void> {
    const sending = new Set<Promise<void>>();
    /** The attempts in flight by owner, a deleted subscription's too (its lease is gone). */
    const owners = new Map<string, number>();
    try {
      while (!this.#passes.stopped) {
        const free = SENDER_SLOTS - sending.size;
        // Set before the claim: a wake from here on makes the wait below end at once.
        const news = new Promise<void>((resolve) => this.#woken = resolve);
        const due = free === 0 ? [] : await this.#store.notifications.claimDue({
          now: this.#options.now(),
          holder: this.holder,
          leaseMs: LEASE_MS,
          limit: free,
          perOwner: OWNER_IN_FLIGHT,
          skipOwners: [...owners].filter(([, n]) => n >= OWNER_IN_FLIGHT).map(([owner]) => owner),
        });
        for (const delivery of due) {
          const owner = delivery.principalId;
          owners.set(owner, (owners.get(owner) ?? 0) + 1);
          const sent: Promise<void> = this.#deliver(delivery)
            .catch((error) =>
              this.#options.logger.error("notification sending failed", {
                errorName: error instanceof Error ? error.name : typeof error,
              })
            )
            .finally(() => {
              sending.delete(sent);
              const left = owners.get(owner)! - 1;
              if (left === 0) owners.delete(owner);
              else owners.set(owner, left);
            });
          sending.add(sent);
        }
        if (sending.size === 0) return;
        // Every slot busy: a wake cannot be served before one comes free.
        await this.#settledOrNews(sending, due.length === free ? null : news);
      }
    } finally {
      this.#woken = null;
      await Promise.all(sending);
    }
  }

  /** Waits until one of `sending` ends, or `news` comes, or the poll interval passed. */
  async #settledOrNews(sending: Set<Promise<void>>, news: Promise<void> | null): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = new Promise<void>((resolve) => timer = setTimeout(resolve, this.#options.pollMs));
    try {
      await Promise.race([...sending, ...(news === null ? [] : [news, poll])]);
    } finally {
      clearTimeout(timer);
    }
  }

  async #deliver(delivery: StoredDelivery): Promise<void> {
    const subscription = await this.#store.notifications.getSubscription(delivery.subscriptionId);
    const refusal = await this.#refusal(subscription);
    if (subscription === null || refusal !== null) {
      const failed: StoredDelivery = {
        ...delivery,
        state: "failed",
        attempts: keep([...delivery.attempts, {
          at: new Date(this.#options.now()).toISOString(),
          error: refusal ?? "subscription deleted",
          durationMs: 0,
        }]),
      };
      delete failed.nextAttemptAt;
      await this.#store.notifications.settle(failed, this.holder);
      return;
    }
    const attempt = await this.#attempt(delivery, subscription);
    const ok = attempt.status !== undefined && attempt.status >= 200 && attempt.status < 300;
    const attempts = keep([...delivery.attempts, attempt]);
    const now = this.#options.now();
    let next: StoredDelivery;
    if (ok) {
      next = { ...delivery, state: "delivered", attempts };
      delete next.nextAttemptAt;
    } else {
      const delay = this.#delays[Math.min(delivery.attempts.length, this.#delays.length - 1)];
      const due = now + delay;
      if (due > delivery.createdMs + RETRY_WINDOW_MS) {
        next = { ...delivery, state: "failed", attempts };
        delete next.nextAttemptAt;
      } else {
        next = {
          ...delivery,
          state: "pending",
          attempts,
          nextAttemptMs: due,
          nextAttemptAt: new Date(due).toISOString(),
        };
      }
    }
    // Lost the lease (a long attempt): another sender has it now, and counts its own outcome.
    if (!await this.#store.notifications.settle(next, this.holder)) return;
    const outcome = await this.#store.notifications.recordOutcome(
      subscription.subscriptionId,
      ok,
      attempt.at,
      DISABLE_AFTER_FAILURES,
    );
    if (outcome?.disabled) {
      this.#options.logger.info("notification subscription disabled", {
        subscriptionId: subscription.subscriptionId,
        failures: DISABLE_AFTER_FAILURES,
      });
      await appendAudit(this.#store, this.#options.logger, {
        at: attempt.at,
        action: "webhook.disabled",
        actorId: SYSTEM_ACTOR,
        subscriptionId: subscription.subscriptionId,
        correlationId: crypto.randomUUID(),
        outcome: "consecutiveFailures",
      });
    }
  }

  /** Step 1: why a delivery to `subscription` is not sent at all, or null. */
  async #refusal(subscription: StoredSubscription | null): Promise<string | null> {
    if (subscription === null) return "subscription deleted";
    if (subscription.state !== "active") return "subscription disabled";
    const { bootstrapPrincipalId, now } = this.#options;
    const reach = await ownerReach(
      this.#store,
      bootstrapPrincipalId,
      subscription.principalId,
      now(),
    );
    return reach === "none" ? "owner revoked or expired" : null;
  }

  /** Steps 2 to 4: one attempt, its status or why it failed. */
  async #attempt(
    delivery: StoredDelivery,
    subscription: StoredSubscription,
  ): Promise<DeliveryAttempt> {
    const started = performance.now();
    const at = new Date(this.#options.now()).toISOString();
    const done = (fields: { status?: number; error?: string }): DeliveryAttempt => ({
      at,
      ...fields,
      durationMs: Math.round(performance.now() - started),
    });
    try {
      const url = new URL(subscription.url);
      const addresses = await resolveTarget(url, {
        allowPrivate: this.#options.allowPrivateTargets,
        resolve: this.#options.resolve,
      });
      const now = this.#options.now();
      const signing = subscription.secrets.filter((secret) =>
        secret.expiresAt === null || secret.expiresAt > now
      );
      const secrets = await Promise.all(
        signing.map((secret) => this.#options.box.open(secret, subscription.subscriptionId)),
      );
      const { signStandardWebhook } = await import("../../client/managed_agents/webhooks.ts");
      const signed = await signStandardWebhook(delivery.body, secrets, {
        id: delivery.deliveryId,
        timestampSeconds: Math.floor(now / 1000),
      });
      const headers = {
        "content-type": "application/json",
        "user-agent": "automation-runtime-notifications",
        ...signed,
      };
      const signal = AbortSignal.timeout(ATTEMPT_TIMEOUT_MS);
      if (addresses.length > 0 && !proxied(url)) {
        // To the checked address, never resolving the name again (`_pinned_post.ts`).
        const { postPinned } = await import("./_pinned_post.ts");
        const status = await postPinned({
          url,
          addresses,
          headers,
          body: delivery.body,
          signal,
          ...(this.#options.caCerts !== undefined ? { caCerts: this.#options.caCerts } : {}),
        });
        return done({ status });
      }
      // A private target `resolve` does not know (allowed by the setting), or an outbound
      // proxy, which resolves and connects by itself.
      const response = await fetch(url, {
        method: "POST",
        headers,
        body: delivery.body,
        redirect: "manual",
        signal,
      });
      await response.body?.cancel().catch(() => {});
      return done({ status: response.status });
    } catch (error) {
      return done({ error: attemptError(error) });
    }
  }

  /** Stops the passes (a pass under way finishes the attempts it has in flight). */
  stop(): Promise<void> {
    const stopping = this.#passes.stop();
    this.#woken?.();
    return stopping;
  }
}

/**
 * Whether `fetch` would send a request to `url` through an outbound proxy (`HTTPS_PROXY` or
 * `HTTP_PROXY` for its scheme, in either case): the proxy then resolves the name and connects.
 */
function proxied(url: URL): boolean {
  const name = url.protocol === "https:" ? "https_proxy" : "http_proxy";
  try {
    return Boolean(Deno.env.get(name) || Deno.env.get(name.toUpperCase()));
  } catch {
    return false; // No permission to read the environment: fetch could not read it either.
  }
}

/** The latest attempts a delivery keeps. */
function keep(attempts: DeliveryAttempt[]): DeliveryAttempt[] {
  return attempts.length > KEPT_ATTEMPTS ? attempts.slice(-KEPT_ATTEMPTS) : attempts;
}

/** Why an attempt failed, in words that hold no address, URL or secret. */
function attemptError(error: unknown): string {
  if (error instanceof TargetRefusedError) return `refused: ${error.message}`;
  if (error instanceof DOMException && error.name === "TimeoutError") return "timeout";
  if (error instanceof TypeError) return "connection failed";
  return "failed";
}
