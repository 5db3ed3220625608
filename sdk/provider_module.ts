/**
 * The run contract over the runtime service: {@linkcode RuntimeServiceRunClient} implements
 * `RuntimeClient` (`startRun`, `getRun`, `cancelRun`) with a scoped principal's bearer instead
 * of the provider key, and {@linkcode createRuntimeServiceProviderModule} files it in a
 * `ProviderRegistry` under kind `runtime-service`. Code written against the run contract runs
 * unchanged; the service holds the provider credential.
 *
 * What it advertises is what works: `runs` and `streaming`. `streamRun` starts a run and follows
 * its events over the service's event stream (`client.runs.events`, which reconnects and resumes
 * by itself); the batch operations reject with `ProviderUnsupportedError`. Web standards only.
 *
 * @module
 */
import { providerCapabilities } from "../client/capabilities.ts";
import type {
  RunStreamEvent,
  RunStreamHandlers,
  RunStreamOptions,
  RunStreamResult,
  RuntimeCapabilities,
  RuntimeClient,
  RuntimeRunStartBody,
  RuntimeRunStatus,
} from "../client/contract.ts";
import { BatchlessRuntimeClient } from "../client/batchless.ts";
import { ProviderAbortError } from "../client/errors.ts";
import type { ProviderConnectionOverrides, ProviderModule } from "../client/registry.ts";
import { RuntimeServiceClient, type RuntimeServiceClientOptions } from "./client.ts";
import type { RunRecord, StartRunBody, StartRunMetadata } from "../wire/mod.ts";
import { isObject } from "./_request.ts";

/** The kind a registry files the module under. */
export const RUNTIME_SERVICE_PROVIDER_KIND = "runtime-service";

/** Options of {@linkcode createRuntimeServiceProviderModule} and {@linkcode RuntimeServiceRunClient}. */
export type RuntimeServiceProviderOptions = RuntimeServiceClientOptions;

const NO_BATCHES = "the runtime service has no batch API";
/** The metadata keys the service's start endpoint reads; the contract's others stay local. */
const METADATA_KEYS: readonly (keyof StartRunMetadata)[] = [
  "agent_id",
  "environment_id",
  "agent_version",
  "resources",
  "vault_ids",
];

/**
 * A `RuntimeClient` whose runs are runs of the runtime service. Errors of the service reject as
 * `RuntimeServiceError` (`agentNotAllowed`, `runQuotaExceeded`, `providerError`, …); an aborted
 * `signal` rejects with `ProviderAbortError`, as the provider clients do.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RuntimeServiceRunClient } from "./provider_module.ts";
 * const client = new RuntimeServiceRunClient({
 *   baseUrl: "http://127.0.0.1:7777",
 *   token: "art_" + "x".repeat(43),
 *   fetch: () =>
 *     Promise.resolve(Response.json({
 *       runId: "sesn_1", principalId: "p", agentId: "agent_1", environmentId: "env_1",
 *       state: "completed", stopReason: "end_turn", usage: { output_tokens: 12 },
 *       lastEventSeq: 5, createdAt: "2026-07-23T00:00:00Z", updatedAt: "2026-07-23T00:00:09Z",
 *     })),
 * });
 * const status = await client.getRun("sesn_1");
 * assert.deepEqual(status, {
 *   runId: "sesn_1",
 *   status: "completed",
 *   stopReason: "end_turn",
 *   usage: { output_tokens: 12 },
 * });
 * assert.equal(client.getRuntimeCapabilities().streaming, true);
 * ```
 */
export class RuntimeServiceRunClient extends BatchlessRuntimeClient implements RuntimeClient {
  readonly #service: RuntimeServiceClient;

  /**
   * Creates the client; the options are those of `RuntimeServiceClient` (checked the same way).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceRunClient } from "./provider_module.ts";
   * assert.throws(() => new RuntimeServiceRunClient({ baseUrl: "ftp://x", token: "t" }), TypeError);
   * ```
   */
  constructor(options: RuntimeServiceProviderOptions) {
    super(NO_BATCHES);
    this.#service = new RuntimeServiceClient(options);
  }

