/**
 * The one capability declaration of the provider clients. Which contract features each client
 * kind supports is written once, in {@linkcode PROVIDER_CAPABILITY_DECLARATION}; every other view
 * derives from it: {@linkcode PROVIDER_RUNTIME_SUPPORT}, each client's `getRuntimeCapabilities()`
 * and what the registry's provider modules advertise.
 *
 * @module
 */
import {
  RUNTIME_CAPABILITY_NAMES,
  type RuntimeCapabilities,
  type RuntimeCapabilityName,
} from "./contract.ts";

/** The kinds of provider module a registry can host. */
export type ProviderModuleKind = "provider-sdk" | "provider-managed-agents" | "runtime-service";

/**
 * Builds a frozen capability map from the names a client supports: every one of the eleven
 * capability names is present, `true` when listed and `false` otherwise. An unknown name is a
 * `TypeError`, so a typo cannot silently advertise nothing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { declareCapabilities } from "@automation/runtime/client";
 * const capabilities = declareCapabilities(["runs", "streaming"]);
 * assert.equal(capabilities.runs, true);
 * assert.equal(capabilities.batch, false);
 * assert.ok(Object.isFrozen(capabilities));
 * assert.throws(() => declareCapabilities(["teleport" as never]), TypeError);
 * ```
 */
export function declareCapabilities(
  supported: readonly RuntimeCapabilityName[],
): RuntimeCapabilities {
  const known = new Set<string>(RUNTIME_CAPABILITY_NAMES);
  for (const name of supported) {
    if (!known.has(name)) throw new TypeError(`Unknown capability name: ${String(name)}`);
  }
  const wanted = new Set<string>(supported);
  const map = {} as Record<RuntimeCapabilityName, boolean>;
  for (const name of RUNTIME_CAPABILITY_NAMES) map[name] = wanted.has(name);
  return Object.freeze(map);
}

/**
 * The capability declaration: for each provider client kind, the contract features it serves.
 *
 * - `provider-sdk` ({@linkcode ProviderApiClient}, stateless messages API): runs, streaming and
 *   message batches.
 * - `provider-managed-agents` (`ProviderManagedAgentClient`, sessions): runs and streaming.
 * - `runtime-service` (the runtime service's run client, in the SDK): runs (start, read,
 *   cancel) and streaming (the service's event stream).
 *
 * Teams, kanban, workspace and the other names are served by neither.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PROVIDER_CAPABILITY_DECLARATION } from "@automation/runtime/client";
 * assert.deepEqual(PROVIDER_CAPABILITY_DECLARATION["provider-sdk"], ["runs", "streaming", "batch"]);
 * ```
 */
export const PROVIDER_CAPABILITY_DECLARATION: Readonly<
  Record<ProviderModuleKind, readonly RuntimeCapabilityName[]>
> = Object.freeze({
  "provider-sdk": Object.freeze(["runs", "streaming", "batch"] as const),
  "provider-managed-agents": Object.freeze(["runs", "streaming"] as const),
  "runtime-service": Object.freeze(["runs", "streaming"] as const),
});

const BY_KIND: Readonly<Record<ProviderModuleKind, RuntimeCapabilities>> = Object.freeze({
  "provider-sdk": declareCapabilities(PROVIDER_CAPABILITY_DECLARATION["provider-sdk"]),
  "provider-managed-agents": declareCapabilities(
    PROVIDER_CAPABILITY_DECLARATION["provider-managed-agents"],
  ),
  "runtime-service": declareCapabilities(PROVIDER_CAPABILITY_DECLARATION["runtime-service"]),
});

/**
 * The frozen capability map of a provider client kind, from
 * {@linkcode PROVIDER_CAPABILITY_DECLARATION}. The same object is returned on every call.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerCapabilities } from "@automation/runtime/client";
 * const capabilities = providerCapabilities("provider-managed-agents");
 * assert.equal(capabilities.streaming, true);
 * assert.equal(capabilities.batch, false);
 * ```
 */
export function providerCapabilities(kind: ProviderModuleKind): RuntimeCapabilities {
  // An own property only: a kind such as "constructor" is unknown, not Object's constructor.
  const capabilities = Object.hasOwn(BY_KIND, kind) ? BY_KIND[kind] : undefined;
  if (!capabilities) throw new TypeError(`Unknown provider module kind: ${String(kind)}`);
  return capabilities;
}

/**
 * What the stateless provider client (`ProviderApiClient`, kind `provider-sdk`) supports: a
 * frozen map from each of the eleven capability names to a boolean. `runs`, `streaming` and
 * `batch` are `true`; the rest are `false`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PROVIDER_RUNTIME_SUPPORT } from "@automation/runtime/client";
 * assert.equal(PROVIDER_RUNTIME_SUPPORT.batch, true);
 * assert.equal(PROVIDER_RUNTIME_SUPPORT.teams, false);
 * ```
 */
export const PROVIDER_RUNTIME_SUPPORT: RuntimeCapabilities = providerCapabilities("provider-sdk");
