/**
 * `automation-runtime init`: generates the bootstrap credential and writes the secret file;
 * `init --rotate` replaces its bearer and keeps its authority key (issued principals stay
 * valid), `init --force` starts over (every issued principal is revoked).
 *
 * @module
 */
import { BootstrapError } from "../server/bootstrap/errors.ts";
import { SECRET_FILE_VARIABLE } from "../server/bootstrap/resolve.ts";
import {
  defaultSecretFilePath,
  readSecretFile,
  writeSecretFile,
} from "../server/bootstrap/secret_file.ts";
import {
  DEFAULT_BOOTSTRAP_CAPABILITIES,
  DEFAULT_TTL_DAYS,
  formatSecretFile,
  generateBootstrapValues,
  parseBootstrapValues,
  parseCapabilityList,
  rotateBootstrapValues,
} from "../server/bootstrap/variables.ts";
import type { Capability } from "../server/store/types.ts";
import { parseArgs, parseIntegerFlag, UsageError } from "./_args.ts";
import { argSpecOf, commandHelp } from "./_help.ts";
import { printErr, printOut, PROGRAM, reportError } from "./_output.ts";

/**
 * Runs `init` with the arguments after the subcommand name and returns the exit code: 0 when the
 * file was written, 1 when it could not be (an existing file without `--force` or `--rotate`, no
 * file to rotate), 2 on a usage error.
 *
 * @example
 * ```ts ignore
 * import { initCommand } from "./init.ts";
 * Deno.exit(await initCommand(["--ttl-days", "7", "--path", "/tmp/demo/bootstrap.env"]));
 * ```
 */
export async function initCommand(args: string[]): Promise<number> {
  try {
    const parsed = parseArgs(args, argSpecOf("init"));
    if (parsed.help) {
      printOut(commandHelp("init"));
      return 0;
    }
    const force = parsed.booleans.has("force");
    const rotate = parsed.booleans.has("rotate");
    if (force && rotate) {
      throw new UsageError(
        "init",
        "Give either --rotate (keep issued principals) or --force, not both",
      );
    }
    const ttlText = parsed.strings.get("ttl-days");
    const ttlDays = ttlText === undefined
      ? undefined
      : parseIntegerFlag(ttlText, { command: "init", flag: "ttl-days", min: 1, max: 3650 });
    const capabilityText = parsed.strings.get("capabilities");
    const capabilities = capabilityText === undefined
      ? undefined
      : parseCapabilityList(capabilityText);
    if (typeof capabilities === "string") {
      throw new UsageError("init", `--capabilities ${capabilities}`);
    }
    const path = parsed.strings.get("path") ?? secretFilePathFromEnv();

    if (rotate) return await rotateSecretFile(path, { ttlDays, capabilities });
    const values = generateBootstrapValues({
      ttlDays: ttlDays ?? DEFAULT_TTL_DAYS,
      capabilities: capabilities ?? DEFAULT_BOOTSTRAP_CAPABILITIES,
    });
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
        "The previous bootstrap is replaced: restart the service; every principal issued under it then gets 401.",
      );
    }
    return 0;
  } catch (error) {
    return reportError(error);
  }
}

/**
 * `init --rotate`: the next bearer of the secret file at `path`, written over it atomically;
 * the authority key, and with it every issued principal, stays.
 */
async function rotateSecretFile(
  path: string,
  options: { ttlDays?: number; capabilities?: Capability[] },
): Promise<number> {
  const raw = await readSecretFile(path);
  if (raw === null) {
    throw new Error(`No secret file at ${path} to rotate: run \`${PROGRAM} init\` first`);
  }
  const current = parseBootstrapValues(raw, { origin: path });
  const values = rotateBootstrapValues(current, options);
  await writeSecretFile(path, formatSecretFile(values), { force: true });
  printOut(values.token);
  printErr(
    `Rotated the bootstrap bearer in ${path} (principal ${values.principalId}, generation ${values.generation}, expires ${values.expiresAt}). Issued principals stay valid.`,
  );
  printErr(
    "The bearer above is printed only this once. Restart the service with this file: from then on every replica on the store refuses the old bearer.",
  );
  return 0;
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
