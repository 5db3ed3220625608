/**
 * The run gateway: starts and steers managed-agent runs for principals through the one provider
 * client, records them in the store and keeps the active-run quotas.
 *
 * Starting a run, in order:
 *
 * 1. resolve the agent and environment (the body's `metadata`, else the defaults; neither: 422);
 * 2. check the principal's `agentIds` (403 `agentNotAllowed`);
 * 3. reserve an active-run slot in the store against the principal's `maxActiveRuns` and the
 *    service's limit, atomically across replicas (429 `runQuotaExceeded`);
 * 4. create the provider session and send the kickoff message, bounded by the request's
 *    `x-deadline` (the client's own retries and timeouts apply inside it);
 * 5. record the run, turning the reservation into the run's slot in the same store write.
 *
 * A failure after step 3 releases the reservation; a session created before a failed kickoff is
 * deleted, so a retry does not leave an orphan running. Replays of the same idempotency key never
 * reach this code: the idempotency rule answers them with the recorded run.
 *
 * Run state in this part (no event tail yet): a run's state is refreshed from the provider
 * (`getRun`) when it is read with `GET /v1/runs/{runId}` while active, and every active run of a
 * principal is refreshed when a start finds its quota full (then the reservation is tried once
 * more); a terminal state frees its slot. A cancel marks the run `cancelled` at once (the provider's interrupt is graceful),
 * and a follow-up message wakes a finished run after reserving a slot again.
 *
 * One file because it is one concept: the run lifecycle (start, read, list, cancel, message)
 * and its quota; tails, events, answers and webhooks live in their own files.
 *
 * @module
 */
import { RunActivity } from "./activity.ts";
import { changeRun } from "./_change_run.ts";
import type { ManagedAgentEvent, ProviderManagedAgentClient } from "../../client/mod.ts";
// The error classes only: the client itself is loaded on first use (see `provider.ts`).
import {
  ProviderAbortError,
  ProviderApiError,
  ProviderConnectionError,
  ProviderTimeoutError,
} from "../../client/errors.ts";
import type { AuthenticatedPrincipal, RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { RuntimeLogger } from "../log.ts";
import { invalidRequest } from "../rules/json.ts";
import {
  ACTIVE_RUN_STATES,
  type RuntimeRunState,
  type Store,
  type StoredRunPage,
  type StoredRunRecord,
} from "../store/types.ts";
import type { RunRecord, StartRunBody } from "../../wire/mod.ts";
import { audit } from "./audit.ts";
import { allowsAgent, runPolicyOf } from "./policy.ts";
import type { ProviderSettings } from "./provider.ts";

/** Default service-wide active-run limit (`--max-active-runs`). */
export const DEFAULT_SERVICE_MAX_ACTIVE_RUNS = 1000;
/** How long a slot reservation holds while a start talks to the provider, in ms. */
export const RESERVATION_LEASE_MS = 5 * 60_000;
/** `Retry-After` of a quota refusal, in seconds. */
const QUOTA_RETRY_AFTER = "5";
/** Longest provider message passed on, in characters. */
const MAX_PROVIDER_MESSAGE = 500;

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
  /** Service-wide active-run limit. */
  serviceLimit?: number;
  /**
   * Told of every provider failure mapped to an answer, by type: the provider's error type
   * (`rate_limit_error`...), or `connection`, `timeout`, `aborted` (the metrics count them).
   */
  onProviderError?: (type: string) => void;
}

