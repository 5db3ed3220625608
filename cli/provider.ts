/**
 * `automation-runtime provider init`: writes the provider credential the service uses for runs
 * into the provider file, so it never has to sit in a shell history, an argument or the
 * service's environment.
 *
 * The credential is read from standard input (typed without echo on a terminal, or piped) and
 * written as one plain dotenv line, `AUTOMATION_RUNTIME_PROVIDER_API_KEY=<key>` (with
 * `--auth-token`: `AUTOMATION_RUNTIME_PROVIDER_AUTH_TOKEN=<token>`, sent to the provider as
 * `Authorization: Bearer`), followed by one line for each of `--base-url`, `--default-agent` and
 * `--default-environment` given (`AUTOMATION_RUNTIME_PROVIDER_BASE_URL=…`,
 * `AUTOMATION_RUNTIME_DEFAULT_AGENT_ID=…`, `AUTOMATION_RUNTIME_DEFAULT_ENVIRONMENT_ID=…`, which
 * `serve` reads after its flags and environment). The file is written like the bootstrap secret
 * file: directory 0700,
 * file created 0600 from the start, a temporary file renamed into place, an existing file kept
 * unless `--force`. The credential is never printed.
 *
 * @module
 */
import { BootstrapError } from "../server/bootstrap/errors.ts";
import { defaultSecretFilePath, writeSecretFile } from "../server/bootstrap/secret_file.ts";
import {
  PROVIDER_FILE_NAME,
  PROVIDER_FILE_VARIABLE,
  PROVIDER_VARIABLES,
  providerBaseUrl,
} from "../server/runs/provider.ts";
import { parseArgs, type ParsedArgs, UsageError } from "./_args.ts";
import { argSpecOf, commandHelp, groupHelp } from "./_help.ts";
import { printErr, printOut, PROGRAM, reportError } from "./_output.ts";
import { readSecretFromStdin } from "./_stdin.ts";
import { SECRET_FILE_VARIABLE } from "./command_table.ts";

export { PROVIDER_FILE_NAME, PROVIDER_FILE_VARIABLE };
/** The variable holding a provider API key (sent as `x-api-key`). */
export const PROVIDER_API_KEY_VARIABLE = PROVIDER_VARIABLES.apiKey;
/** The variable holding a provider bearer token (sent as `Authorization: Bearer`). */
export const PROVIDER_AUTH_TOKEN_VARIABLE = PROVIDER_VARIABLES.authToken;

/**
 * The characters a credential may hold: those the plain dotenv form stores as they are, so
 * every dotenv reader gets back exactly what was typed.
 */
const CREDENTIAL = /^[A-Za-z0-9_.,:;+/=@%~^-]{8,4096}$/;

/**
 * Runs `provider` with the arguments after the word `provider` and returns the exit code: 0 when
 * the file was written, 1 when it could not be (an existing file without `--force`, no or an
 * invalid credential on standard input), 2 on a usage error.
 *
 * @example
 * ```ts ignore
 * import { providerCommand } from "./provider.ts";
 * Deno.exit(await providerCommand(["init", "--path", "/tmp/demo/provider.env"]));
 * ```
 */
export async function providerCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  try {
    switch (sub) {
      case "--help":
      case "-h":
        printOut(groupHelp("provider"));
        return 0;
      case "init":
        return await init(rest);
      case undefined:
        throw new UsageError("provider", "Missing subcommand: init");
      default:
        throw new UsageError("provider", `Unknown subcommand ${sub.slice(0, 40)}`);
    }
  } catch (error) {
    return reportError(error);
  }
}

