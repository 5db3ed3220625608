/**
 * Writing audit entries. An entry holds who did what to whom, the correlation id and the
 * outcome, never a bearer, key, secret or message content. Appending is awaited but cannot fail
 * the call whose effect already happened: a store failure is logged (without the entry's
 * content) instead.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import type { RuntimeLogger } from "../log.ts";
import type { AuditAction, AuditEntryInput, ExchangedToken, Store } from "../store/types.ts";
import type { RunCall } from "./call.ts";

/** What one audit call records beside the call's own actor and correlation id. */
export interface AuditFacts {
  /** What happened. */
  action: AuditAction;
  /** The principal it was done to. */
  subjectId?: string;
  /** That principal's name, when it has one. */
  subjectName?: string;
  /** The run it concerned. */
  runId?: string;
  /** The trust policy it concerned. */
  trustPolicy?: string;
  /** On `token.exchanged`: the ID token's issuer, subject, `jti` and matched claims. */
  token?: ExchangedToken;
  /** `ok` or a stable error code. */
  outcome: string;
}

/**
 * The audit entry of the request in `context`, for a store write that appends it in the same
 * atomic step as its effect (`store.principals.create`, `store.principals.revoke`); undefined without
 * an authenticated actor.
 *
 * @example
 * ```ts ignore
 * await store.principals.create(record, recording, auditEntry(context, facts));
 * ```
 */
export function auditEntry(
  context: RequestContext,
  facts: AuditFacts,
): AuditEntryInput | undefined {
  const actorId = context.principal?.principalId;
  if (actorId === undefined) return undefined;
  return entryOf(actorId, context.responseCorrelationId, context.receivedAt, facts);
}

/**
 * The audit entry of an unauthenticated request in `context` whose actor is known only once it
 * succeeded (the token exchange: the principal it issued, acting for its CI job).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RequestContext } from "../context.ts";
 * import { actorAuditEntry } from "./audit.ts";
 * const context = new RequestContext(new Request("http://localhost/v1/token-exchange"), 0);
 * const entry = actorAuditEntry(context, "p", { action: "token.exchanged", outcome: "ok" });
 * assert.equal(entry.actorId, "p");
 * ```
 */
export function actorAuditEntry(
  context: RequestContext,
  actorId: string,
  facts: AuditFacts,
): AuditEntryInput {
  return entryOf(actorId, context.responseCorrelationId, context.receivedAt, facts);
}

/**
 * The audit entry of a call into the run gateway: its principal acted, at the call's time.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { callAuditEntry } from "./audit.ts";
 * const entry = callAuditEntry({
 *   principal: {
 *     principalId: "p", capabilities: [], expiresAt: "", expiresAtMs: 0, bootstrap: false,
 *   },
 *   deadline: 0,
 *   correlationId: "c",
 *   at: 0,
 * }, { action: "run.cancelled", runId: "sesn_1", outcome: "ok" });
 * assert.equal(entry.actorId, "p");
 * assert.equal(entry.at, "1970-01-01T00:00:00.000Z");
 * ```
 */
export function callAuditEntry(call: RunCall, facts: AuditFacts): AuditEntryInput {
  return entryOf(call.principal.principalId, call.correlationId, call.at, facts);
}

function entryOf(
  actorId: string,
  correlationId: string,
  at: number,
  facts: AuditFacts,
): AuditEntryInput {
  return {
    at: new Date(at).toISOString(),
    action: facts.action,
    actorId,
    ...(facts.subjectId !== undefined ? { subjectId: facts.subjectId } : {}),
    ...(facts.subjectName !== undefined ? { subjectName: facts.subjectName } : {}),
    ...(facts.runId !== undefined ? { runId: facts.runId } : {}),
    ...(facts.trustPolicy !== undefined ? { trustPolicy: facts.trustPolicy } : {}),
    ...(facts.token !== undefined ? { token: facts.token } : {}),
    correlationId,
    outcome: facts.outcome,
  };
}

/**
 * Appends one audit entry; a store failure is logged (the action and correlation id, never the
 * entry) and swallowed.
 *
 * @example
 * ```ts ignore
 * await appendAudit(store, logger, entry);
 * ```
 */
export async function appendAudit(
  store: Store,
  logger: RuntimeLogger,
  entry: AuditEntryInput,
): Promise<void> {
  try {
    await store.audit.append(entry);
  } catch (error) {
    logger.error("audit append failed", {
      errorName: error instanceof Error ? error.name : typeof error,
      action: entry.action,
      correlationId: entry.correlationId,
    });
  }
}

/**
 * Appends the audit entry of a call into the run gateway.
 *
 * @example
 * ```ts ignore
 * await audit(store, logger, call, { action: "run.started", runId, outcome: "ok" });
 * ```
 */
export function audit(
  store: Store,
  logger: RuntimeLogger,
  call: RunCall,
  facts: AuditFacts,
): Promise<void> {
  return appendAudit(store, logger, callAuditEntry(call, facts));
}
