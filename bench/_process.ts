/**
 * Starting and stopping the servers the benchmarks measure: the peers in `bench/peers/` and the
 * runtime's own `serve`, each a child process pinned to the server core, bound to 127.0.0.1 on
 * a free port.
 *
 * @module
 */
import { pinning } from "./_wrk.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/**
 * The flags of `deno task start` (`tests/tasks_test.ts` keeps the two equal): lazy dynamic
 * imports and the permissions it grants the service.
 */
export const SERVE_PERMISSIONS: readonly string[] = [
  "--unstable-lazy-dynamic-imports",
  "--allow-net",
  "--allow-read",
  "--allow-write",
  "--allow-env",
  "--allow-sys=hostname,osRelease",
];

/**
 * Deno's cache directory of this process; children whose `HOME` changes still find the cached
 * npm packages through it.
 *
 * @example
 * ```ts
 * import { denoDir } from "./_process.ts";
 * console.log(denoDir().endsWith("deno")); // true unless DENO_DIR says otherwise
 * ```
 */
export function denoDir(): string {
  const explicit = Deno.env.get("DENO_DIR");
  if (explicit) return explicit;
  const cache = Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME") ?? ""}/.cache`;
  return `${cache}/deno`;
}

/**
 * A free TCP port on 127.0.0.1.
 *
 * @example
 * ```ts
 * import { freePort } from "./_process.ts";
 * console.log(freePort() > 0); // true
 * ```
 */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/**
 * A bootstrap credential for a benchmark server, in the form `init` generates: `art_` and
 * base64url of 32 random bytes, a random principal with every capability, 30 days of life.
 *
 * @example
 * ```ts
 * import { benchBootstrap } from "./_process.ts";
 * console.log(benchBootstrap().AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN.startsWith("art_")); // true
 * ```
 */
export function benchBootstrap(): Record<string, string> {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const token = "art_" +
    btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(
      /=+$/,
      "",
    );
  return {
    AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: token,
    AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: crypto.randomUUID(),
    AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: "session:read,session:write,authority:admin",
    AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: new Date(Date.now() + 30 * 86_400_000).toISOString()
      .replace(/\.\d{3}Z$/, "Z"),
  };
}

/** What to start. */
export interface ServerSpec {
  /** Name in reports. */
  name: string;
  /** Script and arguments after `deno run`, with `{port}` replaced by the chosen port. */
  args: string[];
  /** Extra environment variables. */
  env?: Record<string, string>;
}

/**
 * The spec of our service as every benchmark runs it: the real `cli/main.ts serve` with the
 * `start` task's permissions, on loopback, bootstrap from the environment, KV store under `home`.
 *
 * @example
 * ```ts ignore
 * import { benchBootstrap, ourServeSpec } from "./_process.ts";
 * const spec = ourServeSpec({ home: "/tmp/bench-home", bootstrap: benchBootstrap() });
 * ```
 */
export function ourServeSpec(
  options: { home: string; bootstrap: Record<string, string> },
): ServerSpec {
  const { home, bootstrap } = options;
  return {
    name: "ours",
    args: [
      ...SERVE_PERMISSIONS,
      "cli/main.ts",
      "serve",
      "--hostname",
      "127.0.0.1",
      "--port",
      "{port}",
    ],
    env: { ...bootstrap, HOME: home, XDG_CONFIG_HOME: home },
  };
}

/**
 * The spec of a Deno KV peer (`bench/peers/kv_commit.ts` or `kv_issue_commit.ts`) with its store
 * at `path`.
 *
 * @example
 * ```ts
 * import { kvPeerSpec } from "./_process.ts";
 * const spec = kvPeerSpec({ name: "kv", script: "kv_commit.ts", path: "/tmp/peer.kv" });
 * ```
 */
export function kvPeerSpec(options: { name: string; script: string; path: string }): ServerSpec {
  return {
    name: options.name,
    args: [
      "--allow-net",
      "--allow-read",
      "--allow-write",
      `bench/peers/${options.script}`,
      "{port}",
      options.path,
    ],
  };
}

