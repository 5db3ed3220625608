/**
 * Bootstrap resolution for `serve`: environment, then the secret file, then loopback auto-init,
 * else fail closed.
 *
 * @module
 */
import { type BootstrapCredential, deriveBootstrapCredential } from "./credential.ts";
import type { BootstrapSource } from "./credential.ts";
import { BootstrapError } from "./errors.ts";
import { defaultSecretFilePath, readSecretFile, writeSecretFile } from "./secret_file.ts";
import {
  BOOTSTRAP_PREFIX,
  BOOTSTRAP_VARIABLE_NAMES,
  type BootstrapValues,
  formatSecretFile,
  generateBootstrapValues,
  OPTIONAL_BOOTSTRAP_VARIABLE_NAMES,
  parseBootstrapValues,
} from "./variables.ts";

export { BootstrapError } from "./errors.ts";
export type { BootstrapErrorCode } from "./errors.ts";

/** Environment variable naming the secret file. */
export const SECRET_FILE_VARIABLE = "RUNTIME_BOOTSTRAP_ENV";

/** Writes one line of output; used for the one-time bearer and the guidance. */
export type LineWriter = (line: string) => void;

/** Options of {@linkcode resolveBootstrap}. */
export interface ResolveBootstrapOptions {
  /** The address `serve` binds; only `127.0.0.1` and `::1` allow auto-init. */
  hostname: string;
  /** Environment to read (default: the process environment). */
  env?: Record<string, string | undefined>;
  /** Secret file path; wins over `RUNTIME_BOOTSTRAP_ENV` and the default location. */
  secretFilePath?: string;
  /** Receives the bearer printed once by auto-init (default: a line on stdout). */
  stdout?: LineWriter;
  /** Receives the auto-init guidance (default: a line on stderr). */
  stderr?: LineWriter;
  /** Current time in ms, for the expiry check (default `Date.now()`). */
  now?: number;
}

/** Result of {@linkcode resolveBootstrap}. */
export interface ResolvedBootstrap {
  /** The credential the server enrolls (digests only). */
  credential: BootstrapCredential;
  /** The secret file path in effect (also when the environment won); the store lives beside it. */
  secretFilePath: string;
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "[::1]"]);

function writeLine(stream: "stdout" | "stderr"): LineWriter {
  const target = stream === "stdout" ? Deno.stdout : Deno.stderr;
  return (line) => {
    const bytes = new TextEncoder().encode(line + "\n");
    let written = 0;
    while (written < bytes.length) written += target.writeSync(bytes.subarray(written));
  };
}

/**
 * Resolves the bootstrap credential in the order of the spec:
 *
 * 1. the environment: when any `AUTOMATION_RUNTIME_BOOTSTRAP_*` variable is set, all four must be
 *    present and valid, else it fails closed naming what is missing (never falls through);
 * 2. the secret file (`secretFilePath`, else `RUNTIME_BOOTSTRAP_ENV`, else
 *    `<config dir>/automation-runtime/bootstrap.env`);
 * 3. loopback auto-init when `hostname` is `127.0.0.1` or `::1`: a credential is generated,
 *    written to the secret file, and its bearer printed once on stdout (guidance on stderr);
 * 4. otherwise a {@linkcode BootstrapError} with code `noBootstrap`.
 *
 * An expired bootstrap fails with code `bootstrapExpired` and tells to run `init --force`.
 */
export async function resolveBootstrap(
  options: ResolveBootstrapOptions,
): Promise<ResolvedBootstrap> {
  const env = options.env ?? Deno.env.toObject();
  const now = options.now ?? Date.now();
  const fromEnv = readEnvironment(env);
  const secretFilePath = locateSecretFile(options, env);
  if (fromEnv !== null) {
    return { credential: enroll(fromEnv, "environment", now), secretFilePath };
  }

  const raw = await readSecretFile(secretFilePath);
  if (raw !== null) {
    const values = parseBootstrapValues(raw, { origin: secretFilePath });
    return { credential: enroll(values, "file", now, secretFilePath), secretFilePath };
  }

  if (!LOOPBACK.has(options.hostname)) {
    throw new BootstrapError(
      "noBootstrap",
      `No bootstrap credential for non-loopback bind ${options.hostname}: set the ${BOOTSTRAP_PREFIX}* variables or run \`automation-runtime init\` (looked for ${secretFilePath})`,
    );
  }

  const values = generateBootstrapValues({ now });
  try {
    await writeSecretFile(secretFilePath, formatSecretFile(values));
  } catch (error) {
    // Another process initialised the same file first: use its credential.
    if (error instanceof BootstrapError && error.code === "secretFileExists") {
      const raced = await readSecretFile(secretFilePath);
      if (raced !== null) {
        const parsed = parseBootstrapValues(raced, { origin: secretFilePath });
        return { credential: enroll(parsed, "file", now, secretFilePath), secretFilePath };
      }
    }
    throw error;
  }
  (options.stdout ?? writeLine("stdout"))(values.token);
  (options.stderr ?? writeLine("stderr"))(
    `No bootstrap credential found; generated one for loopback use and wrote it to ${secretFilePath} (expires ${values.expiresAt}). The bearer above is shown once; clients also read it from AUTOMATION_RUNTIME_TOKEN or that file.`,
  );
  return { credential: enroll(values, "auto-init", now), secretFilePath };
}

