/**
 * The local secret file: where it lives, how it is written (atomically, mode 0600 from the start)
 * and how it is read (mode checked, strictly parsed).
 *
 * @module
 */
import { parsePlainDotenv } from "./_plain_dotenv.ts";
import { BootstrapError } from "./errors.ts";
import { BOOTSTRAP_VARIABLE_NAMES, OPTIONAL_BOOTSTRAP_VARIABLE_NAMES } from "./variables.ts";

/** Name of the application directory under the configuration directory. */
export const APP_DIRECTORY = "automation-runtime";

/** File name of the secret file. */
export const SECRET_FILE_NAME = "bootstrap.env";

/** Largest secret file read, in bytes; anything bigger is not a bootstrap file. */
const MAX_SECRET_FILE_BYTES = 64 * 1024;

/** Environment and platform used to locate the configuration directory. */
export interface ConfigDirectoryOptions {
  /** Environment to read `XDG_CONFIG_HOME`, `HOME`, `APPDATA` from (default `Deno.env`). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Operating system (default `Deno.build.os`). */
  os?: typeof Deno.build.os;
}

function joinPath(os: string, ...parts: string[]): string {
  const separator = os === "windows" ? "\\" : "/";
  return parts.map((part, index) => index === 0 ? part.replace(/[\\/]+$/, "") : part)
    .join(separator);
}

function dirname(path: string): string {
  const index = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  if (index < 0) return ".";
  if (index === 0) return path[0];
  return path.slice(0, index);
}

function readEnv(options: ConfigDirectoryOptions, name: string): string | undefined {
  const value = options.env ? options.env[name] : Deno.env.get(name);
  return value === undefined || value === "" ? undefined : value;
}

/**
 * The operating system's configuration directory: `$XDG_CONFIG_HOME` or `~/.config` on Linux and
 * other Unix systems, `~/Library/Application Support` on macOS, `%APPDATA%` on Windows.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { configDirectory } from "./secret_file.ts";
 * assert.equal(configDirectory({ env: { HOME: "/home/ada" }, os: "linux" }), "/home/ada/.config");
 * ```
 */
export function configDirectory(options: ConfigDirectoryOptions = {}): string {
  const os = options.os ?? Deno.build.os;
  if (os === "windows") {
    const appData = readEnv(options, "APPDATA");
    if (appData === undefined) {
      throw new BootstrapError(
        "noConfigDirectory",
        "Cannot locate the config directory: APPDATA is not set",
      );
    }
    return appData;
  }
  const home = readEnv(options, "HOME");
  if (os === "darwin") {
    if (home === undefined) {
      throw new BootstrapError(
        "noConfigDirectory",
        "Cannot locate the config directory: HOME is not set",
      );
    }
    return joinPath(os, home, "Library", "Application Support");
  }
  const xdg = readEnv(options, "XDG_CONFIG_HOME");
  if (xdg !== undefined && xdg.startsWith("/")) return xdg;
  if (home === undefined) {
    throw new BootstrapError(
      "noConfigDirectory",
      "Cannot locate the config directory: neither XDG_CONFIG_HOME nor HOME is set",
    );
  }
  return joinPath(os, home, ".config");
}

/**
 * The default secret file path: `<config dir>/automation-runtime/bootstrap.env`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultSecretFilePath } from "./secret_file.ts";
 * assert.equal(
 *   defaultSecretFilePath({ env: { XDG_CONFIG_HOME: "/cfg" }, os: "linux" }),
 *   "/cfg/automation-runtime/bootstrap.env",
 * );
 * ```
 */
export function defaultSecretFilePath(options: ConfigDirectoryOptions = {}): string {
  const os = options.os ?? Deno.build.os;
  return joinPath(os, configDirectory(options), APP_DIRECTORY, SECRET_FILE_NAME);
}

/** Options of {@linkcode writeSecretFile}. */
export interface WriteSecretFileOptions {
  /** Replace an existing file (default false: an existing file is an error). */
  force?: boolean;
}

function isAlreadyExists(error: unknown): boolean {
  return error instanceof Deno.errors.AlreadyExists;
}

