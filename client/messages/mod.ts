/**
 * The stateless messages client: {@linkcode ProviderApiClient}, the stream mapping
 * ({@linkcode mapProviderStreamEvent}, {@linkcode readProviderRunId}), message batch results and
 * the wire types.
 *
 * @module
 */
export * from "./client.ts";
export * from "./stream.ts";
export * from "./types.ts";
export * from "./batch_errors.ts";
export { type ProviderBatchResultsOptions, readProviderBatchResults } from "./batches.ts";
