/**
 * Launcher of the real `serve` for the reliability suite. Unlike `tests/support/server.ts` it
 * exposes the process (pid, `kill("SIGKILL")`, RSS and open file descriptors) and keeps only the
 * last lines of stderr, so a million requests do not pile their log lines up in the test
 * process. The store can be a Deno KV file or a PostgreSQL URL, and survives restarts.
 *
 * @module
 */
import {
  createTestBootstrap,
  SERVE_PERMISSIONS,
  sharedHeaders,
  type TestBootstrap,
} from "../support/server.ts";

const ROOT = new URL("../../", import.meta.url);
const MAIN = new URL("cli/main.ts", ROOT);
const KEEP_LINES = 200;

/** Options of {@linkcode launch}. */
export interface LaunchOptions {
  /** Bootstrap credential (default: a fresh one). Pass the same one to restart on old state. */
  bootstrap?: TestBootstrap;
  /** `--store`: a KV file path or a `postgres://` URL (passed in the environment, not argv). */
  store?: string;
  /** Home directory (default: a temp directory removed by `stop()`/`kill()` cleanup). */
  home?: string;
  /** Extra `serve` arguments. */
  args?: string[];
  /** V8 flags for the server process, such as a heap cap (`--max-old-space-size=256`). */
  v8Flags?: string[];
  /** Extra environment. */
  env?: Record<string, string>;
}

/** A running server process. */
export interface Launched {
  /** Base URL. */
  readonly url: string;
  /** Port. */
  readonly port: number;
  /** Process id. */
  readonly pid: number;
  /** The bootstrap credential it runs with. */
  readonly bootstrap: TestBootstrap;
  /** The bootstrap bearer. */
  readonly bearer: string;
  /** Resolves with the exit code once the process is gone. */
  readonly exited: Promise<number>;
  /** The last stderr lines. */
  logTail(): string[];
  /** Stderr lines seen so far that log a 5xx response. */
  serverErrors(): number;
  /** Sends a signal without waiting. */
  kill(signal: Deno.Signal): void;
  /** SIGTERM, waits for the exit (SIGKILL after 10 s); resolves with the exit code. */
  stop(): Promise<number>;
}

/** Deno's cache directory of this process, so the child finds the cached npm packages. */
function denoDir(): string {
  const explicit = Deno.env.get("DENO_DIR");
  if (explicit) return explicit;
  const cache = Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME") ?? ""}/.cache`;
  return `${cache}/deno`;
}

/**
 * Resident set size of a process in bytes (Linux `/proc`).
 *
 * @example
 * ```ts
 * import { rssBytes } from "./_serve.ts";
 * console.log(rssBytes(Deno.pid) > 0); // true
 * ```
 */
export function rssBytes(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
  if (!match) throw new Error(`No VmRSS for process ${pid}`);
  return Number(match[1]) * 1024;
}

/**
 * Number of open file descriptors of a process (Linux `/proc`).
 *
 * @example
 * ```ts
 * import { openFds } from "./_serve.ts";
 * console.log(openFds(Deno.pid) > 2); // true
 * ```
 */
export function openFds(pid: number): number {
  let count = 0;
  for (const _ of Deno.readDirSync(`/proc/${pid}/fd`)) count++;
  return count;
}

/**
 * Starts `serve` on a free port and waits for its `listening` line and a 200 on `/healthz`.
 *
 * @example
 * ```ts ignore
 * import { launch } from "./_serve.ts";
 * const server = await launch();
 * try {
 *   console.log(server.url);
 * } finally {
 *   await server.stop();
 * }
 * ```
 */
