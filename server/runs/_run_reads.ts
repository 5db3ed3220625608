/**
 * Reading runs through the run gateway (`runs.ts`), and refreshing them from the provider.
 *
 * A run is read from its record. An active one is refreshed from the provider when it is read,
 * and every active run of a principal is refreshed when a start finds its quota full (then the
 * start tries its reservation once more, `_start_run.ts`): both within the read budget of
 * `_provider_reads.ts` (the provider is asked at most once a second per run, across callers and
 * replicas; otherwise the record answers, which the run's tail keeps current). Outside a caller's
 * call (a webhook told of a run, a tool answer moved it on) a run is refreshed within a timeout of
 * its own. What a provider status does to the run's record is decided by the rules of
 * `run_state.ts` (a terminal state frees the run's slot); a session the provider no longer knows
 * ends the run as `failed`, and any other provider failure is answered through
 * `provider_failure.ts`.
 *
 * Listing reads the store alone: the caller's own runs, or, for admins and approvers, every
 * principal's or one's (`_run_access.ts`).
 *
 * @module
 */
import type { ProviderManagedAgentClient } from "../../client/mod.ts";
import { InterfaceError } from "../errors.ts";
import {
  ACTIVE_RUN_STATES,
  type RunListQuery,
  type Store,
  type StoredRunRecord,
} from "../store/types.ts";
import type { RunPage, RunRecord } from "../../wire/mod.ts";
import { deadlineSignal, type RunCall } from "./call.ts";
import { changeRun } from "./_change_run.ts";
import { type GatewayContext, isoNow } from "./_gateway_context.ts";
import { isSessionGone } from "./provider_failure.ts";
import { publicRun } from "./public_run.ts";
import { readsEveryRun, visibleRun } from "./_run_access.ts";
import { afterStatus, isSettled, isTerminal, type StatusReport, turnOf } from "./run_state.ts";

/** Active runs of a principal refreshed when a start finds its quota full. */
const REFRESH_ON_FULL = 100;

/**
 * Reads a run the caller may read; an active one is refreshed from the provider first when the
 * budget allows (at most once a second per run across callers and replicas: `_provider_reads.ts`).
 */
export async function readRun(
  context: GatewayContext,
  call: RunCall,
  runId: string,
): Promise<RunRecord> {
  const client = await context.providerClient();
  const record = await visibleRun(context.store, call.principal, runId, "read");
  if (isSettled(record)) return publicRun(record);
  return publicRun(
    await budgetedRefresh(context, client, record, deadlineSignal(call, context.now)),
  );
}

/** Lists runs: the caller's own, or (admins and approvers) every principal's or one's. */
export async function listRuns(
  store: Store,
  call: RunCall,
  query: RunListQuery,
): Promise<RunPage> {
  const caller = call.principal;
  let principalId: string | undefined = caller.principalId;
  if (readsEveryRun(caller)) principalId = query.principalId;
  else if (query.principalId !== undefined && query.principalId !== caller.principalId) {
    throw new InterfaceError(
      "missingCapability",
      "Listing another principal's runs needs session:approve or authority:admin",
      { extra: { requiredCapability: "session:approve" } },
    );
  }
  const page = await store.runs.list({
    limit: query.limit,
    ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
    ...(query.state !== undefined ? { state: query.state } : {}),
    ...(principalId !== undefined ? { principalId } : {}),
  });
  return { runs: page.runs.map(publicRun), nextCursor: page.nextCursor };
}

/**
 * Refreshes an active run's state from the provider outside a caller's call (a webhook told
 * of it, a tool answer moved it on), within `timeoutMs` (default 30 s) or until `signal`
 * fires; answers the record, or null for an unknown run.
 */
export async function refreshRun(
  context: GatewayContext,
  runId: string,
  options: { timeoutMs?: number; signal?: AbortSignal },
): Promise<StoredRunRecord | null> {
  const client = await context.providerClient();
  const record = await context.store.runs.get(runId);
  if (record === null || isSettled(record)) return record;
  const deadline = context.now() + (options.timeoutMs ?? 30_000);
  const signal = deadlineSignal(
    { deadline, ...(options.signal !== undefined ? { signal: options.signal } : {}) },
    context.now,
  );
  return await refresh(context, client, record, signal);
}

/**
 * Refreshes a principal's active runs from the provider (at most 100 of them), within the read
 * budget and the call's deadline; answers whether any of them ended. Provider failures leave a
 * run as it was.
 */
export async function refreshActive(
  context: GatewayContext,
  call: RunCall,
  principalId: string,
): Promise<boolean> {
  const client = await context.providerClient();
  const active: StoredRunRecord[] = [];
  for (const state of ACTIVE_RUN_STATES) {
    const page = await context.store.runs.list({ principalId, state, limit: REFRESH_ON_FULL });
    active.push(...page.runs);
  }
  const signal = deadlineSignal(call, context.now);
  const refreshed = await Promise.all(
    active.slice(0, REFRESH_ON_FULL).map((record) =>
      budgetedRefresh(context, client, record, signal).catch(() => record)
    ),
  );
  return refreshed.some((record) => isTerminal(record.state));
}

/** {@linkcode refresh} within the read budget; a caller's deadline answers 503. */
async function budgetedRefresh(
  context: GatewayContext,
  client: ProviderManagedAgentClient,
  record: StoredRunRecord,
  signal: AbortSignal,
): Promise<StoredRunRecord> {
  try {
    return await context.reads.status(
      record,
      signal,
      (claimed, own) => refresh(context, client, claimed, own),
    );
  } catch (error) {
    throw context.failures.refusal(error);
  }
}

/**
 * Reads an active run's state from the provider and records what it changes (`run_state.ts`;
 * a terminal state frees its slot). A session the provider no longer knows (404) ends the run
 * as `failed`; any other failure is answered through `provider_failure.ts`.
 */
async function refresh(
  context: GatewayContext,
  client: ProviderManagedAgentClient,
  record: StoredRunRecord,
  signal: AbortSignal,
): Promise<StoredRunRecord> {
  const runId = record.runId;
  const turn = turnOf(record);
  let report: StatusReport;
  try {
    const status = await client.getRun(runId, { signal });
    report = {
      turn,
      state: status.status === "started" ? "running" : status.status,
      ...(status.stopReason !== undefined ? { stopReason: status.stopReason } : {}),
      ...(status.usage !== undefined ? { usage: status.usage } : {}),
    };
  } catch (error) {
    if (!isSessionGone(error)) throw context.failures.refusal(error);
    report = { turn, state: "failed" };
  }
  const at = isoNow(context);
  const change = (current: StoredRunRecord) => afterStatus(current, report, at);
  return await changeRun(context.store, runId, change, record) ?? record;
}
