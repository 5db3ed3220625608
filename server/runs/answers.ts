/**
 * Tool answers: every pending tool request of a run gets exactly one answer, whichever replica
 * and caller sends it, and none stays pending forever.
 *
 * Answering, in order (the same path for a caller and for the fail-closed default):
 *
 * 1. Read the run's tool requests (`pending.ts`); none by that id and kind: 404
 *    `toolUseNotFound`. (Before that, a caller's answer that names a file outside its `fileIds`
 *    is refused: 403 `resourceNotAllowed`, `policy.ts`.) (Through the provider's own API a client also answers a tool it runs
 *    itself, with `user.tool_result`: the same steps, kind `tool_result`.)
 * 2. Claim `(runId, toolUseId)` in the store. Held by someone (answered, or being sent): 409
 *    `alreadyAnswered` with who and what.
 * 3. A claim that was taken over from a dead replica (older than 30 s), or a request the history
 *    shows answered or closed: read the history again. Answered there: record that answer (the
 *    old claimer's, or `external` when the gateway never sent it) and answer 409. Closed without
 *    an answer: release, 404.
 * 4. Send the answer to the provider (`user.tool_confirmation` / `user.custom_tool_result` /
 *    `user.tool_result`). A failed send releases the claim and answers 502 or 503, so the caller
 *    may retry.
 * 5. Record the answer (`answeredBy`, `answeredAt`, `result`) with its `tool.answered` activity
 *    entry in the same store write (a tool result of the provider's API, never a pending
 *    request, has none), and append an audit entry.
 *
 * The fail-closed sweeper: every replica walks the runs in `requires_action` now and then; a
 * request pending longer than the pending timeout (default 10 min) is denied (confirmation) or
 * answered with an error result (custom tool) through steps 1 to 5 as principal `runtime`, and a
 * claim older than 30 s whose request is still open is taken back (step 3). Several replicas
 * sweeping at once is safe: the claim lets one of them answer.
 *
 * One concept past 600 lines on purpose: a caller's answer and the fail-closed default take the
 * same five steps over the same claim, so the answer routes and the sweeper are read together;
 * reading a run's tool requests is `pending.ts`'s.
 *
 * @module
 */
import type { ManagedAgentEvent, ProviderManagedAgentClient } from "../../client/mod.ts";
import { InterfaceError } from "../errors.ts";
import type { RuntimeLogger } from "../log.ts";
import type {
  ActivityInput,
  AuditAction,
  Store,
  ToolAnswerKind,
  ToolAnswerRecord,
  ToolAnswerResult,
  ToolRequestKind,
} from "../store/types.ts";
import { appendAudit, audit } from "./audit.ts";
import { deadlineSignal, type RunCall, upstreamOptions } from "./call.ts";
import type {
  ConfirmToolBody,
  PendingToolRequest,
  RecordedToolAnswer,
  RespondCustomToolBody,
} from "../../wire/mod.ts";
import { pendingOf, readToolRequests, requestState } from "./pending.ts";
import type { RunGateway } from "./runs.ts";
import { isTerminal } from "./run_state.ts";

/** Default pending timeout (`--pending-timeout-ms`): 10 minutes. */
export const DEFAULT_PENDING_TIMEOUT_MS = 600_000;
/** A claim older than this was left by a dead replica and is taken back, in ms. */
export const CLAIM_STALE_MS = 30_000;
/** Who answers when the pending timeout passed. */
export const FAIL_CLOSED_ACTOR = "runtime";
/** Who answered, when the provider shows an answer the gateway never sent. */
export const EXTERNAL_ACTOR = "external";
/** The deny message of the fail-closed default. */
export const TIMEOUT_DENY_MESSAGE = "No answer within the pending timeout: denied by the runtime";
/** The error result of the fail-closed default for a custom tool. */
export const TIMEOUT_TOOL_MESSAGE = "No result within the pending timeout: the runtime answered";
/** How long the sweeper gives the provider per run, in ms. */
const SWEEP_CALL_MS = 30_000;

/** A recorded answer, as the answer routes return it. */
export interface ToolAnswer {
  /** The tool-use event id. */
  toolUseId: string;
  /** The answer. */
  result: ToolAnswerResult;
  /** The principal that answered (`runtime` for the fail-closed default). */
  answeredBy: string;
  /** RFC 3339 time it was recorded. */
  answeredAt: string;
}

