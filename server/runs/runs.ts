/**
 * The run gateway: the run lifecycle (start, read, list, cancel, message) for principals
 * through the one provider client, and the active-run quotas. Each call is a
 * {@linkcode RunCall} (`call.ts`): the caller, its deadline and signal, what its audit entry
 * carries; the gateway knows nothing of HTTP.
 *
 * {@linkcode RunGateway} is its one public face; this file holds its state (the store, the
 * provider client loaded on first use, the reservations, the read budget, the failures) and hands
 * each call to the part that is that concept, each readable alone:
 *
 * - starting a run, its five steps and what a failure at each leaves behind: `_start_run.ts`;
 * - messages to a run (a follow-up, which wakes a finished run or takes a fenced hold of an
 *   active one, an interrupt, a cancel), and a message sent at most once per key:
 *   `_run_messages.ts`;
 * - reading, listing and refreshing runs within the read budget: `_run_reads.ts`;
 * - who may see or change a run (404 otherwise): `_run_access.ts`;
 * - the policy checks of a start and of the content sent to a run: `_admission.ts`;
 * - slots and holds against the quotas and budgets: `_reservations.ts` (the rules: `spend.ts`);
 * - what the parts share: `_gateway_context.ts`; the public form of a run: `public_run.ts`.
 *
 * What each call does to a run's record is decided by the rules of `run_state.ts`; a provider
 * failure is answered through `provider_failure.ts`. Starts, cancels and messages wake the run's
 * tail (`RunActivity`).
 *
 * @module
 */
import type { ManagedAgentEvent, ProviderManagedAgentClient } from "../../client/mod.ts";
import type { AuthenticatedPrincipal } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { RuntimeLogger } from "../log.ts";
import type { AuditAction, RunListQuery, Store, StoredRunRecord } from "../store/types.ts";
import type { RunPage, RunRecord, StartRunBody } from "../../wire/mod.ts";
import { RunActivity } from "./activity.ts";
import { audit } from "./audit.ts";
import type { RunCall } from "./call.ts";
import { admitContent, ownerRunPolicy } from "./_admission.ts";
import type { GatewayContext } from "./_gateway_context.ts";
import type { ContentField } from "./policy.ts";
import type { ProviderSettings } from "./provider.ts";
import { ProviderFailures } from "./provider_failure.ts";
import { ProviderReads } from "./_provider_reads.ts";
import { Reservations } from "./_reservations.ts";
import { KnownOwners, runNotFound, visibleRun } from "./_run_access.ts";
import { followUp, interrupt, type SentToRun } from "./_run_messages.ts";
import { listRuns, readRun, refreshRun } from "./_run_reads.ts";
import { holdsMoney } from "./spend.ts";
import { RUN_ANSWER, type StartAnswer, type StartedRun, startRun } from "./_start_run.ts";
import { type StartRequest, startRequestOfBody, userMessages } from "./start_request.ts";

export { DEFAULT_SERVICE_MAX_ACTIVE_RUNS, RESERVATION_LEASE_MS } from "./_reservations.ts";
export { readsEveryRun } from "./_run_access.ts";
export { publicRun } from "./public_run.ts";
export type { SentToRun } from "./_run_messages.ts";
export type { StartAnswer, StartedRun } from "./_start_run.ts";

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

/** The gateway service behind the run routes. */
export class RunGateway {
  readonly #store: Store;
  readonly #client: ProviderManagedAgentClient | (() => Promise<ProviderManagedAgentClient>) | null;
  #loaded: Promise<ProviderManagedAgentClient> | null = null;
  /** Runs with news in this process: the gateway, tool answers, webhooks notify; tails listen. */
  readonly activity: RunActivity = new RunActivity();
  /** How provider failures are scrubbed, counted and answered (for the tool answers too). */
  readonly failures: ProviderFailures;
  /** The budget of provider reads that callers' reads cause (`_provider_reads.ts`). */
  readonly #reads: ProviderReads;
  /** What the parts (start, messages, reads, admission) share (`_gateway_context.ts`). */
  readonly #context: GatewayContext;
  /** The owners of the runs read lately, for streams of their events (`_run_access.ts`). */
  readonly #owners: KnownOwners = new KnownOwners();

