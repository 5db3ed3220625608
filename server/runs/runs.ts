/**
 * The run gateway: the run lifecycle (start, read, list, cancel, message) for principals
 * through the one provider client, and the active-run quotas. Each call is a
 * {@linkcode RunCall} (`call.ts`): the caller, its deadline and signal, what its audit entry
 * carries; the gateway knows nothing of HTTP.
 *
 * Starting a run, in order, from a normalized {@linkcode StartRequest} (`start_request.ts`: the
 * `/v1` body and the provider's own session body both map into one):
 *
 * 1. resolve the agent and environment (the request's, else the defaults; neither: 422);
 * 2. check the principal's policy over the start's normalized fields (`policy.ts`): its
 *    `agentIds` (403 `agentNotAllowed`), then its resource policy: environment, vaults and
 *    resources by type (403 `resourceNotAllowed` naming the field), then agent overrides, only
 *    when it allows them (403 `agentOverrideNotAllowed`); a refusal is audited and nothing
 *    reaches the provider;
 * 3. reserve an active-run slot in the store against the principal's `maxActiveRuns` and the
 *    service's limit, atomically across replicas (429 `runQuotaExceeded`), with, for a principal
 *    with a budget or a `maxRunCost`, the run's hold in the same step (429 `budgetExceeded` when
 *    nothing is left: `spend.ts`);
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
 *    the turn's) or the session is gone (`run_state.ts`, rule 7): idle sessions count against the
 *    quotas like runs, or a principal could open sessions at the provider without limit.
 *
 * A failure after step 3 releases the reservation. Replays of the same idempotency key never
 * reach this code: the idempotency rule answers them with the recorded run. Past step 4 a key is
 * never run again: a provider failure deleted the session (the key is released), a failure to
 * record the run deletes it too (released once the deletion succeeded), and anything else (a
 * crash) leaves the key `unsettled`, so one key never starts two sessions.
 *
 * A run's state is refreshed from the provider when it is read while active, and every active
 * run of a principal is refreshed when a start finds its quota full (then the reservation is
 * tried once more): both within the read budget of `_provider_reads.ts` (the provider is asked at
 * most once a second per run, across callers and replicas; otherwise the record answers, which
 * the run's tail keeps current). A cancel marks the run `cancelled` at once (the provider's interrupt is
 * graceful), and a follow-up message wakes a finished run after reserving a slot (and a hold)
 * again, raising its session's provider budget to the new ceiling before the message goes. A
 * follow-up to a run still active (for a principal that holds money) takes a zero hold of the
 * turn it may start while the run holds money (`SpendHoldRequest.fence`), so the end of the
 * turn before it keeps the run's holds: its record may lag a turn the provider already ended. What
 * each of these does to the run's record is decided by the rules of `run_state.ts`; a provider
 * failure is answered through `provider_failure.ts`. Cancels and messages wake the run's tail too.
 *
 * A follow-up message is sent at most once per idempotency key: the key is marked begun before
 * the send, and released again only when the provider answered that it refused the message
 * (`refused`, `busy`); a send whose outcome is unknown (no connection, a timeout, the deadline)
 * or a store failure after the send leaves the key `unsettled` rather than open to a retry.
 *
 * One concept, the run lifecycle, in one file of a little over 600 lines: its steps share the
 * gateway's state (client, store, quotas, read budget) and are read together.
 *
 * @module
 */
