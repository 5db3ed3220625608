/**
 * The gateway's provider settings and its one provider client.
 *
 * The credential comes only from the environment or the provider file (never a flag): the file is
 * `RUNTIME_PROVIDER_ENV`, else `provider.env` beside the bootstrap secret file, a dotenv file
 * checked like the secret file (mode 0600, readable, parseable; otherwise `serve` fails closed
 * naming the path). The environment wins over the file, variable by variable; flags win over
 * both for the non-secret settings. Without a credential runs are disabled.
 *
 * The client is built through the provider registry (`createProviderManagedAgentProviderModule`
 * registered in a `ProviderRegistry`), so its headers, retries and timeouts are the library's.
 * The client library is loaded when the first run request needs it, not at startup (with
 * `--unstable-lazy-dynamic-imports`, as `serve` runs).
 *
 * @module
 */
import type { FetchLike, ProviderManagedAgentClient } from "../../client/mod.ts";
import { BootstrapError } from "../bootstrap/errors.ts";
import { readProtectedDotenv } from "../bootstrap/secret_file.ts";

/** Environment variables of the provider settings. */
export const PROVIDER_VARIABLES: Readonly<{
  apiKey: "AUTOMATION_RUNTIME_PROVIDER_API_KEY";
  authToken: "AUTOMATION_RUNTIME_PROVIDER_AUTH_TOKEN";
  baseUrl: "AUTOMATION_RUNTIME_PROVIDER_BASE_URL";
  defaultAgentId: "AUTOMATION_RUNTIME_DEFAULT_AGENT_ID";
  defaultEnvironmentId: "AUTOMATION_RUNTIME_DEFAULT_ENVIRONMENT_ID";
  webhookSecrets: "AUTOMATION_RUNTIME_PROVIDER_WEBHOOK_SECRETS";
}> = Object.freeze(
  {
    apiKey: "AUTOMATION_RUNTIME_PROVIDER_API_KEY",
    authToken: "AUTOMATION_RUNTIME_PROVIDER_AUTH_TOKEN",
    baseUrl: "AUTOMATION_RUNTIME_PROVIDER_BASE_URL",
    defaultAgentId: "AUTOMATION_RUNTIME_DEFAULT_AGENT_ID",
    defaultEnvironmentId: "AUTOMATION_RUNTIME_DEFAULT_ENVIRONMENT_ID",
    webhookSecrets: "AUTOMATION_RUNTIME_PROVIDER_WEBHOOK_SECRETS",
  } as const,
);

/** Environment variable naming the provider file. */
export const PROVIDER_FILE_VARIABLE = "RUNTIME_PROVIDER_ENV";

/** Name of the provider file beside the bootstrap secret file. */
export const PROVIDER_FILE_NAME = "provider.env";

/** The provider settings `serve` resolved. The credential is held, never printed. */
export interface ProviderSettings {
  /** `x-api-key` credential, when configured. */
  readonly apiKey?: string;
  /** Bearer token credential, when configured (wins over `apiKey`). */
  readonly authToken?: string;
  /** Base URL of the provider API. */
  readonly baseUrl?: string;
  /** Agent used when a start names none. */
  readonly defaultAgentId?: string;
  /** Environment used when a start names none. */
  readonly defaultEnvironmentId?: string;
  /**
   * Signing secrets of provider webhooks (several during a rotation), never a flag; absent: no
   * webhook intake.
   */
  readonly webhookSecrets?: readonly string[];
}

/** Flags of `serve` that override the provider settings' non-secret values. */
export interface ProviderFlags {
  /** `--provider-base-url`. */
  baseUrl?: string;
  /** `--default-agent`. */
  defaultAgentId?: string;
  /** `--default-environment`. */
  defaultEnvironmentId?: string;
}

/** Options of {@linkcode resolveProviderSettings}. */
export interface ResolveProviderOptions {
  /** The environment (default: the process's). */
  env?: Record<string, string>;
  /** The bootstrap secret file path; the provider file defaults to its directory. */
  secretFilePath: string;
  /** Flag values. */
  flags?: ProviderFlags;
}

/** Where the provider file is: `RUNTIME_PROVIDER_ENV`, else beside the secret file. */
export function providerFilePath(secretFilePath: string, env: Record<string, string>): string {
  const named = env[PROVIDER_FILE_VARIABLE];
  if (named !== undefined && named !== "") return named;
  const slash = Math.max(secretFilePath.lastIndexOf("/"), secretFilePath.lastIndexOf("\\"));
  return slash === -1
    ? PROVIDER_FILE_NAME
    : `${secretFilePath.slice(0, slash + 1)}${PROVIDER_FILE_NAME}`;
}

/**
 * `text` as a provider base URL: an http or https URL, else null.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerBaseUrl } from "./provider.ts";
 * assert.equal(providerBaseUrl("https://provider.example")?.host, "provider.example");
 * assert.equal(providerBaseUrl("ftp://provider.example"), null);
 * ```
 */
export function providerBaseUrl(text: string): URL | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  return url.protocol === "https:" || url.protocol === "http:" ? url : null;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

