/**
 * Starts the real `automation-runtime serve` (`cli/main.ts serve`) as a subprocess for
 * black-box tests: a random loopback port, a throwaway config directory, the bootstrap from the
 * `AUTOMATION_RUNTIME_BOOTSTRAP_*` variables (or loopback auto-init), stderr captured line by
 * line. Always `stop()` it in a `finally`.
 *
 * @module
 */

const ROOT = new URL("../../", import.meta.url);
const ROOT_PATH = decodeURIComponent(ROOT.pathname);
const MAIN = new URL("cli/main.ts", ROOT);

/**
 * The `start` task's flags (see deno.json; `tests/tasks_test.ts` keeps the two equal): dynamic
 * imports load when first reached, and the permissions.
 */
export const SERVE_PERMISSIONS: readonly string[] = [
  "--unstable-lazy-dynamic-imports",
  "--allow-net",
  "--allow-read",
  "--allow-write",
  "--allow-env",
  "--allow-sys=hostname,osRelease",
];

/** The interface version the tests speak. */
export const TEST_INTERFACE_VERSION = "2026-07-23";

/** A bootstrap credential for a test server, in plaintext. */
export interface TestBootstrap {
  /** Bootstrap bearer. */
  token: string;
  /** Bootstrap principal id. */
  principalId: string;
  /** Capabilities, comma-separated when passed on. */
  capabilities: string[];
  /** RFC 3339 expiry. */
  expiresAt: string;
}

/** Options of {@linkcode startServer}. */
export interface StartServerOptions {
  /**
   * Home directory to use (its `.config` holds the secret file and `store.kv`). Given: kept on
   * `stop()`, so a second server can start on the same state. Omitted: a temp directory that
   * `stop()` removes.
   */
  home?: string;
  /** Bootstrap to pass in the environment (default: a fresh one, 30 days). */
  bootstrap?: Partial<TestBootstrap>;
  /** Pass no bootstrap variables, so `serve` auto-inits (or reads the secret file). */
  autoInit?: boolean;
  /** Extra arguments after `serve` (`--port 0` is always added unless `--port` is given). */
  args?: string[];
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** How long to wait for the server to answer `/healthz`, in ms (default 30000). */
  timeoutMs?: number;
}

