/**
 * What the parts of the run gateway share (`runs.ts` builds it once): the store, the clock, the
 * provider settings and client, the reservations (`_reservations.ts`), the read budget
 * (`_provider_reads.ts`), how provider failures are answered (`provider_failure.ts`), the runs'
 * activity that wakes their tails (`activity.ts`), and the one way a call's audit entry is written
 * (`audit.ts`). Starting a run (`_start_run.ts`), messages to a run (`_run_messages.ts`), reading
 * and refreshing (`_run_reads.ts`) and the policy checks (`_admission.ts`) take it as their first
 * argument.
 *
 * @module
 */
import type { ProviderManagedAgentClient } from "../../client/mod.ts";
import type { AuditAction, Store } from "../store/types.ts";
import type { RunActivity } from "./activity.ts";
import type { RunCall } from "./call.ts";
import type { ProviderSettings } from "./provider.ts";
import type { ProviderFailures } from "./provider_failure.ts";
import type { ProviderReads } from "./_provider_reads.ts";
import type { Reservations } from "./_reservations.ts";

/** The state and services of one gateway, as its parts use them. */
export interface GatewayContext {
  /** The store. */
  readonly store: Store;
  /** The provider settings (defaults, and the credential to scrub from messages). */
  readonly settings: ProviderSettings;
  /** The clock, ms since the epoch (the server's `now`). */
  readonly now: () => number;
  /** Slots and holds against the quotas and budgets. */
  readonly reservations: Reservations;
  /** The budget of provider reads that callers' reads cause. */
  readonly reads: ProviderReads;
  /** How provider failures are scrubbed, counted and answered. */
  readonly failures: ProviderFailures;
  /** Runs with news in this process: their tails listen. */
  readonly activity: RunActivity;
  /** The provider client (loaded on first use); 503 `providerNotConfigured` without one. */
  providerClient(): Promise<ProviderManagedAgentClient>;
  /** Appends the audit entry of `call`: `action` on `runId` (when there is one), its outcome. */
  audit(
    call: RunCall,
    action: AuditAction,
    runId: string | undefined,
    outcome: string,
  ): Promise<void>;
}

/**
 * The context's clock as an RFC 3339 time, as run records write it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isoNow } from "./_gateway_context.ts";
 * assert.equal(isoNow({ now: () => 0 }), "1970-01-01T00:00:00.000Z");
 * ```
 */
export function isoNow(context: Pick<GatewayContext, "now">): string {
  return new Date(context.now()).toISOString();
}