/** A managed-agent session as far as the gateway reads it. */
interface SessionView {
  id: string;
  created_at?: unknown;
  agent?: unknown;
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

function quotaExceeded(which: "principal" | "service"): InterfaceError {
  return new InterfaceError(
    "runQuotaExceeded",
    which === "principal"
      ? "The principal has as many active runs as its maxActiveRuns allows"
      : "The runtime has as many active runs as it allows",
    { headers: { "retry-after": QUOTA_RETRY_AFTER } },
  );
}

function isTerminal(state: RuntimeRunState): boolean {
  return !ACTIVE_RUN_STATES.has(state);
}

/** Whether `caller` may read any principal's runs. */
export function readsEveryRun(caller: AuthenticatedPrincipal): boolean {
  return caller.capabilities.includes("authority:admin") ||
    caller.capabilities.includes("session:approve");
}

function userMessages(input: StartRunBody["input"]): ManagedAgentEvent[] {
  if (typeof input === "string") {
    return [{ type: "user.message", content: [{ type: "text", text: input }] }];
  }
  return input.map((item) => ({
    type: "user.message",
    content: typeof item.content === "string"
      ? [{ type: "text", text: item.content }]
      : item.content,
  }));
}

/** The gateway service behind the run routes. */
export class RunGateway {
  readonly #store: Store;
  readonly #logger: RuntimeLogger;
  readonly #settings: ProviderSettings;
  readonly #client: ProviderManagedAgentClient | (() => Promise<ProviderManagedAgentClient>) | null;
  #loaded: Promise<ProviderManagedAgentClient> | null = null;
  readonly #serviceLimit: number;
  readonly #secrets: string[];
  readonly #onProviderError: ((type: string) => void) | undefined;
  /** Runs with news in this process: the routes notify, the run's tail listens. */
  readonly activity: RunActivity = new RunActivity();

  /** Creates the gateway. */
  constructor(options: RunGatewayOptions) {
    this.#store = options.store;
    this.#logger = options.logger;
    this.#settings = options.settings;
    this.#client = options.client;
    this.#serviceLimit = options.serviceLimit ?? DEFAULT_SERVICE_MAX_ACTIVE_RUNS;
    this.#onProviderError = options.onProviderError;
    this.#secrets = [
      options.settings.apiKey,
      options.settings.authToken,
      ...(options.settings.webhookSecrets ?? []),
    ].filter(
      (value): value is string => value !== undefined && value !== "",
    );
  }

  /** Whether runs are enabled (a provider credential is configured). */
  get enabled(): boolean {
    return this.#client !== null;
  }