/** Options of {@linkcode ToolAnswers}. */
export interface ToolAnswersOptions {
  /** The store. */
  store: Store;
  /** Log sink. */
  logger: RuntimeLogger;
  /** The run gateway (client, ownership, failures, refresh, activity). */
  gateway: RunGateway;
  /** The clock, ms since the epoch (the server's `now`). */
  now: () => number;
  /** How long a request may stay pending before the fail-closed answer, in ms. */
  pendingTimeoutMs?: number;
  /** How old a claim must be to be taken back, in ms (default 30 s). */
  claimStaleMs?: number;
  /**
   * Test hook, off by default and never reachable from a request: awaited between the claim and
   * the send, so a test can kill the process holding a claim.
   */
  afterClaim?: () => Promise<void>;
}

/** A recorded answer and the events the provider recorded for it. */
export interface SentAnswer {
  /** The answer. */
  answer: ToolAnswer;
  /** The events the provider recorded, as it answered them. */
  recorded: ManagedAgentEvent[];
}

/** One answer about to go through steps 1 to 5. */
interface AnswerJob {
  runId: string;
  /** The principal that owns the run (its activity entries name it). */
  ownerId: string;
  toolUseId: string;
  kind: ToolAnswerKind;
  principalId: string;
  /** The answering principal's name, when it has one. */
  principalName?: string;
  result: ToolAnswerResult;
  signal: AbortSignal;
  send(client: ProviderManagedAgentClient, signal: AbortSignal): Promise<ManagedAgentEvent[]>;
}

/** What each answering event of the provider's API answers, and who may send it. */
const ANSWER_EVENTS: Readonly<
  Record<string, { kind: ToolAnswerKind; idField: string; access: "read" | "write" }>
> = {
  "user.tool_confirmation": { kind: "confirmation", idField: "tool_use_id", access: "read" },
  "user.custom_tool_result": {
    kind: "custom_tool",
    idField: "custom_tool_use_id",
    access: "write",
  },
  "user.tool_result": { kind: "tool_result", idField: "tool_use_id", access: "write" },
};

/**
 * Whether an event of the provider's API answers a tool (`user.tool_confirmation`,
 * `user.custom_tool_result`, `user.tool_result`): it then goes through {@linkcode ToolAnswers.send}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isAnswerEvent } from "./answers.ts";
 * assert.equal(isAnswerEvent({ type: "user.tool_result", tool_use_id: "sevt_1" }), true);
 * assert.equal(isAnswerEvent({ type: "user.message", content: [] }), false);
 * ```
 */
export function isAnswerEvent(event: ManagedAgentEvent): boolean {
  return typeof event.type === "string" && Object.hasOwn(ANSWER_EVENTS, event.type);
}

/**
 * The `tool.answered` activity entry of an answer recorded as `final`; none for a tool result
 * (`user.tool_result` of the provider's API), which answers no pending request.
 */
function answeredActivity(
  job: Pick<
    AnswerJob,
    "runId" | "ownerId" | "toolUseId" | "kind" | "principalId" | "principalName"
  >,
  final: { principalId: string; result: ToolAnswerResult; answeredAt: string },
): ActivityInput[] {
  if (job.kind === "tool_result") return [];
  return [{
    type: "tool.answered",
    at: final.answeredAt,
    runId: job.runId,
    principalId: job.ownerId,
    toolUseId: job.toolUseId,
    kind: job.kind,
    result: final.result,
    answeredBy: final.principalId,
    ...(job.principalName !== undefined && final.principalId === job.principalId
      ? { answeredByName: job.principalName }
      : {}),
    key: `answered:${job.toolUseId}`,
  }];
}

function toolUseNotFound(): InterfaceError {
  return new InterfaceError("toolUseNotFound", "No such pending tool request in this run");
}

function alreadyAnswered(record: { principalId: string; result: ToolAnswerResult }) {
  return new InterfaceError("alreadyAnswered", "The tool request was answered before", {
    extra: { answeredBy: record.principalId, result: record.result },
  });
}