/** A running benchmark server. */
export interface BenchServer {
  /** Name in reports. */
  readonly name: string;
  /** Base URL, such as `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Process id. */
  readonly pid: number;
  /** Stops it (SIGTERM, then SIGKILL after two seconds). */
  stop(): Promise<void>;
}

/**
 * Spawns `deno run` for a spec, pinned to the server core; stdout and stderr are discarded (the
 * service writes a log line per request, which costs it as in production).
 *
 * @example
 * ```ts ignore
 * import { spawnServer } from "./_process.ts";
 * const { child, port } = spawnServer({ name: "bare", args: ["bench/peers/bare.ts", "{port}"] });
 * ```
 */
export function spawnServer(spec: ServerSpec): { child: Deno.ChildProcess; port: number } {
  const port = freePort();
  const argv = [
    ...pinning().server,
    Deno.execPath(),
    "run",
    ...spec.args.map((arg) => arg.replaceAll("{port}", String(port))),
  ];
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    cwd: ROOT,
    env: { NO_COLOR: "1", DENO_DIR: denoDir(), ...spec.env },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  return { child, port };
}

/**
 * Polls `url` until it answers 200; resolves with the milliseconds since `since`
 * (a `performance.now()` value). Rejects when the process exits or `timeoutMs` passes.
 *
 * @example
 * ```ts ignore
 * import { waitFor200 } from "./_process.ts";
 * const ms = await waitFor200("http://127.0.0.1:8000/healthz", { since: performance.now() });
 * ```
 */
export async function waitFor200(
  url: string,
  options: { since: number; timeoutMs?: number; exited?: Promise<unknown> },
): Promise<number> {
  let gone = false;
  options.exited?.then(() => gone = true);
  const limit = options.since + (options.timeoutMs ?? 30_000);
  while (true) {
    try {
      const response = await fetch(url);
      await response.body?.cancel();
      if (response.status === 200) return performance.now() - options.since;
    } catch {
      // Not listening yet.
    }
    if (gone) throw new Error(`The server exited before ${url} answered 200`);
    if (performance.now() > limit) throw new Error(`${url} did not answer 200 in time`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/**
 * Starts a server and waits until `/healthz` answers 200.
 *
 * @example
 * ```ts ignore
 * import { startServer } from "./_process.ts";
 * const server = await startServer({ name: "bare", args: ["bench/peers/bare.ts", "{port}"] });
 * await server.stop();
 * ```
 */
export async function startServer(spec: ServerSpec): Promise<BenchServer> {
  const { child, port } = spawnServer(spec);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor200(`${url}/healthz`, { since: performance.now(), exited: child.status });
  } catch (error) {
    await stopChild(child);
    throw new Error(`${spec.name} did not start`, { cause: error });
  }
  return { name: spec.name, url, pid: child.pid, stop: () => stopChild(child) };
}

/**
 * Stops a child: SIGTERM, then SIGKILL when it has not exited after `graceMs`.
 *
 * @example
 * ```ts ignore
 * import { spawnServer, stopChild } from "./_process.ts";
 * await stopChild(spawnServer({ name: "bare", args: ["bench/peers/bare.ts", "{port}"] }).child);
 * ```
 */
export async function stopChild(child: Deno.ChildProcess, graceMs = 2000): Promise<void> {
  try {
    child.kill("SIGTERM");
  } catch {
    // Already exited.
  }
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already exited.
    }
  }, graceMs);
  try {
    await child.status;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Pins this process (all its threads) to the client core so it never competes with the server
 * it measures. Does nothing where nothing is pinned.
 *
 * @example
 * ```ts ignore
 * import { pinSelf } from "./_process.ts";
 * await pinSelf();
 * ```
 */
export async function pinSelf(): Promise<void> {
  const { client, pinned } = pinning();
  if (!pinned) return;
  await new Deno.Command("taskset", {
    args: ["-a", "-p", "-c", client[2], String(Deno.pid)],
    stdout: "null",
    stderr: "null",
  }).output();
}
