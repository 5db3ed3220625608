/**
 * `automation-runtime demo`: the runs gateway offline. Serves the runtime on loopback with the
 * provider simulator (`@automation/runtime/testing`) behind it, both in this process, with its
 * state (a Deno KV store) in a temporary folder. Nothing of the user's is read or written: no
 * secret file, no provider file, no `AUTOMATION_RUNTIME_*` settings, no store; the demo's
 * bootstrap is generated in memory and lives as long as the process.
 *
 * Once it listens it prints, on stdout, the four `export NAME=value` lines a shell sources to
 * talk to it (the admin bearer among them, shown this once), and guidance on stderr. It serves
 * until SIGINT or SIGTERM, then shuts down like `serve` and removes its temporary folder.
 *
 * @module
 */
import { claimAuthority } from "../server/authority_lease.ts";
import { bootstrapClaim, deriveBootstrapCredential } from "../server/bootstrap/credential.ts";
import { generateBootstrapValues } from "../server/bootstrap/variables.ts";
import { createJsonLogger, type RuntimeLogger } from "../server/log.ts";
import type { ProviderSettings } from "../server/runs/provider.ts";
import { type RunningRuntime, serveRuntime } from "../server/serve.ts";
import { resolveSettings, SERVE_SETTINGS, serverOptionsOf } from "../server/settings.ts";
import { openKvStore } from "../server/store/kv/mod.ts";
import type { Store } from "../server/store/types.ts";
import { addDemoAgent, ProviderSimulator } from "../testing/mod.ts";
import { parseArgs, parseIntegerFlag } from "./_args.ts";
import { argSpecOf, commandHelp } from "./_help.ts";
import { serveUntilSignal, waitForSignal } from "./_lifetime.ts";
import { printErr, printOut, PROGRAM, reportError } from "./_output.ts";

/** The variables `demo` prints, in order. */
export const DEMO_VARIABLES: readonly string[] = Object.freeze([
  "AUTOMATION_RUNTIME_URL",
  "AUTOMATION_RUNTIME_TOKEN",
  "AUTOMATION_RUNTIME_DEMO_AGENT_ID",
  "AUTOMATION_RUNTIME_DEMO_ENVIRONMENT_ID",
]);

/**
 * Runs `demo` with its arguments (without the subcommand) and resolves with the exit code: 0
 * after a clean stop, 1 when it cannot start, 2 on a usage error.
 *
 * @example
 * ```ts ignore
 * import { demoCommand } from "./demo.ts";
 * Deno.exit(await demoCommand(["--port", "0"]));
 * ```
 */
export async function demoCommand(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("demo"));
  if (parsed.help) {
    printOut(commandHelp("demo"));
    return 0;
  }
  const portText = parsed.strings.get("port");
  const port = portText === undefined
    ? 0
    : parseIntegerFlag(portText, { command: "demo", flag: "port", min: 0, max: 65535 });
  const logger = parsed.booleans.has("log") ? createJsonLogger() : errorsOnly(createJsonLogger());

  const signal = waitForSignal();
  const dir = await Deno.makeTempDir({ prefix: "automation-runtime-demo-" });
  let simulator: ProviderSimulator | undefined;
  let store: Store | undefined;
  let outcome: "stopped" | "forced" | "timeout" | undefined;
  try {
    let running: RunningRuntime;
    try {
      // A random key: the simulator's port is reachable by every local user.
      const apiKey = `sk-demo-${crypto.randomUUID().replaceAll("-", "")}`;
      simulator = await ProviderSimulator.start({ apiKey });
      const demo = addDemoAgent(simulator.managedAgents!);
      // Text previews in a few words at a time, as a model streams them.
      simulator.managedAgents!.deltaChunk = 24;
      // The default lifetime, so the tours may issue principals for days; the bearer dies with the
      // process anyway (its store is removed on exit).
      const values = generateBootstrapValues();
      const bootstrap = deriveBootstrapCredential({ ...values, source: "auto-init" });
      store = await openKvStore({ path: `${dir}/store.kv`, namespace: bootstrap.namespace });
      await claimAuthority(store, Date.now(), bootstrapClaim(bootstrap));
      const provider: ProviderSettings = {
        apiKey,
        baseUrl: simulator.baseUrl,
        defaultAgentId: demo.agentId,
        defaultEnvironmentId: demo.environmentId,
      };
      // The defaults of every setting: none is read from the environment.
      const defaults = resolveSettings(SERVE_SETTINGS, { env: {} });
      running = await serveRuntime({
        ...serverOptionsOf(defaults),
        bootstrap,
        store,
        hostname: "127.0.0.1",
        port,
        provider,
        logger,
      });
      await protectStdoutFile();
      printOut(exportLines([running.url, values.token, demo.agentId, demo.environmentId]));
    } catch (error) {
      signal.dispose();
      const reason = error instanceof Deno.errors.AddrInUse
        ? `Address 127.0.0.1:${port} is already in use`
        : `Cannot start the demo: ${(error as Error).message}`;
      return reportError(new Error(reason));
    }
    printErr(
      `${PROGRAM} demo: ready at ${running.url} (runs go to a provider simulator; state in ` +
        `${dir}, removed on exit). Source the export lines printed on standard output, then ` +
        `try: ${PROGRAM} run start --message "Triage the open issues". Stop with Ctrl-C or ` +
        `SIGTERM (kill %1 for a background job).`,
    );
    outcome = await serveUntilSignal(running, signal, logger);
    return 0;
  } finally {
    // After a forced stop requests may still use the store: the process is about to end anyway.
    if (outcome === undefined || outcome === "stopped") await store?.close();
    await simulator?.close();
    logger.flush();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** The `export` lines of the values, in the order of {@linkcode DEMO_VARIABLES}. */
function exportLines(values: string[]): string {
  return DEMO_VARIABLES.map((name, i) => {
    const value = values[i];
    // Generated values (URL, bearer, ids) need no quoting; refuse rather than emit a line a
    // shell would read differently.
    if (!/^[A-Za-z0-9_:/.\-]+$/.test(value)) throw new Error(`${name} cannot be printed`);
    return `export ${name}=${value}`;
  }).join("\n");
}

/**
 * When stdout is a regular file (`demo > demo.env`), makes it readable by its owner only before
 * the bearer is written to it. Deno's own file API does not reach an inherited descriptor, so
 * this goes through `node:fs` (loaded only here). Best effort: on Windows, or where the file is
 * not ours to change, the shell's umask decides.
 */
async function protectStdoutFile(): Promise<void> {
  if (Deno.build.os === "windows") return;
  try {
    const { fchmodSync, fstatSync } = await import("node:fs");
    if (fstatSync(1).isFile()) fchmodSync(1, 0o600);
  } catch {
    // Not a file we may change: the shell's umask decides.
  }
}

/** A logger that writes only error lines: a demo in a terminal stays quiet. */
function errorsOnly(logger: RuntimeLogger): RuntimeLogger {
  return {
    request() {},
    info() {},
    error: (message, fields) => logger.error(message, fields),
    flush: () => logger.flush(),
  };
}