/**
 * Writes the secret file atomically: the directory is created with mode 0700, the content goes to
 * a temporary file created with mode 0600 (never widened, never chmod-ed afterwards), is flushed
 * with fsync and then renamed over the target, so a crash never leaves a half-written file.
 * Without `force`, an existing file is refused with code `secretFileExists`, even under a race.
 */
export async function writeSecretFile(
  path: string,
  contents: string,
  options: WriteSecretFileOptions = {},
): Promise<void> {
  const force = options.force ?? false;
  const directory = dirname(path);
  if (!force && await exists(path)) {
    throw new BootstrapError(
      "secretFileExists",
      `Secret file ${path} already exists; pass --force to replace it (this revokes every principal issued under it)`,
    );
  }
  const tempPath = `${path}.${crypto.randomUUID()}.tmp`;
  try {
    await Deno.mkdir(directory, { recursive: true, mode: 0o700 });
    const file = await Deno.open(tempPath, { write: true, createNew: true, mode: 0o600 });
    try {
      const bytes = new TextEncoder().encode(contents);
      let written = 0;
      while (written < bytes.length) written += await file.write(bytes.subarray(written));
      await file.sync();
    } finally {
      file.close();
    }
    if (force) {
      await Deno.rename(tempPath, path);
    } else {
      await linkNoClobber(tempPath, path);
    }
    await syncDirectory(directory);
  } catch (error) {
    if (error instanceof BootstrapError) throw error;
    throw new BootstrapError(
      "secretFileWriteFailed",
      `Cannot write secret file ${path}: ${describeFsError(error)}`,
      { cause: error },
    );
  } finally {
    await Deno.remove(tempPath).catch(() => {});
  }
}

async function linkNoClobber(tempPath: string, path: string): Promise<void> {
  try {
    // A hard link never replaces an existing file, so a concurrent writer cannot be clobbered.
    await Deno.link(tempPath, path);
  } catch (error) {
    if (isAlreadyExists(error)) {
      throw new BootstrapError(
        "secretFileExists",
        `Secret file ${path} already exists; pass --force to replace it (this revokes every principal issued under it)`,
      );
    }
    if (
      error instanceof Deno.errors.NotSupported || error instanceof Deno.errors.PermissionDenied
    ) {
      if (await exists(path)) {
        throw new BootstrapError(
          "secretFileExists",
          `Secret file ${path} already exists; pass --force to replace it`,
        );
      }
      await Deno.rename(tempPath, path);
      return;
    }
    throw error;
  }
}

async function syncDirectory(directory: string): Promise<void> {
  if (Deno.build.os === "windows") return;
  try {
    const handle = await Deno.open(directory, { read: true });
    try {
      await handle.sync();
    } finally {
      handle.close();
    }
  } catch {
    // Some file systems do not allow fsync on a directory; the rename itself is still atomic.
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw new BootstrapError(
      "secretFileUnreadable",
      `Cannot read secret file ${path}: ${describeFsError(error)}`,
      { cause: error },
    );
  }
}

