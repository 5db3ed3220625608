/**
 * `POST /webhooks/provider`: the provider's webhook intake. It lies outside `/v1/*` and its
 * shared rules (like `/healthz`) and exists only when signing secrets are configured.
 *
 * 1. Read the raw body (at most 1 MiB, counted while streaming: 413 `payloadTooLarge`).
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
import { DEFAULT_MAX_BODY_BYTES, readLimitedBody } from "../rules/body.ts";
import { appendAudit } from "../runs/audit.ts";
import type { RunGateway } from "../runs/runs.ts";
import { ANSWER_RETENTION_MS, type Store } from "../store/types.ts";

/** The intake's path. */
export const WEBHOOK_PATH = "/webhooks/provider";

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

  async function intake(context: RequestContext): Promise<Response> {
    const raw = await readLimitedBody(context.request, {
      maxBytes: DEFAULT_MAX_BODY_BYTES,
      timeoutMs: 30_000,
    });
    // Loaded on first delivery, so startup does not load the client library.
    const { verifyManagedAgentWebhook } = await import("../../client/managed_agents/webhooks.ts");
    let event = null;
    for (const secret of secrets) {
      try {
        event = await verifyManagedAgentWebhook(raw, context.request.headers, secret);
        break;
      } catch {
        // Try the next secret; which check failed is never told.
      }
    }
    if (event === null) throw verificationFailed();
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