  /** Creates the gateway. */
  constructor(options: RunGatewayOptions) {
    const { store, logger, now } = options;
    this.#store = store;
    this.#client = options.client;
    this.#reads = new ProviderReads({ store, now });
    this.failures = new ProviderFailures({
      settings: options.settings,
      ...(options.onProviderError !== undefined ? { onFailure: options.onProviderError } : {}),
    });
    this.#context = {
      store,
      settings: options.settings,
      now,
      reservations: new Reservations({
        store,
        now,
        ...(options.serviceLimit !== undefined ? { serviceLimit: options.serviceLimit } : {}),
      }),
      reads: this.#reads,
      failures: this.failures,
      activity: this.activity,
      providerClient: () => this.providerClient(),
      audit: (call, action, runId, outcome) =>
        audit(store, logger, call, {
          action,
          ...(runId !== undefined ? { runId } : {}),
          outcome,
        }),
    };
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
   * its owner, admins and approvers; `write` for its owner and admins (`_run_access.ts`). No
   * provider call.
   */
  async visibleRun(
    caller: AuthenticatedPrincipal,
    runId: string,
    access: "read" | "write",
  ): Promise<StoredRunRecord> {
    const record = await visibleRun(this.#store, caller, runId, access);
    this.#owners.remember(record, this.#context.now());
    return record;
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
   * Checks, for a stream of a run's events, that the caller may read the run, as
   * {@linkcode RunGateway.readableRun} does (404 `runNotFound`, 503 `providerNotConfigured`), but
   * by the run's owner when this replica read its record within the last minute
   * (`KnownOwners` in `_run_access.ts`): then with no store read, and answering undefined;
   * else the record read.
   */
  async streamableRun(
    caller: AuthenticatedPrincipal,
    runId: string,
  ): Promise<StoredRunRecord | undefined> {
    this.requireEnabled();
    const known = this.#owners.visible(caller, runId);
    if (known === false) throw runNotFound();
    if (known === true) return undefined;
    return await this.visibleRun(caller, runId, "read");
  }

  /**
   * Refreshes an active run's state from the provider outside a caller's call (a webhook told
   * of it, a tool answer moved it on), within `timeoutMs` (default 30 s) or until `signal`
   * fires; answers the record, or null for an unknown run (`_run_reads.ts`).
   */
  refreshRun(
    runId: string,
    options: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<StoredRunRecord | null> {
    return refreshRun(this.#context, runId, options);
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

  /** Starts a run from a `/v1` body (`_start_run.ts`); answers its public record. */
  async start(call: RunCall, body: StartRunBody): Promise<RunRecord> {
    return (await this.startSession(call, startRequestOfBody(body))).run;
  }

  /**
   * Starts a run from a normalized start request, in the five steps of `_start_run.ts`: the one
   * start path of both interfaces. Answers the public run and the provider's session; `answer`
   * is what the call's idempotency key records (the `/v1` answer by default).
   */
  startSession(
    call: RunCall,
    request: StartRequest,
    answer: StartAnswer = RUN_ANSWER,
  ): Promise<StartedRun> {
    return startRun(this.#context, call, request, answer);
  }

  /**
   * Reads a run from its record; an active one is refreshed from the provider first when the
   * budget allows (at most once a second per run across callers and replicas: `_run_reads.ts`).
   */
  get(call: RunCall, runId: string): Promise<RunRecord> {
    return readRun(this.#context, call, runId);
  }

  /** Lists runs: the caller's own, or (admins and approvers) every principal's or one's. */
  async list(call: RunCall, query: RunListQuery): Promise<RunPage> {
    this.requireEnabled();
    return await listRuns(this.#store, call, query);
  }

  /** Cancels a run: interrupts its session, marks it `cancelled` and wakes its tail. */
  async cancel(call: RunCall, runId: string): Promise<RunRecord> {
    return (await this.interrupt(call, runId)).run;
  }

  /**
   * Interrupts a run (`_run_messages.ts`). Without `event`, or with a `user.interrupt` of the
   * whole session, the run is cancelled: its session interrupted, the run marked `cancelled`, its
   * tail woken. A `user.interrupt` naming one of the session's threads (`session_thread_id`) is
   * passed on and leaves the run as it is. Answers the run and the events the provider recorded.
   */
  interrupt(call: RunCall, runId: string, event?: ManagedAgentEvent): Promise<SentToRun> {
    return interrupt(this.#context, call, runId, event);
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
   * may write (`_run_messages.ts`): a finished run starts again once a slot is reserved for it,
   * and the run's tail is woken. Answers the run and the events the provider recorded. Files
   * their content refers to must be in the caller's `fileIds` (`field`: the request field that
   * carried them).
   */
  followUp(
    call: RunCall,
    runId: string,
    events: ManagedAgentEvent[],
    field: ContentField = "events",
  ): Promise<SentToRun> {
    return followUp(this.#context, call, runId, events, field);
  }

  /**
   * Refuses content the caller sends to run `runId` (a message, an outcome, a tool result, any
   * event) when it refers to a file outside the caller's `fileIds` (`_admission.ts`): 403
   * `resourceNotAllowed` naming `field`, audited as `action`, before the provider sees it.
   */
  admitContent(
    call: RunCall,
    runId: string,
    action: AuditAction,
    field: ContentField,
    content: unknown,
  ): Promise<void> {
    return admitContent(this.#context, call, { runId, action, field, content });
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
    return holdsMoney((await ownerRunPolicy(this.#store, caller, record)).spend);
  }
}