function describeFsError(error: unknown): string {
  if (error instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (error instanceof Deno.errors.NotFound) return "not found";
  if (error instanceof Deno.errors.IsADirectory) return "it is a directory";
  if (error instanceof Deno.errors.NotADirectory) return "a parent is not a directory";
  if (error instanceof Deno.errors.AlreadyExists) return "already exists";
  if (error instanceof Error) return error.message.split("\n")[0].replace(/[.]$/, "");
  return String(error);
}

/**
 * Reads and parses the secret file. Returns null when the file does not exist. Throws a
 * {@linkcode BootstrapError} naming the path when the file cannot be read
 * (`secretFileUnreadable`), is readable by group or others on POSIX (`secretFileInsecure`, with
 * the `chmod 600` fix), is not a dotenv file (`secretFileUnparseable`) or lacks one of the four
 * variables (`secretFileIncomplete`). The values are returned unvalidated.
 */
export async function readSecretFile(path: string): Promise<Record<string, string> | null> {
  const parsed = await readProtectedDotenv(path);
  return parsed === null ? null : pickBootstrapValues(path, parsed);
}

/**
 * Reads a dotenv file holding secrets with the secret file's checks (a regular file, not
 * readable by group or others on POSIX, at most a few KiB of UTF-8 `KEY=value` lines) and
 * returns every variable it sets, or null when it does not exist. Failures are
 * {@linkcode BootstrapError}s whose message names `what` and the path, never a value.
 *
 * @example
 * ```ts ignore
 * import { readProtectedDotenv } from "./secret_file.ts";
 * const values = await readProtectedDotenv("/home/ada/.config/automation-runtime/provider.env", "provider file");
 * ```
 */
export async function readProtectedDotenv(
  path: string,
  what = "secret file",
): Promise<Record<string, string> | null> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw unreadable(path, error, what);
  }
  let bytes: Uint8Array;
  try {
    const info = await file.stat().catch((error) => {
      throw unreadable(path, error, what);
    });
    if (!info.isFile) {
      throw new BootstrapError(
        "secretFileUnreadable",
        `Cannot read ${what} ${path}: not a regular file`,
      );
    }
    if (Deno.build.os !== "windows" && info.mode !== null && (info.mode & 0o077) !== 0) {
      const mode = (info.mode & 0o777).toString(8).padStart(4, "0");
      throw new BootstrapError(
        "secretFileInsecure",
        `${what[0].toUpperCase()}${
          what.slice(1)
        } ${path} is readable by group or others (mode ${mode}); run \`chmod 600 ${path}\``,
      );
    }
    if (info.size > MAX_SECRET_FILE_BYTES) {
      throw new BootstrapError(
        "secretFileUnparseable",
        `Cannot parse ${what} ${path}: it is too large`,
      );
    }
    bytes = await readAll(file).catch((error) => {
      throw unreadable(path, error, what);
    });
  } finally {
    file.close();
  }
  const text = decodeSecretFileText(path, bytes, what);
  // dotenv loads Node compatibility code; the file `init` writes never needs it.
  return parsePlainDotenv(text) ?? (await import("dotenv")).parse(text);
}

function unreadable(path: string, error: unknown, what: string): BootstrapError {
  return new BootstrapError(
    "secretFileUnreadable",
    `Cannot read ${what} ${path}: ${describeFsError(error)}`,
    { cause: error },
  );
}

async function readAll(file: Deno.FsFile): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const buffer = new Uint8Array(16 * 1024);
  while (true) {
    const read = await file.read(buffer);
    if (read === null) break;
    chunks.push(buffer.slice(0, read));
    total += read;
    if (total > MAX_SECRET_FILE_BYTES) break;
  }
  const result = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    result.set(chunk, offset);
    offset += chunk.length;
  }
  return result;
}

const ASSIGNMENT = /^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*=/;

/** The file's text, once it is known to be UTF-8 made of comments and assignments only. */
function decodeSecretFileText(path: string, bytes: Uint8Array, what: string): string {
  const fail = (reason: string): never => {
    throw new BootstrapError(
      "secretFileUnparseable",
      `Cannot parse ${what} ${path}: ${reason}`,
    );
  };
  if (bytes.length > MAX_SECRET_FILE_BYTES) fail("it is too large");
  let text = "";
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    fail("it is not UTF-8 text");
  }
  if (text.includes("\0")) fail("it contains a NUL byte");
  // dotenv skips lines it does not understand; a bootstrap file must not contain any.
  const lines = text.split(/\r\n|\r|\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === "" || line.startsWith("#")) continue;
    if (!ASSIGNMENT.test(line)) fail(`line ${i + 1} is not a KEY=value assignment`);
  }
  return text;
}

function pickBootstrapValues(
  path: string,
  parsed: Record<string, string>,
): Record<string, string> {
  const missing = BOOTSTRAP_VARIABLE_NAMES.filter((name) => parsed[name] === undefined);
  if (missing.length > 0) {
    throw new BootstrapError(
      "secretFileIncomplete",
      `Secret file ${path} is missing ${
        missing.join(", ")
      }; recreate it with \`automation-runtime init --force\``,
    );
  }
  const values: Record<string, string> = {};
  for (const name of BOOTSTRAP_VARIABLE_NAMES) values[name] = parsed[name];
  for (const name of OPTIONAL_BOOTSTRAP_VARIABLE_NAMES) {
    if (parsed[name] !== undefined) values[name] = parsed[name];
  }
  return values;
}
