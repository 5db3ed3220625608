/**
 * Notification webhooks on the wire: subscriptions that send signed HTTP deliveries (Standard
 * Webhooks) when runs the subscriber may read wait for an answer, end, or get an answer.
 *
 * | route | body | answer |
 * |---|---|---|
 * | `POST /v1/webhook-subscriptions` | {@linkcode CreateWebhookSubscriptionBody} | 201 {@linkcode WebhookSubscriptionWithSecret} (the secret, once) |
 * | `GET /v1/webhook-subscriptions` | query `limit`, `cursor` | 200 {@linkcode WebhookSubscriptionPage} |
 * | `GET /v1/webhook-subscriptions/{id}` | – | 200 {@linkcode WebhookSubscription} |
 * | `DELETE /v1/webhook-subscriptions/{id}` | – | 204 |
 * | `POST /v1/webhook-subscriptions/{id}/rotate-secret` | – | 200 {@linkcode WebhookSubscriptionWithSecret} (the new secret, once) |
 * | `GET /v1/webhook-subscriptions/{id}/deliveries` | query `limit`, `cursor` | 200 {@linkcode WebhookDeliveryPage} |
 * | `POST /v1/webhook-subscriptions/{id}/deliveries/{deliveryId}/redeliver` | – | 202 {@linkcode WebhookDelivery} |
 *
 * A delivery's body, in the `standard` format, is a {@linkcode NotificationPayload}; in the
 * `slack` format, an incoming-webhook message `{text}` linking to the console.
 *
 * @module
 */
import type { RuntimeRunState } from "../client/contract.ts";
import type { ToolAnswerResult } from "./activity.ts";
import type { ToolRequestKind } from "./tool_requests.ts";

/**
 * The events a subscription may receive, in canonical order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NOTIFICATION_EVENTS } from "./notifications.ts";
 * assert.ok(NOTIFICATION_EVENTS.includes("run.requires_action"));
 * ```
 */
export const NOTIFICATION_EVENTS = [
  "run.requires_action",
  "run.completed",
  "run.failed",
  "run.cancelled",
  "tool.answered",
] as const;

/** An event a subscription may receive: one of {@linkcode NOTIFICATION_EVENTS}. */
export type NotificationEvent = typeof NOTIFICATION_EVENTS[number];

/**
 * The body formats of a delivery: `standard` (a {@linkcode NotificationPayload}) or `slack` (an
 * incoming-webhook message).
 */
export const NOTIFICATION_FORMATS = ["standard", "slack"] as const;

/** A delivery's body format: one of {@linkcode NOTIFICATION_FORMATS}. */
export type NotificationFormat = typeof NOTIFICATION_FORMATS[number];

/** Where a subscription stands: `active`, or `disabled` after failing 20 attempts in a row. */
export type WebhookSubscriptionState = "active" | "disabled";

/** The body of `POST /v1/webhook-subscriptions`. */
export interface CreateWebhookSubscriptionBody {
  /** Where deliveries go: an `http` or `https` URL, without credentials or a fragment. */
  url: string;
  /** The events to send (at least one, each at most once). */
  events: NotificationEvent[];
  /** The body format (default `standard`). */
  format?: NotificationFormat;
  /** A note for people (at most 256 characters). */
  description?: string;
}

/** A subscription as the routes answer it: never its signing secret. */
export interface WebhookSubscription {
  /** Its id (`sub_…`). */
  subscriptionId: string;
  /** The principal that owns it: it receives events of the runs this principal may read. */
  principalId: string;
  /** Where deliveries go. */
  url: string;
  /** The events it receives. */
  events: NotificationEvent[];
  /** The body format. */
  format: NotificationFormat;
  /** The note given at creation. */
  description?: string;
  /** `active`, or `disabled` (no more deliveries; delete it and create another). */
  state: WebhookSubscriptionState;
  /** Failed attempts in a row (a delivered one sets it back to 0); 20 disable it. */
  consecutiveFailures: number;
  /** RFC 3339 creation time. */
  createdAt: string;
  /** RFC 3339 time it was disabled. */
  disabledAt?: string;
  /** RFC 3339 time its secret was last rotated. */
  secretRotatedAt?: string;
  /** RFC 3339 time the secret before the last rotation stops signing deliveries. */
  previousSecretExpiresAt?: string;
}

/** A subscription with its signing secret: the answer of a creation or a rotation, once. */
export interface WebhookSubscriptionWithSecret extends WebhookSubscription {
  /** The signing secret (`whsec_…`): verify deliveries with it. Shown in this answer only. */
  secret: string;
}

/** One page of `GET /v1/webhook-subscriptions`, oldest first. */
export interface WebhookSubscriptionPage {
  /** The subscriptions of this page. */
  subscriptions: WebhookSubscription[];
  /** The cursor of the next page, or null on the last page. */
  nextCursor: string | null;
}

/** Where a delivery stands. */
export type WebhookDeliveryState = "pending" | "delivered" | "failed";

/** One attempt to deliver. */
export interface DeliveryAttempt {
  /** RFC 3339 time it was made. */
  at: string;
  /** The receiver's HTTP status, when it answered. */
  status?: number;
  /** Why it failed without an answer (timeout, refused address, connection error). */
  error?: string;
  /** How long it took, in ms. */
  durationMs: number;
}

/** A delivery: one event to one subscription, its attempts and where it stands. */
export interface WebhookDelivery {
  /** Its id, the `webhook-id` of every attempt (`msg_…`). */
  deliveryId: string;
  /** The subscription. */
  subscriptionId: string;
  /** The event. */
  eventType: NotificationEvent;
  /** The run concerned. */
  runId: string;
  /** RFC 3339 time it was created. */
  createdAt: string;
  /** `pending` (waiting for its next attempt), `delivered` (a 2xx), or `failed` (gave up). */
  state: WebhookDeliveryState;
  /** Its attempts, oldest first (at most the last 50). */
  attempts: DeliveryAttempt[];
  /** RFC 3339 time of its next attempt, while pending. */
  nextAttemptAt?: string;
}

/** One page of `GET /v1/webhook-subscriptions/{id}/deliveries`, newest first. */
export interface WebhookDeliveryPage {
  /** The deliveries of this page. */
  deliveries: WebhookDelivery[];
  /** The cursor of the next page, or null on the last page. */
  nextCursor: string | null;
}

/** What a `standard` delivery tells of its run. */
export interface NotificationData {
  /** The run. */
  runId: string;
  /** The principal that owns the run. */
  principalId: string;
  /** The run's state after the change (run events). */
  state?: RuntimeRunState;
  /** The run's agent. */
  agentId?: string;
  /** The run's title. */
  title?: string;
  /** The tool request answered (`tool.answered`). */
  toolUseId?: string;
  /** Its kind. */
  kind?: ToolRequestKind;
  /** The answer. */
  result?: ToolAnswerResult;
  /** Who answered. */
  answeredBy?: string;
  /** That principal's name, when it has one. */
  answeredByName?: string;
  /** The tool requests waiting (`run.requires_action`): their ids and names. */
  pending?: { toolUseId: string; kind: ToolRequestKind; name: string; deniedAt: string }[];
  /** The console, where the request can be answered. */
  consoleUrl?: string;
}

/** The body of a `standard` delivery (the Standard Webhooks payload shape). */
export interface NotificationPayload {
  /** The event. */
  type: NotificationEvent;
  /** RFC 3339 time of the change. */
  timestamp: string;
  /** What happened. */
  data: NotificationData;
}
