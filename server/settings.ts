/**
 * The settings table of `serve`: each setting declared once, with its flag, environment variable,
 * provider-file key, default, parser (with its bounds) and help line. Everything else is derived
 * from it: `serve --help` and its argument parsing (`cli/serve.ts`), the environment the
 * Deploy-style entry reads (`server/deploy.ts`), the server options both pass on, and the
 * settings section of `docs/cli.md` (`deno task docs`).
 *
 * A value is taken from the first place that gives one: the flag, else the environment variable,
 * else the provider file (only the three provider settings have a key there; that file is read by
 * `resolveProviderSettings` once the bootstrap has named its directory), else the default. An
 * invalid flag is a usage error; an invalid variable is a runtime error naming the variable.
 *
 * One concept past 600 lines on purpose: the table is the one place each setting is written, and
 * most of its length is the rows themselves.
 *
 * The table holds no `Deno.*` call: the environment is handed in, so the same table serves a
 * process (`serve`) and an isolate of a Deploy-style host.
 *
 * @module
 */
import {
  DEFAULT_AUTHORITY_LEASE_MS,
  MAX_AUTHORITY_LEASE_MS,
  MIN_AUTHORITY_LEASE_MS,
} from "./authority_lease.ts";
import { parseCorsOrigins } from "./cors.ts";
import { DEFAULT_MAX_REPLAY_BYTES, DEFAULT_MAX_SESSION_REPLAY_BYTES } from "./mcp/event_store.ts";
import { parseAllowedHosts, parseAllowedOrigins } from "./mcp/origin.ts";
import {
  DEFAULT_WEBHOOK_MAX_BODY_BYTES,
  DEFAULT_WEBHOOK_MAX_UNVERIFIED,
} from "./routes/webhooks.ts";
import { DEFAULT_MAX_BODY_BYTES } from "./rules/body.ts";
import { DEFAULT_PENDING_TIMEOUT_MS } from "./runs/answers.ts";
import {
  DEFAULT_MAX_EVENT_STREAMS,
  DEFAULT_MAX_EVENT_STREAMS_PER_PRINCIPAL,
} from "./runs/events.ts";
import { DEFAULT_SERVICE_MAX_ACTIVE_RUNS, PROVIDER_VARIABLES } from "./runs/mod.ts";
import { DEFAULT_RUN_LEASE_MS } from "./runs/tail.ts";
import {
  DEFAULT_EXCHANGES_PER_MINUTE,
  DEFAULT_EXCHANGES_PER_MINUTE_TOTAL,
} from "./oidc/rate_limit.ts";
import {
  DEFAULT_PROVIDER_TIMEOUT_MS,
  DEFAULT_RETENTION_MS,
  type RuntimeServerOptions,
} from "./server.ts";
import { DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL } from "./notifications/subscriptions.ts";

const DAY_MS = 86_400_000;

/**
 * How the text of one setting becomes its value. `parse` returns `undefined` for a text that
 * counts as unset (so the next place is asked), and throws an `Error` whose message names the
 * setting as it was given (`name` is `--port` or `AUTOMATION_RUNTIME_METRICS_PORT`).
 */
export interface SettingParser<T> {
  /** The value of `text`, or `undefined` when the text counts as unset. */
  parse(text: string, name: string): T | undefined;
  /** What the parser accepts, for help and docs (such as `1 to 65535`); absent: any text. */
  readonly accepts?: string;
}

/** One setting. `V` is its resolved value: `T`, or `T | undefined` when it has no default. */
export interface Setting<T, V extends T | undefined = T | undefined> {
  /** The flag without its dashes (`max-body-bytes`); absent: the setting has no flag. */
  readonly flag?: string;
  /** The placeholder of the flag's value in help (`N`, `LIST`, `URL`). */
  readonly placeholder: string;
  /** The environment variable; absent: none. */
  readonly env?: string;
  /** The key of the setting in the provider file (`provider.env`); absent: none. */
  readonly providerFile?: string;
  /** The value when no place gives one. */
  readonly default: V;
  /** The default as help and docs show it (such as `none: no metrics listener`). */
  readonly defaultText: string;
  /** Parses the text of the flag or the variable. */
  readonly parser: SettingParser<T>;
  /** What the setting does, in a few words (help and docs). */
  readonly help: string;
  /** Whether the Deploy-style entry reads the variable too (otherwise it keeps the default). */
  readonly deploy: boolean;
  /** The Deploy-style entry's default, where it differs from `defaultText`. */
  readonly deployDefaultText?: string;
}

