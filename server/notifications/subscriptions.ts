/**
 * Notification subscriptions as the routes see them: creation (the target checked, the secret
 * made and sealed), reading, listing, deletion, secret rotation, and a subscription's deliveries
 * and their redelivery.
 *
 * Who sees what: a subscription belongs to the principal that created it; its owner and admins
 * act on it, anyone else gets 404 `notFound` (existence is not disclosed). A subscription receives
 * events of the runs its owner may read (the dispatcher checks the owner at each event).
 *
 * Secrets: the signing secret is in the answer of a creation and of a rotation only; the store
 * holds it sealed (`secrets.ts`), and neither a list, a read, a log line nor an audit entry holds
 * it. A rotation makes a new current secret and keeps the one before signing for 24 h (a
 * delivery then carries both signatures); a secret older than that is dropped.
 *
 * @module
 */
import type { AuthenticatedPrincipal } from "../context.ts";
import { InterfaceError, invalidRequest } from "../errors.ts";
import type {
  CreateWebhookSubscriptionBody,
  WebhookDelivery,
  WebhookDeliveryPage,
  WebhookSubscription,
  WebhookSubscriptionPage,
  WebhookSubscriptionWithSecret,
} from "../../wire/mod.ts";
import {
  type AuditEntryInput,
  publicDelivery,
  publicSubscription,
  type Store,
  type StoredSubscription,
} from "../store/types.ts";
import { newSigningSecret, type SecretBox } from "./secrets.ts";
import { checkTarget, parseTargetUrl, type ResolveHost, TargetRefusedError } from "./targets.ts";

/** Default subscriptions one principal may hold. */
export const DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL = 10;
/** How long the secret before a rotation keeps signing, in ms: 24 h. */
export const ROTATION_OVERLAP_MS = 86_400_000;

/** Options of {@linkcode Subscriptions}. */
export interface SubscriptionsOptions {
  /** The store. */
  store: Store;
  /** Seals and opens secrets. */
  box: SecretBox;
  /** Whether targets may be loopback, private, link-local or metadata addresses. */
  allowPrivateTargets: boolean;
  /** Resolves a host's addresses. */
  resolve: ResolveHost;
  /** Subscriptions one principal may hold. */
  maxPerPrincipal: number;
  /** Appends an audit entry (never failing the call). */
  audit: (entry: AuditEntryInput) => Promise<void>;
}

/** Who asks, and when: what every call needs. */
export interface SubscriptionCall {
  /** The caller. */
  principal: AuthenticatedPrincipal;
  /** The request's time, ms since the epoch. */
  at: number;
  /** The request's correlation id (its audit entry carries it). */
  correlationId: string;
}

function notFound(): InterfaceError {
  return new InterfaceError("notFound", "No such webhook subscription", { layer: "authority" });
}

function deliveryNotFound(): InterfaceError {
  return new InterfaceError("notFound", "No such delivery of this subscription", {
    layer: "authority",
  });
}

/** The subscription service behind the routes (see the module doc). */
export class Subscriptions {
  readonly #options: SubscriptionsOptions;
  readonly #store: Store;

  /** Creates the service. */
  constructor(options: SubscriptionsOptions) {
    this.#options = options;
    this.#store = options.store;
  }