/** The tool-answer service behind the answer routes, and the fail-closed sweeper. */
export class ToolAnswers {
  readonly #store: Store;
  readonly #logger: RuntimeLogger;
  readonly #gateway: RunGateway;
  readonly #afterClaim: (() => Promise<void>) | undefined;
  readonly #claimStaleMs: number;
  readonly #now: () => number;
  /** How long a request may stay pending, in ms. */
  readonly pendingTimeoutMs: number;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #sweeping: Promise<void> | null = null;
  #stopped = false;
  #lastPurge = 0;

  /** Creates the service. */
  constructor(options: ToolAnswersOptions) {
    this.#store = options.store;
    this.#logger = options.logger;
    this.#gateway = options.gateway;
    this.#afterClaim = options.afterClaim;
    this.#claimStaleMs = options.claimStaleMs ?? CLAIM_STALE_MS;
    this.#now = options.now;
    this.pendingTimeoutMs = options.pendingTimeoutMs ?? DEFAULT_PENDING_TIMEOUT_MS;
  }

  /**
   * The pending tool requests of a run the caller may read. A finished run has none (from its
   * record); an active one's history is read from the provider within the read budget (at most
   * once a second per run across callers and replicas, `_provider_reads.ts`), and the gateway's
   * own answer records, read fresh, close what was answered meanwhile.
   */
  async pending(call: RunCall, runId: string): Promise<PendingToolRequest[]> {
    const client = await this.#gateway.providerClient();
    const record = await this.#gateway.visibleRun(call.principal, runId, "read");
    if (isTerminal(record.state)) return [];
    const failures = this.#gateway.failures;
    let found;
    try {
      found = await this.#gateway.readHistory(
        record,
        deadlineSignal(call, this.#now),
        (signal) =>
          readToolRequests(client, runId, signal).catch((error) => {
            throw failures.refusal(error);
          }),
      );
    } catch (error) {
      throw failures.refusal(error);
    }
    return pendingOf(found, await this.#store.answers.list(runId));
  }

  /**
   * The answered tool requests of a run the caller may read, oldest answer first, each with who
   * answered (and that principal's name, when it has one). From the store alone: no provider
   * call. Answers are kept 7 days.
   */
  async answered(call: RunCall, runId: string): Promise<RecordedToolAnswer[]> {
    await this.#gateway.readableRun(call, runId);
    // Tool requests only: a `tool_result` (a tool the client ran itself) was never pending.
    const records = (await this.#store.answers.list(runId))
      .filter((record): record is ToolAnswerRecord & { kind: ToolRequestKind } =>
        record.state === "answered" && record.answeredAt !== undefined &&
        record.kind !== "tool_result"
      )
      .sort((a, b) => a.answeredAt!.localeCompare(b.answeredAt!));
    const names = new Map<string, string | undefined>();
    for (const { principalId } of records) {
      if (names.has(principalId)) continue;
      names.set(
        principalId,
        principalId === call.principal.principalId
          ? call.principal.name
          : (await this.#store.principals.get(principalId))?.name,
      );
    }
    return records.map((record) => {
      const name = names.get(record.principalId);
      return {
        toolUseId: record.toolUseId,
        kind: record.kind,
        result: record.result,
        answeredBy: record.principalId,
        ...(name !== undefined ? { answeredByName: name } : {}),
        answeredAt: record.answeredAt!,
      };
    });
  }

  /** Answers a tool confirmation (any run the caller may read: approvers and admins). */
  async confirm(call: RunCall, runId: string, body: ConfirmToolBody): Promise<ToolAnswer> {
    const caller = call.principal;
    await this.#gateway.providerClient();
    const record = await this.#gateway.visibleRun(caller, runId, "read");
    return (await this.#audited(call, "tool.confirmed", runId, {
      runId,
      ownerId: record.principalId,
      toolUseId: body.toolUseId,
      kind: "confirmation",
      principalId: caller.principalId,
      ...(caller.name !== undefined ? { principalName: caller.name } : {}),
      result: body.result,
      signal: deadlineSignal(call, this.#now),
      send: (client, signal) =>
        client.confirmTool(runId, {
          toolUseId: body.toolUseId,
          result: body.result,
          ...(body.result === "deny" && body.denyMessage !== undefined
            ? { denyMessage: body.denyMessage }
            : {}),
        }, { signal }),
    })).answer;
  }

  /** Answers a custom tool call (the caller's own runs; admins any). */
  async respond(call: RunCall, runId: string, body: RespondCustomToolBody): Promise<ToolAnswer> {
    const caller = call.principal;
    await this.#gateway.providerClient();
    const record = await this.#gateway.visibleRun(caller, runId, "write");
    await this.#gateway.admitContent(call, runId, "tool.responded", "content", body.content);
    return (await this.#audited(call, "tool.responded", runId, {
      runId,
      ownerId: record.principalId,
      toolUseId: body.toolUseId,
      kind: "custom_tool",
      principalId: caller.principalId,
      ...(caller.name !== undefined ? { principalName: caller.name } : {}),
      result: body.isError === true ? "error" : "ok",
      signal: deadlineSignal(call, this.#now),
      send: (client, signal) =>
        client.respondCustomTool(runId, {
          toolUseId: body.toolUseId,
          content: body.content as never,
          ...(body.isError === true ? { isError: true } : {}),
        }, { signal }),
    })).answer;
  }

  /**
   * Sends an answering event of the provider's API as it is (`user.tool_confirmation`: any run
   * the caller may read; `user.custom_tool_result`, `user.tool_result`: the caller's own runs,
   * admins any), exactly once per tool use (steps 1 to 5), with the caller's betas and version.
   * The caller's capability is checked before: confirmations need `session:approve`, results
   * `session:write`. Answers the recorded answer and the provider's recorded events.
   */
  async send(call: RunCall, runId: string, event: ManagedAgentEvent): Promise<SentAnswer> {
    const what = typeof event.type === "string" ? ANSWER_EVENTS[event.type] : undefined;
    if (what === undefined) throw new TypeError("not an answering event");
    const caller = call.principal;
    await this.#gateway.providerClient();
    const record = await this.#gateway.visibleRun(caller, runId, what.access);
    const action = what.kind === "confirmation" ? "tool.confirmed" : "tool.responded";
    await this.#gateway.admitContent(call, runId, action, "events", event);
    const toolUseId = event[what.idField];
    if (typeof toolUseId !== "string" || toolUseId === "" || toolUseId.length > 256) {
      throw toolUseNotFound();
    }
    const result: ToolAnswerResult = what.kind === "confirmation"
      ? event.result === "allow" ? "allow" : "deny"
      : event.is_error === true
      ? "error"
      : "ok";
    return await this.#audited(
      call,
      action,
      runId,
      {
        runId,
        ownerId: record.principalId,
        toolUseId,
        kind: what.kind,
        principalId: caller.principalId,
        ...(caller.name !== undefined ? { principalName: caller.name } : {}),
        result,
        signal: deadlineSignal(call, this.#now),
        send: (client, signal) => client.sendEvents(runId, [event], upstreamOptions(call, signal)),
      },
    );
  }

  async #audited(
    call: RunCall,
    action: AuditAction,
    runId: string,
    job: AnswerJob,
  ): Promise<SentAnswer> {
    try {
      const answer = await this.#answer(job);
      await audit(this.#store, this.#logger, call, { action, runId, outcome: "ok" });
      return answer;
    } catch (error) {
      if (error instanceof InterfaceError) {
        await audit(this.#store, this.#logger, call, { action, runId, outcome: error.code });
      }
      throw error;
    }
  }

  /** Steps 1 to 5 of the module doc. */
  async #answer(job: AnswerJob): Promise<SentAnswer> {
    const client = await this.#gateway.providerClient();
    const read = async () => {
      try {
        return await readToolRequests(client, job.runId, job.signal);
      } catch (error) {
        throw this.#gateway.failures.refusal(error);
      }
    };
    let found = await read();
    if (requestState(found, job.kind, job.toolUseId).state === "unknown") {
      const record = await this.#store.answers.get(job.runId, job.toolUseId);
      if (record?.state === "answered" && record.kind === job.kind) throw alreadyAnswered(record);
      throw toolUseNotFound();
    }
    const claim = await this.#store.answers.claim({
      runId: job.runId,
      toolUseId: job.toolUseId,
      kind: job.kind,
      principalId: job.principalId,
      result: job.result,
      now: this.#now(),
      staleMs: this.#claimStaleMs,
    });
    if (claim.state === "taken") throw alreadyAnswered(claim.record);
    const token = claim.token;
    let recorded: ManagedAgentEvent[];
    try {
      let known = requestState(found, job.kind, job.toolUseId);
      if (claim.recovered !== undefined || known.state !== "open") {
        // The provider may hold an answer the store does not: look again, now that we hold it.
        if (claim.recovered !== undefined) {
          found = await read();
          known = requestState(found, job.kind, job.toolUseId);
        }
        const shown = known.answered;
        if (shown !== undefined) {
          const final = {
            principalId: claim.recovered?.principalId ?? EXTERNAL_ACTOR,
            result: shown,
            answeredAt: this.#isoNow(),
          };
          await this.#complete(job, token, final);
          throw alreadyAnswered(final);
        }
        if (known.state !== "open") throw toolUseNotFound();
      }
      if (this.#afterClaim !== undefined) await this.#afterClaim();
      try {
        recorded = await job.send(client, job.signal);
      } catch (error) {
        throw this.#gateway.failures.refusal(error);
      }
    } catch (error) {
      await this.#store.answers.release(job.runId, job.toolUseId, token).catch(() => {});
      throw error;
    }
    const answeredAt = this.#isoNow();
    const final = { principalId: job.principalId, result: job.result, answeredAt };
    // False only when a sweeper took the claim back meanwhile: it then found this very answer
    // in the provider's history and recorded it.
    await this.#complete(job, token, final);
    // The run moves on at the provider: record its state now (a failure leaves it to the next
    // read), and wake its tail.
    await this.#gateway.refreshRun(job.runId, { timeoutMs: 5_000 }).catch(() => null);
    this.#gateway.activity.notify(job.runId);
    return {
      answer: {
        toolUseId: job.toolUseId,
        result: job.result,
        answeredBy: job.principalId,
        answeredAt,
      },
      recorded,
    };
  }

