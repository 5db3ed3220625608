/**
 * Starting a run through the run gateway (`runs.ts`): the one start path of both interfaces.
 *
 * Starting a run, in order, from a normalized {@linkcode StartRequest} (`start_request.ts`: the
 * `/v1` body and the provider's own session body both map into one):
 *
 * 1. resolve the agent and environment (the request's, else the defaults; neither: 422);
 * 2. check the principal's policy over the start's normalized fields (`_admission.ts`, the rules
 *    of `policy.ts`): its `agentIds` (403 `agentNotAllowed`), then its resource policy:
 *    environment, vaults and resources by type (403 `resourceNotAllowed` naming the field), then
 *    agent overrides, only when it allows them (403 `agentOverrideNotAllowed`); a refusal is
 *    audited and nothing reaches the provider;
 * 3. reserve an active-run slot in the store against the principal's `maxActiveRuns` and the
 *    service's limit, atomically across replicas (429 `runQuotaExceeded`), with, for a principal
 *    with a budget or a `maxRunCost`, the run's hold in the same step (429 `budgetExceeded` when
 *    nothing is left: `spend.ts`; `_reservations.ts`). When the principal's quota is full, its
 *    active runs are refreshed from the provider within the read budget (`_run_reads.ts`) and,
 *    when one of them had ended, the reservation is tried once more;
 * 4. mark the idempotency key begun (`IdempotencyRecord.begin`), then open the provider session
 *    (with its initial events) and send the kickoff message within the call's deadline (the
 *    client's own retries and timeouts apply inside it), leaving no orphan session behind when
 *    either fails (`_open_session.ts`); the session of a principal with a budget or a
 *    `maxRunCost` carries its hold as the provider's budget (a budget the request asks for is
 *    lowered to it, never raised);
 * 5. record the run, turning the reservation into the run's slot, completing the idempotency
 *    claim with the answer and appending its `run.created` activity entry in the same store
 *    write, and wake the run's tail (`RunActivity`). A session started without a turn (no
 *    kickoff, no initial event that starts one) waits idle: it is recorded `completed`, waiting
 *    for its first turn, and keeps its slot until a follow-up starts that turn (then the slot is
 *    the turn's), the session is gone (`run_state.ts`, rule 7) or its principal is revoked or
 *    expired (rule 8, `idle_slots.ts`): idle sessions count against the quotas like runs, or a
 *    principal could open sessions at the provider without limit.
 *
 * A failure after step 3 releases the reservation. Replays of the same idempotency key never
 * reach this code: the idempotency rule answers them with the recorded run. Past step 4 a key is
 * never run again: a provider failure deleted the session (the key is released), a failure to
 * record the run deletes it too (released once the deletion succeeded), and anything else (a
 * crash) leaves the key `unsettled`, so one key never starts two sessions.
 *
 * @module
 */
import { isObject } from "../../client/guards.ts";
import { invalidRequest, type ValidationDetail } from "../errors.ts";
import type { StoredResponse, StoredRunRecord } from "../store/types.ts";
import type { RunRecord } from "../../wire/mod.ts";
import { deadlineSignal, type RunCall, upstreamOptions } from "./call.ts";
import { admitStart } from "./_admission.ts";
import { type GatewayContext, isoNow } from "./_gateway_context.ts";
import { openSession, type SessionView } from "./_open_session.ts";
import { publicRun } from "./public_run.ts";
import { refreshActive } from "./_run_reads.ts";
import { holdRequest, requestedCeiling, sessionBudgetOf, unbudgetableRefusal } from "./spend.ts";
import { type StartRequest, startsATurn, startsTurn } from "./start_request.ts";

/** The longest wait for the deletion of a session whose run could not be recorded, in ms. */
const UNRECORDED_DELETE_MS = 5_000;

/** A started run: its public record and the provider's session as the provider answered it. */
export interface StartedRun {
  /** The run. */
  run: RunRecord;
  /** The provider's session object, unchanged. */
  session: SessionView;
}

/**
 * What a start records under its idempotency key, from its run and the provider's session: by
 * default the `/v1` answer (201 and the run); the `/provider` interface records the session.
 */
export type StartAnswer = (started: StartedRun) => StoredResponse;

/** The `/v1` answer of a start: 201 and the run. */
export const RUN_ANSWER: StartAnswer = ({ run }) => ({ status: 201, body: JSON.stringify(run) });

/**
 * Starts a run from a normalized start request (steps 1 to 5 of the module doc). Answers the
 * public run and the provider's session; `answer` is what the call's idempotency key records.
 */