  /**
   * What this client supports: `runs` only.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceRunClient } from "./provider_module.ts";
   * const client = new RuntimeServiceRunClient({ baseUrl: "http://127.0.0.1:7777", token: "t" });
   * assert.equal(client.getRuntimeCapabilities().runs, true);
   * ```
   */
  getRuntimeCapabilities(): RuntimeCapabilities {
    return providerCapabilities(RUNTIME_SERVICE_PROVIDER_KIND);
  }

  /**
   * Starts a run through the service and returns its id with status `started` (the run goes on
   * asynchronously). The service reads `input` and the metadata keys `agent_id`,
   * `environment_id`, `agent_version`, `resources` and `vault_ids`; `model`, `instructions` and
   * `maxTokens` are not applied (they live on the agent). Each call sends a fresh idempotency
   * key, so the SDK's retries never start a run twice.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceRunClient } from "./provider_module.ts";
   * let sent: unknown;
   * const client = new RuntimeServiceRunClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "t",
   *   fetch: (_input, init) => {
   *     sent = JSON.parse(String(init?.body));
   *     return Promise.resolve(Response.json({
   *       runId: "sesn_9", principalId: "p", agentId: "agent_1", environmentId: "env_1",
   *       state: "queued", lastEventSeq: 0, createdAt: "2026-07-23T00:00:00Z",
   *       updatedAt: "2026-07-23T00:00:00Z",
   *     }, { status: 201 }));
   *   },
   * });
   * const status = await client.startRun({ input: "hi", metadata: { agent_id: "agent_1" } });
   * assert.deepEqual(status, { runId: "sesn_9", status: "started" });
   * assert.deepEqual(sent, { input: "hi", metadata: { agent_id: "agent_1" } });
   * ```
   */
  async startRun(
    body: RuntimeRunStartBody,
    options: RunStreamOptions = {},
  ): Promise<RuntimeRunStatus> {
    const record = await this.#call(
      options,
      (signal) => this.#service.runs.start(startBodyOf(body), { signal }),
    );
    return { runId: record.runId, status: "started" };
  }

  /**
   * Starts a run and hands each of its events to `handlers.onEvent` (without the log's `seq` and
   * `at`) until the turn's terminal event, which the result carries. The stream resumes by
   * itself across broken connections; aborting `signal` rejects with `ProviderAbortError`.
   */
  async streamRun(
    body: RuntimeRunStartBody,
    handlers: RunStreamHandlers,
    options: RunStreamOptions = {},
  ): Promise<RunStreamResult> {
    return await this.#call(options, async (signal) => {
      const record = await this.#service.runs.start(startBodyOf(body), { signal });
      let terminal: RunStreamEvent | null = null;
      const events = this.#service.runs.events(record.runId, signal ? { signal } : {});
      for await (const entry of events) {
        const { seq: _seq, at: _at, ...event } = entry;
        const pending = handlers.onEvent?.(event as RunStreamEvent);
        if (pending !== undefined) await pending;
        if (
          event.type === "run.completed" || event.type === "run.failed" ||
          event.type === "run.cancelled"
        ) terminal = event as RunStreamEvent;
      }
      return { runId: record.runId, terminal };
    });
  }

  /**
   * Reads the run's state, stop reason and usage from the service.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderAbortError } from "../client/errors.ts";
   * import { RuntimeServiceRunClient } from "./provider_module.ts";
   * const client = new RuntimeServiceRunClient({ baseUrl: "http://127.0.0.1:7777", token: "t" });
   * await assert.rejects(
   *   client.getRun("sesn_1", { signal: AbortSignal.abort() }),
   *   ProviderAbortError,
   * );
   * ```
   */
  async getRun(runId: string, options: RunStreamOptions = {}): Promise<RuntimeRunStatus> {
    const record = await this.#call(options, (signal) => this.#service.runs.get(runId, { signal }));
    return statusOf(record);
  }

  /**
   * Asks the service to cancel the run and returns the state the service reports (the run
   * becomes `cancelled` once the provider stopped it; read it again with {@linkcode getRun}).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceRunClient } from "./provider_module.ts";
   * const client = new RuntimeServiceRunClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "t",
   *   fetch: () =>
   *     Promise.resolve(Response.json({
   *       runId: "sesn_2", principalId: "p", agentId: "a", environmentId: "e",
   *       state: "cancelled", lastEventSeq: 3, createdAt: "2026-07-23T00:00:00Z",
   *       updatedAt: "2026-07-23T00:00:02Z", endedAt: "2026-07-23T00:00:02Z",
   *     }, { status: 202 })),
   * });
   * assert.deepEqual(await client.cancelRun("sesn_2"), { runId: "sesn_2", status: "cancelled" });
   * ```
   */
  async cancelRun(runId: string, options: RunStreamOptions = {}): Promise<RuntimeRunStatus> {
    const record = await this.#call(
      options,
      (signal) => this.#service.runs.cancel(runId, { signal }),
    );
    return statusOf(record);
  }

  /** Runs a call, turning the caller's abort into `ProviderAbortError` like the provider clients. */
  async #call<T>(
    options: RunStreamOptions,
    call: (signal: AbortSignal | undefined) => Promise<T>,
  ): Promise<T> {
    const { signal } = options;
    if (signal?.aborted) throw new ProviderAbortError({ cause: signal.reason });
    try {
      return await call(signal);
    } catch (error) {
      if (signal?.aborted) throw new ProviderAbortError({ cause: signal.reason });
      throw error;
    }
  }
}

