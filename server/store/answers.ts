/**
 * The answers part of the store (`store.answers`): one record per `(runId, toolUseId)` that makes
 * sure a pending tool request gets exactly one answer across replicas (the three steps: see
 * `answer_types.ts`), and the ids of accepted provider webhook deliveries.
 *
 * @module
 */
import type { ActivityInput } from "./activity.ts";
import type {
  ToolAnswerClaim,
  ToolAnswerClaimParams,
  ToolAnswerRecord,
  ToolAnswerResult,
} from "./answer_types.ts";

/** The tool answers and webhook delivery ids of the store's namespace. */
export interface AnswerStore {
  /** Claims `(runId, toolUseId)` atomically (step 1 of the three). */
  claim(params: ToolAnswerClaimParams): Promise<ToolAnswerClaim>;
  /**
   * Records the claimed answer as given (step 3), with the answerer and answer of `final`
   * (which may differ from the claim's when a recovered claim's answer is found in the
   * provider's history). Returns false when the token no longer holds the claim. `activity`
   * (the `tool.answered` entry) is appended to the activity log in the same atomic step.
   */
  complete(
    runId: string,
    toolUseId: string,
    token: string,
    final: { principalId: string; result: ToolAnswerResult; answeredAt: string },
    activity?: readonly ActivityInput[],
  ): Promise<boolean>;
  /** Deletes a claim held by `token` (a failed send); a no-op otherwise. */
  release(runId: string, toolUseId: string, token: string): Promise<void>;
  /** Reads one answer record. */
  get(runId: string, toolUseId: string): Promise<ToolAnswerRecord | null>;
  /** Every answer record of a run (at most 1000). */
  list(runId: string): Promise<ToolAnswerRecord[]>;
  /**
   * Records a webhook delivery id; true when it is new, false for a repeat within `ttlMs`.
   * Atomic: of two replicas recording one id at once, one gets true.
   */
  recordWebhookDelivery(id: string, now: number, ttlMs: number): Promise<boolean>;
  /** Deletes answer records and webhook ids past their retention; returns how many. */
  purge(now: number): Promise<number>;
}