export async function startRun(
  context: GatewayContext,
  call: RunCall,
  request: StartRequest,
  answer: StartAnswer,
): Promise<StartedRun> {
  const client = await context.providerClient();
  const caller = call.principal;
  const reservations = context.reservations;
  const agentId = request.agentId ?? context.settings.defaultAgentId;
  const environmentId = request.environmentId ?? context.settings.defaultEnvironmentId;
  const missing: ValidationDetail[] = [];
  if (agentId === undefined) {
    missing.push({
      path: "metadata.agent_id",
      message: "No agent: name one, or start the runtime with a default agent",
    });
  }
  if (environmentId === undefined) {
    missing.push({
      path: "metadata.environment_id",
      message: "No environment: name one, or start the runtime with a default environment",
    });
  }
  if (agentId === undefined || environmentId === undefined) throw invalidRequest(missing);
  const policy = await admitStart(context, call, {
    agentId,
    environmentId,
    ...(request.agentVersion !== undefined ? { agentVersion: request.agentVersion } : {}),
    ...(request.agentOverrides !== undefined ? { agentOverrides: true } : {}),
    ...(request.vaultIds !== undefined ? { vaultIds: request.vaultIds } : {}),
    ...(request.resources !== undefined ? { resources: request.resources } : {}),
    content: [
      ...(request.initialEvents !== undefined
        ? [{ field: "initial_events" as const, events: request.initialEvents }]
        : []),
      ...(request.kickoff !== undefined
        ? [{ field: "input" as const, events: request.kickoff }]
        : []),
    ],
  });
  const active = startsTurn(request);
  const slotId = `reservation:${crypto.randomUUID()}`;
  // A session that starts without a turn holds no money (only its slot) until a follow-up
  // starts its first; a budget the request asks for itself lowers the hold (and the provider's
  // ceiling) to it.
  const asked = requestedCeiling(request.budget);
  const hold = active
    ? holdRequest(policy.spend, context.now(), {
      holdId: slotId,
      turn: 1,
      ...(asked !== null ? { cap: asked } : {}),
    })
    : null;
  let reserved = await reservations.reserve(
    caller.principalId,
    slotId,
    policy.maxActiveRuns,
    hold,
  );
  if (
    reserved.result === "principalQuota" &&
    await refreshActive(context, call, caller.principalId)
  ) {
    // Some of the principal's runs had ended at the provider: their slots are free now.
    reserved = await reservations.reserve(
      caller.principalId,
      slotId,
      policy.maxActiveRuns,
      hold,
    );
  }
  if (reserved.result !== "reserved") {
    const refusal = reservations.refusal(reserved, policy.spend);
    await context.audit(call, "run.started", undefined, refusal.code);
    throw refusal;
  }
  const granted = reserved.hold;
  const key = call.idempotency ?? null;
  let session;
  const signal = deadlineSignal(call, context.now);
  try {
    // From here on a retry with the key never opens a second session.
    await key?.begin();
    session = await openSession({
      client,
      params: {
        agentId,
        ...(request.agentVersion !== undefined ? { agentVersion: request.agentVersion } : {}),
        ...(request.agentOverrides !== undefined ? { agentOverrides: request.agentOverrides } : {}),
        environmentId,
        ...(request.title !== undefined ? { title: request.title } : {}),
        ...(request.metadata !== undefined ? { metadata: request.metadata } : {}),
        ...(request.resources !== undefined ? { resources: request.resources } : {}),
        ...(request.vaultIds !== undefined ? { vaultIds: request.vaultIds } : {}),
        ...sessionBudgetOf(policy.spend, granted, request.budget),
        ...(request.initialEvents !== undefined ? { initialEvents: request.initialEvents } : {}),
      },
      messages: request.kickoff ?? [],
      // Not the signal: the creation is not cut at the deadline (`_open_session.ts`).
      options: upstreamOptions(call),
      signal,
      deadline: call.deadline,
      now: context.now,
    });
  } catch (error) {
    // Opening the session failed and left none behind (`_open_session.ts`).
    key?.undone();
    await reservations.release(caller.principalId, slotId, hold);
    const refusal = unbudgetableRefusal(context.failures.refusal(error));
    await context.audit(call, "run.started", undefined, refusal.code);
    throw refusal;
  }
  const now = isoNow(context);
  const agent = isObject(session.agent) ? session.agent : undefined;
  const version = request.agentVersion ??
    (typeof agent?.version === "number" ? agent.version : undefined);
  const record: StoredRunRecord = {
    runId: session.id,
    principalId: caller.principalId,
    agentId,
    ...(version !== undefined ? { agentVersion: version } : {}),
    environmentId,
    ...(request.title !== undefined ? { title: request.title } : {}),
    state: active ? "running" : "completed",
    lastEventSeq: 0,
    // As the tail counts them in the session's history: each event that starts a turn.
    turns: [...request.initialEvents ?? [], ...request.kickoff ?? []]
      .filter((event) => startsATurn(event.type)).length,
    createdAt: typeof session.created_at === "string" ? session.created_at : now,
    updatedAt: now,
    ...(active
      ? reservations.runLimits(policy.spend, granted)
      : { endedAt: now, awaitingFirstTurn: true }),
  };
  const run = publicRun(record);
  const completion = key === null || key.token === null ? undefined : {
    scope: key.scope,
    token: key.token,
    response: answer({ run, session }),
    expiresAt: key.expiresAt,
  };
  try {
    await context.store.runs.create(record, slotId, completion, [{
      type: "run.created",
      at: record.createdAt,
      runId: record.runId,
      principalId: record.principalId,
      state: record.state,
      agentId: record.agentId,
      ...(record.title !== undefined ? { title: record.title } : {}),
      key: "created",
    }]);
  } catch (error) {
    await reservations.release(caller.principalId, slotId, hold);
    // No record, no run: the session goes too, and then the key may be used again.
    const deleted = await client.deleteSession(record.runId, {
      signal: AbortSignal.timeout(UNRECORDED_DELETE_MS),
    }).then(() => true, () => false);
    if (deleted) key?.undone();
    throw error;
  }
  if (completion !== undefined) key?.recorded();
  await context.audit(call, "run.started", record.runId, "ok");
  // The run's tail starts at once (on this replica when it takes the lease); a session waiting
  // for its first turn has nothing to follow yet.
  if (active) context.activity.notify(record.runId);
  return { run, session };
}
