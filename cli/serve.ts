/**
 * `automation-runtime serve`: resolves the bootstrap credential, opens the store and serves the
 * runtime until SIGINT or SIGTERM, then lets requests in flight finish.
 *
 * @module
 */
import { claimAuthority } from "../server/authority_lease.ts";
import { bootstrapClaim } from "../server/bootstrap/credential.ts";
import { resolveBootstrap } from "../server/bootstrap/resolve.ts";
import { createJsonLogger } from "../server/log.ts";
import {
  formatBaseUrl,
  type RunningRuntime,
  serveRuntime,
  type ServeRuntimeOptions,
} from "../server/serve.ts";
import { SERVE_SETTINGS, serverOptionsOf, type ServeSettings } from "../server/settings.ts";
import { openStore } from "../server/store/mod.ts";
import { resolveProviderSettings } from "../server/runs/provider.ts";
import type { Store } from "../server/store/types.ts";
import { testHooksFromEnv, withTestHooks } from "../server/test_hooks.ts";
import { loadRequestTracer, tracingEnabled } from "../server/tracing.ts";
import { serveUntilSignal, waitForSignal } from "./_lifetime.ts";
import { printOut, reportError } from "./_output.ts";
import { parseSettingArgs } from "./_settings.ts";

function storeBeside(secretFilePath: string): string {
  const slash = Math.max(secretFilePath.lastIndexOf("/"), secretFilePath.lastIndexOf("\\"));
  return slash === -1 ? "store.kv" : `${secretFilePath.slice(0, slash + 1)}store.kv`;
}

/**
 * Runs `serve` with its arguments (without the subcommand). Resolves with the exit code: 0 after
 * a clean shutdown, 1 on a runtime failure, 2 on a usage error. Errors are one line on stderr.
 *
 * @example
 * ```ts ignore
 * import { serveCommand } from "./serve.ts";
 * Deno.exit(await serveCommand(["--port", "0"]));
 * ```
 */
export async function serveCommand(args: string[]): Promise<number> {
  const env = Deno.env.toObject();
  let settings: ServeSettings;
  let resolved;
  let provider;
  try {
    const parsed = parseSettingArgs(args, { command: "serve", settings: SERVE_SETTINGS, env });
    if (parsed.help) {
      // The command table is loaded for help only: `serve` starts without it.
      printOut((await import("./_help.ts")).commandHelp("serve"));
      return 0;
    }
    settings = parsed.settings;
    resolved = await resolveBootstrap({ hostname: settings.hostname });
    // The provider file, the last place of the three provider settings, is read here, once the
    // bootstrap has named its directory; the flag or variable already found wins over it.
    provider = await resolveProviderSettings({
      env,
      secretFilePath: resolved.secretFilePath,
      flags: {
        baseUrl: settings.providerBaseUrl,
        defaultAgentId: settings.defaultAgent,
        defaultEnvironmentId: settings.defaultEnvironment,
      },
    });
  } catch (error) {
    return reportError(error);
  }

  const logger = createJsonLogger();
  const credential = resolved.credential;
  let store: Store;
  try {
    store = await openStore({
      location: settings.store,
      namespace: credential.namespace,
      defaultKvPath: storeBeside(resolved.secretFilePath),
    });
  } catch (error) {
    return reportError(new Error(`Cannot open the store: ${(error as Error).message}`));
  }
  try {
    await claimAuthority(store, Date.now(), bootstrapClaim(credential));
  } catch (error) {
    await store.close();
    return reportError(new Error(`Cannot serve this store: ${(error as Error).message}`));
  }

  const signal = waitForSignal();
  let running: RunningRuntime;
  try {
    const options: ServeRuntimeOptions = {
      bootstrap: credential,
      store,
      hostname: settings.hostname,
      port: settings.port,
      metricsPort: settings.metricsPort,
      metricsHostname: settings.metricsHostname,
      ...serverOptionsOf(settings),
      provider,
      logger,
      // The OpenTelemetry API is loaded only when tracing is on.
      tracer: tracingEnabled({ OTEL_DENO: env.OTEL_DENO }) ? await loadRequestTracer() : undefined,
    };
    const hooks = testHooksFromEnv(env, logger);
    running = await serveRuntime(hooks === undefined ? options : withTestHooks(options, hooks));
  } catch (error) {
    signal.dispose();
    await store.close();
    const message = (error as Error).message;
    const reason = error instanceof Deno.errors.AddrInUse
      ? `Address ${settings.hostname}:${settings.port} is already in use`
      : message.startsWith("Cannot listen for metrics")
      ? message
      : `Cannot listen on ${settings.hostname}:${settings.port}: ${message}`;
    return reportError(new Error(reason));
  }

  logger.info("listening", {
    url: running.url,
    hostname: running.addr.hostname,
    port: running.addr.port,
    store: store.kind,
    bootstrapSource: credential.source,
    bootstrapPrincipalId: credential.principalId,
    bootstrapExpiresAt: credential.expiresAt,
    runs: provider.apiKey !== undefined || provider.authToken !== undefined,
    ...(running.metricsAddr === null ? {} : {
      metricsUrl: `${formatBaseUrl(running.metricsAddr)}/metrics`,
    }),
  });

  const outcome = await serveUntilSignal(running, signal, logger);
  if (outcome === "stopped") {
    await store.close();
    logger.info("stopped");
  } else {
    logger.info("stopped without waiting for open connections", { reason: outcome });
  }
  logger.flush();
  return 0;
}