/** A table of settings by key (the key names the value in the resolved object). */
// deno-lint-ignore no-explicit-any
export type SettingTable = Readonly<Record<string, Setting<any, any>>>;

/** The resolved values of a table. */
export type SettingValues<S extends SettingTable> = {
  -readonly [K in keyof S]: S[K]["default"];
};

/** The fields every setting declares, before the default is added. */
type SettingFields<T> = Omit<Setting<T>, "default" | "defaultText" | "deploy"> & {
  readonly defaultText?: string;
  readonly deploy?: boolean;
};

/** A setting with a default value (its value is never `undefined`). */
function setting<T>(fields: SettingFields<T> & { readonly default: T }): Setting<T, T>;
/** A setting without a default (its value is `undefined` when no place gives one). */
function setting<T>(
  fields: SettingFields<T> & { readonly defaultText: string },
): Setting<T, T | undefined>;
function setting<T>(
  fields: SettingFields<T> & { readonly default?: T },
): Setting<T, T | undefined> {
  return Object.freeze({
    ...fields,
    default: fields.default,
    defaultText: fields.defaultText ?? `\`${fields.default}\``,
    deploy: fields.deploy ?? false,
  });
}

/**
 * A whole number from `min` to `max`. An empty text counts as unset (a variable set to nothing).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { integerSetting } from "./settings.ts";
 * const port = integerSetting({ min: 0, max: 65535 });
 * assert.equal(port.parse("8080", "--port"), 8080);
 * assert.throws(() => port.parse("http", "--port"), /--port must be an integer from 0 to 65535/);
 * ```
 */
export function integerSetting(bounds: { min: number; max: number }): SettingParser<number> {
  const { min, max } = bounds;
  return {
    accepts: `${min} to ${max}`,
    parse(text: string, name: string): number | undefined {
      if (text === "") return undefined;
      const number = /^\d{1,10}$/.test(text) ? Number(text) : Number.NaN;
      if (!(number >= min && number <= max)) {
        throw new Error(`${name} must be an integer from ${min} to ${max}`);
      }
      return number;
    },
  };
}

/**
 * A comma-separated list read by `parse`; its error is reported after the setting's name. An
 * empty text is a value (the empty list), never unset: a list set to nothing allows nothing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listSetting } from "./settings.ts";
 * const list = listSetting((text) => text.split(","));
 * assert.deepEqual(list.parse("a,b", "--names"), ["a", "b"]);
 * ```
 */
export function listSetting(parse: (text: string) => string[]): SettingParser<string[]> {
  return {
    parse(text: string, name: string): string[] {
      try {
        return parse(text);
      } catch (error) {
        throw new Error(`${name}: ${(error as Error).message}`);
      }
    },
  };
}

/** An address to bind: any text but a blank one (which is an error, not unset). */
const HOSTNAME: SettingParser<string> = {
  parse(text: string, name: string): string {
    if (text.trim() === "") throw new Error(`${name} must not be empty`);
    return text;
  },
};

/**
 * A yes-or-no setting: `true`, `1` or `yes` turn it on, `false`, `0` or `no` off (any case). An
 * empty text counts as unset.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BOOLEAN_SETTING } from "./settings.ts";
 * assert.equal(BOOLEAN_SETTING.parse("TRUE", "--flag"), true);
 * assert.equal(BOOLEAN_SETTING.parse("0", "--flag"), false);
 * assert.throws(() => BOOLEAN_SETTING.parse("on", "--flag"), /--flag must be true or false/);
 * ```
 */
