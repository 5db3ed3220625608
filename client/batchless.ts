/**
 * {@linkcode BatchlessRuntimeClient}: the batch half of the run contract for clients whose
 * provider has no batch API (managed-agent sessions, the runtime service's gateway).
 *
 * @module
 */
import type {
  RunStreamOptions,
  RuntimeBatchRequest,
  RuntimeBatchResult,
  RuntimeBatchStatus,
} from "./contract.ts";
import { ProviderUnsupportedError } from "./errors.ts";

/**
 * The batch operations of `RuntimeClient` for a client without a batch API: each rejects with
 * `ProviderUnsupportedError` naming the operation and the reason, and `getBatchResults` throws at
 * once, before anything is iterated. A client extends it and implements the run operations.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BatchlessRuntimeClient, ProviderUnsupportedError } from "@automation/runtime/client";
 * class Example extends BatchlessRuntimeClient {
 *   constructor() {
 *     super("this example has no batches");
 *   }
 * }
 * await assert.rejects(() => new Example().getBatch("b_1"), ProviderUnsupportedError);
 * ```
 */
export abstract class BatchlessRuntimeClient {
  readonly #reason: string;

  /** `reason` says why there are no batches and what to use instead. */
  constructor(reason: string) {
    this.#reason = reason;
  }

  /** Not supported: rejects with `ProviderUnsupportedError`. */
  submitBatch(
    _requests: RuntimeBatchRequest[],
    _options?: RunStreamOptions,
  ): Promise<RuntimeBatchStatus> {
    return Promise.reject(new ProviderUnsupportedError("submitBatch", this.#reason));
  }

  /** Not supported: rejects with `ProviderUnsupportedError`. */
  getBatch(_batchId: string, _options?: RunStreamOptions): Promise<RuntimeBatchStatus> {
    return Promise.reject(new ProviderUnsupportedError("getBatch", this.#reason));
  }

  /** Not supported: rejects with `ProviderUnsupportedError`. */
  cancelBatch(_batchId: string, _options?: RunStreamOptions): Promise<RuntimeBatchStatus> {
    return Promise.reject(new ProviderUnsupportedError("cancelBatch", this.#reason));
  }

  /** Not supported: throws `ProviderUnsupportedError` at once, before anything is iterated. */
  getBatchResults(
    _batchId: string,
    _options?: RunStreamOptions,
  ): AsyncIterable<RuntimeBatchResult> {
    throw new ProviderUnsupportedError("getBatchResults", this.#reason);
  }
}
