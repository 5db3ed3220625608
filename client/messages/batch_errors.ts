/**
 * Errors of reading message batch results: one bad line ({@linkcode ProviderBatchLineError}) and
 * results that cannot be read as a whole ({@linkcode ProviderBatchResultsError}).
 *
 * @module
 */

/** Why a results line was rejected. */
export type ProviderBatchLineProblem =
  | "invalidJson"
  | "invalidShape"
  | "invalidUtf8"
  | "lineTooLong";

/** Fields of a {@linkcode ProviderBatchLineError}. */
export interface ProviderBatchLineErrorInit {
  /** 1-based line number in the results file. */
  lineNumber: number;
  /** What is wrong with the line. */
  problem: ProviderBatchLineProblem;
  /** The line's `custom_id`, when it could be read. */
  customId?: string;
  /** Detail of the problem. */
  detail?: string;
}

/** One line of a batch results file could not be read as a result. Reading goes on after it. */
export class ProviderBatchLineError extends Error {
  /** Stable error code. */
  readonly code = "providerBatchLineInvalid" as const;
  /** 1-based line number in the results file. */
  readonly lineNumber: number;
  /** What is wrong with the line. */
  readonly problem: ProviderBatchLineProblem;
  /** The line's `custom_id`, when it could be read. */
  readonly customId: string | undefined;
  /**
   * Creates the error. The message names the line number and never quotes the line's content.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderBatchLineError } from "@automation/runtime/client";
   * const error = new ProviderBatchLineError({ lineNumber: 7, problem: "invalidJson" });
   * assert.equal(error.message, "Batch results line 7 is not valid JSON");
   * assert.equal(error.lineNumber, 7);
   * ```
   */
  constructor(init: ProviderBatchLineErrorInit) {
    const what = {
      invalidJson: "is not valid JSON",
      invalidShape: "is not a batch result",
      invalidUtf8: "is not valid UTF-8",
      lineTooLong: "is longer than the line limit",
    }[init.problem];
    super(
      `Batch results line ${init.lineNumber} ${what}${init.detail ? `: ${init.detail}` : ""}`,
    );
    this.name = "ProviderBatchLineError";
    this.lineNumber = init.lineNumber;
    this.problem = init.problem;
    this.customId = init.customId;
  }
}

/** Why a batch's results could not be read (or not all of them). */
export type ProviderBatchResultsProblem = "notReady" | "foreignResultsUrl" | "invalidLines";

/** Fields of a {@linkcode ProviderBatchResultsError}. */
export interface ProviderBatchResultsErrorInit {
  /** What went wrong. */
  problem: ProviderBatchResultsProblem;
  /** The human-readable explanation. */
  message: string;
  /** The batch, when known. */
  batchId?: string;
  /** For `invalidLines`: the first rejected lines (at most 100 are kept). */
  lineErrors?: readonly ProviderBatchLineError[];
  /** For `invalidLines`: how many lines were rejected in all. */
  invalidLineCount?: number;
}

/**
 * A batch's results cannot be read: the batch has no results yet (`notReady`), its `results_url`
 * points away from the client's base URL so the API key is not sent there (`foreignResultsUrl`),
 * or, after every good line was delivered, some lines were rejected and no `onInvalidLine`
 * handler took them (`invalidLines`).
 */
export class ProviderBatchResultsError extends Error {
  /** Stable error code. */
  readonly code = "providerBatchResults" as const;
  /** What went wrong. */
  readonly problem: ProviderBatchResultsProblem;
  /** The batch, when known. */
  readonly batchId: string | undefined;
  /** The first rejected lines, in order (at most 100). */
  readonly lineErrors: readonly ProviderBatchLineError[];
  /** How many lines were rejected in all. */
  readonly invalidLineCount: number;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderBatchResultsError } from "@automation/runtime/client";
   * const error = new ProviderBatchResultsError({
   *   problem: "notReady",
   *   message: "Batch msgbatch_1 has no results yet (in_progress)",
   * });
   * assert.equal(error.problem, "notReady");
   * ```
   */
  constructor(init: ProviderBatchResultsErrorInit) {
    super(init.message);
    this.name = "ProviderBatchResultsError";
    this.problem = init.problem;
    this.batchId = init.batchId;
    this.lineErrors = Object.freeze([...(init.lineErrors ?? [])]);
    this.invalidLineCount = init.invalidLineCount ?? this.lineErrors.length;
  }
}