export const BOOLEAN_SETTING: SettingParser<boolean> = {
  accepts: "true or false",
  parse(text: string, name: string): boolean | undefined {
    const value = text.trim().toLowerCase();
    if (value === "") return undefined;
    if (value === "true" || value === "1" || value === "yes") return true;
    if (value === "false" || value === "0" || value === "no") return false;
    throw new Error(`${name} must be true or false`);
  },
};

/** A text taken as it is; an empty one counts as unset. */
const TEXT: SettingParser<string> = {
  parse: (text: string): string | undefined => text === "" ? undefined : text,
};

/** An `http` or `https` URL without credentials; a blank one counts as unset. */
const PUBLIC_URL: SettingParser<string> = {
  accepts: "an http(s) URL",
  parse(text: string, name: string): string | undefined {
    const trimmed = text.trim();
    if (trimmed === "") return undefined;
    let url: URL;
    try {
      url = new URL(trimmed);
    } catch {
      throw new Error(`${name} must be an http(s) URL`);
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username !== "") {
      throw new Error(`${name} must be an http(s) URL without credentials`);
    }
    return trimmed.replace(/\/+$/, "");
  },
};

/** A text without its surrounding blanks; a blank one counts as unset. */
const TRIMMED: SettingParser<string> = {
  parse: (text: string): string | undefined => text.trim() === "" ? undefined : text.trim(),
};

/** An authority lease: 0 (none), or a length in ms within the lease's bounds. */
const AUTHORITY_LEASE: SettingParser<number> = {
  accepts: `0 or ${MIN_AUTHORITY_LEASE_MS} to ${MAX_AUTHORITY_LEASE_MS}`,
  parse(text: string, name: string): number | undefined {
    if (text === "") return undefined;
    const number = /^\d{1,10}$/.test(text) ? Number(text) : Number.NaN;
    if (
      number !== 0 && !(number >= MIN_AUTHORITY_LEASE_MS && number <= MAX_AUTHORITY_LEASE_MS)
    ) {
      throw new Error(
        `${name} must be 0 or an integer from ${MIN_AUTHORITY_LEASE_MS} to ${MAX_AUTHORITY_LEASE_MS}`,
      );
    }
    return number;
  },
};

/**
 * The settings of `serve`, in the order of its help. The three provider settings also have a
 * key in the provider file, which `resolveProviderSettings` reads after the environment.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SERVE_SETTINGS } from "./settings.ts";
 * assert.equal(SERVE_SETTINGS.maxActiveRuns.env, "AUTOMATION_RUNTIME_MAX_ACTIVE_RUNS");
 * assert.equal(SERVE_SETTINGS.port.default, 7777);
 * ```
 */
