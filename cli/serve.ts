/**
 * `automation-runtime serve`: resolves the bootstrap credential, opens the store and serves the
 * runtime until SIGINT or SIGTERM, then lets requests in flight finish.
 *
 * @module
 */
import { resolveBootstrap } from "../server/bootstrap/resolve.ts";
import { parseCorsOrigins } from "../server/cors.ts";
import { createJsonLogger } from "../server/log.ts";
import { parseAllowedHosts, parseAllowedOrigins } from "../server/mcp/origin.ts";
import { DEFAULT_MAX_BODY_BYTES } from "../server/rules/body.ts";
import {
  formatBaseUrl,
  type RunningRuntime,
  serveRuntime,
  type ServeRuntimeOptions,
} from "../server/serve.ts";
import { openStore } from "../server/store/mod.ts";
import { resolveProviderSettings } from "../server/runs/provider.ts";
import { DEFAULT_SERVICE_MAX_ACTIVE_RUNS } from "../server/runs/runs.ts";
import { DEFAULT_PENDING_TIMEOUT_MS } from "../server/runs/answers.ts";
import type { Store } from "../server/store/types.ts";
import { testHooksFromEnv, withTestHooks } from "../server/test_hooks.ts";
import { loadRequestTracer, tracingEnabled } from "../server/tracing.ts";
import { parseArgs, parseIntegerFlag, UsageError } from "./_args.ts";
import { printOut, reportError } from "./_output.ts";

/** How long a graceful shutdown waits for requests in flight, in ms. */
export const SHUTDOWN_GRACE_MS = 10_000;

/** Environment variable naming the store when `--store` is absent. */
export const STORE_VARIABLE = "AUTOMATION_RUNTIME_STORE";

/** Environment variable listing the MCP allowed origins when the flag is absent. */
export const MCP_ORIGINS_VARIABLE = "AUTOMATION_RUNTIME_MCP_ALLOWED_ORIGINS";

/** Environment variable of the service-wide active-run limit when the flag is absent. */
export const MAX_ACTIVE_RUNS_VARIABLE = "AUTOMATION_RUNTIME_MAX_ACTIVE_RUNS";
/** Environment variable of the pending tool-request timeout when the flag is absent. */
export const PENDING_TIMEOUT_VARIABLE = "AUTOMATION_RUNTIME_PENDING_TIMEOUT_MS";

/** Environment variable of `--max-event-streams`. */
export const MAX_EVENT_STREAMS_VARIABLE = "AUTOMATION_RUNTIME_MAX_EVENT_STREAMS";
/** Default open event streams per replica. */
const DEFAULT_MAX_EVENT_STREAMS = 10_000;
/** Environment variable listing the CORS origins when the flag is absent. */
export const CORS_ORIGINS_VARIABLE = "AUTOMATION_RUNTIME_CORS_ORIGINS";

/** Environment variable giving the retention in days when the flag is absent. */
export const RETENTION_VARIABLE = "AUTOMATION_RUNTIME_RETENTION_DAYS";

/** Environment variable of the metrics port when `--metrics-port` is absent. */
export const METRICS_PORT_VARIABLE = "AUTOMATION_RUNTIME_METRICS_PORT";

/** Environment variable of the metrics address when `--metrics-hostname` is absent. */
export const METRICS_HOSTNAME_VARIABLE = "AUTOMATION_RUNTIME_METRICS_HOSTNAME";

/** Environment variable listing the MCP allowed hosts when the flag is absent. */
export const MCP_HOSTS_VARIABLE = "AUTOMATION_RUNTIME_MCP_ALLOWED_HOSTS";

