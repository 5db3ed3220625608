/**
 * The run gateway's policy checks (`runs.ts`), made before anything reaches the provider; the
 * rules themselves are `policy.ts`'s:
 *
 * - a start is checked over its normalized fields: the caller's `agentIds` (403
 *   `agentNotAllowed`), then its resource policy: environment, vaults and resources by type (403
 *   `resourceNotAllowed` naming the field), then agent overrides, only when it allows them (403
 *   `agentOverrideNotAllowed`);
 * - content sent to a run (a message, an outcome, a tool result, any event) may refer only to
 *   files in the caller's `fileIds` (403 `resourceNotAllowed` naming the request field);
 * - what a run reserves (its slot, its hold) counts against its owner, who may not be the caller
 *   (an admin): the owner's run policy is read here.
 *
 * A refusal is audited with its code.
 *
 * @module
 */
import type { AuthenticatedPrincipal } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { AuditAction, Store, StoredRunRecord } from "../store/types.ts";
import type { RunCall } from "./call.ts";
import {
  type ContentField,
  contentViolation,
  type PolicyViolation,
  type RunPolicy,
  runPolicyOf,
  type RunStartScope,
  startViolation,
} from "./policy.ts";
import type { GatewayContext } from "./_gateway_context.ts";

/** The refusal of a policy violation: 403 with its code, naming the field and the list. */
function policyRefusal(violation: PolicyViolation): InterfaceError {
  return new InterfaceError(violation.code, violation.message, {
    extra: violation.code === "resourceNotAllowed"
      ? {
        field: violation.field,
        ...(violation.policyField !== undefined ? { policyField: violation.policyField } : {}),
      }
      : undefined,
  });
}

/**
 * The one policy check of a start, over its normalized fields (`policy.ts`): answers the
 * caller's policy, or audits the refusal and throws 403 `agentNotAllowed` or
 * `resourceNotAllowed` (naming the refused field) before anything reaches the provider.
 */
export async function admitStart(
  context: GatewayContext,
  call: RunCall,
  scope: RunStartScope,
): Promise<RunPolicy> {
  const policy = runPolicyOf(call.principal);
  const violation = startViolation(policy, scope);
  if (violation === null) return policy;
  await context.audit(call, "run.started", undefined, violation.code);
  throw policyRefusal(violation);
}

/** Content a caller sends to a run, as {@linkcode admitContent} checks it. */
export interface SentContent {
  /** The run it goes to. */
  runId: string;
  /** What a refusal is audited as. */
  action: AuditAction;
  /** The request field that carried it: a refusal names it. */
  field: ContentField;
  /** The content: a message, an outcome, a tool result, any event. */
  content: unknown;
}

/**
 * Refuses content the caller sends to a run when it refers to a file outside the caller's
 * `fileIds` (`policy.ts`): 403 `resourceNotAllowed` naming the field that carried it, audited as
 * the sent content's `action`, before the provider sees it.
 */
export async function admitContent(
  context: GatewayContext,
  call: RunCall,
  sent: SentContent,
): Promise<void> {
  const violation = contentViolation(runPolicyOf(call.principal), sent.field, sent.content);
  if (violation === null) return;
  await context.audit(call, sent.action, sent.runId, violation.code);
  throw policyRefusal(violation);
}

/** The run policy of `record`'s owner: the caller's own when it is the owner. */
export async function ownerRunPolicy(
  store: Store,
  caller: AuthenticatedPrincipal,
  record: StoredRunRecord,
): Promise<RunPolicy> {
  if (record.principalId === caller.principalId) return runPolicyOf(caller);
  // Only the bootstrap principal starts runs without a principal record.
  return runPolicyOf(await store.principals.get(record.principalId) ?? { bootstrap: true });
}