export const SERVE_SETTINGS = Object.freeze({
  hostname: setting({
    flag: "hostname",
    placeholder: "H",
    parser: HOSTNAME,
    default: "127.0.0.1",
    help: "address to bind",
  }),
  port: setting({
    flag: "port",
    placeholder: "P",
    parser: integerSetting({ min: 0, max: 65535 }),
    default: 7777,
    help: "port to bind, 0 for a free one",
  }),
  store: setting({
    flag: "store",
    placeholder: "URL",
    env: "AUTOMATION_RUNTIME_STORE",
    parser: TEXT,
    defaultText: "Deno KV file `store.kv` beside the secret file",
    deployDefaultText: "the host's own Deno KV",
    help: "`postgres://` URL or Deno KV file path",
    deploy: true,
  }),
  maxBodyBytes: setting({
    flag: "max-body-bytes",
    placeholder: "N",
    parser: integerSetting({ min: 1, max: 2 ** 31 - 1 }),
    default: DEFAULT_MAX_BODY_BYTES,
    defaultText: `\`${DEFAULT_MAX_BODY_BYTES}\` (1 MiB)`,
    help: "request body limit in bytes",
  }),
  mcpAllowedOrigins: setting({
    flag: "mcp-allowed-origins",
    placeholder: "LIST",
    env: "AUTOMATION_RUNTIME_MCP_ALLOWED_ORIGINS",
    parser: listSetting(parseAllowedOrigins),
    defaultText: "`loopback`",
    help: 'browser origins allowed on `/v1/mcp`: comma-separated exact origins and/or "loopback"',
    deploy: true,
  }),
  mcpAllowedHosts: setting({
    flag: "mcp-allowed-hosts",
    placeholder: "LIST",
    env: "AUTOMATION_RUNTIME_MCP_ALLOWED_HOSTS",
    parser: listSetting(parseAllowedHosts),
    defaultText: "`loopback` on a loopback bind, `*` on any other",
    deployDefaultText: "`*`",
    help: '`Host` names allowed on `/v1/mcp`: names, "loopback" or "*"',
    deploy: true,
  }),
  providerBaseUrl: setting({
    flag: "provider-base-url",
    placeholder: "URL",
    env: PROVIDER_VARIABLES.baseUrl,
    providerFile: PROVIDER_VARIABLES.baseUrl,
    parser: TRIMMED,
    defaultText: "none: required once a provider credential is set",
    help: "base URL of the managed-agents provider, http(s)",
  }),
  defaultAgent: setting({
    flag: "default-agent",
    placeholder: "ID",
    env: PROVIDER_VARIABLES.defaultAgentId,
    providerFile: PROVIDER_VARIABLES.defaultAgentId,
    parser: TRIMMED,
    defaultText: "none",
    help: "agent of runs that name none",
  }),
  defaultEnvironment: setting({
    flag: "default-environment",
    placeholder: "ID",
    env: PROVIDER_VARIABLES.defaultEnvironmentId,
    providerFile: PROVIDER_VARIABLES.defaultEnvironmentId,
    parser: TRIMMED,
    defaultText: "none",
    help: "environment of runs that name none",
  }),
  maxActiveRuns: setting({
    flag: "max-active-runs",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_MAX_ACTIVE_RUNS",
    parser: integerSetting({ min: 1, max: 1_000_000 }),
    default: DEFAULT_SERVICE_MAX_ACTIVE_RUNS,
    help: "active runs the whole service allows",
  }),
  pendingTimeoutMs: setting({
    flag: "pending-timeout-ms",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_PENDING_TIMEOUT_MS",
    parser: integerSetting({ min: 100, max: 7 * DAY_MS }),
    default: DEFAULT_PENDING_TIMEOUT_MS,
    defaultText: `\`${DEFAULT_PENDING_TIMEOUT_MS}\` (10 min)`,
    help: "a tool request still pending after N ms is denied (or answered with an error " +
      "result) by the runtime",
  }),
  maxEventStreams: setting({
    flag: "max-event-streams",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_MAX_EVENT_STREAMS",
    parser: integerSetting({ min: 1, max: 1_000_000 }),
    default: DEFAULT_MAX_EVENT_STREAMS,
    help: "open run event streams this replica allows, then 503",
  }),
  maxEventStreamsPerPrincipal: setting({
    flag: "max-event-streams-per-principal",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_MAX_EVENT_STREAMS_PER_PRINCIPAL",
    parser: integerSetting({ min: 1, max: 1_000_000 }),
    default: DEFAULT_MAX_EVENT_STREAMS_PER_PRINCIPAL,
    help: "open run event streams one principal may hold on this replica, then 429",
    deploy: true,
  }),
  mcpReplayBytesPerSession: setting({
    flag: "mcp-replay-bytes-per-session",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_MCP_REPLAY_BYTES_PER_SESSION",
    parser: integerSetting({ min: 1024, max: 2 ** 31 - 1 }),
    default: DEFAULT_MAX_SESSION_REPLAY_BYTES,
    defaultText: `\`${DEFAULT_MAX_SESSION_REPLAY_BYTES}\` (1 MiB)`,
    help: "bytes of MCP events one session keeps for `Last-Event-ID` resumption",
    deploy: true,
  }),
  mcpReplayBytes: setting({
    flag: "mcp-replay-bytes",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_MCP_REPLAY_BYTES",
    parser: integerSetting({ min: 1024, max: 2 ** 40 }),
    default: DEFAULT_MAX_REPLAY_BYTES,
    defaultText: `\`${DEFAULT_MAX_REPLAY_BYTES}\` (64 MiB)`,
    help: "bytes of MCP events all sessions of this replica keep together; past it the " +
      "largest session's oldest go first",
    deploy: true,
  }),
  webhookMaxBodyBytes: setting({
    flag: "webhook-max-body-bytes",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_WEBHOOK_MAX_BODY_BYTES",
    parser: integerSetting({ min: 1024, max: 2 ** 31 - 1 }),
    default: DEFAULT_WEBHOOK_MAX_BODY_BYTES,
    defaultText: `\`${DEFAULT_WEBHOOK_MAX_BODY_BYTES}\` (64 KiB)`,
    help: "body limit of `POST /webhooks/provider` in bytes, read before the signature is " +
      "verified",
  }),
  webhookMaxUnverified: setting({
    flag: "webhook-max-unverified",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_WEBHOOK_MAX_UNVERIFIED",
    parser: integerSetting({ min: 1, max: 100_000 }),
    default: DEFAULT_WEBHOOK_MAX_UNVERIFIED,
    help: "webhook deliveries read and verified at once; more answer 429 until one is done",
  }),
  runLeaseMs: setting({
    flag: "run-lease-ms",
    placeholder: "N",
    parser: integerSetting({ min: 300, max: 600_000 }),
    default: DEFAULT_RUN_LEASE_MS,
    help: "lease of a run's event tail in ms: renewed every third of it, taken over by another " +
      "replica once it lapses",
  }),
  providerTimeoutMs: setting({
    flag: "provider-timeout-ms",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_PROVIDER_TIMEOUT_MS",
    parser: integerSetting({ min: 100, max: 600_000 }),
    default: DEFAULT_PROVIDER_TIMEOUT_MS,
    defaultText: `\`${DEFAULT_PROVIDER_TIMEOUT_MS}\` (1 min)`,
    help: "a call of the provider's own API at `/provider` waits at most N ms for the provider " +
      "(unless it sends `x-deadline`)",
  }),
  authorityLeaseMs: setting({
    flag: "authority-lease-ms",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_AUTHORITY_LEASE_MS",
    parser: AUTHORITY_LEASE,
    default: DEFAULT_AUTHORITY_LEASE_MS,
    help: "authority lease in ms: the longest a revocation waits for a frozen process (0: none)",
    deploy: true,
  }),
  corsOrigins: setting({
    flag: "cors-origins",
    placeholder: "LIST",
    env: "AUTOMATION_RUNTIME_CORS_ORIGINS",
    parser: listSetting(parseCorsOrigins),
    defaultText: "none",
    help: "browser origins allowed to call `/v1/*` across origins: comma-separated exact origins",
    deploy: true,
  }),
  notificationPrivateTargets: setting({
    flag: "notification-private-targets",
    placeholder: "BOOL",
    env: "AUTOMATION_RUNTIME_NOTIFICATION_PRIVATE_TARGETS",
    parser: BOOLEAN_SETTING,
    default: false,
    help: "let notification webhooks go to loopback, private, link-local and metadata " +
      "addresses: for tests and local bridges only, never in production",
    deploy: true,
  }),
  maxWebhookSubscriptions: setting({
    flag: "max-webhook-subscriptions",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_MAX_WEBHOOK_SUBSCRIPTIONS",
    parser: integerSetting({ min: 1, max: 10_000 }),
    default: DEFAULT_MAX_SUBSCRIPTIONS_PER_PRINCIPAL,
    help: "notification webhook subscriptions one principal may hold, then 429",
    deploy: true,
  }),
  publicUrl: setting({
    flag: "public-url",
    placeholder: "URL",
    env: "AUTOMATION_RUNTIME_PUBLIC_URL",
    parser: PUBLIC_URL,
    defaultText: "`http://HOST:PORT` of the bind (none on port 0 or the Deploy-style entry)",
    deployDefaultText: "none: no link",
    help: "the URL people reach the service at: notifications link to its console " +
      "(`<URL>/console/`)",
    deploy: true,
  }),
  oidcAllowLoopbackHttp: setting({
    flag: "oidc-allow-loopback-http",
    placeholder: "BOOL",
    env: "AUTOMATION_RUNTIME_OIDC_ALLOW_LOOPBACK_HTTP",
    parser: BOOLEAN_SETTING,
    default: false,
    help: "let trust policies name OIDC issuers served over plain http on 127.0.0.1, [::1] or " +
      "localhost: for tests and local use only, never in production",
  }),
  exchangesPerMinute: setting({
    flag: "exchanges-per-minute",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_EXCHANGES_PER_MINUTE",
    parser: integerSetting({ min: 1, max: 1_000_000 }),
    default: DEFAULT_EXCHANGES_PER_MINUTE,
    help: "token exchanges one trust policy admits per minute on this replica, then 429",
    deploy: true,
  }),
  exchangesPerMinuteTotal: setting({
    flag: "exchanges-per-minute-total",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_EXCHANGES_PER_MINUTE_TOTAL",
    parser: integerSetting({ min: 1, max: 1_000_000 }),
    default: DEFAULT_EXCHANGES_PER_MINUTE_TOTAL,
    help: "token exchange attempts this replica admits per minute over every policy (unknown " +
      "names included), then 429",
    deploy: true,
  }),
  retentionDays: setting({
    flag: "retention-days",
    placeholder: "N",
    env: "AUTOMATION_RUNTIME_RETENTION_DAYS",
    parser: integerSetting({ min: 1, max: 36_500 }),
    default: DEFAULT_RETENTION_MS / DAY_MS,
    help: "days revoked and expired principals and the records of a rotated bootstrap are kept",
    deploy: true,
  }),
  metricsPort: setting({
    flag: "metrics-port",
    placeholder: "P",
    env: "AUTOMATION_RUNTIME_METRICS_PORT",
    parser: integerSetting({ min: 0, max: 65535 }),
    defaultText: "none: no metrics listener",
    help: "serve Prometheus metrics at `/metrics` on this port (0: a free one), a separate " +
      "listener",
  }),
  metricsHostname: setting({
    flag: "metrics-hostname",
    placeholder: "H",
    env: "AUTOMATION_RUNTIME_METRICS_HOSTNAME",
    parser: HOSTNAME,
    default: "127.0.0.1",
    help: "address of the metrics listener",
  }),
});

