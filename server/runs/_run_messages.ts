/**
 * Messages to a run through the run gateway (`runs.ts`): follow-ups that start a turn, and
 * interrupts (a cancel is the interrupt of the whole session). Each is sent by a caller that may
 * write the run (`_run_access.ts`), with its content checked against the caller's `fileIds`
 * first (`_admission.ts`), and wakes the run's tail (`RunActivity`): the run's record changes by
 * the rules of `run_state.ts`, and a provider failure is answered through `provider_failure.ts`.
 *
 * - A cancel marks the run `cancelled` at once (the provider's interrupt is graceful). An
 *   interrupt naming one of the session's threads is passed on and leaves the run as it is.
 * - A follow-up to a finished run wakes it after reserving a slot (and, for a principal with a
 *   budget or a `maxRunCost`, a hold) again, counted against the run's owner, and raises its
 *   session's provider budget to the new ceiling before the message goes.
 * - A follow-up to a run still active (for a principal that holds money) takes a zero hold of the
 *   turn it may start while the run holds money (`SpendHoldRequest.fence`), so the end of the
 *   turn before it keeps the run's holds: its record may lag a turn the provider already ended.
 *   When the run holds nothing, the hold is as for a waking follow-up, and raises the ceiling.
 *
 * A follow-up message is sent at most once per idempotency key: the key is marked begun before
 * the send, and released again only when the provider answered that it refused the message
 * (`refused`, `busy`); a send whose outcome is unknown (no connection, a timeout, the deadline)
 * or a store failure after the send leaves the key `unsettled` rather than open to a retry.
 *
 * @module
 */
import type { ManagedAgentEvent } from "../../client/mod.ts";
import type { GrantedHold, SpendHoldRequest, StoredRunRecord } from "../store/types.ts";
import type { RunRecord } from "../../wire/mod.ts";
import { deadlineSignal, type RunCall, upstreamOptions } from "./call.ts";
import { changeRun } from "./_change_run.ts";
import { type GatewayContext, isoNow } from "./_gateway_context.ts";
import { admitContent, ownerRunPolicy } from "./_admission.ts";
import type { ContentField } from "./policy.ts";
import { providerFailureOf } from "./provider_failure.ts";
import { publicRun } from "./public_run.ts";
import { visibleRun } from "./_run_access.ts";
import { afterCancel, afterFollowUp, isTerminal } from "./run_state.ts";
import {
  holdsMoney,
  money,
  sessionBudget,
  type SpendLimits,
  unbudgetableRefusal,
} from "./spend.ts";
import { startsATurn } from "./start_request.ts";

/** A run changed by a call that sent events: its public record and what the provider recorded. */
export interface SentToRun {
  /** The run after the call. */
  run: RunRecord;
  /** The events the provider recorded, as it answered them (none when it did not say). */
  recorded: ManagedAgentEvent[];
}

/**
 * Interrupts a run. Without `event`, or with a `user.interrupt` of the whole session, the run
 * is cancelled: its session interrupted, the run marked `cancelled`, its tail woken. A
 * `user.interrupt` naming one of the session's threads (`session_thread_id`) is passed on and
 * leaves the run as it is. Answers the run and the events the provider recorded.
 */
export async function interrupt(
  context: GatewayContext,
  call: RunCall,
  runId: string,
  event?: ManagedAgentEvent,
): Promise<SentToRun> {
  const client = await context.providerClient();
  const record = await visibleRun(context.store, call.principal, runId, "write");
  if (event !== undefined) {
    await admitContent(context, call, {
      runId,
      action: "run.cancelled",
      field: "events",
      content: event,
    });
  }
  const whole = event === undefined || event.session_thread_id === undefined;
  let updated = record;
  let recorded: ManagedAgentEvent[] = [];
  if (event !== undefined || !isTerminal(record.state)) {
    try {
      const options = upstreamOptions(call, deadlineSignal(call, context.now));
      if (event === undefined) await client.cancelRun(runId, options);
      else recorded = await client.sendEvents(runId, [event], options);
    } catch (error) {
      const refusal = context.failures.refusal(error);
      await context.audit(call, "run.cancelled", runId, refusal.code);
      throw refusal;
    }
    if (whole && !isTerminal(record.state)) {
      const at = isoNow(context);
      updated = await changeRun(context.store, runId, (current) =>
        afterCancel(current, at), record) ??
        afterCancel(record, at);
    }
  }
  await context.audit(call, "run.cancelled", runId, "ok");
  context.activity.notify(runId);
  return { run: publicRun(updated), recorded };
}