  /**
   * Step 5's store write: the claim held by `token` becomes the answer `final`, with its
   * `tool.answered` activity entry. False when the token no longer holds the claim.
   */
  #complete(
    job: Parameters<typeof answeredActivity>[0],
    token: string,
    final: { principalId: string; result: ToolAnswerResult; answeredAt: string },
  ): Promise<boolean> {
    return this.#store.answers.complete(
      job.runId,
      job.toolUseId,
      token,
      final,
      answeredActivity(job, final),
    );
  }

  /** Starts the periodic fail-closed pass; the timer never keeps the process alive. */
  start(): void {
    if (this.#timer !== null || this.#stopped) return;
    const interval = Math.min(Math.max(Math.floor(this.pendingTimeoutMs / 10), 100), 15_000);
    const tick = () => {
      this.#timer = null;
      if (this.#stopped) return;
      this.#sweeping = this.sweep().catch((error) => {
        this.#logger.error("pending sweep failed", {
          errorName: error instanceof Error ? error.name : typeof error,
        });
      }).finally(() => {
        this.#sweeping = null;
        if (!this.#stopped) this.#schedule(tick, interval);
      });
    };
    this.#schedule(tick, interval);
  }

  #schedule(tick: () => void, interval: number): void {
    this.#timer = setTimeout(tick, interval);
    Deno.unrefTimer(this.#timer as unknown as number);
  }

  /** Stops the sweeper and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#sweeping !== null) await this.#sweeping;
  }

  /**
   * One pass over the runs in `requires_action`: answers what waited past the pending timeout,
   * takes back stale claims. Returns when the pass is done.
   */
  async sweep(now: number = this.#now()): Promise<void> {
    if (!this.#gateway.enabled) return;
    const client = await this.#gateway.providerClient();
    if (now - this.#lastPurge > 3_600_000) {
      this.#lastPurge = now;
      await this.#store.answers.purge(now).catch(() => 0);
    }
    let cursor: string | undefined;
    do {
      const page = await this.#store.runs.list({
        state: "requires_action",
        limit: 100,
        ...(cursor !== undefined ? { cursor } : {}),
      });
      for (const run of page.runs) {
        if (this.#stopped) return;
        await this.#sweepRun(client, run.runId, run.principalId, now).catch((error) => {
          this.#logger.error("pending sweep of a run failed", {
            runId: run.runId,
            errorName: error instanceof Error ? error.name : typeof error,
          });
        });
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined && !this.#stopped);
  }

  async #sweepRun(
    client: ProviderManagedAgentClient,
    runId: string,
    ownerId: string,
    now: number,
  ): Promise<void> {
    const signal = AbortSignal.timeout(SWEEP_CALL_MS);
    const found = await readToolRequests(client, runId, signal);
    const records = new Map(
      (await this.#store.answers.list(runId)).map((record) => [record.toolUseId, record]),
    );
    const pending = pendingOf(found, [...records.values()]);
    for (const request of pending) {
      const record = records.get(request.toolUseId);
      const overdue = Date.parse(request.requestedAt) + this.pendingTimeoutMs <= now;
      if (overdue && (record === undefined || this.#stale(record, now))) {
        await this.#failClosed(runId, ownerId, request, signal);
      } else if (record !== undefined && this.#stale(record, now)) {
        await this.#takeBack(client, runId, ownerId, record, signal);
      }
    }
    // Nothing waits any more: the recorded state is old; read it so the next pass skips the run.
    if (pending.length === 0) await this.#gateway.refreshRun(runId, { timeoutMs: SWEEP_CALL_MS });
  }

  #stale(record: ToolAnswerRecord, now: number): boolean {
    return record.state === "claimed" && record.claimedAt <= now - this.#claimStaleMs;
  }

  /** The fail-closed answer of a request past the pending timeout (steps 1 to 5). */
  async #failClosed(
    runId: string,
    ownerId: string,
    request: PendingToolRequest,
    signal: AbortSignal,
  ): Promise<void> {
    const confirmation = request.kind === "confirmation";
    const action: AuditAction = confirmation ? "tool.confirmed" : "tool.responded";
    let outcome = "ok";
    try {
      await this.#answer({
        runId,
        ownerId,
        toolUseId: request.toolUseId,
        kind: request.kind,
        principalId: FAIL_CLOSED_ACTOR,
        result: confirmation ? "deny" : "error",
        signal,
        send: (client, sendSignal) =>
          confirmation
            ? client.confirmTool(runId, {
              toolUseId: request.toolUseId,
              result: "deny",
              denyMessage: TIMEOUT_DENY_MESSAGE,
            }, { signal: sendSignal })
            : client.respondCustomTool(runId, {
              toolUseId: request.toolUseId,
              content: [{ type: "text", text: TIMEOUT_TOOL_MESSAGE }],
              isError: true,
            }, { signal: sendSignal }),
      });
    } catch (error) {
      if (!(error instanceof InterfaceError)) throw error;
      // Answered by someone else meanwhile: nothing to do, and nothing to audit.
      if (error.code === "alreadyAnswered" || error.code === "toolUseNotFound") return;
      outcome = error.code;
    }
    await this.#systemAudit(action, runId, outcome);
  }

  /** Step 3 alone: a stale claim is recorded as answered when the provider shows it, else freed. */
  async #takeBack(
    client: ProviderManagedAgentClient,
    runId: string,
    ownerId: string,
    stale: ToolAnswerRecord,
    signal: AbortSignal,
  ): Promise<void> {
    const claim = await this.#store.answers.claim({
      runId,
      toolUseId: stale.toolUseId,
      kind: stale.kind,
      principalId: stale.principalId,
      result: stale.result,
      now: this.#now(),
      staleMs: this.#claimStaleMs,
    });
    if (claim.state !== "claimed") return;
    try {
      const found = await readToolRequests(client, runId, signal);
      const shown = found.answered.get(stale.toolUseId);
      if (shown !== undefined) {
        const final = {
          principalId: stale.principalId,
          result: shown,
          answeredAt: this.#isoNow(),
        };
        await this.#complete({ ...stale, ownerId }, claim.token, final);
        return;
      }
    } catch (error) {
      await this.#store.answers.release(runId, stale.toolUseId, claim.token).catch(() => {});
      throw error;
    }
    await this.#store.answers.release(runId, stale.toolUseId, claim.token);
  }

  #systemAudit(action: AuditAction, runId: string, outcome: string): Promise<void> {
    return appendAudit(this.#store, this.#logger, {
      at: this.#isoNow(),
      action,
      actorId: FAIL_CLOSED_ACTOR,
      runId,
      correlationId: crypto.randomUUID(),
      outcome,
    });
  }

  #isoNow(): string {
    return new Date(this.#now()).toISOString();
  }
}