  #requireClient(): Promise<ProviderManagedAgentClient> {
    const client = this.#client;
    if (client === null) throw notConfigured();
    if (typeof client !== "function") return Promise.resolve(client);
    return this.#loaded ??= client().catch((error) => {
      this.#loaded = null;
      throw error;
    });
  }

  /** The provider client (loaded on first use); 503 `providerNotConfigured` without one. */
  providerClient(): Promise<ProviderManagedAgentClient> {
    return this.#requireClient();
  }

  /**
   * Reads a run the caller may read (its own; any, for admins and approvers), else 404
   * `runNotFound`; runs disabled: 503 `providerNotConfigured`. No provider call.
   */
  readableRun(context: RequestContext, runId: string): Promise<StoredRunRecord> {
    this.requireEnabled();
    return this.#visibleRun(context.principal!, runId, "read");
  }

  /** Throws 503 `providerNotConfigured` when runs are disabled. */
  requireEnabled(): void {
    if (this.#client === null) throw notConfigured();
  }

  /** A signal that fires at the request's deadline. */
  #deadline(context: RequestContext): AbortSignal {
    return AbortSignal.timeout(Math.max(context.deadline - Date.now(), 1));
  }

  /** Strips the provider credential from a provider message (a provider may echo it). */
  #scrub(message: string): string {
    let text = message.slice(0, MAX_PROVIDER_MESSAGE * 4);
    for (const secret of this.#secrets) text = text.replaceAll(secret, "[redacted]");
    return text.slice(0, MAX_PROVIDER_MESSAGE);
  }

  /** Maps a provider client failure to the gateway's error codes. */
  providerFailure(error: unknown): InterfaceError {
    if (error instanceof ProviderApiError) {
      this.#onProviderError?.(error.type ?? "api_error");
      const extra: Record<string, unknown> = { providerErrorType: error.type };
      if (error.status !== undefined) extra.providerStatus = error.status;
      const message = this.#scrub(error.message);
      if (error.status === 429 || error.status === 503 || error.status === 529) {
        return new InterfaceError(
          "providerUnavailable",
          `The provider is busy; try again later: ${message}`,
          { extra, headers: { "retry-after": "1" } },
        );
      }
      return new InterfaceError("providerError", `The provider refused the request: ${message}`, {
        extra,
      });
    }
    if (
      error instanceof ProviderConnectionError || error instanceof ProviderTimeoutError ||
      error instanceof ProviderAbortError
    ) {
      this.#onProviderError?.(
        error instanceof ProviderAbortError
          ? "aborted"
          : error instanceof ProviderTimeoutError
          ? "timeout"
          : "connection",
      );
      const message = error instanceof ProviderAbortError
        ? "The provider did not answer before the request's deadline"
        : error instanceof ProviderTimeoutError
        ? "The provider did not answer in time"
        : "The provider is unreachable";
      return new InterfaceError("providerUnavailable", message, {
        headers: { "retry-after": "1" },
      });
    }
    if (error instanceof InterfaceError) return error;
    throw error;
  }

  /** Reads a run the caller may see, else 404 `runNotFound`. */
  async #visibleRun(
    caller: AuthenticatedPrincipal,
    runId: string,
    access: "read" | "write",
  ): Promise<StoredRunRecord> {
    if (runId.length === 0 || runId.length > 256) throw runNotFound();
    const record = await this.#store.getRun(runId);
    if (record === null) throw runNotFound();
    if (record.principalId === caller.principalId) return record;
    if (caller.capabilities.includes("authority:admin")) return record;
    if (access === "read" && caller.capabilities.includes("session:approve")) return record;
    throw runNotFound();
  }

  /**
   * Reads a run the caller may see, else 404 `runNotFound`: `read` (and tool confirmations) for
   * its owner, admins and approvers; `write` for its owner and admins.
   */
  visibleRun(
    caller: AuthenticatedPrincipal,
    runId: string,
    access: "read" | "write",
  ): Promise<StoredRunRecord> {
    return this.#visibleRun(caller, runId, access);
  }

  /**
   * Refreshes an active run's state from the provider outside a request (a webhook told of it),
   * within `timeoutMs`; answers the record, or null for an unknown run.
   */
  async refreshRun(runId: string, timeoutMs = 30_000): Promise<StoredRunRecord | null> {
    const client = await this.#requireClient();
    const record = await this.#store.getRun(runId);
    if (record === null || isTerminal(record.state)) return record;
    // #refresh reads only the deadline of its context.
    const context = { deadline: Date.now() + timeoutMs } as RequestContext;
    return await this.#refresh(client, context, record);
  }

  /**
   * Creates the provider session, answering no later than `deadline`. The creation itself is not
   * cut at the caller's deadline: a session the provider made after the caller gave up would be
   * an orphan nobody knows of, so when the deadline wins, the session is deleted as soon as its
   * creation is answered (the caller got 503 `providerUnavailable` and may retry).
   */
  #createSession(
    client: ProviderManagedAgentClient,
    params: Parameters<ProviderManagedAgentClient["createSession"]>[0],
    deadline: AbortSignal,
  ): Promise<SessionView> {
    const creation = client.createSession(params) as Promise<SessionView>;
    if (deadline.aborted) return this.#abandon(client, creation, deadline);
    return new Promise<SessionView>((resolve, reject) => {
      const onDeadline = () => {
        this.#abandon(client, creation, deadline).catch(reject);
      };
      deadline.addEventListener("abort", onDeadline, { once: true });
      creation.then(
        (session) => {
          deadline.removeEventListener("abort", onDeadline);
          resolve(session);
        },
        (error) => {
          deadline.removeEventListener("abort", onDeadline);
          reject(error);
        },
      );
    });
  }

  /** Gives up on a creation at the deadline; deletes the session once the provider answers. */
  #abandon(
    client: ProviderManagedAgentClient,
    creation: Promise<SessionView>,
    deadline: AbortSignal,
  ): Promise<never> {
    creation.then(
      (session) =>
        client.deleteSession(session.id, { signal: AbortSignal.timeout(30_000) }).catch(() => {}),
      () => {},
    );
    return Promise.reject(new ProviderAbortError({ cause: deadline.reason }));
  }

  /** Starts a run (steps 1 to 5 of the module doc); answers its record. */
  async start(context: RequestContext, body: StartRunBody): Promise<StoredRunRecord> {
    const client = await this.#requireClient();
    const caller = context.principal!;
    const metadata = body.metadata ?? {};
    const agentId = metadata.agent_id ?? this.#settings.defaultAgentId;
    const environmentId = metadata.environment_id ?? this.#settings.defaultEnvironmentId;
    const missing = [];
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
    if (missing.length > 0) throw invalidRequest(missing);
    const policy = runPolicyOf(caller);
    if (!allowsAgent(policy, agentId!)) {
      await audit(this.#store, this.#logger, context, {
        action: "run.started",
        outcome: "agentNotAllowed",
      });
      throw new InterfaceError("agentNotAllowed", "The principal may not start runs on this agent");
    }
    const slotId = `reservation:${crypto.randomUUID()}`;
    const reserve = () =>
      this.#store.reserveRunSlot({
        principalId: caller.principalId,
        slotId,
        principalLimit: policy.maxActiveRuns,
        serviceLimit: this.#serviceLimit,
        now: Date.now(),
        leaseMs: RESERVATION_LEASE_MS,
      });
    let reserved = await reserve();
    if (reserved === "principalQuota" && await this.#refreshActive(context, caller.principalId)) {
      // Some of the principal's runs had ended at the provider: their slots are free now.
      reserved = await reserve();
    }
    if (reserved !== "reserved") {
      await audit(this.#store, this.#logger, context, {
        action: "run.started",
        outcome: "runQuotaExceeded",
      });
      throw quotaExceeded(reserved === "principalQuota" ? "principal" : "service");
    }
    let session: SessionView;
    try {
      const signal = this.#deadline(context);
      session = await this.#createSession(client, {
        agentId: agentId!,
        environmentId: environmentId!,
        ...(metadata.agent_version !== undefined ? { agentVersion: metadata.agent_version } : {}),
        ...(body.title !== undefined ? { title: body.title } : {}),
        ...(metadata.resources !== undefined ? { resources: metadata.resources } : {}),
        ...(metadata.vault_ids !== undefined ? { vaultIds: metadata.vault_ids } : {}),
      }, signal);
      try {
        await client.sendEvents(session.id, userMessages(body.input), { signal });
      } catch (error) {
        // The session never got its task: delete it so a retry leaves no orphan behind.
        // Bounded too: at most a second past the request's deadline.
        const cleanupMs = Math.min(5_000, Math.max(context.deadline - Date.now(), 0) + 1_000);
        await client.deleteSession(session.id, { signal: AbortSignal.timeout(cleanupMs) })
          .catch(() => {});
        throw error;
      }
    } catch (error) {
      await this.#store.releaseRunSlot(caller.principalId, slotId).catch(() => {});
      const refusal = this.providerFailure(error);
      await audit(this.#store, this.#logger, context, {
        action: "run.started",
        outcome: refusal.code,
      });
      throw refusal;
    }
    const now = new Date().toISOString();
    const agent = session.agent as { version?: unknown } | undefined;
    const version = metadata.agent_version ??
      (typeof agent?.version === "number" ? agent.version : undefined);
    const record: StoredRunRecord = {
      runId: session.id,
      principalId: caller.principalId,
      agentId: agentId!,
      ...(version !== undefined ? { agentVersion: version } : {}),
      environmentId: environmentId!,
      ...(body.title !== undefined ? { title: body.title } : {}),
      state: "running",
      lastEventSeq: 0,
      turns: 1,
      createdAt: typeof session.created_at === "string" ? session.created_at : now,
      updatedAt: now,
    };
    try {
      await this.#store.createRun(record, slotId);
    } catch (error) {
      await this.#store.releaseRunSlot(caller.principalId, slotId).catch(() => {});
      throw error;
    }
    await audit(this.#store, this.#logger, context, {
      action: "run.started",
      runId: record.runId,
      outcome: "ok",
    });
    return record;
  }

  /** Reads a run, refreshing an active one from the provider. */
  async get(context: RequestContext, runId: string): Promise<StoredRunRecord> {
    const client = await this.#requireClient();
    const record = await this.#visibleRun(context.principal!, runId, "read");
    if (isTerminal(record.state)) return record;
    return await this.#refresh(client, context, record);
  }

  /**
   * Reads an active run's state from the provider and records a change (a terminal state frees
   * its slot). A session the provider no longer knows (404) ends the run as `failed`.
   */
  async #refresh(
    client: ProviderManagedAgentClient,
    context: RequestContext,
    record: StoredRunRecord,
  ): Promise<StoredRunRecord> {
    const runId = record.runId;
    let status;
    try {
      status = await client.getRun(runId, { signal: this.#deadline(context) });
    } catch (error) {
      if (!(error instanceof ProviderApiError && error.status === 404)) {
        throw this.providerFailure(error);
      }
      const now = new Date().toISOString();
      const gone = await changeRun(this.#store, runId, (current) => ({
        ...current,
        state: "failed",
        updatedAt: now,
        endedAt: now,
      }), record);
      return gone ?? record;
    }
    const reported: RuntimeRunState = status.status === "started" ? "running" : status.status;
    const now = new Date().toISOString();
    const refreshed = (current: StoredRunRecord): StoredRunRecord | null => {
      // A follow-up sent since the status was read started a turn this status knows nothing of;
      // and a turn's end, once recorded (by the run's tail, say), stays until a follow-up.
      if (current.turns !== record.turns) return null;
      if (isTerminal(current.state) && !isTerminal(reported)) return null;
      let state = reported;
      if (current.cancelRequested === true && (state === "completed" || state === "failed")) {
        state = "cancelled";
      }
      if (
        state === current.state && status.stopReason === current.stopReason &&
        JSON.stringify(status.usage) === JSON.stringify(current.usage)
      ) {
        return null;
      }
      const updated: StoredRunRecord = { ...current, state, updatedAt: now };
      if (status.stopReason !== undefined) updated.stopReason = status.stopReason;
      if (status.usage !== undefined) updated.usage = status.usage;
      if (isTerminal(state)) updated.endedAt = now;
      return updated;
    };
    return await changeRun(this.#store, runId, refreshed, record) ?? record;
  }

  /**
   * Refreshes a principal's active runs from the provider (at most 100 of them); returns whether
   * any of them ended. Provider failures leave a run as it was.
   */
  async #refreshActive(context: RequestContext, principalId: string): Promise<boolean> {
    const client = await this.#requireClient();
    const active: StoredRunRecord[] = [];
    for (const state of ACTIVE_RUN_STATES) {
      const page = await this.#store.listRuns({ principalId, state, limit: 100 });
      active.push(...page.runs);
    }
    const refreshed = await Promise.all(
      active.slice(0, 100).map((record) =>
        this.#refresh(client, context, record).catch(() => record)
      ),
    );
    return refreshed.some((record) => isTerminal(record.state));
  }

  /** Lists runs: the caller's own, or (admins and approvers) every principal's or one's. */
  list(
    context: RequestContext,
    query: { limit: number; cursor?: string; state?: RuntimeRunState; principalId?: string },
  ): Promise<StoredRunPage> {
    this.requireEnabled();
    const caller = context.principal!;
    let principalId: string | undefined = caller.principalId;
    if (readsEveryRun(caller)) principalId = query.principalId;
    else if (query.principalId !== undefined && query.principalId !== caller.principalId) {
      throw new InterfaceError(
        "missingCapability",
        "Listing another principal's runs needs session:approve or authority:admin",
        { extra: { requiredCapability: "session:approve" } },
      );
    }
    return this.#store.listRuns({
      limit: query.limit,
      ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
      ...(query.state !== undefined ? { state: query.state } : {}),
      ...(principalId !== undefined ? { principalId } : {}),
    });
  }

  /** Cancels a run: interrupts its session and marks it `cancelled`. */
  async cancel(context: RequestContext, runId: string): Promise<StoredRunRecord> {
    const client = await this.#requireClient();
    const record = await this.#visibleRun(context.principal!, runId, "write");
    if (isTerminal(record.state)) {
      await audit(this.#store, this.#logger, context, {
        action: "run.cancelled",
        runId,
        outcome: "ok",
      });
      return record;
    }
    try {
      await client.cancelRun(runId, { signal: this.#deadline(context) });
    } catch (error) {
      const refusal = this.providerFailure(error);
      await audit(this.#store, this.#logger, context, {
        action: "run.cancelled",
        runId,
        outcome: refusal.code,
      });
      throw refusal;
    }
    const now = new Date().toISOString();
    const cancelled = (current: StoredRunRecord): StoredRunRecord => ({
      ...current,
      state: "cancelled",
      cancelRequested: true,
      updatedAt: now,
      endedAt: now,
    });
    const updated = await changeRun(this.#store, runId, cancelled, record) ?? cancelled(record);
    await audit(this.#store, this.#logger, context, {
      action: "run.cancelled",
      runId,
      outcome: "ok",
    });
    return updated;
  }

  /** Sends a follow-up message; a finished run starts again once a slot is reserved for it. */
  async send(
    context: RequestContext,
    runId: string,
    input: StartRunBody["input"],
  ): Promise<StoredRunRecord> {
    const client = await this.#requireClient();
    const caller = context.principal!;
    const record = await this.#visibleRun(caller, runId, "write");
    const waking = isTerminal(record.state);
    if (waking) {
      // The slot counts against the run's owner, who may not be the caller (an admin).
      const owner = record.principalId === caller.principalId
        ? runPolicyOf(caller)
        : runPolicyOf(await this.#ownerPolicy(record.principalId));
      const reserved = await this.#store.reserveRunSlot({
        principalId: record.principalId,
        slotId: runId,
        principalLimit: owner.maxActiveRuns,
        serviceLimit: this.#serviceLimit,
        now: Date.now(),
        leaseMs: RESERVATION_LEASE_MS,
      });
      if (reserved !== "reserved") {
        await audit(this.#store, this.#logger, context, {
          action: "run.message",
          runId,
          outcome: "runQuotaExceeded",
        });
        throw quotaExceeded(reserved === "principalQuota" ? "principal" : "service");
      }
    }
    try {
      await client.sendEvents(runId, userMessages(input), { signal: this.#deadline(context) });
    } catch (error) {
      if (waking) await this.#store.releaseRunSlot(record.principalId, runId).catch(() => {});
      const refusal = this.providerFailure(error);
      await audit(this.#store, this.#logger, context, {
        action: "run.message",
        runId,
        outcome: refusal.code,
      });
      throw refusal;
    }
    const now = new Date().toISOString();
    const resumed = (current: StoredRunRecord): StoredRunRecord => {
      const { endedAt: _ended, stopReason: _stop, cancelRequested: _cancel, ...rest } = current;
      return { ...rest, state: "running", turns: (current.turns ?? 1) + 1, updatedAt: now };
    };
    const updated = await changeRun(this.#store, runId, resumed, record) ?? resumed(record);
    await audit(this.#store, this.#logger, context, {
      action: "run.message",
      runId,
      outcome: "ok",
    });
    return updated;
  }

  async #ownerPolicy(
    principalId: string,
  ): Promise<{ agentIds?: readonly string[]; maxActiveRuns?: number; bootstrap?: boolean }> {
    const owner = await this.#store.getPrincipal(principalId);
    // Only the bootstrap principal starts runs without a principal record.
    if (owner === null) return { bootstrap: true };
    return {
      ...(owner?.agentIds ? { agentIds: owner.agentIds } : {}),
      ...(owner?.maxActiveRuns !== undefined ? { maxActiveRuns: owner.maxActiveRuns } : {}),
    };
  }
}

/**
 * The public form of a run record (the internal cancel marker and turn count left out).
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
  const { cancelRequested: _, turns: _turns, ...rest } = record;
  return rest;
}