/** A running test server. */
export interface TestServer {
  /** Base URL, such as `http://127.0.0.1:41234`. */
  readonly url: string;
  /** The bootstrap bearer (from the environment, or printed by auto-init). */
  readonly bearer: string;
  /** The bootstrap credential in effect (`autoInit`: only `token` is known). */
  readonly bootstrap: TestBootstrap;
  /** Home directory of the server. */
  readonly home: string;
  /** Path of the secret file. */
  readonly secretFilePath: string;
  /** Stderr lines so far. */
  logs(): string[];
  /** Stdout lines so far. */
  stdout(): string[];
  /** Sends SIGTERM, waits for the exit, cleans up; resolves with the exit code. */
  stop(): Promise<number>;
  /**
   * Sends `signal` (default `SIGKILL`, as `kill -9`: a crash) and returns at once; `stop()` then
   * only cleans up.
   */
  kill(signal?: Deno.Signal): void;
  /** Same as `stop()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

function base64url(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * Makes a fresh bootstrap credential: `art_` bearer, random principal, every capability,
 * 30 days.
 *
 * @example
 * ```ts
 * import { createTestBootstrap } from "./server.ts";
 * console.log(createTestBootstrap().token.startsWith("art_")); // true
 * ```
 */
export function createTestBootstrap(overrides: Partial<TestBootstrap> = {}): TestBootstrap {
  return {
    token: overrides.token ?? `art_${base64url(crypto.getRandomValues(new Uint8Array(32)))}`,
    principalId: overrides.principalId ?? crypto.randomUUID(),
    capabilities: overrides.capabilities ?? ["session:read", "session:write", "authority:admin"],
    expiresAt: overrides.expiresAt ?? new Date(Date.now() + 30 * 86_400_000).toISOString(),
  };
}

/**
 * The shared request headers for a bearer: interface version, a fresh correlation id and a
 * deadline 60 s ahead. `overrides` replace or (with `null`) drop headers.
 *
 * @example
 * ```ts
 * import { sharedHeaders } from "./server.ts";
 * const headers = sharedHeaders("art_x", { "x-deadline": null });
 * console.log(headers.has("x-deadline")); // false
 * ```
 */
export function sharedHeaders(
  bearer: string | null,
  overrides: Record<string, string | null> = {},
): Headers {
  const headers = new Headers({
    "x-interface-version": TEST_INTERFACE_VERSION,
    "x-correlation-id": crypto.randomUUID(),
    "x-deadline": new Date(Date.now() + 60_000).toISOString(),
  });
  if (bearer !== null) headers.set("authorization", `Bearer ${bearer}`);
  for (const [name, value] of Object.entries(overrides)) {
    if (value === null) headers.delete(name);
    else headers.set(name, value);
  }
  return headers;
}

function denoDir(): string {
  const explicit = Deno.env.get("DENO_DIR");
  if (explicit) return explicit;
  const home = Deno.env.get("HOME") ?? "";
  if (Deno.build.os === "darwin") return `${home}/Library/Caches/deno`;
  if (Deno.build.os === "windows") return `${Deno.env.get("LOCALAPPDATA")}\\deno`;
  return `${Deno.env.get("XDG_CACHE_HOME") || `${home}/.cache`}/deno`;
}

async function collectLines(
  stream: ReadableStream<Uint8Array>,
  lines: string[],
  onLine: () => void,
): Promise<void> {
  let rest = "";
  for await (const text of stream.pipeThrough(new TextDecoderStream())) {
    rest += text;
    let newline: number;
    while ((newline = rest.indexOf("\n")) !== -1) {
      lines.push(rest.slice(0, newline));
      rest = rest.slice(newline + 1);
      onLine();
    }
  }
  if (rest !== "") {
    lines.push(rest);
    onLine();
  }
}

function listeningUrl(lines: readonly string[]): string | null {
  for (const line of lines) {
    if (!line.startsWith("{")) continue;
    try {
      const entry = JSON.parse(line);
      if (entry.msg === "listening" && typeof entry.url === "string") return entry.url;
    } catch {
      // Not a log line.
    }
  }
  return null;
}

/**
 * Starts `automation-runtime serve` and waits until `/healthz` answers.
 *
 * @example
 * ```ts ignore
 * import { startServer } from "./server.ts";
 * const server = await startServer();
 * try {
 *   const response = await fetch(`${server.url}/healthz`);
 *   console.log(response.status, await response.json());
 * } finally {
 *   await server.stop();
 * }
 * ```
 */
export async function startServer(options: StartServerOptions = {}): Promise<TestServer> {
  const ownsHome = options.home === undefined;
  const home = options.home ?? await Deno.makeTempDir({ prefix: "automation-runtime-test-" });
  const configHome = `${home}/.config`;
  const secretFilePath = `${configHome}/automation-runtime/bootstrap.env`;
  const bootstrap = options.autoInit
    ? { token: "", principalId: "", capabilities: [], expiresAt: "" }
    : createTestBootstrap(options.bootstrap);
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "",
    HOME: home,
    XDG_CONFIG_HOME: configHome,
    DENO_DIR: denoDir(),
    NO_COLOR: "1",
  };
  if (!options.autoInit) {
    env.AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN = bootstrap.token;
    env.AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL = bootstrap.principalId;
    env.AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES = bootstrap.capabilities.join(",");
    env.AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT = bootstrap.expiresAt;
  }
  Object.assign(env, options.env);
  const args = options.args ?? [];
  const portArgs = args.some((arg) => arg === "--port" || arg.startsWith("--port="))
    ? []
    : ["--port", "0"];

  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...SERVE_PERMISSIONS, MAIN.href, "serve", ...portArgs, ...args],
    cwd: ROOT_PATH,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();

  const stderrLines: string[] = [];
  const stdoutLines: string[] = [];
  let wake: () => void = () => {};
  const notify = () => wake();
  const readers = Promise.all([
    collectLines(child.stderr, stderrLines, notify),
    collectLines(child.stdout, stdoutLines, notify),
  ]);
  let exitCode: number | null = null;
  const exited = child.status.then((status) => {
    exitCode = status.code;
    notify();
    return status.code;
  });

  let stopped: Promise<number> | null = null;
  function stop(): Promise<number> {
    stopped ??= (async () => {
      if (exitCode === null) {
        try {
          child.kill("SIGTERM");
        } catch {
          // Already gone.
        }
        const killer = setTimeout(() => {
          try {
            child.kill("SIGKILL");
          } catch {
            // Already gone.
          }
        }, 10_000);
        try {
          await exited;
        } finally {
          clearTimeout(killer);
        }
      }
      await readers;
      if (ownsHome) await Deno.remove(home, { recursive: true }).catch(() => {});
      return exitCode ?? -1;
    })();
    return stopped;
  }

  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  try {
    let url: string | null = null;
    while (url === null) {
      url = listeningUrl(stderrLines);
      if (url !== null) break;
      if (exitCode !== null) {
        throw new Error(
          `serve exited with ${exitCode} before listening:\n${stderrLines.join("\n")}`,
        );
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`serve did not start:\n${stderrLines.join("\n")}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(remaining, 100));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    wake = () => {};
    const health = await fetch(`${url}/healthz`);
    await health.body?.cancel();
    if (health.status !== 200) throw new Error(`/healthz answered ${health.status}`);
    const bearer = options.autoInit ? (stdoutLines[0] ?? "").trim() : bootstrap.token;
    if (options.autoInit) bootstrap.token = bearer;
    const server: TestServer = {
      url,
      bearer,
      bootstrap,
      home,
      secretFilePath,
      logs: () => [...stderrLines],
      stdout: () => [...stdoutLines],
      stop,
      kill(signal: Deno.Signal = "SIGKILL") {
        try {
          child.kill(signal);
        } catch {
          // Already gone.
        }
      },
      async [Symbol.asyncDispose]() {
        await stop();
      },
    };
    return server;
  } catch (error) {
    wake = () => {};
    await stop();
    throw error;
  }
}
