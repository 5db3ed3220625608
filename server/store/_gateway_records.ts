/**
 * The run gateway's records in a backend: runs and their slots, the audit log, tool answers,
 * webhook delivery ids, run event logs and tail leases. Each backend keeps them in parts of its
 * own (`kv/*.ts`, `postgres/*.ts`); this class forwards the `Store` methods to those parts once,
 * for every backend. Internal.
 *
 * @module
 */
import type {
  AnswerStore,
  ToolAnswerClaim,
  ToolAnswerClaimParams,
  ToolAnswerRecord,
  ToolAnswerResult,
} from "./answer_types.ts";
import type {
  RunEventEntry,
  RunEventInput,
  RunEventStore,
  RunLeaseParams,
} from "./run_event_types.ts";
import type {
  AuditEntry,
  AuditEntryInput,
  AuditListQuery,
  AuditPage,
  RunListQuery,
  RunSlotReservation,
  RunSlotResult,
  RunStore,
  StoredRunPage,
  StoredRunRecord,
} from "./run_types.ts";

/** The parts a backend keeps the gateway's records in. */
export interface GatewayRecordParts {
  /** Runs, active-run slots and the audit log. */
  readonly runs: RunStore;
  /** Tool answers and webhook delivery ids. */
  readonly answers: AnswerStore;
  /** Run event logs and tail leases. */
  readonly events: RunEventStore;
}

/** Forwards the gateway's record methods of a backend to its parts. */
export abstract class GatewayRecords implements RunStore, AnswerStore, RunEventStore {
  readonly #parts: GatewayRecordParts;

  /** `parts` are the backend's own stores of these records. */
  constructor(parts: GatewayRecordParts) {
    this.#parts = parts;
  }

  // Runs, active-run slots and the audit log.
  reserveRunSlot(params: RunSlotReservation): Promise<RunSlotResult> {
    return this.#parts.runs.reserveRunSlot(params);
  }
  releaseRunSlot(principalId: string, slotId: string): Promise<void> {
    return this.#parts.runs.releaseRunSlot(principalId, slotId);
  }
  createRun(record: StoredRunRecord, slotId: string): Promise<void> {
    return this.#parts.runs.createRun(record, slotId);
  }
  getRun(runId: string): Promise<StoredRunRecord | null> {
    return this.#parts.runs.getRun(runId);
  }
  updateRun(record: StoredRunRecord, expected?: StoredRunRecord): Promise<boolean> {
    return this.#parts.runs.updateRun(record, expected);
  }
  listRuns(params: RunListQuery): Promise<StoredRunPage> {
    return this.#parts.runs.listRuns(params);
  }
  countRunSlots(principalId: string | null, now: number): Promise<number> {
    return this.#parts.runs.countRunSlots(principalId, now);
  }
  appendAudit(entry: AuditEntryInput): Promise<AuditEntry> {
    return this.#parts.runs.appendAudit(entry);
  }
  listAudit(params: AuditListQuery): Promise<AuditPage> {
    return this.#parts.runs.listAudit(params);
  }

  // Tool answers and webhook delivery ids.
  claimToolAnswer(params: ToolAnswerClaimParams): Promise<ToolAnswerClaim> {
    return this.#parts.answers.claimToolAnswer(params);
  }
  completeToolAnswer(
    runId: string,
    toolUseId: string,
    token: string,
    final: { principalId: string; result: ToolAnswerResult; answeredAt: string },
  ): Promise<boolean> {
    return this.#parts.answers.completeToolAnswer(runId, toolUseId, token, final);
  }
  releaseToolAnswer(runId: string, toolUseId: string, token: string): Promise<void> {
    return this.#parts.answers.releaseToolAnswer(runId, toolUseId, token);
  }
  getToolAnswer(runId: string, toolUseId: string): Promise<ToolAnswerRecord | null> {
    return this.#parts.answers.getToolAnswer(runId, toolUseId);
  }
  listToolAnswers(runId: string): Promise<ToolAnswerRecord[]> {
    return this.#parts.answers.listToolAnswers(runId);
  }
  recordWebhookDelivery(id: string, now: number, ttlMs: number): Promise<boolean> {
    return this.#parts.answers.recordWebhookDelivery(id, now, ttlMs);
  }
  purgeAnswers(now: number): Promise<number> {
    return this.#parts.answers.purgeAnswers(now);
  }

  // Run event logs and tail leases.
  appendRunEvents(runId: string, events: readonly RunEventInput[]): Promise<RunEventEntry[]> {
    return this.#parts.events.appendRunEvents(runId, events);
  }
  listRunEvents(runId: string, after: number, limit: number): Promise<RunEventEntry[]> {
    return this.#parts.events.listRunEvents(runId, after, limit);
  }
  acquireRunLease(params: RunLeaseParams): Promise<boolean> {
    return this.#parts.events.acquireRunLease(params);
  }
  releaseRunLease(runId: string, holder: string): Promise<void> {
    return this.#parts.events.releaseRunLease(runId, holder);
  }
  watchRunEvents(runId: string, listener: (last?: number) => void): () => void {
    return this.#parts.events.watchRunEvents(runId, listener);
  }
  purgeRunEvents(endedBefore: string): Promise<number> {
    return this.#parts.events.purgeRunEvents(endedBefore);
  }
}
