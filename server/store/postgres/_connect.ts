/**
 * Builds the postgres.js connection pool for a store URL without ever echoing the URL: a
 * malformed URL yields a fixed message, and notices from the server are dropped instead of being
 * printed to stdout.
 *
 * @module
 */
import postgres from "postgres";

/** Options of {@linkcode connectPostgres}. */
export interface ConnectOptions {
  /** Pool size per process (default: the URL's `max`, `PGMAX`, else 10). */
  maxConnections?: number;
  /**
   * Seconds to wait for a connection before a query fails (default: the URL's
   * `connect_timeout`, `PGCONNECT_TIMEOUT`, else 5). Bounds how long a request waits during an
   * outage before it gets 503.
   */
  connectTimeoutSeconds?: number;
}

/** Raised for a store URL that is not a `postgres://` or `postgresql://` URL. */
export class StoreUrlError extends TypeError {
  /** Stable error code. */
  readonly code = "invalidStoreUrl" as const;
  /**
   * Creates the error. The message never contains the URL.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { StoreUrlError } from "./_connect.ts";
   * const error = new StoreUrlError("Invalid PostgreSQL store URL");
   * assert.equal(error.name, "StoreUrlError");
   * ```
   */
  constructor(message: string) {
    super(message);
    this.name = "StoreUrlError";
  }
}

/**
 * Whether `url` selects the PostgreSQL backend (`postgres://` or `postgresql://`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isPostgresUrl } from "./_connect.ts";
 * assert.equal(isPostgresUrl("postgres://app@db:5432/app"), true);
 * ```
 */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

/**
 * Seconds a pooled connection waits before reconnecting after `retries` failed attempts:
 * 50 ms doubling up to 1 s. The driver's own default grows to 20 s, which would hold requests
 * that long during an outage and delay recovery by as much once the database is back.
 */
function reconnectDelay(retries: number): number {
  return Math.min(0.05 * 2 ** Math.max(retries - 1, 0), 1);
}

/**
 * Opens a lazy connection pool (nothing connects until the first query).
 *
 * @example
 * ```ts ignore
 * import { connectPostgres } from "./_connect.ts";
 * const sql = connectPostgres("postgres://app@127.0.0.1:5432/app");
 * await sql`SELECT 1`;
 * await sql.end();
 * ```
 */
export function connectPostgres(url: string, options: ConnectOptions = {}): postgres.Sql {
  if (!isPostgresUrl(url)) {
    throw new StoreUrlError(
      "Invalid PostgreSQL store URL: expected postgres://user@host:port/database",
    );
  }
  let query: URLSearchParams;
  try {
    query = new URL(url).searchParams;
  } catch {
    throw new StoreUrlError(
      "Invalid PostgreSQL store URL: it does not parse (percent-encode special characters in the password)",
    );
  }
  const settings: postgres.Options<Record<string, postgres.PostgresType>> = {
    onnotice: () => {},
    connection: { application_name: "automation-runtime" },
  };
  if (options.maxConnections !== undefined) settings.max = options.maxConnections;
  if (options.connectTimeoutSeconds !== undefined) {
    settings.connect_timeout = options.connectTimeoutSeconds;
  } else if (!query.has("connect_timeout") && !Deno.env.get("PGCONNECT_TIMEOUT")) {
    settings.connect_timeout = 5;
  }
  if (!query.has("backoff") && !Deno.env.get("PGBACKOFF")) settings.backoff = reconnectDelay;
  try {
    return postgres(url, settings);
  } catch (error) {
    if (error instanceof Error && error.name === "NotCapable") throw error;
    throw new StoreUrlError("Invalid PostgreSQL store URL: the driver rejected it");
  }
}
