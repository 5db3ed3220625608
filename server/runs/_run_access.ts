/**
 * Who may see and change which run, for the run gateway (`runs.ts`) and everything that reads
 * runs on a caller's behalf (tool answers, the inbox, the activity feed, notifications, the
 * provider's own API): a run is its owner's; admins see and change every run, approvers see every
 * run; anyone else is answered 404 `runNotFound`, never 403, so a run id tells a stranger nothing.
 *
 * @module
 */
import type { AuthenticatedPrincipal } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { Store, StoredRunRecord } from "../store/types.ts";

/** The 404 of a run the caller may not see, or that does not exist. */
export function runNotFound(): InterfaceError {
  return new InterfaceError("runNotFound", "No run with this id");
}

/**
 * Whether `caller` may read any principal's runs (admins and approvers).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readsEveryRun } from "./_run_access.ts";
 * assert.equal(readsEveryRun({ capabilities: ["session:approve"] }), true);
 * assert.equal(readsEveryRun({ capabilities: ["session:read"] }), false);
 * ```
 */
export function readsEveryRun(caller: Pick<AuthenticatedPrincipal, "capabilities">): boolean {
  return caller.capabilities.includes("authority:admin") ||
    caller.capabilities.includes("session:approve");
}

/**
 * Reads a run `caller` may see, else 404 `runNotFound`: `read` (and tool confirmations) for its
 * owner, admins and approvers; `write` for its owner and admins. No provider call.
 */
export async function visibleRun(
  store: Store,
  caller: AuthenticatedPrincipal,
  runId: string,
  access: "read" | "write",
): Promise<StoredRunRecord> {
  if (runId.length === 0 || runId.length > 256) throw runNotFound();
  const record = await store.runs.get(runId);
  if (record === null) throw runNotFound();
  if (record.principalId === caller.principalId) return record;
  if (caller.capabilities.includes("authority:admin")) return record;
  if (access === "read" && caller.capabilities.includes("session:approve")) return record;
  throw runNotFound();
}
