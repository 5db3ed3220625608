/**
 * The provider registry and the two provider modules it hosts.
 *
 * A provider module captures a client configuration and knows how to build a client from it:
 * {@linkcode createProviderModule} (kind `provider-sdk`, the stateless {@linkcode ProviderApiClient})
 * and {@linkcode createProviderManagedAgentProviderModule} (kind `provider-managed-agents`, the
 * {@linkcode ProviderManagedAgentClient}, runtime-only). Each module advertises what it supports
 * from the one capability declaration (`PROVIDER_CAPABILITY_DECLARATION`).
 *
 * A {@linkcode ProviderRegistry} hosts modules by kind and builds clients with its own
 * connection settings laid over each module's captured configuration.
 *
 * Merge rules, per field (`baseUrl`, `fetchImpl`, `onTrace`): a value the registry was given
 * replaces the module's captured value; a field the registry leaves undefined keeps the
 * module's. Nothing else is merged: keys, models, agent and environment ids stay the module's.
 * The captured configuration is copied when the module is created, so later changes to the
 * caller's object do not leak into clients.
 *
 * @module
 */
import type { FetchLike, ProviderTraceCallback } from "./http.ts";
import { providerCapabilities, type ProviderModuleKind } from "./capabilities.ts";
import type { RuntimeCapabilities, RuntimeCapabilityName, RuntimeClient } from "./contract.ts";
import {
  ProviderManagedAgentClient,
  type ProviderManagedAgentClientOptions,
} from "./managed_agents/client.ts";
import { ProviderApiClient, type ProviderApiClientOptions } from "./messages/client.ts";

/** The connection settings a registry lays over a module's captured configuration. */
export interface ProviderConnectionOverrides {
  /** Base URL of the provider API. */
  baseUrl?: string;
  /** The fetch clients use. */
  fetchImpl?: FetchLike;
  /** Receives one trace per request attempt. */
  onTrace?: ProviderTraceCallback;
}

/** A provider module: a kind, what it advertises, and a client factory over a captured config. */
export interface ProviderModule<TClient extends RuntimeClient = RuntimeClient> {
  /** The kind the registry files it under (unique per registry). */
  readonly kind: string;
  /**
   * True when the module is registered for the run contract alone: it advertises only live
   * runs (`runs`, `streaming`), whatever else its client class can do.
   */
  readonly runtimeOnly: boolean;
  /** What the module's clients support (a frozen map of the eleven capability names). */
  readonly capabilities: RuntimeCapabilities;
  /** Builds a client from the captured configuration with `overrides` laid over it. */
  createClient(overrides?: ProviderConnectionOverrides): TClient;
}

/** The client type each built-in kind creates. */
export interface ProviderClientKinds {
  /** The stateless messages client. */
  "provider-sdk": ProviderApiClient;
  /** The managed-agents client. */
  "provider-managed-agents": ProviderManagedAgentClient;
}

/** What a registry lists about one module. */
export interface ProviderModuleInfo {
  /** The module's kind. */
  kind: string;
  /** Whether it is registered for the run contract alone. */
  runtimeOnly: boolean;
  /** What it supports. */
  capabilities: RuntimeCapabilities;
}

/** Options of a {@linkcode ProviderRegistry}: the connection settings laid over every module. */
export type ProviderRegistryOptions = ProviderConnectionOverrides;

const BUILT_IN = new WeakSet<object>();

function merged<T extends ProviderConnectionOverrides>(
  config: T,
  overrides: ProviderConnectionOverrides | undefined,
): T {
  const result = { ...config };
  if (overrides?.baseUrl !== undefined) result.baseUrl = overrides.baseUrl;
  if (overrides?.fetchImpl !== undefined) result.fetchImpl = overrides.fetchImpl;
  if (overrides?.onTrace !== undefined) result.onTrace = overrides.onTrace;
  return result;
}

function builtIn<TClient extends RuntimeClient>(
  kind: ProviderModuleKind,
  runtimeOnly: boolean,
  create: (overrides?: ProviderConnectionOverrides) => TClient,
): ProviderModule<TClient> {
  const module: ProviderModule<TClient> = Object.freeze({
    kind,
    runtimeOnly,
    capabilities: providerCapabilities(kind),
    createClient: create,
  });
  BUILT_IN.add(module);
  return module;
}