export async function launch(options: LaunchOptions = {}): Promise<Launched> {
  const ownsHome = options.home === undefined;
  const home = options.home ?? await Deno.makeTempDir({ prefix: "automation-runtime-rel-" });
  const bootstrap = options.bootstrap ?? createTestBootstrap();
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "",
    HOME: home,
    XDG_CONFIG_HOME: `${home}/.config`,
    NO_COLOR: "1",
    DENO_DIR: denoDir(),
    AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: bootstrap.token,
    AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: bootstrap.principalId,
    AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: bootstrap.capabilities.join(","),
    AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: bootstrap.expiresAt,
    ...options.env,
  };
  if (options.store !== undefined) env.AUTOMATION_RUNTIME_STORE = options.store;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...SERVE_PERMISSIONS,
      ...(options.v8Flags?.length ? [`--v8-flags=${options.v8Flags.join(",")}`] : []),
      MAIN.href,
      "serve",
      "--port",
      "0",
      ...(options.args ?? []),
    ],
    cwd: decodeURIComponent(ROOT.pathname),
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();

  const tail: string[] = [];
  let errors = 0;
  const listening = Promise.withResolvers<string>();
  const reading = (async () => {
    let rest = "";
    for await (const text of child.stderr.pipeThrough(new TextDecoderStream())) {
      rest += text;
      let newline: number;
      while ((newline = rest.indexOf("\n")) !== -1) {
        const line = rest.slice(0, newline);
        rest = rest.slice(newline + 1);
        tail.push(line);
        if (tail.length > KEEP_LINES) tail.shift();
        if (/"status":5\d\d/.test(line)) errors++;
        if (line.includes('"msg":"listening"')) {
          try {
            listening.resolve(JSON.parse(line).url);
          } catch {
            // Not the line we want.
          }
        }
      }
    }
  })();
  let exitCode: number | null = null;
  const exited = child.status.then(async (status) => {
    exitCode = status.code;
    await reading;
    listening.reject(new Error(`serve exited with ${status.code}:\n${tail.join("\n")}`));
    if (ownsHome) await Deno.remove(home, { recursive: true }).catch(() => {});
    return status.code;
  });
  const kill = (signal: Deno.Signal) => {
    if (exitCode !== null) return;
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
  };
  const stop = async () => {
    kill("SIGTERM");
    const timer = setTimeout(() => kill("SIGKILL"), 10_000);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  };
  const timer = setTimeout(
    () => listening.reject(new Error("serve did not start in 30 s")),
    30_000,
  );
  try {
    const url = await listening.promise;
    const health = await fetch(`${url}/healthz`);
    await health.body?.cancel();
    if (health.status !== 200) throw new Error(`/healthz answered ${health.status}`);
    return {
      url,
      port: Number(new URL(url).port),
      pid: child.pid,
      bootstrap,
      bearer: bootstrap.token,
      exited,
      logTail: () => [...tail],
      serverErrors: () => errors,
      kill,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** A principal issued through the API, with its one-time bearer. */
export interface IssuedPrincipal {
  /** Its id. */
  principalId: string;
  /** Its bearer. */
  bearer: string;
}

/**
 * Issues a principal with `POST /v1/principals` as the bootstrap principal (one day of life).
 *
 * @example
 * ```ts ignore
 * import { issuePrincipal, launch } from "./_serve.ts";
 * const server = await launch();
 * const reader = await issuePrincipal(server, ["session:read"]);
 * ```
 */
export async function issuePrincipal(
  server: { url: string; bearer: string },
  capabilities: string[] = ["session:read"],
): Promise<IssuedPrincipal> {
  const principalId = crypto.randomUUID();
  const response = await fetch(`${server.url}/v1/principals`, {
    method: "POST",
    headers: sharedHeaders(server.bearer, {
      "idempotency-key": crypto.randomUUID(),
      "content-type": "application/json",
    }),
    body: JSON.stringify({
      principalId,
      capabilities,
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    }),
  });
  const body = await response.json();
  if (response.status !== 201) {
    throw new Error(`Issuance answered ${response.status}: ${JSON.stringify(body)}`);
  }
  return { principalId, bearer: body.bearer };
}