import type { ManagedAgentEvent, ProviderManagedAgentClient } from "../../client/mod.ts";
import { isObject } from "../../client/guards.ts";
import type { AuthenticatedPrincipal } from "../context.ts";
import { InterfaceError, invalidRequest, type ValidationDetail } from "../errors.ts";
import type { RuntimeLogger } from "../log.ts";
import {
  ACTIVE_RUN_STATES,
  type AuditAction,
  type GrantedHold,
  type RunListQuery,
  type SpendHoldRequest,
  type Store,
  type StoredResponse,
  type StoredRunRecord,
} from "../store/types.ts";
import type { RunPage, RunRecord, StartRunBody } from "../../wire/mod.ts";
import { RunActivity } from "./activity.ts";
import { audit } from "./audit.ts";
import { deadlineSignal, type RunCall, upstreamOptions } from "./call.ts";
import { changeRun } from "./_change_run.ts";
import { openSession, type SessionView } from "./_open_session.ts";
import { ProviderReads } from "./_provider_reads.ts";
import {
  type ContentField,
  contentViolation,
  type PolicyHolder,
  type PolicyViolation,
  type RunPolicy,
  runPolicyOf,
  type RunStartScope,
  startViolation,
} from "./policy.ts";
import {
  type StartRequest,
  startRequestOfBody,
  startsATurn,
  startsTurn,
  userMessages,
} from "./start_request.ts";
import type { ProviderSettings } from "./provider.ts";
import {
  holdRequest,
  holdsMoney,
  money,
  requestedCeiling,
  sessionBudget,
  sessionBudgetOf,
  type SpendLimits,
  unbudgetableRefusal,
} from "./spend.ts";
import { Reservations } from "./_reservations.ts";
import { isSessionGone, providerFailureOf, ProviderFailures } from "./provider_failure.ts";
import {
  afterCancel,
  afterFollowUp,
  afterStatus,
  isSettled,
  isTerminal,
  type StatusReport,
  turnOf,
} from "./run_state.ts";

export { DEFAULT_SERVICE_MAX_ACTIVE_RUNS, RESERVATION_LEASE_MS } from "./_reservations.ts";

/** Active runs of a principal refreshed when a start finds its quota full. */
const REFRESH_ON_FULL = 100;
/** The longest wait for the deletion of a session whose run could not be recorded, in ms. */
const UNRECORDED_DELETE_MS = 5_000;

/** Options of {@linkcode RunGateway}. */
export interface RunGatewayOptions {
  /** The store. */
  store: Store;
  /** Log sink. */
  logger: RuntimeLogger;
  /** The provider settings (defaults, and the credential to scrub from messages). */
  settings: ProviderSettings;
  /**
   * The one provider client, or a function loading it on first use, or null when no credential
   * is configured (runs disabled).
   */
  client: ProviderManagedAgentClient | (() => Promise<ProviderManagedAgentClient>) | null;
  /** The clock, ms since the epoch (the server's `now`). */
  now: () => number;
  /** Service-wide active-run limit. */
  serviceLimit?: number;
  /**
   * Told of every provider failure mapped to an answer, by type: the provider's error type
   * (`rate_limit_error`...), or `connection`, `timeout`, `aborted` (the metrics count them).
   */
  onProviderError?: (type: string) => void;
}

function notConfigured(): InterfaceError {
  return new InterfaceError(
    "providerNotConfigured",
    "Runs are disabled: the runtime has no provider credential",
  );
}

function runNotFound(): InterfaceError {
  return new InterfaceError("runNotFound", "No run with this id");
}

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

/** Whether `caller` may read any principal's runs. */
export function readsEveryRun(caller: Pick<AuthenticatedPrincipal, "capabilities">): boolean {
  return caller.capabilities.includes("authority:admin") ||
    caller.capabilities.includes("session:approve");
}

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
const RUN_ANSWER: StartAnswer = ({ run }) => ({ status: 201, body: JSON.stringify(run) });

/** A run changed by a call that sent events: its public record and what the provider recorded. */
export interface SentToRun {
  /** The run after the call. */
  run: RunRecord;
  /** The events the provider recorded, as it answered them (none when it did not say). */
  recorded: ManagedAgentEvent[];
}

