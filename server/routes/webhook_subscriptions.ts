/**
 * The notification webhook routes, under the shared rules (capability `session:read`: a
 * subscription receives events of the runs its owner may read):
 *
 * | method and path | answer |
 * |---|---|
 * | `POST /v1/webhook-subscriptions` (idempotent) | 201 the subscription with its `secret` (once) |
 * | `GET /v1/webhook-subscriptions` | 200 `{subscriptions, nextCursor}`, oldest first |
 * | `GET /v1/webhook-subscriptions/{id}` | 200 the subscription |
 * | `DELETE /v1/webhook-subscriptions/{id}` | 204 |
 * | `POST /v1/webhook-subscriptions/{id}/rotate-secret` (idempotent) | 200 the subscription with its new `secret` (once) |
 * | `GET /v1/webhook-subscriptions/{id}/deliveries` | 200 `{deliveries, nextCursor}`, newest first |
 * | `POST /v1/webhook-subscriptions/{id}/deliveries/{deliveryId}/redeliver` (idempotent) | 202 the delivery, pending again |
 *
 * Another principal's subscription is 404 `notFound` (admins act on every one). Without a
 * provider credential each answers 503 `providerNotConfigured`, like the run routes. The answers
 * that carry a secret are never cached (`cache-control: no-store`), and their idempotency record
 * holds the answer without the secret: a replay opens the subscription's current secret again.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import { invalidRequest } from "../errors.ts";
import type { SubscriptionCall, Subscriptions } from "../notifications/mod.ts";
import type { RouteDefinition } from "../router.ts";
import type { RunGateway } from "../runs/runs.ts";
import { type LazyBodySchema, lazyBodySchema } from "../schemas/lazy.ts";
import type { Store, StoredResponse } from "../store/types.ts";
import type {
  CreateWebhookSubscriptionBody,
  WebhookSubscriptionWithSecret,
} from "../../wire/mod.ts";
import { parseListQuery } from "./runs.ts";

/** Subscriptions or deliveries in one page unless `limit` says otherwise. */
export const DEFAULT_NOTIFICATION_PAGE = 50;
/** Most subscriptions or deliveries in one page. */
export const MAX_NOTIFICATION_PAGE = 100;

const NO_STORE = { "cache-control": "no-store" };

/**
 * Body schema of `POST /v1/webhook-subscriptions` (`createWebhookSubscriptionBody` in
 * `server/schemas/notifications.ts`), loaded with zod on the first body.
 */
export const createWebhookSubscriptionSchema: LazyBodySchema = lazyBodySchema(async () =>
  (await import("../schemas/notifications.ts")).createWebhookSubscriptionBody
);

/** Options of {@linkcode webhookSubscriptionRoutes}. */
export interface WebhookSubscriptionRoutesOptions {
  /** The run gateway (whether runs are enabled). */
  gateway: RunGateway;
  /** The subscription service. */
  subscriptions: Subscriptions;
  /** The store (the idempotency records of the answers with a secret). */
  store: Store;
}

function callOf(context: RequestContext): SubscriptionCall {
  return {
    principal: context.principal!,
    at: context.receivedAt,
    correlationId: context.responseCorrelationId,
  };
}

function pageQuery(context: RequestContext): { limit: number; cursor?: string } {
  const { limit, values } = parseListQuery(context.query, {
    names: [],
    max: MAX_NOTIFICATION_PAGE,
    fallback: DEFAULT_NOTIFICATION_PAGE,
  });
  if (values.cursor !== undefined && !/^[A-Za-z0-9_-]+$/.test(values.cursor)) {
    throw invalidRequest([{ path: "cursor", message: "Must be a nextCursor of an earlier page" }]);
  }
  return { limit, ...(values.cursor !== undefined ? { cursor: values.cursor } : {}) };
}

/**
 * The notification webhook routes.
 *
 * @example
 * ```ts ignore
 * import { webhookSubscriptionRoutes } from "./webhook_subscriptions.ts";
 * const routes = webhookSubscriptionRoutes({ gateway, subscriptions, store });
 * ```
 */