/** The resolved settings of `serve`. */
export type ServeSettings = SettingValues<typeof SERVE_SETTINGS>;

/** Raised for an invalid setting; the message names the flag or variable, never a secret. */
export class SettingError extends Error {
  /** Stable error code. */
  readonly code = "invalidSetting" as const;
  /** Where the invalid text was given. */
  readonly origin: "flag" | "environment";

  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { SettingError } from "./settings.ts";
   * assert.equal(new SettingError("--port must be…", "flag").origin, "flag");
   * ```
   */
  constructor(message: string, origin: "flag" | "environment", options?: ErrorOptions) {
    super(message, options);
    this.name = "SettingError";
    this.origin = origin;
  }
}

/** Where {@linkcode resolveSettings} looks. */
export interface SettingSources {
  /** Flag values by flag name (without dashes), as the argument parser found them. */
  flags?: ReadonlyMap<string, string>;
  /** The environment. */
  env: Readonly<Record<string, string | undefined>>;
  /** Read only the variables the Deploy-style entry reads (every other setting: its default). */
  deploy?: boolean;
}

/**
 * Resolves every setting of `table`: its flag, else its environment variable, else its default
 * (the provider file comes after the environment and is read by `resolveProviderSettings`).
 * Throws a {@linkcode SettingError} for the first invalid text, in table order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveSettings, SERVE_SETTINGS } from "./settings.ts";
 * const settings = resolveSettings(SERVE_SETTINGS, {
 *   flags: new Map([["max-active-runs", "5"]]),
 *   env: { AUTOMATION_RUNTIME_MAX_ACTIVE_RUNS: "9", AUTOMATION_RUNTIME_RETENTION_DAYS: "7" },
 * });
 * assert.equal(settings.maxActiveRuns, 5);
 * assert.equal(settings.retentionDays, 7);
 * assert.equal(settings.port, 7777);
 * ```
 */
export function resolveSettings<S extends SettingTable>(
  table: S,
  sources: SettingSources,
): SettingValues<S> {
  const values: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(table)) {
    values[key] = resolveOne(entry, sources);
  }
  return values as SettingValues<S>;
}