/** The gateway service behind the run routes. */
export class RunGateway {
  readonly #store: Store;
  readonly #logger: RuntimeLogger;
  readonly #settings: ProviderSettings;
  readonly #client: ProviderManagedAgentClient | (() => Promise<ProviderManagedAgentClient>) | null;
  #loaded: Promise<ProviderManagedAgentClient> | null = null;
  readonly #reservations: Reservations;
  readonly #now: () => number;
  /** Runs with news in this process: the gateway, tool answers, webhooks notify; tails listen. */
  readonly activity: RunActivity = new RunActivity();
  /** How provider failures are scrubbed, counted and answered (for the tool answers too). */
  readonly failures: ProviderFailures;
  /** The budget of provider reads that callers' reads cause (`_provider_reads.ts`). */
  readonly #reads: ProviderReads;

  /** Creates the gateway. */
  constructor(options: RunGatewayOptions) {
    this.#store = options.store;
    this.#logger = options.logger;
    this.#settings = options.settings;
    this.#client = options.client;
    this.#now = options.now;
    this.#reservations = new Reservations({
      store: options.store,
      now: options.now,
      ...(options.serviceLimit !== undefined ? { serviceLimit: options.serviceLimit } : {}),
    });
    this.#reads = new ProviderReads({ store: options.store, now: options.now });
    this.failures = new ProviderFailures({
      settings: options.settings,
      ...(options.onProviderError !== undefined ? { onFailure: options.onProviderError } : {}),
    });
  }

  /** Whether runs are enabled (a provider credential is configured). */
  get enabled(): boolean {
    return this.#client !== null;
  }

  /** Throws 503 `providerNotConfigured` when runs are disabled. */
  requireEnabled(): void {
    if (this.#client === null) throw notConfigured();
  }

  /** The provider client (loaded on first use); 503 `providerNotConfigured` without one. */
  providerClient(): Promise<ProviderManagedAgentClient> {
    const client = this.#client;
    if (client === null) throw notConfigured();
    if (typeof client !== "function") return Promise.resolve(client);
    return this.#loaded ??= client().catch((error) => {
      this.#loaded = null;
      throw error;
    });
  }

  /**
   * Reads a run the caller may see, else 404 `runNotFound`: `read` (and tool confirmations) for
   * its owner, admins and approvers; `write` for its owner and admins. No provider call.
   */
  async visibleRun(
    caller: AuthenticatedPrincipal,
    runId: string,
    access: "read" | "write",
  ): Promise<StoredRunRecord> {
    if (runId.length === 0 || runId.length > 256) throw runNotFound();
    const record = await this.#store.runs.get(runId);
    if (record === null) throw runNotFound();
    if (record.principalId === caller.principalId) return record;
    if (caller.capabilities.includes("authority:admin")) return record;
    if (access === "read" && caller.capabilities.includes("session:approve")) return record;
    throw runNotFound();
  }

  /**
   * Reads a run the caller may read (its own; any, for admins and approvers), else 404
   * `runNotFound`; runs disabled: 503 `providerNotConfigured`. No provider call.
   */
  readableRun(call: RunCall, runId: string): Promise<StoredRunRecord> {
    this.requireEnabled();
    return this.visibleRun(call.principal, runId, "read");
  }

  /**
   * Refreshes an active run's state from the provider outside a caller's call (a webhook told
   * of it, a tool answer moved it on), within `timeoutMs` (default 30 s) or until `signal`
   * fires; answers the record, or null for an unknown run.
   */
  async refreshRun(
    runId: string,
    options: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<StoredRunRecord | null> {
    const client = await this.providerClient();
    const record = await this.#store.runs.get(runId);
    if (record === null || isSettled(record)) return record;
    const deadline = this.#now() + (options.timeoutMs ?? 30_000);
    const signal = deadlineSignal(
      { deadline, ...(options.signal !== undefined ? { signal: options.signal } : {}) },
      this.#now,
    );
    return await this.#refresh(client, record, signal);
  }

  /**
   * An active run's provider history as `read` returns it, within the read budget: at most one
   * listing a second per run across callers and replicas (`_provider_reads.ts`). For the pending
   * tool requests of `answers.ts`.
   */
  readHistory<T>(
    record: StoredRunRecord,
    signal: AbortSignal,
    read: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    return this.#reads.history(record, signal, read);
  }

  /** Starts a run from a `/v1` body (steps 1 to 5 of the module doc); answers its public record. */
  async start(call: RunCall, body: StartRunBody): Promise<RunRecord> {
    return (await this.startSession(call, startRequestOfBody(body))).run;
  }

  /**
   * Starts a run from a normalized start request (steps 1 to 5 of the module doc): the one start
   * path of both interfaces. Answers the public run and the provider's session; `answer` is what
   * the call's idempotency key records (the `/v1` answer by default).
   */
  async startSession(
    call: RunCall,
    request: StartRequest,
    answer: StartAnswer = RUN_ANSWER,
  ): Promise<StartedRun> {
    const client = await this.providerClient();
    const caller = call.principal;
    const agentId = request.agentId ?? this.#settings.defaultAgentId;
    const environmentId = request.environmentId ?? this.#settings.defaultEnvironmentId;
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
    const policy = await this.#admit(call, {
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
      ? holdRequest(policy.spend, this.#now(), {
        holdId: slotId,
        turn: 1,
        ...(asked !== null ? { cap: asked } : {}),
      })
      : null;
    let reserved = await this.#reservations.reserve(
      caller.principalId,
      slotId,
      policy.maxActiveRuns,
      hold,
    );
    if (
      reserved.result === "principalQuota" && await this.#refreshActive(call, caller.principalId)
    ) {
      // Some of the principal's runs had ended at the provider: their slots are free now.
      reserved = await this.#reservations.reserve(
        caller.principalId,
        slotId,
        policy.maxActiveRuns,
        hold,
      );
    }
    if (reserved.result !== "reserved") {
      const refusal = this.#reservations.refusal(reserved, policy.spend);
      await this.#audit(call, "run.started", undefined, refusal.code);
      throw refusal;
    }
    const granted = reserved.hold;
    const key = call.idempotency ?? null;
    let session;
    const signal = deadlineSignal(call, this.#now);
    try {
      // From here on a retry with the key never opens a second session.
      await key?.begin();
      session = await openSession({
        client,
        params: {
          agentId,
          environmentId,
          ...(request.agentVersion !== undefined ? { agentVersion: request.agentVersion } : {}),
          ...(request.agentOverrides !== undefined
            ? { agentOverrides: request.agentOverrides }
            : {}),
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
        now: this.#now,
      });
    } catch (error) {
      // Opening the session failed and left none behind (`_open_session.ts`).
      key?.undone();
      await this.#reservations.release(caller.principalId, slotId, hold);
      const refusal = unbudgetableRefusal(this.failures.refusal(error));
      await this.#audit(call, "run.started", undefined, refusal.code);
      throw refusal;
    }
    const now = this.#isoNow();
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
        ? this.#reservations.runLimits(policy.spend, granted)
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
      await this.#store.runs.create(record, slotId, completion, [{
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
      await this.#reservations.release(caller.principalId, slotId, hold);
      // No record, no run: the session goes too, and then the key may be used again.
      const deleted = await client.deleteSession(record.runId, {
        signal: AbortSignal.timeout(UNRECORDED_DELETE_MS),
      }).then(() => true, () => false);
      if (deleted) key?.undone();
      throw error;
    }
    if (completion !== undefined) key?.recorded();
    await this.#audit(call, "run.started", record.runId, "ok");
    // The run's tail starts at once (on this replica when it takes the lease); a session waiting
    // for its first turn has nothing to follow yet.
    if (active) this.activity.notify(record.runId);
    return { run, session };
  }

  /**
   * Reads a run from its record; an active one is refreshed from the provider first when the
   * budget allows (at most once a second per run across callers and replicas: `_provider_reads.ts`).
   */
  async get(call: RunCall, runId: string): Promise<RunRecord> {
    const client = await this.providerClient();
    const record = await this.visibleRun(call.principal, runId, "read");
    if (isSettled(record)) return publicRun(record);
    return publicRun(await this.#budgetedRefresh(client, record, deadlineSignal(call, this.#now)));
  }

  /** {@linkcode RunGateway.#refresh} within the read budget; a caller's deadline answers 503. */
  async #budgetedRefresh(
    client: ProviderManagedAgentClient,
    record: StoredRunRecord,
    signal: AbortSignal,
  ): Promise<StoredRunRecord> {
    try {
      return await this.#reads.status(
        record,
        signal,
        (claimed, own) => this.#refresh(client, claimed, own),
      );
    } catch (error) {
      throw this.failures.refusal(error);
    }
  }

  /** Lists runs: the caller's own, or (admins and approvers) every principal's or one's. */
  async list(call: RunCall, query: RunListQuery): Promise<RunPage> {
    this.requireEnabled();
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
    const page = await this.#store.runs.list({
      limit: query.limit,
      ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
      ...(query.state !== undefined ? { state: query.state } : {}),
      ...(principalId !== undefined ? { principalId } : {}),
    });
    return { runs: page.runs.map(publicRun), nextCursor: page.nextCursor };
  }

  /** Cancels a run: interrupts its session, marks it `cancelled` and wakes its tail. */
  async cancel(call: RunCall, runId: string): Promise<RunRecord> {
    return (await this.interrupt(call, runId)).run;
  }

  /**
   * Interrupts a run. Without `event`, or with a `user.interrupt` of the whole session, the run
   * is cancelled: its session interrupted, the run marked `cancelled`, its tail woken. A
   * `user.interrupt` naming one of the session's threads (`session_thread_id`) is passed on and
   * leaves the run as it is. Answers the run and the events the provider recorded.
   */
  async interrupt(call: RunCall, runId: string, event?: ManagedAgentEvent): Promise<SentToRun> {
    const client = await this.providerClient();
    const record = await this.visibleRun(call.principal, runId, "write");
    if (event !== undefined) await this.admitContent(call, runId, "run.cancelled", "events", event);
    const whole = event === undefined || event.session_thread_id === undefined;
    let updated = record;
    let recorded: ManagedAgentEvent[] = [];
    if (event !== undefined || !isTerminal(record.state)) {
      try {
        const options = upstreamOptions(call, deadlineSignal(call, this.#now));
        if (event === undefined) await client.cancelRun(runId, options);
        else recorded = await client.sendEvents(runId, [event], options);
      } catch (error) {
        const refusal = this.failures.refusal(error);
        await this.#audit(call, "run.cancelled", runId, refusal.code);
        throw refusal;
      }
      if (whole && !isTerminal(record.state)) {
        const at = this.#isoNow();
        updated = await changeRun(this.#store, runId, (current) =>
          afterCancel(current, at), record) ??
          afterCancel(record, at);
      }
    }
    await this.#audit(call, "run.cancelled", runId, "ok");
    this.activity.notify(runId);
    return { run: publicRun(updated), recorded };
  }

  /**
   * Sends a follow-up message; a finished run starts again once a slot is reserved for it. The
   * run's tail is woken: the new turn must be followed.
   */
  async send(call: RunCall, runId: string, input: StartRunBody["input"]): Promise<RunRecord> {
    return (await this.followUp(call, runId, userMessages(input), "input")).run;
  }

  /**
   * Sends events that start a turn (`user.message`, `user.define_outcome`) to a run the caller
   * may write: a finished run starts again once a slot is reserved for it, and the run's tail is
   * woken. Answers the run and the events the provider recorded. Files their content refers to
   * must be in the caller's `fileIds` (`field`: the request field that carried them).
   */
  async followUp(
    call: RunCall,
    runId: string,
    events: ManagedAgentEvent[],
    field: ContentField = "events",
  ): Promise<SentToRun> {
    const client = await this.providerClient();
    const caller = call.principal;
    const record = await this.visibleRun(caller, runId, "write");
    await this.admitContent(call, runId, "run.message", field, events);
    const waking = isTerminal(record.state);
    let limits: SpendLimits | null = null;
    let hold: SpendHoldRequest | null = null;
    let granted: GrantedHold | undefined;
    // The slot (and hold) counts against the run's owner, who may not be the caller (an admin).
    const owner = await this.#ownerRunPolicy(caller, record);
    if (waking || holdsMoney(owner.spend)) {
      limits = owner.spend;
      // A run still active holds for the turn the message may start too: no new money while it
      // holds some (its turn's end then keeps the rest held), else a hold as for a waking one.
      hold = await this.#reservations.wakeHold(record, limits, { fence: !waking });
      const reserved = await this.#reservations.reserve(
        record.principalId,
        runId,
        owner.maxActiveRuns,
        hold,
      );
      if (reserved.result !== "reserved") {
        const refusal = this.#reservations.refusal(reserved, limits);
        await this.#audit(call, "run.message", runId, refusal.code);
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
      const options = upstreamOptions(call, deadlineSignal(call, this.#now));
      if (raise !== undefined) {
        // The provider's ceiling first: the new turn may spend up to the new hold.
        await client.updateSession(runId, { budget: sessionBudget(raise.ceiling) }, options);
      }
      recorded = await client.sendEvents(runId, events, options);
    } catch (error) {
      if (waking) await this.#reservations.release(record.principalId, runId, hold);
      else await this.#reservations.releaseHold(record.principalId, hold);
      const refusal = unbudgetableRefusal(this.failures.refusal(error));
      // The provider answered that it refused the message: it may be sent again with the key.
      const kind = providerFailureOf(refusal)?.kind;
      if (kind === "refused" || kind === "busy") key?.undone();
      await this.#audit(call, "run.message", runId, refusal.code);
      throw refusal;
    }
    const at = this.#isoNow();
    // The turns the events start, as the tail counts them in the session's history.
    const started = Math.max(1, events.filter((event) => startsATurn(event.type)).length);
    const woken = (current: StoredRunRecord): StoredRunRecord => {
      const next = afterFollowUp(current, at, started);
      if (waking && limits !== null) {
        return { ...next, ...this.#reservations.runLimits(limits, granted) };
      }
      // Still active: its time limit runs on; a raised ceiling shows.
      return raise === undefined ? next : { ...next, maxListCost: money(raise.ceiling) };
    };
    const updated = await changeRun(this.#store, runId, woken, record) ?? woken(record);
    await this.#audit(call, "run.message", runId, "ok");
    this.activity.notify(runId);
    return { run: publicRun(updated), recorded };
  }

  /**
   * Reads an active run's state from the provider and records what it changes (`run_state.ts`;
   * a terminal state frees its slot). A session the provider no longer knows (404) ends the run
   * as `failed`; any other failure is answered through `provider_failure.ts`.
   */
  async #refresh(
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
      if (!isSessionGone(error)) throw this.failures.refusal(error);
      report = { turn, state: "failed" };
    }
    const at = this.#isoNow();
    const change = (current: StoredRunRecord) => afterStatus(current, report, at);
    return await changeRun(this.#store, runId, change, record) ?? record;
  }

  /**
   * Refreshes a principal's active runs from the provider (at most 100 of them); returns whether
   * any of them ended. Provider failures leave a run as it was.
   */
  async #refreshActive(call: RunCall, principalId: string): Promise<boolean> {
    const client = await this.providerClient();
    const active: StoredRunRecord[] = [];
    for (const state of ACTIVE_RUN_STATES) {
      const page = await this.#store.runs.list({ principalId, state, limit: REFRESH_ON_FULL });
      active.push(...page.runs);
    }
    const signal = deadlineSignal(call, this.#now);
    const refreshed = await Promise.all(
      active.slice(0, REFRESH_ON_FULL).map((record) =>
        this.#budgetedRefresh(client, record, signal).catch(() => record)
      ),
    );
    return refreshed.some((record) => isTerminal(record.state));
  }

  /**
   * The one policy check of a start, over its normalized fields (`policy.ts`): answers the
   * caller's policy, or audits the refusal and throws 403 `agentNotAllowed` or
   * `resourceNotAllowed` (naming the refused field) before anything reaches the provider.
   */
  async #admit(call: RunCall, scope: RunStartScope): Promise<RunPolicy> {
    const policy = runPolicyOf(call.principal);
    const violation = startViolation(policy, scope);
    if (violation === null) return policy;
    await this.#audit(call, "run.started", undefined, violation.code);
    throw policyRefusal(violation);
  }

  /**
   * Refuses content the caller sends to run `runId` (a message, an outcome, a tool result, any
   * event) when it refers to a file outside the caller's `fileIds` (`policy.ts`): 403
   * `resourceNotAllowed` naming `field`, audited as `action`, before the provider sees it.
   */
  async admitContent(
    call: RunCall,
    runId: string,
    action: AuditAction,
    field: ContentField,
    content: unknown,
  ): Promise<void> {
    const violation = contentViolation(runPolicyOf(call.principal), field, content);
    if (violation === null) return;
    await this.#audit(call, action, runId, violation.code);
    throw policyRefusal(violation);
  }

  /**
   * Whether the runs of `record`'s owner hold money (a budget or a `maxRunCost`): the provider
   * budget of its session is then the gateway's own (the run's hold), which no session update
   * may raise or remove.
   */
  async ownerHoldsMoney(
    caller: AuthenticatedPrincipal,
    record: StoredRunRecord,
  ): Promise<boolean> {
    return holdsMoney((await this.#ownerRunPolicy(caller, record)).spend);
  }

  /** The run policy of `record`'s owner: the caller's own when it is the owner. */
  async #ownerRunPolicy(
    caller: AuthenticatedPrincipal,
    record: StoredRunRecord,
  ): Promise<RunPolicy> {
    return record.principalId === caller.principalId
      ? runPolicyOf(caller)
      : runPolicyOf(await this.#ownerPolicy(record.principalId));
  }

  async #ownerPolicy(principalId: string): Promise<PolicyHolder> {
    // Only the bootstrap principal starts runs without a principal record.
    return await this.#store.principals.get(principalId) ?? { bootstrap: true };
  }

  #audit(
    call: RunCall,
    action: AuditAction,
    runId: string | undefined,
    outcome: string,
  ): Promise<void> {
    return audit(this.#store, this.#logger, call, {
      action,
      ...(runId !== undefined ? { runId } : {}),
      outcome,
    });
  }

  #isoNow(): string {
    return new Date(this.#now()).toISOString();
  }
}

/**
 * The public form of a run record (the internal cancel marker, turn count, provider read times
 * time limit and the wait for a first turn left out).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { publicRun } from "./runs.ts";
 * const run = publicRun({
 *   runId: "sesn_1", principalId: "p", agentId: "a", environmentId: "e", state: "cancelled",
 *   lastEventSeq: 0, createdAt: "t", updatedAt: "t", cancelRequested: true,
 * });
 * assert.equal("cancelRequested" in run, false);
 * ```
 */
export function publicRun(record: StoredRunRecord): RunRecord {
  const {
    cancelRequested: _,
    turns: _turns,
    statusReadAt: _status,
    historyReadAt: _history,
    timeLimitAt: _timeLimit,
    awaitingFirstTurn: _waiting,
    ...rest
  } = record;
  return rest;
}
