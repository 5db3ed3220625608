/**
 * The PostgreSQL store's connections, in one place: {@linkcode connectPostgres} builds the
 * postgres.js pool for a store URL without ever echoing the URL (a malformed URL yields a fixed
 * message, and notices from the server are dropped instead of being printed to stdout), and a
 * {@linkcode PostgresPool} runs every statement of every part through the current pool, maps its
 * failures ({@linkcode toStoreError}), replaces a pool that may be wedged, holds the `LISTEN`
 * connections and closes it all.
 *
 * No connection is ever pinned (no `sql.begin`, no `sql.reserve`): postgres.js 3.4.9 can crash
 * the process when the backend of a pinned connection dies mid-write (porsager/postgres#1208), so
 * every write of the store is one statement.
 *
 * @module
 */
import postgres from "postgres";
import { StoreUnavailableError } from "../types.ts";
import { toStoreError } from "./_errors.ts";
import { guardDriverCrash } from "./_driver_guard.ts";

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
   * import { StoreUrlError } from "./_pool.ts";
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
 * import { isPostgresUrl } from "./_pool.ts";
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
 * import { connectPostgres } from "./_pool.ts";
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

/**
 * A millisecond time as the text of a `bigint` parameter (whole milliseconds).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ms } from "./_pool.ts";
 * assert.equal(ms(1.9), "1");
 * ```
 */
export function ms(value: number): string {
  return String(Math.floor(value));
}

/**
 * How often a statement that lost a race looks again before it gives up. Each statement reads one
 * snapshot; when a racing statement committed after it (a claim released, a row written), a new
 * look with a fresh snapshot sees that commit, so only yet another racing commit in between sends
 * it round again: a few looks suffice, and 8 leaves room. One budget for every part.
 */
export const RACE_ATTEMPTS = 8;

/** Shortest time between two pool replacements caused by connect timeouts, in ms. */
const REFRESH_INTERVAL_MS = 5_000;

/** A `LISTEN` this pool holds. */
interface Listening {
  unlisten(): Promise<void>;
}

/**
 * The connection pool of one open store, as every part uses it.
 *
 * The pool is replaced by a fresh one when a connection may be wedged: after the driver crash
 * caught by `_driver_guard.ts`, and after a connect timeout (postgres.js 3.4.9 can leave a
 * connection that lost its socket mid-write unable to ever send its handshake again). The old
 * pool gets one second to finish what runs on it; anything still hanging there then fails and
 * is answered 503.
 */
export class PostgresPool {
  #sql: postgres.Sql;
  readonly #connect: () => postgres.Sql;
  #closed = false;
  #lastRefresh = Number.NEGATIVE_INFINITY;
  readonly #retiring = new Set<Promise<void>>();
  readonly #listening = new Set<Promise<Listening | null>>();
  readonly #unguard: () => void;

  /**
   * Takes over `sql` (the pool the migration ran on, used first); `connect` opens a fresh one
   * when it must be replaced.
   */
  constructor(sql: postgres.Sql, connect: () => postgres.Sql) {
    this.#sql = sql;
    this.#connect = connect;
    this.#unguard = guardDriverCrash(() => this.#refresh());
  }

  #refresh(): void {
    if (this.#closed) return;
    this.#lastRefresh = performance.now();
    const old = this.#sql;
    this.#sql = this.#connect();
    const retired: Promise<void> = old.end({ timeout: 1 }).catch(() => {}).finally(() => {
      this.#retiring.delete(retired);
    });
    this.#retiring.add(retired);
  }

  /**
   * Runs `operation` on the current pool. A connectivity failure becomes
   * {@linkcode StoreUnavailableError} (503 `storeUnavailable`); anything else (a bug, a
   * constraint violation) reaches the caller unchanged. A closed pool fails at once.
   */
  async run<T>(operation: (sql: postgres.Sql) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError("PostgreSQL store is closed");
    try {
      return await operation(this.#sql);
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (
        code === "CONNECT_TIMEOUT" && performance.now() - this.#lastRefresh > REFRESH_INTERVAL_MS
      ) {
        this.#refresh();
      }
      throw toStoreError(error);
    }
  }

  /**
   * Listens on `channel` on a connection of the current pool until the pool closes; resolves to
   * null when the server refuses (a pooler in transaction mode, say).
   */
  listen(channel: string, onNotify: (payload: string) => void): Promise<Listening | null> {
    if (this.#closed) return Promise.resolve(null);
    const listening = this.#sql.listen(channel, onNotify).catch(() => null);
    this.#listening.add(listening);
    return listening;
  }

  /** Stops listening and closes the pool, letting running queries finish (up to 5 s). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#unguard();
    for (const listening of this.#listening) {
      const meta = await listening;
      await meta?.unlisten().catch(() => {});
    }
    await Promise.all([this.#sql.end({ timeout: 5 }), ...this.#retiring]);
  }
}

/**
 * The listeners of one notification channel, by key: the first {@linkcode ChannelListeners.watch}
 * starts the pool's `LISTEN` (tried again by the next watch when the server refused it), and each
 * notification calls the listeners of the key `keyOf` reads from its payload, with that payload.
 * A listener that throws affects no other.
 *
 * @example
 * ```ts ignore
 * const listeners = new ChannelListeners(pool, "channel", (payload) => payload.split(" ")[1]);
 * const stop = listeners.watch("namespace", () => console.log("woken"));
 * stop();
 * ```
 */
export class ChannelListeners {
  readonly #pool: PostgresPool;
  readonly #channel: string;
  readonly #keyOf: (payload: string) => string | null;
  readonly #listeners = new Map<string, Set<(payload: string) => void>>();
  #listening: Promise<unknown> | null = null;

  /** Listeners of `channel` on `pool`, keyed by `keyOf` (null: a payload nobody listens to). */
  constructor(pool: PostgresPool, channel: string, keyOf: (payload: string) => string | null) {
    this.#pool = pool;
    this.#channel = channel;
    this.#keyOf = keyOf;
  }

  /**
   * Calls `listener` with the payload of each notification for `key`; returns the function that
   * stops it.
   */
  watch(key: string, listener: (payload: string) => void): () => void {
    let set = this.#listeners.get(key);
    if (set === undefined) this.#listeners.set(key, set = new Set());
    // A fresh function per watch, so the same listener may watch twice.
    const entry = (payload: string) => listener(payload);
    set.add(entry);
    this.#listening ??= this.#pool.listen(this.#channel, (payload) => this.#notified(payload))
      .then((listening) => {
        // No LISTEN (a pooler in transaction mode, say): watchers fall back to their polls, and
        // the next watcher tries again.
        if (listening === null) this.#listening = null;
      });
    return () => {
      const current = this.#listeners.get(key);
      current?.delete(entry);
      if (current?.size === 0) this.#listeners.delete(key);
    };
  }

  #notified(payload: string): void {
    const key = this.#keyOf(payload);
    const listeners = key === null ? undefined : this.#listeners.get(key);
    if (listeners === undefined) return;
    for (const listener of listeners) {
      try {
        listener(payload);
      } catch {
        // One listener's failure is its own.
      }
    }
  }
}
