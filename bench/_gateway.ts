/**
 * The runs gateway as the gateway benchmarks run it: the fake provider with one agent and one
 * environment ({@linkcode startBenchProvider}), and the runtime in front of it
 * ({@linkcode serveBenchGateway}: a bootstrap with every capability, a Deno KV store in a temp
 * file, a silent logger, and `Deno.serve` on loopback). {@linkcode startBenchGateway} starts both
 * in this process; a benchmark that measures the runtime's process alone runs the provider in
 * another process and serves the gateway on it.
 *
 * @module
 */
import { ProviderManagedAgentClient } from "../client/mod.ts";
import { deriveBootstrapCredential } from "../server/bootstrap/credential.ts";
import { createRuntimeServer, type RuntimeServerOptions } from "../server/server.ts";
import { openKvStore } from "../server/store/kv/mod.ts";
import { FakeProvider } from "../tests/support/fake_provider.ts";

/** Where the gateway finds its provider, and the agent and environment runs start with. */
export interface BenchProviderAddress {
  /** The provider's base URL. */
  baseUrl: string;
  /** The provider key. */
  apiKey: string;
  /** The agent runs start with. */
  agentId: string;
  /** The environment runs start with. */
  environmentId: string;
}

/** The fake provider of a benchmark, with its agent and environment. */
export interface BenchProvider extends BenchProviderAddress {
  /** The fake provider (script its turns through `managedAgents`). */
  fake: FakeProvider;
  /** A client of the fake provider with the gateway's key. */
  provider: ProviderManagedAgentClient;
  /** Stops the fake. */
  close(): Promise<void>;
}

/** A gateway served on a provider: its URL and bearer. */
export interface BenchServedGateway {
  /** The gateway's base URL. */
  url: string;
  /** The bootstrap bearer. */
  token: string;
  /** Stops the server and deletes the store (the provider stays). */
  close(): Promise<void>;
}

/** A running gateway with its own fake provider, and what a benchmark needs of them. */
export interface BenchGateway extends BenchServedGateway, Omit<BenchProvider, "close"> {
  /** Stops the server and the fake, and deletes the store. */
  close(): Promise<void>;
}

/**
 * Starts the fake provider with one agent and one environment.
 *
 * @example
 * ```ts ignore
 * import { startBenchProvider } from "./_gateway.ts";
 * const provider = await startBenchProvider();
 * await provider.close();
 * ```
 */
export async function startBenchProvider(): Promise<BenchProvider> {
  const apiKey = `sk-bench-${crypto.randomUUID()}`;
  const fake = await FakeProvider.start({ apiKey });
  const provider = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey });
  const agentId = (await provider.createAgent({ name: "bench", model: "model-small" }))
    .id as string;
  const environmentId = (await provider.createEnvironment({ name: "bench" })).id as string;
  return {
    fake,
    provider,
    baseUrl: fake.baseUrl,
    apiKey,
    agentId,
    environmentId,
    close: () => fake.close(),
  };
}

/**
 * Serves the gateway on `provider`; `server` adds options of the runtime server (limits, for
 * example).
 *
 * @example
 * ```ts ignore
 * import { serveBenchGateway, startBenchProvider } from "./_gateway.ts";
 * const provider = await startBenchProvider();
 * const gateway = await serveBenchGateway({ prefix: "runs-bench-", provider });
 * await gateway.close();
 * await provider.close();
 * ```
 */
export async function serveBenchGateway(options: {
  prefix: string;
  provider: BenchProviderAddress;
  /** Folder for the store's temp directory (default: the system's temp folder). */
  dir?: string;
  server?: Partial<RuntimeServerOptions>;
}): Promise<BenchServedGateway> {
  const { provider } = options;
  const token = `art_${crypto.randomUUID().replaceAll("-", "")}${"B".repeat(11)}`;
  const bootstrap = deriveBootstrapCredential({
    token,
    principalId: crypto.randomUUID(),
    capabilities: ["session:read", "session:write", "session:approve", "authority:admin"],
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    source: "environment",
  });
  const directory = await Deno.makeTempDir({ dir: options.dir, prefix: options.prefix });
  const store = await openKvStore({
    path: `${directory}/store.kv`,
    namespace: bootstrap.namespace,
  });
  const runtime = createRuntimeServer({
    bootstrap,
    store,
    logger: { request() {}, info() {}, error() {}, flush() {} },
    provider: {
      apiKey: provider.apiKey,
      baseUrl: provider.baseUrl,
      defaultAgentId: provider.agentId,
      defaultEnvironmentId: provider.environmentId,
    },
    ...options.server,
  });
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, runtime.handler);
  return {
    url: `http://127.0.0.1:${http.addr.port}`,
    token,
    async close() {
      await http.shutdown();
      await runtime.close();
      await store.close();
      await Deno.remove(directory, { recursive: true });
    },
  };
}

/**
 * Starts the fake provider and the gateway on it, in this process; `server` adds options of the
 * runtime server (limits, for example).
 *
 * @example
 * ```ts ignore
 * import { startBenchGateway } from "./_gateway.ts";
 * const gateway = await startBenchGateway({ prefix: "runs-bench-" });
 * await gateway.close();
 * ```
 */
export async function startBenchGateway(options: {
  prefix: string;
  /** Folder for the store's temp directory (default: the system's temp folder). */
  dir?: string;
  server?: Partial<RuntimeServerOptions>;
}): Promise<BenchGateway> {
  const provider = await startBenchProvider();
  const gateway = await serveBenchGateway({ ...options, provider });
  return {
    ...provider,
    ...gateway,
    async close() {
      await gateway.close();
      await provider.close();
    },
  };
}
