/**
 * The request body of `POST /v1/webhook-subscriptions` as a zod schema: the one definition the
 * route validates with (loaded on the first body, see `lazy.ts`). It `satisfies` the wire's
 * {@linkcode CreateWebhookSubscriptionBody}. Where the URL leads is checked by the route
 * (`server/notifications/targets.ts`), not here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createWebhookSubscriptionBody } from "./notifications.ts";
 * const ok = { url: "https://hooks.example.com/x", events: ["run.completed"] };
 * assert.equal(createWebhookSubscriptionBody.safeParse(ok).success, true);
 * assert.equal(createWebhookSubscriptionBody.safeParse({ ...ok, events: [] }).success, false);
 * ```
 *
 * @module
 */
import { z } from "zod";
import {
  type CreateWebhookSubscriptionBody,
  NOTIFICATION_EVENTS,
  NOTIFICATION_FORMATS,
} from "../../wire/mod.ts";

/** Longest description of a subscription, in characters. */
export const MAX_SUBSCRIPTION_DESCRIPTION = 256;

/** The body of `POST /v1/webhook-subscriptions`. */
export const createWebhookSubscriptionBody = z.strictObject({
  url: z.string().min(1, "Must be an http or https URL").max(
    2048,
    "Must be at most 2048 characters",
  ),
  events: z.array(z.enum(NOTIFICATION_EVENTS))
    .min(1, "Must name at least one event")
    .max(NOTIFICATION_EVENTS.length, "Must name each event at most once")
    .refine((events) => new Set(events).size === events.length, "Must name each event once"),
  format: z.enum(NOTIFICATION_FORMATS).optional(),
  description: z.string().min(1).max(
    MAX_SUBSCRIPTION_DESCRIPTION,
    `Must be 1 to ${MAX_SUBSCRIPTION_DESCRIPTION} characters`,
  ).optional(),
}) satisfies z.ZodType<CreateWebhookSubscriptionBody>;
