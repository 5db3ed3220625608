/**
 * Writing audit entries from request handlers. An entry holds who did what to whom, the
 * correlation id and the outcome, never a bearer, key, secret or message content. Appending is
 * awaited but cannot fail the request whose effect already happened: a store failure is logged
 * (without the entry's content) instead.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import type { RuntimeLogger } from "../log.ts";
import type { AuditAction, AuditEntryInput, Store } from "../store/types.ts";

/** What one audit call records beside the request's own actor and correlation id. */
export interface AuditFacts {
  /** What happened. */
  action: AuditAction;
  /** The principal it was done to. */
  subjectId?: string;
  /** The run it concerned. */
  runId?: string;
  /** `ok` or a stable error code. */
  outcome: string;
}

/**
 * The audit entry of the request in `context`, for a store write that appends it in the same
 * atomic step as its effect (`Store.createPrincipal`, `Store.revokePrincipal`); undefined without
 * an authenticated actor.
 *
 * @example
 * ```ts ignore
 * await store.createPrincipal(record, recording, auditEntry(context, facts));
 * ```
 */
export function auditEntry(
  context: RequestContext,
  facts: AuditFacts,
): AuditEntryInput | undefined {
  const actorId = context.principal?.principalId;
  if (actorId === undefined) return undefined;
  return {
    at: new Date(context.receivedAt).toISOString(),
    action: facts.action,
    actorId,
    ...(facts.subjectId !== undefined ? { subjectId: facts.subjectId } : {}),
    ...(facts.runId !== undefined ? { runId: facts.runId } : {}),
    correlationId: context.responseCorrelationId,
    outcome: facts.outcome,
  };
}

/**
 * Appends one audit entry for the request in `context`.
 *
 * @example
 * ```ts ignore
 * await audit(store, logger, context, { action: "run.started", runId, outcome: "ok" });
 * ```
 */
export async function audit(
  store: Store,
  logger: RuntimeLogger,
  context: RequestContext,
  facts: AuditFacts,
): Promise<void> {
  const entry = auditEntry(context, facts);
  if (entry === undefined) return;
  try {
    await store.appendAudit(entry);
  } catch (error) {
    logger.error("audit append failed", {
      errorName: error instanceof Error ? error.name : typeof error,
      action: facts.action,
      correlationId: context.responseCorrelationId,
    });
  }
}