const USAGE = `Usage: automation-runtime serve [options]

Serves the automation runtime HTTP API.

Options:
  --hostname H         address to bind (default 127.0.0.1)
  --port P             port to bind, 0 for a free one (default 7777)
  --store URL          postgres://… URL or KV file path (default: $${STORE_VARIABLE},
                       else store.kv beside the secret file)
  --max-body-bytes N   request body limit (default ${DEFAULT_MAX_BODY_BYTES})
  --mcp-allowed-origins LIST
                       browser origins allowed on /v1/mcp: comma-separated exact origins
                       and/or "loopback" (default: $${MCP_ORIGINS_VARIABLE},
                       else loopback)
  --mcp-allowed-hosts LIST
                       Host names allowed on /v1/mcp: names, "loopback" or "*" (default:
                       $${MCP_HOSTS_VARIABLE}, else loopback on a loopback
                       bind, any on other binds)
  --provider-base-url URL
                       base URL of the managed-agents provider (default:
                       $AUTOMATION_RUNTIME_PROVIDER_BASE_URL, else the provider file)
  --default-agent ID   agent of runs that name none (default:
                       $AUTOMATION_RUNTIME_DEFAULT_AGENT_ID, else the provider file)
  --default-environment ID
                       environment of runs that name none (default:
                       $AUTOMATION_RUNTIME_DEFAULT_ENVIRONMENT_ID, else the provider file)
  --max-active-runs N  active runs the whole service allows (default:
                       $${MAX_ACTIVE_RUNS_VARIABLE}, else ${DEFAULT_SERVICE_MAX_ACTIVE_RUNS})
  --pending-timeout-ms N
                       a tool request still pending after N ms is denied (or answered with
                       an error result) by the runtime (default: $${PENDING_TIMEOUT_VARIABLE},
                       else ${DEFAULT_PENDING_TIMEOUT_MS})
  --max-event-streams N
                       open run event streams this replica allows, then 503 (default:
                       $${MAX_EVENT_STREAMS_VARIABLE}, else ${DEFAULT_MAX_EVENT_STREAMS})
  --run-lease-ms N     lease of a run's event tail: renewed every third of it, taken over by
                       another replica once it lapses (default 15000; shorter only for tests)
  --cors-origins LIST  browser origins allowed to call /v1/* across origins: comma-separated
                       exact origins (default: $${CORS_ORIGINS_VARIABLE}, else none)
  --retention-days N   days revoked and expired principals and the records of a rotated
                       bootstrap are kept (default: $${RETENTION_VARIABLE}, else 30)
  --metrics-port P     serve Prometheus metrics at /metrics on this port, a separate listener
                       (default: $${METRICS_PORT_VARIABLE}, else no metrics)
  --metrics-hostname H address of the metrics listener (default:
                       $${METRICS_HOSTNAME_VARIABLE}, else 127.0.0.1)
  -h, --help           show this help

The bootstrap credential comes from the AUTOMATION_RUNTIME_BOOTSTRAP_* variables, else the
secret file ($RUNTIME_BOOTSTRAP_ENV or the default path), else (loopback binds only) it is
generated once. Stop with SIGINT or SIGTERM; requests in flight finish first.

Runs are enabled by a provider credential, never a flag: AUTOMATION_RUNTIME_PROVIDER_API_KEY
or AUTOMATION_RUNTIME_PROVIDER_AUTH_TOKEN in the environment, else in the provider file
($RUNTIME_PROVIDER_ENV, else provider.env beside the secret file, mode 0600; write it with
\`automation-runtime provider init\`). The environment wins over the file.

Traces: set OTEL_DENO=true and the standard OTEL_EXPORTER_OTLP_* variables; off by default.`;

interface ServeFlags {
  hostname: string;
  port: number;
  store: string | undefined;
  maxBodyBytes: number;
  mcpAllowedOrigins: string[] | undefined;
  mcpAllowedHosts: string[] | undefined;
  providerBaseUrl: string | undefined;
  defaultAgent: string | undefined;
  defaultEnvironment: string | undefined;
  maxActiveRuns: number;
  pendingTimeoutMs: number;
  maxEventStreams: number;
  runLeaseMs: number | undefined;
  corsOrigins: string[] | undefined;
  retentionDays: number;
  metricsPort: number | undefined;
  metricsHostname: string;
  help: boolean;
}

function parseList(
  value: string | undefined,
  variable: string,
  flag: string,
  parse: (list: string) => string[],
): string[] | undefined {
  const fromEnv = value === undefined;
  const list = value ?? Deno.env.get(variable);
  if (list === undefined) return undefined;
  try {
    return parse(list);
  } catch (error) {
    const message = (error as Error).message;
    if (fromEnv) throw new Error(`${variable}: ${message}`);
    throw new UsageError("serve", `--${flag}: ${message}`);
  }
}

