/**
 * `automation-runtime init`: generates the bootstrap credential and writes the secret file.
 *
 * @module
 */
import { BootstrapError } from "../server/bootstrap/errors.ts";
import { SECRET_FILE_VARIABLE } from "../server/bootstrap/resolve.ts";
import { defaultSecretFilePath, writeSecretFile } from "../server/bootstrap/secret_file.ts";
import {
  DEFAULT_BOOTSTRAP_CAPABILITIES,
  DEFAULT_TTL_DAYS,
  formatSecretFile,
  generateBootstrapValues,
  parseCapabilityList,
} from "../server/bootstrap/variables.ts";
import { parseArgs, parseIntegerFlag, UsageError } from "./_args.ts";
import { printErr, printOut, PROGRAM, reportError } from "./_output.ts";

/** Help text of `init`. */
export const INIT_HELP: string =
  `Usage: ${PROGRAM} init [--ttl-days N] [--path FILE] [--force] [--capabilities LIST]

Generates a bootstrap credential, writes it to the secret file (mode 0600, directory 0700)
and prints its bearer once on stdout. Guidance goes to stderr.

Options:
  --ttl-days N         Lifetime in days, 1 to 3650 (default ${DEFAULT_TTL_DAYS})
  --path FILE          Secret file to write (default: $${SECRET_FILE_VARIABLE}, else
                       <config dir>/automation-runtime/bootstrap.env)
  --force              Replace an existing secret file; principals issued under the old
                       bootstrap stop working once the service restarts
  --capabilities LIST  Comma-separated capabilities of the bootstrap principal
                       (default ${DEFAULT_BOOTSTRAP_CAPABILITIES.join(",")})
  -h, --help           Show this help`;

/**
 * Runs `init` with the arguments after the subcommand name and returns the exit code: 0 when the
 * file was written, 1 when it could not be (an existing file without `--force` included), 2 on a
 * usage error.
 *
 * @example
 * ```ts ignore
 * import { initCommand } from "./init.ts";
 * Deno.exit(await initCommand(["--ttl-days", "7", "--path", "/tmp/demo/bootstrap.env"]));
 * ```
 */
export async function initCommand(args: string[]): Promise<number> {
  try {
    const parsed = parseArgs(args, {
      command: "init",
      string: ["ttl-days", "path", "capabilities"],
      boolean: ["force"],
    });
    if (parsed.help) {
      printOut(INIT_HELP);
      return 0;
    }
    const ttlText = parsed.strings.get("ttl-days");
    const ttlDays = ttlText === undefined
      ? DEFAULT_TTL_DAYS
      : parseIntegerFlag(ttlText, { command: "init", flag: "ttl-days", min: 1, max: 3650 });
    const capabilityText = parsed.strings.get("capabilities");
    const capabilities = capabilityText === undefined
      ? DEFAULT_BOOTSTRAP_CAPABILITIES
      : parseCapabilityList(capabilityText);
    if (typeof capabilities === "string") {
      throw new UsageError("init", `--capabilities ${capabilities}`);
    }
    const force = parsed.booleans.has("force");
    const path = parsed.strings.get("path") ?? secretFilePathFromEnv();

    const values = generateBootstrapValues({ ttlDays, capabilities });
    await writeSecretFile(path, formatSecretFile(values), { force });
    printOut(values.token);
    printErr(
      `Wrote the bootstrap credential to ${path} (principal ${values.principalId}, capabilities ${
        values.capabilities.join(",")
      }, expires ${values.expiresAt}).`,
    );
    printErr(
      "The bearer above is printed only this once. Clients read it from AUTOMATION_RUNTIME_TOKEN or from the secret file.",
    );
    if (force) {
      printErr(
        "The previous bootstrap is replaced: restart the service; principals issued under it then get 401.",
      );
    }
    return 0;
  } catch (error) {
    return reportError(error);
  }
}

function secretFilePathFromEnv(): string {
  const named = Deno.env.get(SECRET_FILE_VARIABLE);
  if (named !== undefined) {
    if (named.trim() === "") {
      throw new BootstrapError("invalidValue", `${SECRET_FILE_VARIABLE} is set but empty`);
    }
    return named;
  }
  return defaultSecretFilePath();
}