/**
 * The module of the stateless messages client (kind `provider-sdk`). It advertises `runs`,
 * `streaming` and `batch`, like `PROVIDER_RUNTIME_SUPPORT`. `apiKey` is checked now; `baseUrl`
 * may come from the registry and is checked when a client is built.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createProviderModule, ProviderApiClient } from "@automation/runtime/client";
 * const module = createProviderModule({ apiKey: "<API_KEY>", defaultModel: "model-small" });
 * assert.equal(module.kind, "provider-sdk");
 * assert.equal(module.capabilities.batch, true);
 * const client = module.createClient({ baseUrl: "https://provider.example" });
 * assert.ok(client instanceof ProviderApiClient);
 * ```
 */
export function createProviderModule(
  config: ProviderApiClientOptions,
): ProviderModule<ProviderApiClient> {
  if (typeof config?.apiKey !== "string" || config.apiKey === "") {
    throw new TypeError("apiKey is required: pass the provider API key");
  }
  const captured = { ...config };
  return builtIn(
    "provider-sdk",
    false,
    (overrides) => new ProviderApiClient(merged(captured, overrides)),
  );
}

/**
 * The module of the managed-agents client (kind `provider-managed-agents`). It is runtime-only:
 * it advertises `runs` and `streaming` and nothing else. One of `apiKey` or `authToken` is
 * required now; `baseUrl` may come from the registry.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createProviderManagedAgentProviderModule } from "@automation/runtime/client";
 * const module = createProviderManagedAgentProviderModule({
 *   apiKey: "<API_KEY>",
 *   agentId: "agent_01",
 *   environmentId: "env_01",
 * });
 * assert.equal(module.runtimeOnly, true);
 * assert.equal(module.capabilities.streaming, true);
 * assert.equal(module.capabilities.batch, false);
 * ```
 */
export function createProviderManagedAgentProviderModule(
  config: ProviderManagedAgentClientOptions,
): ProviderModule<ProviderManagedAgentClient> {
  const hasKey = typeof config?.apiKey === "string" && config.apiKey !== "";
  const hasToken = typeof config?.authToken === "string" && config.authToken !== "";
  if (!hasKey && !hasToken) {
    throw new TypeError("apiKey or authToken is required: pass a provider credential");
  }
  const captured = { ...config };
  return builtIn(
    "provider-managed-agents",
    true,
    (overrides) => new ProviderManagedAgentClient(merged(captured, overrides)),
  );
}

/**
 * Hosts provider modules by kind and builds their clients with the registry's `baseUrl`,
 * `fetchImpl` and `onTrace` laid over each module's captured configuration (a value the
 * registry leaves undefined keeps the module's). The built-in kinds `provider-sdk` and
 * `provider-managed-agents` accept only the modules of {@linkcode createProviderModule} and
 * {@linkcode createProviderManagedAgentProviderModule}, so `createClient` can type their clients.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import {
 *   createProviderManagedAgentProviderModule,
 *   createProviderModule,
 *   ProviderApiClient,
 *   ProviderRegistry,
 * } from "@automation/runtime/client";
 * const registry = new ProviderRegistry({ baseUrl: "https://provider.example" })
 *   .register(createProviderModule({ apiKey: "<API_KEY>", defaultModel: "model-small" }))
 *   .register(createProviderManagedAgentProviderModule({ apiKey: "<API_KEY>" }));
 * assert.ok(registry.createClient("provider-sdk") instanceof ProviderApiClient);
 * assert.equal(registry.supports("provider-managed-agents", "batch"), false);
 * assert.equal(registry.supports("provider-sdk", "batch"), true);
 * ```
 */
export class ProviderRegistry {
  readonly #overrides: ProviderConnectionOverrides;
  readonly #modules: Map<string, ProviderModule> = new Map();

