/**
 * The runs gateway as the gateway benchmarks run it, in process: the fake provider with one agent
 * and one environment, a bootstrap with every capability, a Deno KV store in a temp file, a
 * silent logger, and `Deno.serve` on loopback.
 *
 * @module
 */
import { ProviderManagedAgentClient } from "../client/mod.ts";
import { deriveBootstrapCredential } from "../server/bootstrap/credential.ts";
import { createRuntimeServer, type RuntimeServerOptions } from "../server/server.ts";
import { openKvStore } from "../server/store/kv/mod.ts";
import { FakeProvider } from "../tests/support/fake_provider.ts";

/** A running gateway and what a benchmark needs of it. */
export interface BenchGateway {
  /** The fake provider (script its turns through `managedAgents`). */
  fake: FakeProvider;
  /** A client of the fake provider with the gateway's key. */
  provider: ProviderManagedAgentClient;
  /** The agent and environment runs start with. */
  agentId: string;
  environmentId: string;
  /** The gateway's base URL. */
  url: string;
  /** The bootstrap bearer. */
  token: string;
  /** Stops the server and the fake, and deletes the store. */
  close(): Promise<void>;
}

/**
 * Starts the gateway; `server` adds options of the runtime server (limits, for example).
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
  const key = `sk-bench-${crypto.randomUUID()}`;
  const fake = await FakeProvider.start({ apiKey: key });
  const provider = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey: key });
  const agentId = (await provider.createAgent({ name: "bench", model: "model-small" }))
    .id as string;
  const environmentId = (await provider.createEnvironment({ name: "bench" })).id as string;
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
      apiKey: key,
      baseUrl: fake.baseUrl,
      defaultAgentId: agentId,
      defaultEnvironmentId: environmentId,
    },
    ...options.server,
  });
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, runtime.handler);
  return {
    fake,
    provider,
    agentId,
    environmentId,
    url: `http://127.0.0.1:${http.addr.port}`,
    token,
    async close() {
      await http.shutdown();
      await runtime.close();
      await store.close();
      await fake.close();
      await Deno.remove(directory, { recursive: true });
    },
  };
}
