/**
 * Typed errors of the managed-agents client beyond the shared provider errors.
 *
 * @module
 */
import { ProviderApiError } from "../errors.ts";

/**
 * A memory write hit a path another memory occupies (HTTP 409, error type
 * `memory_path_conflict_error`). It is a {@linkcode ProviderApiError}, never retried, and names
 * the memory in the way when the provider says.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemoryPathConflictError, ProviderApiError } from "@automation/runtime/client";
 * const error = new MemoryPathConflictError(
 *   new ProviderApiError({
 *     status: 409,
 *     type: "memory_path_conflict_error",
 *     message: "A memory already exists at /notes.md",
 *     retryable: false,
 *     providerError: { conflicting_memory_id: "mem_1", conflicting_path: "/notes.md" },
 *   }),
 * );
 * assert.equal(error.conflictingMemoryId, "mem_1");
 * assert.ok(error instanceof ProviderApiError);
 * ```
 */
export class MemoryPathConflictError extends ProviderApiError {
  /** The memory at the path, when the provider says. */
  readonly conflictingMemoryId: string | undefined;
  /** The occupied path, when the provider says. */
  readonly conflictingPath: string | undefined;

  /** Wraps the provider's answer; `cause` is the original error. */
  constructor(error: ProviderApiError) {
    super({
      status: error.status,
      type: error.type,
      message: error.message,
      requestId: error.requestId,
      retryable: false,
      errorCode: error.errorCode,
      providerError: error.providerError,
    });
    this.name = "MemoryPathConflictError";
    this.cause = error;
    const details = error.providerError ?? {};
    this.conflictingMemoryId = typeof details.conflicting_memory_id === "string"
      ? details.conflicting_memory_id
      : undefined;
    this.conflictingPath = typeof details.conflicting_path === "string"
      ? details.conflicting_path
      : undefined;
  }
}
