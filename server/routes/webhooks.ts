/**
 * `POST /webhooks/provider`: the provider's webhook intake. It lies outside `/v1/*` and its
 * shared rules (like `/healthz`) and exists only when signing secrets are configured.
 *
 * 0. Unverified intake is bounded: at most `maxUnverified` deliveries (16 by default) are read
 *    and verified at once; one more answers 429 `resourceExhausted` with `Retry-After: 1` (the
 *    provider retries) before a byte of its body is read.
 * 1. Read the raw body (at most `maxBodyBytes`, 64 KiB by default, counted while streaming:
 *    413 `payloadTooLarge`; a body still arriving after 10 s: 408 `deadlineExceeded`). A
 *    provider's delivery is a small JSON event; nothing larger is held before it is verified.
 * 2. Verify it against each signing secret by the Standard Webhooks rules
 *    (`verifyManagedAgentWebhook`: the three `webhook-*` headers, a timestamp within 300 s, an
 *    HMAC-SHA256 `v1` signature over the exact bytes). None matches: 401
 *    `webhookVerificationFailed`, with no detail of why.
 * 3. Record the delivery's `id` (kept 7 days); a repeat answers 204 and changes nothing.
 * 4. A `session.*` event for a known run refreshes the run's state from the provider and wakes
 *    its tail (`RunActivity`).
 * 5. Append the audit entry `webhook.accepted`; answer 204.
 *
 * A refresh that fails is logged and the delivery still accepted: the run's state is read again
 * at its next read or webhook.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { RuntimeLogger } from "../log.ts";
import type { RouteDefinition } from "../router.ts";
import { readLimitedBody } from "../rules/body.ts";
import { appendAudit } from "../runs/audit.ts";
import type { RunGateway } from "../runs/runs.ts";
import { ANSWER_RETENTION_MS, type Store } from "../store/types.ts";

/** The intake's path. */
export const WEBHOOK_PATH = "/webhooks/provider";
/** Default body limit of a delivery (`--webhook-max-body-bytes`): 64 KiB. */
export const DEFAULT_WEBHOOK_MAX_BODY_BYTES = 64 * 1024;
/** Default deliveries read and verified at once (`--webhook-max-unverified`). */
export const DEFAULT_WEBHOOK_MAX_UNVERIFIED = 16;
/** How long a delivery's body may take to arrive, in ms. */
const BODY_TIMEOUT_MS = 10_000;

/** The bounds of unverified intake. */
export interface WebhookIntakeLimits {
  /** Body limit in bytes (default {@linkcode DEFAULT_WEBHOOK_MAX_BODY_BYTES}). */
  maxBodyBytes?: number;
  /** Deliveries read and verified at once (default {@linkcode DEFAULT_WEBHOOK_MAX_UNVERIFIED}). */
  maxUnverified?: number;
}

/** Options of {@linkcode webhookRoutes}. */
export interface WebhookRouteOptions {
  /** Signing secrets (several during a rotation); empty: no route. */
  secrets: readonly string[];
  /** The store (delivery ids, audit). */
  store: Store;
  /** The run gateway (refresh, activity). */
  gateway: RunGateway;
  /** Log sink. */
  logger: RuntimeLogger;
  /** The bounds of unverified intake (defaults: 64 KiB bodies, 16 at once). */
  limits?: WebhookIntakeLimits;
}

function intakeFull(): InterfaceError {
  return new InterfaceError(
    "resourceExhausted",
    "Too many webhook deliveries are being verified; retry shortly",
    { headers: { "retry-after": "1" } },
  );
}

function verificationFailed(): InterfaceError {
  return new InterfaceError("webhookVerificationFailed", "The webhook could not be verified");
}

/**
 * The webhook route, or none when no secret is configured.
 *
 * @example
 * ```ts ignore
 * const routes = webhookRoutes({ secrets, store, gateway, logger });
 * ```
 */
export function webhookRoutes(options: WebhookRouteOptions): RouteDefinition[] {
  const { secrets, store, gateway, logger } = options;
  if (secrets.length === 0) return [];
  const maxBodyBytes = options.limits?.maxBodyBytes ?? DEFAULT_WEBHOOK_MAX_BODY_BYTES;
  const maxUnverified = options.limits?.maxUnverified ?? DEFAULT_WEBHOOK_MAX_UNVERIFIED;
  /** Deliveries being read or verified now. */
  let unverified = 0;

  /** Steps 0 to 2: the verified event, holding one unverified slot while it reads and checks. */
  async function verified(context: RequestContext) {
    if (unverified >= maxUnverified) throw intakeFull();
    unverified++;
    try {
      const raw = await readLimitedBody(context.request, {
        maxBytes: maxBodyBytes,
        timeoutMs: BODY_TIMEOUT_MS,
      });
      // Loaded on first delivery, so startup does not load the client library.
      const { verifyManagedAgentWebhook } = await import(
        "../../client/managed_agents/webhooks.ts"
      );
      for (const secret of secrets) {
        try {
          return await verifyManagedAgentWebhook(raw, context.request.headers, secret);
        } catch {
          // Try the next secret; which check failed is never told.
        }
      }
      throw verificationFailed();
    } finally {
      unverified--;
    }
  }

  async function intake(context: RequestContext): Promise<Response> {
    const event = await verified(context);
    const now = context.receivedAt;
    if (!await store.answers.recordWebhookDelivery(event.id, now, ANSWER_RETENTION_MS)) {
      return new Response(null, { status: 204 });
    }
    const type = event.data.type;
    const resource = event.data.id;
    let runId: string | undefined;
    if (typeof type === "string" && type.startsWith("session.") && gateway.enabled) {
      const run = await store.runs.get(resource);
      if (run !== null) {
        runId = run.runId;
        try {
          await gateway.refreshRun(run.runId, { timeoutMs: 10_000 });
        } catch (error) {
          logger.error("webhook refresh failed", {
            runId: run.runId,
            errorName: error instanceof Error ? error.name : typeof error,
          });
        }
        gateway.activity.notify(run.runId);
      }
    }
    await appendAudit(store, logger, {
      at: new Date(now).toISOString(),
      action: "webhook.accepted",
      actorId: "provider",
      ...(runId !== undefined ? { runId } : {}),
      correlationId: context.responseCorrelationId,
      outcome: "ok",
    });
    return new Response(null, { status: 204 });
  }

  return [{ method: "POST", path: WEBHOOK_PATH, kind: "public", handle: intake }];
}
