/**
 * The Deploy-style entry: a module whose default export is `{ fetch }`, as `deno serve` and
 * Deno Deploy-style hosts run it, several isolates or workers at once.
 *
 * ```sh
 * deno serve --parallel --allow-net --allow-env --unstable-kv server/deploy.ts
 * ```
 *
 * (`deno task deploy-local` runs it on 127.0.0.1:8000.) What it does when loaded:
 *
 * 1. reads the bootstrap credential from the four `AUTOMATION_RUNTIME_BOOTSTRAP_*` variables
 *    only: no secret file is read, none is generated, nothing is written to the file system.
 *    Without them the module fails to load with one clear message, so the host serves nothing;
 * 2. opens the store `AUTOMATION_RUNTIME_STORE` names (`postgres://…` or a KV path), else the
 *    host's own KV (`Deno.openKv()` with no path);
 * 3. claims the store for this bootstrap (a rotated-away bootstrap is refused), then serves.
 *
 * Every isolate answers with the same truth: a revocation made through any of them holds for the
 * next request on all of them (see `server/authenticator.ts`). `AUTOMATION_RUNTIME_CORS_ORIGINS`,
 * `AUTOMATION_RUNTIME_RETENTION_DAYS`, `AUTOMATION_RUNTIME_MCP_ALLOWED_ORIGINS` and
 * `AUTOMATION_RUNTIME_MCP_ALLOWED_HOSTS` work as for `serve`.
 *
 * @module
 */
import { resolveEnvironmentBootstrap } from "./bootstrap/resolve.ts";
import { parseCorsOrigins } from "./cors.ts";
import { createJsonLogger } from "./log.ts";
import { parseAllowedHosts, parseAllowedOrigins } from "./mcp/origin.ts";
import { createRuntimeServer, type RuntimeServer } from "./server.ts";
import { openKvStore } from "./store/kv.ts";
import { openStore } from "./store/mod.ts";

// Every type of the server (`RuntimeServer` leads to most of them), so that this entry point
// documents itself; types only, so loading this entry loads no more than it runs.
export type * from "./mod.ts";

/** Options of {@linkcode createDeployServer}. */
export interface DeployServerOptions {
  /** The environment to read (default: the process environment). */
  env?: Record<string, string | undefined>;
}

/** Raised when the Deploy-style entry cannot start; the message says what to set. */
export class DeployStartError extends Error {
  /** Stable error code. */
  readonly code = "deployStartFailed" as const;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { DeployStartError } from "./deploy.ts";
   * assert.equal(new DeployStartError("no bootstrap").code, "deployStartFailed");
   * ```
   */
  constructor(message: string, options?: ErrorOptions) {
    super(`automation-runtime: ${message}`, options);
    this.name = "DeployStartError";
  }
}

function list<T>(
  env: Record<string, string | undefined>,
  name: string,
  parse: (text: string) => T,
): T | undefined {
  const text = env[name];
  if (text === undefined) return undefined;
  try {
    return parse(text);
  } catch (error) {
    throw new DeployStartError(`${name}: ${(error as Error).message}`);
  }
}

/**
 * Builds the runtime server of the Deploy-style entry (steps 1 to 3 of the module doc).
 *
 * @example
 * ```ts ignore
 * import { createDeployServer } from "./deploy.ts";
 * const server = await createDeployServer();
 * Deno.serve(server.handler);
 * ```
 */
export async function createDeployServer(
  options: DeployServerOptions = {},
): Promise<RuntimeServer> {
  const env = options.env ?? Deno.env.toObject();
  let bootstrap;
  try {
    bootstrap = resolveEnvironmentBootstrap(env);
  } catch (error) {
    throw new DeployStartError((error as Error).message, { cause: error });
  }
  const cors = list(env, "AUTOMATION_RUNTIME_CORS_ORIGINS", parseCorsOrigins);
  const retentionDays = list(env, "AUTOMATION_RUNTIME_RETENTION_DAYS", (text) => {
    const days = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
    if (!(days >= 1 && days <= 36_500)) throw new Error("must be an integer from 1 to 36500");
    return days;
  });
  const mcpOrigins = list(env, "AUTOMATION_RUNTIME_MCP_ALLOWED_ORIGINS", parseAllowedOrigins);
  const mcpHosts = list(env, "AUTOMATION_RUNTIME_MCP_ALLOWED_HOSTS", parseAllowedHosts);
  const location = env.AUTOMATION_RUNTIME_STORE;
  let store;
  try {
    store = location === undefined || location === ""
      ? await openKvStore({ namespace: bootstrap.namespace })
      : await openStore({ location, namespace: bootstrap.namespace });
  } catch (error) {
    throw new DeployStartError(`Cannot open the store: ${(error as Error).message}`, {
      cause: error,
    });
  }
  try {
    await store.claimAuthority(Date.now());
  } catch (error) {
    await store.close();
    throw new DeployStartError(`Cannot serve this store: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return createRuntimeServer({
    bootstrap,
    store,
    logger: createJsonLogger(),
    cors: cors === undefined ? undefined : { allowedOrigins: cors },
    retentionMs: retentionDays === undefined ? undefined : retentionDays * 86_400_000,
    mcp: { allowedOrigins: mcpOrigins, allowedHosts: mcpHosts ?? ["*"] },
  });
}

// Runs only when this module is the entry point (`deno serve server/deploy.ts`), so importing it
// for createDeployServer starts nothing.
let server: RuntimeServer | null = null;
if (import.meta.main) server = await createDeployServer();

/** The `{ fetch }` that `deno serve` and Deploy-style hosts call. */
const entry: { fetch(request: Request): Promise<Response> } = {
  fetch(request: Request): Promise<Response> {
    if (server === null) {
      return Promise.reject(new DeployStartError("not started: run this module as the entry"));
    }
    return server.handler(request);
  },
};
export default entry;
