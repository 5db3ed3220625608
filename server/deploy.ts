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
 * 1. reads the bootstrap credential from the `AUTOMATION_RUNTIME_BOOTSTRAP_*` variables (the
 *    four a bootstrap needs, and the authority key and generation when it has them) only: no
 *    secret file is read, none is generated, nothing is written to the file system.
 *    Without them the module fails to load with one clear message, so the host serves nothing;
 * 2. opens the store `AUTOMATION_RUNTIME_STORE` names (`postgres://…` or a KV path), else the
 *    host's own KV (`Deno.openKv()` with no path);
 * 3. claims the store for this bootstrap (a rotated-away bootstrap is refused; the isolates of a
 *    bootstrap it replaced acknowledge that first), then serves.
 *
 * Every isolate answers with the same truth: each holds its own authority lease, and a revocation
 * made through any of them is answered once all of them acknowledged it (see
 * `server/authenticator.ts`). The settings the table of
 * `server/settings.ts` marks for this entry (the store, the CORS and MCP lists, the retention) are
 * read from their variables as `serve` reads them; the host owns the listener, and without a
 * provider credential this entry serves no runs, so the other settings keep their defaults.
 *
 * @module
 */
import { claimAuthority } from "./authority_lease.ts";
import { bootstrapClaim } from "./bootstrap/credential.ts";
import { resolveEnvironmentBootstrap } from "./bootstrap/resolve.ts";
import { createJsonLogger } from "./log.ts";
import { createRuntimeServer, type RuntimeServer } from "./server.ts";
import {
  resolveSettings,
  SERVE_SETTINGS,
  serverOptionsOf,
  type ServeSettings,
} from "./settings.ts";
import { openKvStore } from "./store/kv/mod.ts";
import { openStore } from "./store/mod.ts";

// Every type of the server (`RuntimeServer` leads to most of them), so that this entry point
// documents itself; types only, so loading this entry loads no more than it runs.
export type * from "./mod.ts";

/** Options of {@linkcode createDeployServer}. */
export interface DeployServerOptions {
  /** The environment to read (default: the process environment). */
  env?: Record<string, string | undefined>;
  /**
   * Clock, ms since the epoch (default `Date.now`): the bootstrap's expiry check, the claim of
   * the store and the server's `now`.
   */
  now?: () => number;
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
  const now = options.now ?? Date.now;
  let bootstrap;
  try {
    bootstrap = resolveEnvironmentBootstrap(env, now());
  } catch (error) {
    throw new DeployStartError((error as Error).message, { cause: error });
  }
  let settings: ServeSettings;
  try {
    settings = resolveSettings(SERVE_SETTINGS, { env, deploy: true });
  } catch (error) {
    throw new DeployStartError((error as Error).message, { cause: error });
  }
  const location = settings.store;
  let store;
  try {
    store = location === undefined
      ? await openKvStore({ namespace: bootstrap.namespace })
      : await openStore({ location, namespace: bootstrap.namespace });
  } catch (error) {
    throw new DeployStartError(`Cannot open the store: ${(error as Error).message}`, {
      cause: error,
    });
  }
  try {
    await claimAuthority(store, now(), bootstrapClaim(bootstrap));
  } catch (error) {
    await store.close();
    throw new DeployStartError(`Cannot serve this store: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const server = serverOptionsOf(settings);
  return createRuntimeServer({
    ...server,
    bootstrap,
    store,
    now,
    logger: createJsonLogger({ now }),
    // No bind address to judge by: any `Host`, as on a non-loopback bind.
    mcp: { ...server.mcp, allowedHosts: server.mcp.allowedHosts ?? ["*"] },
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
