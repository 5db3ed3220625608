/**
 * Gives tests a PostgreSQL database.
 *
 * - When `AUTOMATION_RUNTIME_TEST_PG_URL` is set (CI sets it), each {@linkcode createTestDatabase}
 *   creates a fresh database in that cluster and drops it on close.
 * - Otherwise, when PostgreSQL binaries are found (`AUTOMATION_RUNTIME_TEST_PG_BIN` or
 *   `/usr/lib/postgresql/<version>/bin`), a throwaway cluster is started on a free 127.0.0.1
 *   port, once per test file, and stopped when the file ends.
 * - Otherwise PostgreSQL tests are ignored with the reason in their name, except when `CI` is
 *   `true`: then they run and fail, because a missing database in CI is a broken pipeline.
 *
 * {@linkcode startPostgresCluster} starts a private cluster a test may stop and restart without
 * disturbing other tests. As root, the binaries run as `AUTOMATION_RUNTIME_TEST_PG_USER`
 * (default `postgres`) through `runuser`.
 *
 * @module
 */
import postgres from "postgres";

/** Where PostgreSQL tests get their database. */
export type PostgresMode = "external" | "local" | "none";

/** What this machine offers for PostgreSQL tests. */
export interface PostgresAvailability {
  /** `external`: the CI cluster; `local`: binaries to start one; `none`: nothing. */
  readonly mode: PostgresMode;
  /** Directory of `initdb` and `pg_ctl`, when found. */
  readonly bin?: string;
  /** User the binaries run as (when we are root), else undefined. */
  readonly runAs?: string;
  /** Why tests cannot run, when they cannot. */
  readonly reason: string;
}

function commandOk(command: string, args: string[]): boolean {
  try {
    return new Deno.Command(command, { args, stdout: "null", stderr: "null" }).outputSync()
      .success;
  } catch {
    return false;
  }
}

function isExecutable(path: string): boolean {
  try {
    const info = Deno.statSync(path);
    return info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0;
  } catch {
    return false;
  }
}

function findBin(): string | undefined {
  const candidates: string[] = [];
  const fromEnv = Deno.env.get("AUTOMATION_RUNTIME_TEST_PG_BIN");
  if (fromEnv) candidates.push(fromEnv);
  try {
    const versions = [...Deno.readDirSync("/usr/lib/postgresql")]
      .filter((entry) => entry.isDirectory)
      .map((entry) => entry.name)
      .sort((a, b) => Number(b) - Number(a));
    for (const version of versions) candidates.push(`/usr/lib/postgresql/${version}/bin`);
  } catch {
    // No Debian-style install.
  }
  return candidates.find((dir) => isExecutable(`${dir}/initdb`) && isExecutable(`${dir}/pg_ctl`));
}

function detect(): PostgresAvailability {
  const bin = findBin();
  let runAs: string | undefined;
  let binReason = "";
  if (bin === undefined) {
    binReason = "no PostgreSQL binaries (set AUTOMATION_RUNTIME_TEST_PG_BIN)";
  } else if (Deno.uid() === 0) {
    runAs = Deno.env.get("AUTOMATION_RUNTIME_TEST_PG_USER") ?? "postgres";
    if (!commandOk("runuser", ["-u", runAs, "--", "true"])) {
      binReason = `running as root and cannot run PostgreSQL as user ${runAs}`;
    }
  }
  const usableBin = bin !== undefined && binReason === "" ? bin : undefined;
  if (Deno.env.get("AUTOMATION_RUNTIME_TEST_PG_URL")) {
    return { mode: "external", bin: usableBin, runAs, reason: binReason };
  }
  if (usableBin !== undefined) return { mode: "local", bin: usableBin, runAs, reason: "" };
  return { mode: "none", reason: binReason };
}

/**
 * What this machine offers, computed once when the module loads.
 *
 * @example
 * ```ts
 * import { postgresAvailability } from "./postgres.ts";
 * console.log(postgresAvailability.mode);
 * ```
 */
export const postgresAvailability: PostgresAvailability = Object.freeze(detect());

/** Whether `CI` is `true`: then a missing database fails the tests instead of skipping them. */
export const isCi: boolean = Deno.env.get("CI") === "true";

/**
 * Whether tests needing a database should be ignored here (never in CI).
 *
 * @example
 * ```ts
 * import { ignorePostgresTests } from "./postgres.ts";
 * Deno.test({ name: "needs a database", ignore: ignorePostgresTests(), fn() {} });
 * ```
 */
export function ignorePostgresTests(): boolean {
  return postgresAvailability.mode === "none" && !isCi;
}

/**
 * Whether tests needing a private cluster (start, stop, restart) should be ignored here (never
 * in CI).
 *
 * @example
 * ```ts
 * import { ignoreClusterTests } from "./postgres.ts";
 * Deno.test({ name: "restarts the database", ignore: ignoreClusterTests(), fn() {} });
 * ```
 */
export function ignoreClusterTests(): boolean {
  return postgresAvailability.bin === undefined && !isCi;
}

/**
 * A suffix for test names saying why they are skipped, or an empty string.
 *
 * @example
 * ```ts
 * import { skipNote } from "./postgres.ts";
 * console.log(`postgres store${skipNote()}`);
 * ```
 */
export function skipNote(options: { cluster?: boolean } = {}): string {
  const ignored = options.cluster ? ignoreClusterTests() : ignorePostgresTests();
  return ignored ? ` (skipped: ${postgresAvailability.reason})` : "";
}

function unavailable(what: string): Error {
  return new Error(
    `PostgreSQL is required for ${what}${
      isCi ? " when CI=true" : ""
    }: ${postgresAvailability.reason}`,
  );
}