function parseFlags(args: string[]): ServeFlags {
  const parsed = parseArgs(args, {
    command: "serve",
    string: [
      "hostname",
      "port",
      "store",
      "max-body-bytes",
      "mcp-allowed-origins",
      "mcp-allowed-hosts",
      "provider-base-url",
      "default-agent",
      "default-environment",
      "max-active-runs",
      "pending-timeout-ms",
      "max-event-streams",
      "run-lease-ms",
      "cors-origins",
      "retention-days",
      "metrics-port",
      "metrics-hostname",
    ],
  });
  const strings = parsed.strings;
  const hostname = strings.get("hostname") ?? "127.0.0.1";
  if (hostname.trim() === "") throw new UsageError("serve", "--hostname must not be empty");
  const port = strings.get("port");
  const maxBodyBytes = strings.get("max-body-bytes");
  return {
    hostname,
    port: port === undefined
      ? 7777
      : parseIntegerFlag(port, { command: "serve", flag: "port", min: 0, max: 65535 }),
    store: strings.get("store"),
    maxBodyBytes: maxBodyBytes === undefined ? DEFAULT_MAX_BODY_BYTES : parseIntegerFlag(
      maxBodyBytes,
      { command: "serve", flag: "max-body-bytes", min: 1, max: 2 ** 31 - 1 },
    ),
    mcpAllowedOrigins: parsed.help ? undefined : parseList(
      strings.get("mcp-allowed-origins"),
      MCP_ORIGINS_VARIABLE,
      "mcp-allowed-origins",
      parseAllowedOrigins,
    ),
    mcpAllowedHosts: parsed.help ? undefined : parseList(
      strings.get("mcp-allowed-hosts"),
      MCP_HOSTS_VARIABLE,
      "mcp-allowed-hosts",
      parseAllowedHosts,
    ),
    providerBaseUrl: strings.get("provider-base-url"),
    defaultAgent: strings.get("default-agent"),
    defaultEnvironment: strings.get("default-environment"),
    maxActiveRuns: parsed.help
      ? DEFAULT_SERVICE_MAX_ACTIVE_RUNS
      : maxActiveRuns(strings.get("max-active-runs")),
    pendingTimeoutMs: parsed.help ? DEFAULT_PENDING_TIMEOUT_MS : integerSetting(
      "pending-timeout-ms",
      strings.get("pending-timeout-ms"),
      PENDING_TIMEOUT_VARIABLE,
      { min: 100, max: 7 * 86_400_000, fallback: DEFAULT_PENDING_TIMEOUT_MS },
    ),
    maxEventStreams: parsed.help ? DEFAULT_MAX_EVENT_STREAMS : integerSetting(
      "max-event-streams",
      strings.get("max-event-streams"),
      MAX_EVENT_STREAMS_VARIABLE,
      {
        min: 1,
        max: 1_000_000,
        fallback: DEFAULT_MAX_EVENT_STREAMS,
      },
    ),
    runLeaseMs: strings.get("run-lease-ms") === undefined
      ? undefined
      : parseIntegerFlag(strings.get("run-lease-ms")!, {
        command: "serve",
        flag: "run-lease-ms",
        min: 300,
        max: 600_000,
      }),
    corsOrigins: parsed.help ? undefined : parseList(
      strings.get("cors-origins"),
      CORS_ORIGINS_VARIABLE,
      "cors-origins",
      parseCorsOrigins,
    ),
    retentionDays: parsed.help ? 30 : parseRetentionDays(strings.get("retention-days")),
    metricsPort: parsed.help ? undefined : parseMetricsPort(strings.get("metrics-port")),
    metricsHostname: parsed.help ? "127.0.0.1" : metricsHostname(strings.get("metrics-hostname")),
    help: parsed.help,
  };
}

/**
 * A whole-number setting from its flag, else its environment variable, else `fallback`; out of
 * `min`..`max` is a usage error for the flag and a one-line error naming the variable.
 */
function integerSetting(
  flag: string,
  value: string | undefined,
  variable: string,
  limits: { min: number; max: number; fallback: number },
): number {
  const range = { command: "serve", flag, min: limits.min, max: limits.max };
  if (value !== undefined) return parseIntegerFlag(value, range);
  const text = Deno.env.get(variable);
  if (text === undefined || text === "") return limits.fallback;
  const number = /^[0-9]{1,9}$/.test(text) ? Number(text) : Number.NaN;
  if (!(number >= limits.min && number <= limits.max)) {
    throw new Error(`${variable} must be a whole number from ${limits.min} to ${limits.max}`);
  }
  return number;
}

function maxActiveRuns(flag: string | undefined): number {
  return integerSetting("max-active-runs", flag, MAX_ACTIVE_RUNS_VARIABLE, {
    min: 1,
    max: 1_000_000,
    fallback: DEFAULT_SERVICE_MAX_ACTIVE_RUNS,
  });
}

function parseRetentionDays(flag: string | undefined): number {
  return integerSetting("retention-days", flag, RETENTION_VARIABLE, {
    min: 1,
    max: 36_500,
    fallback: 30,
  });
}

function parseMetricsPort(flag: string | undefined): number | undefined {
  if (flag === undefined && (Deno.env.get(METRICS_PORT_VARIABLE) ?? "") === "") return undefined;
  return integerSetting("metrics-port", flag, METRICS_PORT_VARIABLE, {
    min: 0,
    max: 65535,
    fallback: 0,
  });
}