export function webhookSubscriptionRoutes(
  options: WebhookSubscriptionRoutesOptions,
): RouteDefinition[] {
  const { gateway, subscriptions, store } = options;

  /**
   * Answers `answer` (which holds a secret) and records it under the request's key without the
   * secret: the replay opens it again.
   */
  async function withSecret(
    context: RequestContext,
    answer: WebhookSubscriptionWithSecret,
    status: number,
  ): Promise<Response> {
    const key = context.idempotency;
    if (key !== null && key.token !== null) {
      const { secret: _secret, ...recorded } = answer;
      await store.idempotency.complete({
        scope: key.scope,
        token: key.token,
        response: { status, body: JSON.stringify(recorded) },
        expiresAt: key.expiresAt,
      });
      key.recorded();
    }
    return context.json(JSON.stringify(answer), status, NO_STORE);
  }

  /** A replayed creation or rotation: the recorded answer with the current secret opened. */
  async function replayWithSecret(
    stored: StoredResponse,
    context: RequestContext,
  ): Promise<Response> {
    if (stored.status !== 201 && stored.status !== 200) {
      return context.json(stored.body, stored.status);
    }
    const recorded = JSON.parse(stored.body) as Omit<WebhookSubscriptionWithSecret, "secret">;
    const secret = await subscriptions.currentSecret(recorded.subscriptionId);
    const body = secret === null ? recorded : { ...recorded, secret };
    return context.json(JSON.stringify(body), stored.status, NO_STORE);
  }

  async function create(context: RequestContext): Promise<Response> {
    gateway.requireEnabled();
    const body = context.body as CreateWebhookSubscriptionBody;
    return await withSecret(context, await subscriptions.create(callOf(context), body), 201);
  }

  async function list(context: RequestContext): Promise<Response> {
    gateway.requireEnabled();
    const page = await subscriptions.list(callOf(context), pageQuery(context));
    return context.json(JSON.stringify(page), 200);
  }

  async function get(context: RequestContext): Promise<Response> {
    gateway.requireEnabled();
    const found = await subscriptions.get(callOf(context), context.params.subscriptionId);
    return context.json(JSON.stringify(found), 200);
  }

  async function remove(context: RequestContext): Promise<Response> {
    gateway.requireEnabled();
    await subscriptions.delete(callOf(context), context.params.subscriptionId);
    return context.json(null, 204);
  }

  async function rotate(context: RequestContext): Promise<Response> {
    gateway.requireEnabled();
    const rotated = await subscriptions.rotate(callOf(context), context.params.subscriptionId);
    return await withSecret(context, rotated, 200);
  }

  async function deliveries(context: RequestContext): Promise<Response> {
    gateway.requireEnabled();
    const page = await subscriptions.deliveries(
      callOf(context),
      context.params.subscriptionId,
      pageQuery(context),
    );
    return context.json(JSON.stringify(page), 200);
  }

  async function redeliver(context: RequestContext): Promise<Response> {
    gateway.requireEnabled();
    const delivery = await subscriptions.redeliver(
      callOf(context),
      context.params.subscriptionId,
      context.params.deliveryId,
    );
    return context.json(JSON.stringify(delivery), 202);
  }

  const base = "/v1/webhook-subscriptions";
  return [
    {
      method: "POST",
      path: base,
      kind: "shared",
      capability: "session:read",
      idempotent: true,
      body: createWebhookSubscriptionSchema,
      handle: create,
      replay: replayWithSecret,
    },
    { method: "GET", path: base, kind: "shared", capability: "session:read", handle: list },
    {
      method: "GET",
      path: `${base}/:subscriptionId`,
      kind: "shared",
      capability: "session:read",
      handle: get,
    },
    {
      method: "DELETE",
      path: `${base}/:subscriptionId`,
      kind: "shared",
      capability: "session:read",
      handle: remove,
    },
    {
      method: "POST",
      path: `${base}/:subscriptionId/rotate-secret`,
      kind: "shared",
      capability: "session:read",
      idempotent: true,
      handle: rotate,
      replay: replayWithSecret,
    },
    {
      method: "GET",
      path: `${base}/:subscriptionId/deliveries`,
      kind: "shared",
      capability: "session:read",
      handle: deliveries,
    },
    {
      method: "POST",
      path: `${base}/:subscriptionId/deliveries/:deliveryId/redeliver`,
      kind: "shared",
      capability: "session:read",
      idempotent: true,
      handle: redeliver,
    },
  ];
}