/**
 * Sends events that start a turn (`user.message`, `user.define_outcome`) to a run the caller
 * may write: a finished run starts again once a slot is reserved for it, and the run's tail is
 * woken. Answers the run and the events the provider recorded. Files their content refers to
 * must be in the caller's `fileIds` (`field`: the request field that carried them).
 */
export async function followUp(
  context: GatewayContext,
  call: RunCall,
  runId: string,
  events: ManagedAgentEvent[],
  field: ContentField,
): Promise<SentToRun> {
  const client = await context.providerClient();
  const caller = call.principal;
  const reservations = context.reservations;
  const record = await visibleRun(context.store, caller, runId, "write");
  await admitContent(context, call, { runId, action: "run.message", field, content: events });
  const waking = isTerminal(record.state);
  let limits: SpendLimits | null = null;
  let hold: SpendHoldRequest | null = null;
  let granted: GrantedHold | undefined;
  // The slot (and hold) counts against the run's owner, who may not be the caller (an admin).
  const owner = await ownerRunPolicy(context.store, caller, record);
  if (waking || holdsMoney(owner.spend)) {
    limits = owner.spend;
    // A run still active holds for the turn the message may start too: no new money while it
    // holds some (its turn's end then keeps the rest held), else a hold as for a waking one.
    hold = await reservations.wakeHold(record, limits, { fence: !waking });
    const reserved = await reservations.reserve(
      record.principalId,
      runId,
      owner.maxActiveRuns,
      hold,
    );
    if (reserved.result !== "reserved") {
      const refusal = reservations.refusal(reserved, limits);
      await context.audit(call, "run.message", runId, refusal.code);
      throw refusal;
    }
    granted = reserved.hold;
  }
  // New money raises the provider's ceiling; a zero hold leaves it where it is.
  const raise = granted !== undefined && (waking || granted.amount > 0n) ? granted : undefined;
  const key = call.idempotency ?? null;
  let recorded: ManagedAgentEvent[];
  try {
    // From here on a retry with the key never sends the events again.
    await key?.begin();
    const options = upstreamOptions(call, deadlineSignal(call, context.now));
    if (raise !== undefined) {
      // The provider's ceiling first: the new turn may spend up to the new hold.
      await client.updateSession(runId, { budget: sessionBudget(raise.ceiling) }, options);
    }
    recorded = await client.sendEvents(runId, events, options);
  } catch (error) {
    if (waking) await reservations.release(record.principalId, runId, hold);
    else await reservations.releaseHold(record.principalId, hold);
    const refusal = unbudgetableRefusal(context.failures.refusal(error));
    // The provider answered that it refused the message: it may be sent again with the key.
    const kind = providerFailureOf(refusal)?.kind;
    if (kind === "refused" || kind === "busy") key?.undone();
    await context.audit(call, "run.message", runId, refusal.code);
    throw refusal;
  }
  const at = isoNow(context);
  // The turns the events start, as the tail counts them in the session's history.
  const started = Math.max(1, events.filter((event) => startsATurn(event.type)).length);
  const woken = (current: StoredRunRecord): StoredRunRecord => {
    const next = afterFollowUp(current, at, started);
    if (waking && limits !== null) {
      return { ...next, ...reservations.runLimits(limits, granted) };
    }
    // Still active: its time limit runs on; a raised ceiling shows.
    return raise === undefined ? next : { ...next, maxListCost: money(raise.ceiling) };
  };
  const updated = await changeRun(context.store, runId, woken, record) ?? woken(record);
  await context.audit(call, "run.message", runId, "ok");
  context.activity.notify(runId);
  return { run: publicRun(updated), recorded };
}
