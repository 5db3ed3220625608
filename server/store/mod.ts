/**
 * Opening the authority store: Deno KV by default, PostgreSQL for a `postgres://` URL.
 *
 * @module
 */
import { openKvStore } from "./kv/mod.ts";
import type { Store } from "./types.ts";

export * from "./types.ts";
export { openKvStore } from "./kv/mod.ts";
export type { KvStoreOptions } from "./kv/mod.ts";
export { type PartMethod, type WrapPartMethod, wrapStore } from "./wrap.ts";

/** Options of {@linkcode openStore}. */
export interface OpenStoreOptions {
  /**
   * Where the store is: a `postgres://` or `postgresql://` URL, a KV file path, or omitted for
   * `defaultKvPath`. It may hold a password, so it is never put in an error message.
   */
  location?: string;
  /** Namespace derived from the bootstrap credential. */
  namespace: string;
  /** KV file used when `location` is omitted (`store.kv` beside the secret file). */
  defaultKvPath?: string;
  /**
   * The store's clock, ms since the epoch (default `Date.now`): read only where a write's expiry
   * is not given by its caller.
   */
  now?: () => number;
}

/** Raised for a store location this runtime cannot use. The message never holds the location. */
export class StoreLocationError extends TypeError {
  /** Stable error code. */
  readonly code = "invalidStoreLocation" as const;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { StoreLocationError } from "./mod.ts";
   * const error = new StoreLocationError("Unsupported store URL scheme mysql");
   * assert.equal(error.name, "StoreLocationError");
   * ```
   */
  constructor(message: string) {
    super(message);
    this.name = "StoreLocationError";
  }
}

const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;

/**
 * Opens the store a location names. `postgres://` and `postgresql://` URLs open the PostgreSQL
 * backend (loaded only then); any other URL scheme is refused; anything else is a KV file path.
 * Without a location the KV file `defaultKvPath` is used. A KV file that does not exist yet is
 * created mode 0600, its missing directories mode 0700.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openStore } from "./mod.ts";
 * const store = await openStore({ location: ":memory:", namespace: "0".repeat(32) });
 * assert.equal(store.kind, "kv");
 * await store.close();
 * ```
 */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  const location = options.location;
  const scheme = location === undefined ? null : SCHEME.exec(location)?.[1]?.toLowerCase();
  if (scheme === "postgres" || scheme === "postgresql") {
    // The one place the PostgreSQL backend is chosen; it is imported only when used.
    const { openPostgresStore } = await import("./postgres/mod.ts");
    return await openPostgresStore({
      url: location!,
      namespace: options.namespace,
      now: options.now,
    });
  }
  if (scheme !== null && scheme !== undefined) {
    throw new StoreLocationError(
      `Unsupported store URL scheme ${scheme}: use postgres:// or a path`,
    );
  }
  let path = location;
  if (path === undefined || path === "") {
    if (options.defaultKvPath === undefined) {
      throw new StoreLocationError("No store location and no default KV path");
    }
    path = options.defaultKvPath;
  }
  if (path !== ":memory:") await prepareKvFile(path);
  return await openKvStore({ path, namespace: options.namespace, now: options.now });
}

/**
 * Creates a KV file's missing directories (mode 0700) and the file itself (mode 0600, empty)
 * when it does not exist yet, so the store, which holds principals' digests and the audit log,
 * is never readable by other users: Deno KV would create it with the process's default mode
 * (0644 under the usual umask). SQLite creates the file's `-wal` and `-shm` companions with
 * the file's own mode. An existing file keeps the mode it has.
 */
async function prepareKvFile(file: string): Promise<void> {
  const slash = Math.max(file.lastIndexOf("/"), file.lastIndexOf("\\"));
  if (slash > 0) {
    try {
      await Deno.mkdir(file.slice(0, slash), { recursive: true, mode: 0o700 });
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
  }
  try {
    const created = await Deno.open(file, { write: true, createNew: true, mode: 0o600 });
    created.close();
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
  }
}