async function init(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("provider init"));
  if (parsed.help) {
    printOut(commandHelp("provider init"));
    return 0;
  }
  const force = parsed.booleans.has("force");
  const bearer = parsed.booleans.has("auth-token");
  const settings = settingLines(parsed);
  const path = parsed.strings.get("path") ?? providerFilePathFromEnv();
  // Refuse before asking for the key; the write below refuses again, atomically.
  if (!force && await exists(path)) throw alreadyExists(path);

  const what = bearer ? "provider bearer token" : "provider API key";
  const credential = await readSecretFromStdin(`${what[0].toUpperCase()}${what.slice(1)}: `);
  if (credential === "") throw new Error(`No ${what} on standard input`);
  if (!CREDENTIAL.test(credential)) {
    // Never echo the input: describe what is wrong with it instead.
    throw new Error(
      `The ${what} on standard input is not one line of 8 to 4096 characters from A-Z a-z 0-9 _.,:;+/=@%~^-`,
    );
  }
  const variable = bearer ? PROVIDER_AUTH_TOKEN_VARIABLE : PROVIDER_API_KEY_VARIABLE;
  const contents = [
    "# automation-runtime provider credential. Keep it private (mode 0600); never commit it.",
    `${variable}=${credential}`,
    ...settings,
    "",
  ].join("\n");
  try {
    await writeSecretFile(path, contents, { force });
  } catch (error) {
    if (error instanceof BootstrapError && error.code === "secretFileExists") {
      throw alreadyExists(path);
    }
    if (error instanceof BootstrapError) {
      throw new Error(error.message.replace("secret file", "provider file"), { cause: error });
    }
    throw error;
  }
  const names = [variable, ...settings.map((line) => line.slice(0, line.indexOf("=")))];
  printErr(
    `Wrote the ${what} to ${path} (${
      names.join(", ")
    }; mode 0600). Restart \`${PROGRAM} serve\` to use it.`,
  );
  return 0;
}

/** An id the plain dotenv form stores as it is: no blanks, quotes, `#`, `$` or backslash. */
const PLAIN_ID = /^[A-Za-z0-9_.,:;+/=@%~^-]{1,256}$/;

/**
 * The provider file lines of `--base-url`, `--default-agent` and `--default-environment`, under
 * the names of their variables (`serve` reads them from the file after the environment).
 */
function settingLines(parsed: ParsedArgs): string[] {
  const lines: string[] = [];
  const baseUrl = parsed.strings.get("base-url");
  if (baseUrl !== undefined) {
    const url = providerBaseUrl(baseUrl);
    // What the plain dotenv form stores as it is, and never a credential in the URL.
    if (
      url === null || url.username !== "" || url.password !== "" ||
      !/^[\x21-\x7e]+$/.test(baseUrl) || /["'`#$\\]/.test(baseUrl)
    ) {
      throw new UsageError(
        "provider init",
        "--base-url must be an http(s) URL without credentials, quotes, # or $",
      );
    }
    lines.push(`${PROVIDER_VARIABLES.baseUrl}=${baseUrl}`);
  }
  for (
    const [flag, variable] of [
      ["default-agent", PROVIDER_VARIABLES.defaultAgentId],
      ["default-environment", PROVIDER_VARIABLES.defaultEnvironmentId],
    ] as const
  ) {
    const value = parsed.strings.get(flag);
    if (value === undefined) continue;
    if (!PLAIN_ID.test(value)) {
      throw new UsageError(
        "provider init",
        `--${flag} must be 1 to 256 characters from A-Z a-z 0-9 _.,:;+/=@%~^-`,
      );
    }
    lines.push(`${variable}=${value}`);
  }
  return lines;
}

/**
 * The provider file path from the environment: `RUNTIME_PROVIDER_ENV`, else `provider.env` in
 * the directory of the bootstrap secret file (`RUNTIME_BOOTSTRAP_ENV`, else its default path).
 *
 * @example
 * ```ts ignore
 * import { providerFilePathFromEnv } from "./provider.ts";
 * console.log(providerFilePathFromEnv()); // "/home/ada/.config/automation-runtime/provider.env"
 * ```
 */
export function providerFilePathFromEnv(): string {
  const named = Deno.env.get(PROVIDER_FILE_VARIABLE);
  if (named !== undefined) {
    if (named.trim() === "") throw new Error(`${PROVIDER_FILE_VARIABLE} is set but empty`);
    return named;
  }
  const secret = Deno.env.get(SECRET_FILE_VARIABLE);
  if (secret !== undefined && secret.trim() === "") {
    throw new Error(`${SECRET_FILE_VARIABLE} is set but empty`);
  }
  const bootstrapPath = secret ?? defaultSecretFilePath();
  return bootstrapPath.replace(/[^\\/]*$/, PROVIDER_FILE_NAME);
}

function alreadyExists(path: string): Error {
  return new Error(`Provider file ${path} already exists; pass --force to replace it`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw new Error(`Cannot read provider file ${path}: ${(error as Error).message}`);
  }
}