  /**
   * Keeps the connection settings laid over every module (a copy of them).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderRegistry } from "@automation/runtime/client";
   * const registry = new ProviderRegistry({ baseUrl: "http://127.0.0.1:8080" });
   * assert.deepEqual(registry.list(), []);
   * ```
   */
  constructor(options: ProviderRegistryOptions = {}) {
    this.#overrides = {
      baseUrl: options.baseUrl,
      fetchImpl: options.fetchImpl,
      onTrace: options.onTrace,
    };
  }

  /**
   * Adds a module. A second module of the same kind, a module without a kind or factory, or a
   * foreign module claiming a built-in kind is a `TypeError`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { createProviderModule, ProviderRegistry } from "@automation/runtime/client";
   * const registry = new ProviderRegistry().register(createProviderModule({ apiKey: "<API_KEY>" }));
   * assert.equal(registry.has("provider-sdk"), true);
   * // A second module of the same kind is refused.
   * assert.throws(() => registry.register(createProviderModule({ apiKey: "<KEY>" })), TypeError);
   * ```
   */
  register(module: ProviderModule): this {
    if (
      typeof module?.kind !== "string" || module.kind === "" ||
      typeof module.createClient !== "function" || typeof module.capabilities !== "object"
    ) {
      throw new TypeError("A provider module needs a kind, capabilities and createClient");
    }
    if (this.#modules.has(module.kind)) {
      throw new TypeError(`A provider module of kind ${module.kind} is already registered`);
    }
    if (
      (module.kind === "provider-sdk" || module.kind === "provider-managed-agents") &&
      !BUILT_IN.has(module)
    ) {
      throw new TypeError(
        `Kind ${module.kind} is reserved for the module of the built-in factory`,
      );
    }
    this.#modules.set(module.kind, module);
    return this;
  }

  /**
   * The module of a kind, or undefined.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { createProviderModule, ProviderRegistry } from "@automation/runtime/client";
   * const module = createProviderModule({ apiKey: "<API_KEY>" });
   * const registry = new ProviderRegistry().register(module);
   * assert.equal(registry.get("provider-sdk"), module);
   * assert.equal(registry.get("provider-managed-agents"), undefined);
   * ```
   */
  get(kind: string): ProviderModule | undefined {
    return this.#modules.get(kind);
  }

  /**
   * Whether a module of the kind is registered.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ProviderRegistry } from "@automation/runtime/client";
   * assert.equal(new ProviderRegistry().has("provider-sdk"), false);
   * ```
   */
  has(kind: string): boolean {
    return this.#modules.has(kind);
  }

  /**
   * Builds a client of the registered module of `kind`, with the registry's connection
   * settings laid over the module's configuration. An unknown kind is a `TypeError`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { createProviderModule, ProviderRegistry } from "@automation/runtime/client";
   * const registry = new ProviderRegistry({ baseUrl: "https://provider.example" })
   *   .register(createProviderModule({ apiKey: "<API_KEY>" }));
   * const client = registry.createClient("provider-sdk");
   * assert.equal(client.getRuntimeCapabilities().runs, true);
   * assert.throws(() => registry.createClient("provider-managed-agents"), TypeError);
   * ```
   */
  createClient<K extends keyof ProviderClientKinds>(kind: K): ProviderClientKinds[K];
  /**
   * Builds a client of a registered module of any other kind, typed as the run contract.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import {
   *   declareCapabilities,
   *   ProviderApiClient,
   *   ProviderRegistry,
   *   type RuntimeClient,
   * } from "@automation/runtime/client";
   * const registry = new ProviderRegistry({ baseUrl: "https://provider.example" }).register({
   *   kind: "custom-runtime",
   *   runtimeOnly: true,
   *   capabilities: declareCapabilities(["runs"]),
   *   createClient: (overrides) =>
   *     new ProviderApiClient({ apiKey: "<API_KEY>", baseUrl: overrides?.baseUrl }),
   * });
   * const client: RuntimeClient = registry.createClient("custom-runtime");
   * assert.ok(client instanceof ProviderApiClient);
   * ```
   */
  createClient(kind: string): RuntimeClient;
  createClient(kind: string): RuntimeClient {
    const module = this.#modules.get(kind);
    if (!module) throw new TypeError(`No provider module of kind ${kind} is registered`);
    return module.createClient({ ...this.#overrides });
  }

  /**
   * What each registered module supports, in registration order.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { createProviderModule, ProviderRegistry } from "@automation/runtime/client";
   * const registry = new ProviderRegistry().register(createProviderModule({ apiKey: "<API_KEY>" }));
   * const [info] = registry.list();
   * assert.equal(info.kind, "provider-sdk");
   * assert.equal(info.runtimeOnly, false);
   * assert.equal(info.capabilities.streaming, true);
   * ```
   */
  list(): ProviderModuleInfo[] {
    return [...this.#modules.values()].map((module) => ({
      kind: module.kind,
      runtimeOnly: module.runtimeOnly,
      capabilities: module.capabilities,
    }));
  }

  /**
   * Whether the module of `kind` advertises `capability`; false for an unknown kind.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { createProviderModule, ProviderRegistry } from "@automation/runtime/client";
   * const registry = new ProviderRegistry().register(createProviderModule({ apiKey: "<API_KEY>" }));
   * assert.equal(registry.supports("provider-sdk", "batch"), true);
   * assert.equal(registry.supports("unknown-kind", "runs"), false);
   * ```
   */
  supports(kind: string, capability: RuntimeCapabilityName): boolean {
    return this.#modules.get(kind)?.capabilities[capability] === true;
  }
}