// deno-lint-ignore no-explicit-any
function resolveOne(entry: Setting<any, any>, sources: SettingSources): unknown {
  const flag = entry.flag === undefined ? undefined : sources.flags?.get(entry.flag);
  if (flag !== undefined) {
    const value = parseOrThrow(entry, flag, `--${entry.flag}`, "flag");
    if (value !== undefined) return value;
  }
  if (entry.env !== undefined && (entry.deploy || sources.deploy !== true)) {
    const text = sources.env[entry.env];
    if (text !== undefined) {
      const value = parseOrThrow(entry, text, entry.env, "environment");
      if (value !== undefined) return value;
    }
  }
  return entry.default;
}

function parseOrThrow(
  // deno-lint-ignore no-explicit-any
  entry: Setting<any, any>,
  text: string,
  name: string,
  origin: "flag" | "environment",
): unknown {
  try {
    return entry.parser.parse(text, name);
  } catch (error) {
    throw new SettingError((error as Error).message, origin, { cause: error });
  }
}

/** The runtime server's options a resolved settings object sets. */
export type SettingsServerOptions =
  & Required<
    Pick<
      RuntimeServerOptions,
      | "maxBodyBytes"
      | "mcp"
      | "maxActiveRuns"
      | "pendingTimeoutMs"
      | "maxEventStreams"
      | "maxEventStreamsPerPrincipal"
      | "webhookIntake"
      | "runLeaseMs"
      | "tokenExchange"
      | "notifications"
      | "providerTimeoutMs"
      | "authorityLeaseMs"
    >
  >
  & Pick<RuntimeServerOptions, "cors" | "retentionMs" | "publicUrl">;