/**
 * A provider module (kind `runtime-service`, runtime-only, advertising `runs` and `streaming`) whose clients
 * are {@linkcode RuntimeServiceRunClient}s. `baseUrl` and `token` are checked now. A registry's
 * `baseUrl` and `fetchImpl` replace the module's; `onTrace` is not used (the service traces its
 * own provider calls).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderRegistry } from "../client/registry.ts";
 * import { createRuntimeServiceProviderModule } from "./provider_module.ts";
 * const module = createRuntimeServiceProviderModule({
 *   baseUrl: "http://127.0.0.1:7777",
 *   token: "art_" + "x".repeat(43),
 * });
 * assert.equal(module.kind, "runtime-service");
 * const registry = new ProviderRegistry().register(module);
 * assert.equal(registry.supports("runtime-service", "runs"), true);
 * assert.equal(registry.supports("runtime-service", "streaming"), true);
 * const client = registry.createClient("runtime-service");
 * assert.equal(client.getRuntimeCapabilities().runs, true);
 * ```
 */
export function createRuntimeServiceProviderModule(
  options: RuntimeServiceProviderOptions,
): ProviderModule<RuntimeServiceRunClient> {
  if (!isObject(options)) throw new TypeError("createRuntimeServiceProviderModule needs options");
  const captured = { ...options };
  // Fail now, not when a client is first built: the same checks as the client's constructor.
  new RuntimeServiceClient(captured);
  return Object.freeze({
    kind: RUNTIME_SERVICE_PROVIDER_KIND,
    runtimeOnly: true,
    capabilities: providerCapabilities(RUNTIME_SERVICE_PROVIDER_KIND),
    createClient(overrides?: ProviderConnectionOverrides): RuntimeServiceRunClient {
      const merged = { ...captured };
      if (overrides?.baseUrl !== undefined) merged.baseUrl = overrides.baseUrl;
      if (overrides?.fetchImpl !== undefined) merged.fetch = overrides.fetchImpl as typeof fetch;
      return new RuntimeServiceRunClient(merged);
    },
  });
}

function startBodyOf(body: RuntimeRunStartBody): StartRunBody {
  if (!isObject(body)) throw new TypeError("The run body must be an object");
  const start: StartRunBody = { input: body.input };
  if (body.metadata !== undefined) {
    if (!isObject(body.metadata)) throw new TypeError("metadata must be an object");
    const metadata: Record<string, unknown> = {};
    for (const key of METADATA_KEYS) {
      if (body.metadata[key] !== undefined) metadata[key] = body.metadata[key];
    }
    if (Object.keys(metadata).length > 0) start.metadata = metadata as StartRunMetadata;
  }
  return start;
}

function statusOf(record: RunRecord): RuntimeRunStatus {
  const status: RuntimeRunStatus = { runId: record.runId, status: record.state };
  if (typeof record.stopReason === "string") status.stopReason = record.stopReason;
  if (isObject(record.usage)) status.usage = record.usage;
  return status;
}