async function run(command: string, args: string[], runAs?: string): Promise<string> {
  const [program, argv] = runAs === undefined
    ? [command, args]
    : ["runuser", ["-u", runAs, "--", command, ...args]];
  const output = await new Deno.Command(program, { args: argv, stdout: "piped", stderr: "piped" })
    .output();
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  if (!output.success) throw new Error(`${command.split("/").pop()} failed: ${text.trim()}`);
  return text;
}

function runSync(command: string, args: string[], runAs?: string): void {
  const [program, argv] = runAs === undefined
    ? [command, args]
    : ["runuser", ["-u", runAs, "--", command, ...args]];
  try {
    new Deno.Command(program, { args: argv, stdout: "null", stderr: "null" }).outputSync();
  } catch {
    // Best effort at exit.
  }
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

async function ownerIds(user: string): Promise<[number, number]> {
  const uid = Number((await run("id", ["-u", user])).trim());
  const gid = Number((await run("id", ["-g", user])).trim());
  return [uid, gid];
}

/** How {@linkcode PostgresCluster.stop} shuts the server down (`pg_ctl -m`). */
export type StopMode = "smart" | "fast" | "immediate";

/** A private throwaway cluster on 127.0.0.1. */
export interface PostgresCluster {
  /** URL of its `postgres` database as superuser `postgres`, without password. */
  readonly url: string;
  /** Its TCP port. */
  readonly port: number;
  /** Stops the server (default mode `fast`: open connections are terminated). */
  stop(options?: { mode?: StopMode }): Promise<void>;
  /** Starts it again on the same port and data; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and deletes its files. */
  close(): Promise<void>;
  /** Same as {@linkcode PostgresCluster.close}. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts a private cluster (initdb, then pg_ctl start) in a temporary directory.
 *
 * @example
 * ```ts ignore
 * import { startPostgresCluster } from "./postgres.ts";
 * await using cluster = await startPostgresCluster();
 * await cluster.stop();
 * await cluster.start();
 * ```
 */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  const { bin, runAs } = postgresAvailability;
  if (bin === undefined) throw unavailable("a private cluster");
  const root = await Deno.makeTempDir({ prefix: "automation-runtime-pg-" });
  const data = `${root}/data`;
  // Chosen again should the first start fail: between `freePort` and the server's bind, another
  // process of the suite may take the port (initdb runs in between).
  let port = freePort();
  const pgCtl = `${bin}/pg_ctl`;
  const stopSync = () => {
    runSync(pgCtl, ["-D", data, "-m", "immediate", "-w", "stop"], runAs);
    try {
      Deno.removeSync(root, { recursive: true });
    } catch {
      // Already gone.
    }
  };
  globalThis.addEventListener("unload", stopSync);
  let running = false;
  const start = async () => {
    await run(pgCtl, [
      "-D",
      data,
      "-l",
      `${root}/server.log`,
      "-w",
      "-t",
      "30",
      "-o",
      `-c listen_addresses=127.0.0.1 -p ${port} -k ${root} -c fsync=off -c max_connections=200`,
      "start",
    ], runAs);
    running = true;
  };
  const stop = async (options: { mode?: StopMode } = {}) => {
    await run(pgCtl, ["-D", data, "-m", options.mode ?? "fast", "-w", "stop"], runAs);
    running = false;
  };
  try {
    if (runAs !== undefined) {
      const [uid, gid] = await ownerIds(runAs);
      await Deno.chown(root, uid, gid);
    }
    await run(`${bin}/initdb`, [
      "-D",
      data,
      "-U",
      "postgres",
      "--auth=trust",
      "-E",
      "UTF8",
      "--no-sync",
    ], runAs);
    for (let attempt = 1;; attempt++) {
      try {
        await start();
        break;
      } catch (error) {
        if (attempt === 3) throw error;
        port = freePort();
      }
    }
  } catch (error) {
    globalThis.removeEventListener("unload", stopSync);
    stopSync();
    throw error;
  }
  const close = async () => {
    globalThis.removeEventListener("unload", stopSync);
    if (running) await stop({ mode: "immediate" }).catch(() => {});
    await Deno.remove(root, { recursive: true }).catch(() => {});
  };
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop,
    start,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** A fresh database, dropped on close. */
export interface TestDatabase {
  /** Its URL (no password). */
  readonly url: string;
  /** Its name. */
  readonly name: string;
  /** Drops the database, terminating any connection still open to it. */
  close(): Promise<void>;
  /** Same as {@linkcode TestDatabase.close}. */
  [Symbol.asyncDispose](): Promise<void>;
}

let localCluster: Promise<PostgresCluster> | undefined;

async function adminUrl(what: string): Promise<string> {
  const external = Deno.env.get("AUTOMATION_RUNTIME_TEST_PG_URL");
  if (external) return external;
  if (postgresAvailability.mode !== "local") throw unavailable(what);
  localCluster ??= startPostgresCluster();
  return (await localCluster).url;
}

async function admin<T>(url: string, work: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    return await work(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * Creates a fresh, empty database (in the CI cluster, or in this file's throwaway cluster).
 *
 * @example
 * ```ts ignore
 * import { createTestDatabase } from "./postgres.ts";
 * await using db = await createTestDatabase();
 * console.log(db.url);
 * ```
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const base = await adminUrl("this test");
  const name = `art_test_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  await admin(base, (sql) => sql.unsafe(`CREATE DATABASE ${name}`));
  const url = new URL(base);
  url.pathname = `/${name}`;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await admin(base, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  };
  return { url: url.href, name, close, [Symbol.asyncDispose]: close };
}