function metricsHostname(flag: string | undefined): string {
  const hostname = flag ?? Deno.env.get(METRICS_HOSTNAME_VARIABLE) ?? "127.0.0.1";
  if (hostname.trim() === "") {
    if (flag !== undefined) throw new UsageError("serve", "--metrics-hostname must not be empty");
    throw new Error(`${METRICS_HOSTNAME_VARIABLE} must not be empty`);
  }
  return hostname;
}

function storeBeside(secretFilePath: string): string {
  const slash = Math.max(secretFilePath.lastIndexOf("/"), secretFilePath.lastIndexOf("\\"));
  return slash === -1 ? "store.kv" : `${secretFilePath.slice(0, slash + 1)}store.kv`;
}

function waitForSignal(): { promise: Promise<string>; dispose(): void } {
  const signals: Deno.Signal[] = Deno.build.os === "windows"
    ? ["SIGINT", "SIGBREAK"]
    : ["SIGINT", "SIGTERM"];
  const received = Promise.withResolvers<string>();
  const listeners = signals.map((signal) => {
    const listener = () => received.resolve(signal);
    Deno.addSignalListener(signal, listener);
    return [signal, listener] as const;
  });
  return {
    promise: received.promise,
    dispose() {
      for (const [signal, listener] of listeners) Deno.removeSignalListener(signal, listener);
    },
  };
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
  let flags: ServeFlags;
  let resolved;
  let provider;
  try {
    flags = parseFlags(args);
    if (flags.help) {
      printOut(USAGE);
      return 0;
    }
    resolved = await resolveBootstrap({ hostname: flags.hostname });
    provider = await resolveProviderSettings({
      secretFilePath: resolved.secretFilePath,
      flags: {
        baseUrl: flags.providerBaseUrl,
        defaultAgentId: flags.defaultAgent,
        defaultEnvironmentId: flags.defaultEnvironment,
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
      location: flags.store ?? Deno.env.get(STORE_VARIABLE),
      namespace: credential.namespace,
      defaultKvPath: storeBeside(resolved.secretFilePath),
    });
  } catch (error) {
    return reportError(new Error(`Cannot open the store: ${(error as Error).message}`));
  }
  try {
    await store.claimAuthority(Date.now());
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
      hostname: flags.hostname,
      port: flags.port,
      maxBodyBytes: flags.maxBodyBytes,
      mcp: { allowedOrigins: flags.mcpAllowedOrigins, allowedHosts: flags.mcpAllowedHosts },
      provider,
      maxActiveRuns: flags.maxActiveRuns,
      pendingTimeoutMs: flags.pendingTimeoutMs,
      maxEventStreams: flags.maxEventStreams,
      ...(flags.runLeaseMs !== undefined ? { runLeaseMs: flags.runLeaseMs } : {}),
      cors: flags.corsOrigins === undefined ? undefined : { allowedOrigins: flags.corsOrigins },
      retentionMs: flags.retentionDays * 86_400_000,
      logger,
      metricsPort: flags.metricsPort,
      metricsHostname: flags.metricsHostname,
      // The OpenTelemetry API is loaded only when tracing is on.
      tracer: tracingEnabled({ OTEL_DENO: Deno.env.get("OTEL_DENO") })
        ? await loadRequestTracer()
        : undefined,
    };
    const hooks = testHooksFromEnv(Deno.env.toObject(), logger);
    running = await serveRuntime(hooks === undefined ? options : withTestHooks(options, hooks));
  } catch (error) {
    signal.dispose();
    await store.close();
    const message = (error as Error).message;
    const reason = error instanceof Deno.errors.AddrInUse
      ? `Address ${flags.hostname}:${flags.port} is already in use`
      : message.startsWith("Cannot listen for metrics")
      ? message
      : `Cannot listen on ${flags.hostname}:${flags.port}: ${message}`;
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

  const received = await Promise.race([signal.promise, running.finished.then(() => null)]);
  logger.info("shutting down", { signal: received ?? undefined, graceMs: SHUTDOWN_GRACE_MS });
  // Requests in flight finish; a client that never completes its request (or a second signal)
  // cannot hold the process beyond the grace period.
  const again = waitForSignal();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    running.shutdown().then(() => "stopped" as const),
    again.promise.then(() => "forced" as const),
    new Promise<"timeout">((resolve) =>
      timer = setTimeout(() => resolve("timeout"), SHUTDOWN_GRACE_MS)
    ),
  ]);
  clearTimeout(timer);
  signal.dispose();
  again.dispose();
  if (outcome === "stopped") {
    await store.close();
    logger.info("stopped");
  } else {
    logger.info("stopped without waiting for open connections", { reason: outcome });
  }
  logger.flush();
  return 0;
}