  /** A subscription the caller may act on (its own; any, for admins), else 404. */
  async #visible(call: SubscriptionCall, subscriptionId: string): Promise<StoredSubscription> {
    if (!/^sub_[0-9a-f]{32}$/.test(subscriptionId)) throw notFound();
    const stored = await this.#store.notifications.getSubscription(subscriptionId);
    if (stored === null) throw notFound();
    const caller = call.principal;
    if (
      stored.principalId !== caller.principalId &&
      !caller.capabilities.includes("authority:admin")
    ) {
      throw notFound();
    }
    return stored;
  }

  #audit(
    call: SubscriptionCall,
    action: "webhook.subscribed" | "webhook.unsubscribed" | "webhook.secret_rotated",
    subscriptionId: string,
  ): Promise<void> {
    return this.#options.audit({
      at: new Date(call.at).toISOString(),
      action,
      actorId: call.principal.principalId,
      subscriptionId,
      correlationId: call.correlationId,
      outcome: "ok",
    });
  }

  /**
   * Creates a subscription of the caller: 422 `invalidRequest` for a malformed URL, 422
   * `webhookTargetNotAllowed` for a target that is not public (unless allowed), 429
   * `resourceExhausted` past the caller's limit. Answers it with its secret, once.
   */
  async create(
    call: SubscriptionCall,
    body: CreateWebhookSubscriptionBody,
  ): Promise<WebhookSubscriptionWithSecret> {
    let url: URL;
    try {
      url = parseTargetUrl(body.url);
    } catch (error) {
      throw invalidRequest([{ path: "url", message: (error as Error).message }]);
    }
    try {
      await checkTarget(url, {
        allowPrivate: this.#options.allowPrivateTargets,
        resolve: this.#options.resolve,
      });
    } catch (error) {
      if (!(error instanceof TargetRefusedError)) throw error;
      throw new InterfaceError("webhookTargetNotAllowed", error.message, {
        extra: { details: [{ path: "url", message: error.message }] },
      });
    }
    const subscriptionId = `sub_${crypto.randomUUID().replaceAll("-", "")}`;
    const secret = newSigningSecret();
    const stored: StoredSubscription = {
      subscriptionId,
      principalId: call.principal.principalId,
      url: url.href,
      events: [...new Set(body.events)],
      format: body.format ?? "standard",
      ...(body.description !== undefined ? { description: body.description } : {}),
      state: "active",
      consecutiveFailures: 0,
      createdAt: new Date(call.at).toISOString(),
      secrets: [await this.#options.box.seal(secret, subscriptionId, null)],
      startSeq: await this.#store.activity.head(),
    };
    if (
      !await this.#store.notifications.createSubscription(stored, this.#options.maxPerPrincipal)
    ) {
      throw new InterfaceError(
        "resourceExhausted",
        `This principal holds ${this.#options.maxPerPrincipal} webhook subscriptions, as many ` +
          "as it may: delete one first",
        { extra: { limit: "maxWebhookSubscriptionsPerPrincipal" } },
      );
    }
    await this.#audit(call, "webhook.subscribed", subscriptionId);
    return { ...publicSubscription(stored), secret };
  }

  /** Reads one subscription (no secret). */
  async get(call: SubscriptionCall, subscriptionId: string): Promise<WebhookSubscription> {
    return publicSubscription(await this.#visible(call, subscriptionId));
  }

  /** The caller's subscriptions (admins: everyone's), oldest first, in pages. */
  async list(
    call: SubscriptionCall,
    params: { limit: number; cursor?: string },
  ): Promise<WebhookSubscriptionPage> {
    const admin = call.principal.capabilities.includes("authority:admin");
    const page = await this.#store.notifications.listSubscriptions({
      limit: params.limit,
      ...(params.cursor !== undefined ? { cursor: params.cursor } : {}),
      ...(admin ? {} : { principalId: call.principal.principalId }),
    });
    return { subscriptions: page.items.map(publicSubscription), nextCursor: page.nextCursor };
  }

  /** Deletes a subscription and its deliveries. */
  async delete(call: SubscriptionCall, subscriptionId: string): Promise<void> {
    await this.#visible(call, subscriptionId);
    if (!await this.#store.notifications.deleteSubscription(subscriptionId)) throw notFound();
    await this.#audit(call, "webhook.unsubscribed", subscriptionId);
  }

  /**
   * Rotates the signing secret: a new current one, the one before keeps signing for 24 h. Answers
   * the subscription with the new secret, once.
   */
  async rotate(
    call: SubscriptionCall,
    subscriptionId: string,
  ): Promise<WebhookSubscriptionWithSecret> {
    const secret = newSigningSecret();
    const sealed = await this.#options.box.seal(secret, subscriptionId, null);
    for (let attempt = 0; attempt < 10; attempt++) {
      const stored = await this.#visible(call, subscriptionId);
      const until = call.at + ROTATION_OVERLAP_MS;
      const previous = stored.secrets.find((candidate) => candidate.expiresAt === null);
      const next: StoredSubscription = {
        ...stored,
        secrets: [sealed, ...(previous !== undefined ? [{ ...previous, expiresAt: until }] : [])],
        secretRotatedAt: new Date(call.at).toISOString(),
        previousSecretExpiresAt: new Date(until).toISOString(),
      };
      if (await this.#store.notifications.updateSubscription(next, stored)) {
        await this.#audit(call, "webhook.secret_rotated", subscriptionId);
        return { ...publicSubscription(next), secret };
      }
    }
    throw new InterfaceError("storeUnavailable", "The subscription changed too often to rotate");
  }

  /**
   * The subscription's secret, opened: what a replayed creation or rotation answers again (the
   * recorded answer holds none).
   */
  async currentSecret(subscriptionId: string): Promise<string | null> {
    const stored = await this.#store.notifications.getSubscription(subscriptionId);
    const current = stored?.secrets.find((secret) => secret.expiresAt === null);
    if (stored === null || current === undefined) return null;
    return await this.#options.box.open(current, subscriptionId);
  }

  /** A subscription's deliveries, newest first, in pages. */
  async deliveries(
    call: SubscriptionCall,
    subscriptionId: string,
    params: { limit: number; cursor?: string },
  ): Promise<WebhookDeliveryPage> {
    await this.#visible(call, subscriptionId);
    const page = await this.#store.notifications.listDeliveries(subscriptionId, params);
    return { deliveries: page.items.map(publicDelivery), nextCursor: page.nextCursor };
  }

  /** Sends a delivery once more (same id), as soon as a sender takes it. */
  async redeliver(
    call: SubscriptionCall,
    subscriptionId: string,
    deliveryId: string,
  ): Promise<WebhookDelivery> {
    const stored = await this.#visible(call, subscriptionId);
    if (stored.state !== "active") {
      throw new InterfaceError(
        "webhookSubscriptionDisabled",
        "The subscription is disabled: delete it and create another",
      );
    }
    if (!/^msg_[0-9a-f]{32}$/.test(deliveryId)) throw deliveryNotFound();
    const again = await this.#store.notifications.redeliver(subscriptionId, deliveryId, call.at);
    if (again === null) throw deliveryNotFound();
    return publicDelivery(again);
  }
}