/**
 * Resolves the bootstrap credential from the environment only, for hosts with no file system of
 * their own (the Deploy-style entry): no secret file is read and none is generated. Fails closed
 * with a {@linkcode BootstrapError}: `noBootstrap` when no variable is set,
 * `incompleteEnvironment`, `invalidValue` or `bootstrapExpired` as {@linkcode resolveBootstrap}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BootstrapError, resolveEnvironmentBootstrap } from "./resolve.ts";
 * assert.throws(() => resolveEnvironmentBootstrap({}), BootstrapError);
 * const credential = resolveEnvironmentBootstrap({
 *   AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: "art_" + "a".repeat(43),
 *   AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: "0b7a2f6e-2c56-4d1c-9a41-6a4b8b9fb0c1",
 *   AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: "authority:admin",
 *   AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: "2999-01-01T00:00:00Z",
 * });
 * assert.equal(credential.source, "environment");
 * ```
 */
export function resolveEnvironmentBootstrap(
  env: Record<string, string | undefined>,
  now: number = Date.now(),
): BootstrapCredential {
  const values = readEnvironment(env);
  if (values === null) {
    throw new BootstrapError(
      "noBootstrap",
      `No bootstrap credential: set the four ${BOOTSTRAP_PREFIX}* variables (${
        BOOTSTRAP_VARIABLE_NAMES.join(", ")
      }); this entry reads no secret file and never generates one`,
    );
  }
  return enroll(values, "environment", now);
}

function locateSecretFile(
  options: ResolveBootstrapOptions,
  env: Record<string, string | undefined>,
): string {
  if (options.secretFilePath !== undefined) return options.secretFilePath;
  const named = env[SECRET_FILE_VARIABLE];
  if (named !== undefined) {
    if (named.trim() === "") {
      throw new BootstrapError("invalidValue", `${SECRET_FILE_VARIABLE} is set but empty`);
    }
    return named;
  }
  return defaultSecretFilePath({ env });
}

function readEnvironment(env: Record<string, string | undefined>): BootstrapValues | null {
  const present = Object.keys(env).filter((name) =>
    name.startsWith(BOOTSTRAP_PREFIX) && env[name] !== undefined
  );
  if (present.length === 0) return null;
  const missing = BOOTSTRAP_VARIABLE_NAMES.filter((name) => env[name] === undefined);
  const unknown = present.filter((name) =>
    !BOOTSTRAP_VARIABLE_NAMES.includes(name) && !OPTIONAL_BOOTSTRAP_VARIABLE_NAMES.includes(name)
  );
  if (missing.length > 0) {
    const extra = unknown.length > 0 ? `; unknown ${unknown.join(", ")}` : "";
    throw new BootstrapError(
      "incompleteEnvironment",
      `Bootstrap environment is incomplete: missing ${
        missing.join(", ")
      }${extra} (set all four or none)`,
    );
  }
  const raw: Record<string, string> = {};
  for (const name of BOOTSTRAP_VARIABLE_NAMES) raw[name] = env[name] as string;
  for (const name of OPTIONAL_BOOTSTRAP_VARIABLE_NAMES) {
    if (env[name] !== undefined) raw[name] = env[name] as string;
  }
  return parseBootstrapValues(raw, { origin: "the environment" });
}

function enroll(
  values: BootstrapValues,
  source: BootstrapSource,
  now: number,
  path?: string,
): BootstrapCredential {
  if (Date.parse(values.expiresAt) <= now) {
    const fix = source === "environment"
      ? `supply fresh ${BOOTSTRAP_PREFIX}* variables or unset them and run \`automation-runtime init --force\``
      : `run \`automation-runtime init --force\`${path ? ` to replace ${path}` : ""}`;
    throw new BootstrapError(
      "bootstrapExpired",
      `Bootstrap credential from ${
        path ?? "the environment"
      } expired at ${values.expiresAt}; ${fix}`,
    );
  }
  return deriveBootstrapCredential({ ...values, source });
}