/**
 * Resolves the provider settings from flags, the environment and the provider file. Throws a
 * {@linkcode BootstrapError} (naming the path or variable, never a value) for an insecure,
 * unreadable or unparseable file or an invalid base URL.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveProviderSettings } from "./provider.ts";
 * const settings = await resolveProviderSettings({
 *   env: { AUTOMATION_RUNTIME_PROVIDER_API_KEY: "k", RUNTIME_PROVIDER_ENV: "/nonexistent/p.env" },
 *   secretFilePath: "/nonexistent/bootstrap.env",
 *   flags: { baseUrl: "https://provider.example" },
 * });
 * assert.equal(settings.baseUrl, "https://provider.example");
 * assert.equal(settings.apiKey, "k");
 * ```
 */
export async function resolveProviderSettings(
  options: ResolveProviderOptions,
): Promise<ProviderSettings> {
  const env = options.env ?? Deno.env.toObject();
  const path = providerFilePath(options.secretFilePath, env);
  // A runtime started without read permission (say on PostgreSQL with the bootstrap in the
  // environment) has no file to read: its settings come from the environment alone.
  const readable = Deno.permissions.querySync({ name: "read", path }).state === "granted";
  const file = readable ? await readProtectedDotenv(path, "provider file") ?? {} : {};
  const pick = (name: string): string | undefined => nonEmpty(env[name]) ?? nonEmpty(file[name]);
  const flags = options.flags ?? {};
  const baseUrl = nonEmpty(flags.baseUrl) ?? pick(PROVIDER_VARIABLES.baseUrl);
  if (baseUrl !== undefined) {
    if (providerBaseUrl(baseUrl) === null) {
      throw new BootstrapError(
        "invalidValue",
        `The provider base URL (--provider-base-url or ${PROVIDER_VARIABLES.baseUrl}) is not an http(s) URL`,
      );
    }
  }
  const settings: {
    -readonly [K in keyof ProviderSettings]: ProviderSettings[K];
  } = {};
  const apiKey = pick(PROVIDER_VARIABLES.apiKey);
  const authToken = pick(PROVIDER_VARIABLES.authToken);
  if (apiKey !== undefined) settings.apiKey = apiKey;
  if (authToken !== undefined) settings.authToken = authToken;
  if (baseUrl !== undefined) settings.baseUrl = baseUrl;
  const agent = nonEmpty(flags.defaultAgentId) ?? pick(PROVIDER_VARIABLES.defaultAgentId);
  const environment = nonEmpty(flags.defaultEnvironmentId) ??
    pick(PROVIDER_VARIABLES.defaultEnvironmentId);
  if (agent !== undefined) settings.defaultAgentId = agent;
  if (environment !== undefined) settings.defaultEnvironmentId = environment;
  const secrets = pick(PROVIDER_VARIABLES.webhookSecrets)?.split(",").map((item) => item.trim())
    .filter((item) => item !== "");
  if (secrets !== undefined && secrets.length > 0) {
    settings.webhookSecrets = Object.freeze(secrets);
  }
  if ((apiKey !== undefined || authToken !== undefined) && baseUrl === undefined) {
    const credential = apiKey !== undefined
      ? PROVIDER_VARIABLES.apiKey
      : PROVIDER_VARIABLES.authToken;
    const where = nonEmpty(env[credential]) !== undefined ? "the environment" : path;
    throw new BootstrapError(
      "invalidValue",
      `A provider credential is set (${credential} in ${where}) but no base URL: pass --provider-base-url URL, set ${PROVIDER_VARIABLES.baseUrl}, or add the line ${PROVIDER_VARIABLES.baseUrl}=URL to the provider file ${path} (\`automation-runtime provider init --base-url URL --force\` writes both)`,
    );
  }
  return Object.freeze(settings);
}

/** Whether the settings hold a credential, so runs are enabled. */
export function hasProviderCredential(settings: ProviderSettings | undefined): boolean {
  return settings !== undefined &&
    (settings.apiKey !== undefined || settings.authToken !== undefined);
}

/** Options of {@linkcode createGatewayProviderClient}. */
export interface GatewayClientOptions {
  /** The fetch the client uses (tests, benchmarks). */
  fetchImpl?: FetchLike;
  /** Unary call timeout in ms (default: the client's, 60000). */
  defaultTimeoutMs?: number;
}

/**
 * Builds the gateway's one managed-agents client through the provider registry, or resolves to
 * null when the settings hold no credential.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createGatewayProviderClient } from "./provider.ts";
 * assert.equal(await createGatewayProviderClient({}), null);
 * const client = await createGatewayProviderClient({
 *   apiKey: "<API_KEY>",
 *   baseUrl: "https://provider.example",
 * });
 * assert.equal(client?.getRuntimeCapabilities().runs, true);
 * ```
 */
export async function createGatewayProviderClient(
  settings: ProviderSettings,
  options: GatewayClientOptions = {},
): Promise<ProviderManagedAgentClient | null> {
  if (!hasProviderCredential(settings)) return null;
  const { createProviderManagedAgentProviderModule, ProviderRegistry } = await import(
    "../../client/registry.ts"
  );
  const module = createProviderManagedAgentProviderModule({
    apiKey: settings.apiKey,
    authToken: settings.authToken,
    agentId: settings.defaultAgentId,
    environmentId: settings.defaultEnvironmentId,
    defaultTimeoutMs: options.defaultTimeoutMs,
  });
  const registry = new ProviderRegistry({
    baseUrl: settings.baseUrl,
    fetchImpl: options.fetchImpl,
  }).register(module);
  return registry.createClient("provider-managed-agents");
}