/**
 * The runtime server options of resolved `serve` settings, as `serve` and the Deploy-style entry
 * pass them on (the listener, the store and the provider settings are the entries' own).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveSettings, SERVE_SETTINGS, serverOptionsOf } from "./settings.ts";
 * const settings = resolveSettings(SERVE_SETTINGS, { env: { AUTOMATION_RUNTIME_RETENTION_DAYS: "2" } });
 * assert.equal(serverOptionsOf(settings).retentionMs, 2 * 86_400_000);
 * ```
 */
export function serverOptionsOf(settings: ServeSettings): SettingsServerOptions {
  return {
    maxBodyBytes: settings.maxBodyBytes,
    mcp: {
      allowedOrigins: settings.mcpAllowedOrigins,
      allowedHosts: settings.mcpAllowedHosts,
      maxReplayBytesPerSession: settings.mcpReplayBytesPerSession,
      maxReplayBytes: settings.mcpReplayBytes,
    },
    maxActiveRuns: settings.maxActiveRuns,
    pendingTimeoutMs: settings.pendingTimeoutMs,
    maxEventStreams: settings.maxEventStreams,
    maxEventStreamsPerPrincipal: settings.maxEventStreamsPerPrincipal,
    webhookIntake: {
      maxBodyBytes: settings.webhookMaxBodyBytes,
      maxUnverified: settings.webhookMaxUnverified,
    },
    runLeaseMs: settings.runLeaseMs,
    tokenExchange: {
      allowLoopbackHttp: settings.oidcAllowLoopbackHttp,
      perPolicyPerMinute: settings.exchangesPerMinute,
      totalPerMinute: settings.exchangesPerMinuteTotal,
    },
    notifications: {
      allowPrivateTargets: settings.notificationPrivateTargets,
      maxSubscriptionsPerPrincipal: settings.maxWebhookSubscriptions,
    },
    providerTimeoutMs: settings.providerTimeoutMs,
    authorityLeaseMs: settings.authorityLeaseMs,
    cors: settings.corsOrigins === undefined ? undefined : { allowedOrigins: settings.corsOrigins },
    retentionMs: settings.retentionDays * DAY_MS,
    ...(settings.publicUrl !== undefined ? { publicUrl: settings.publicUrl } : {}),
  };
}
