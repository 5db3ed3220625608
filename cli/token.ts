/**
 * `automation-runtime token exchange`: a CI job trades its OIDC ID token for a short-lived
 * principal under a trust policy, with the SDK's `exchangeToken`, and prints
 * `export AUTOMATION_RUNTIME_TOKEN=…` for the job's shell to `eval`. No stored secret anywhere.
 *
 * The ID token comes from a file (`--token-file`), from GitHub Actions' token endpoint
 * (`--audience`: `ACTIONS_ID_TOKEN_REQUEST_URL` and `ACTIONS_ID_TOKEN_REQUEST_TOKEN`, which the
 * runner sets for a job with `permissions: id-token: write`), or else from standard input; never
 * from an argument, which the process list and shell history would show. The URL comes from
 * `AUTOMATION_RUNTIME_URL` (default `http://127.0.0.1:7777`). The bearer is printed on stdout
 * only, in the `export` line; nothing else holds it or the ID token. Its flags and help are the
 * command table's (`command_table.ts`).
 *
 * @module
 */
import {
  exchangeToken,
  requestGitHubActionsIdToken,
  RuntimeServiceError,
  TRUST_POLICY_NAME,
} from "../sdk/mod.ts";
import { parseArgs, UsageError } from "./_args.ts";
import { describeServiceError, idempotencyKeyFlag, serviceUrl } from "./_client.ts";
import { argSpecOf, commandHelp, groupHelp } from "./_help.ts";
import { printErr, printOut, reportError } from "./_output.ts";
import { readStdinText } from "./_stdin.ts";

/** The variable the `export` line sets. */
export const TOKEN_EXPORT_VARIABLE = "AUTOMATION_RUNTIME_TOKEN";

/** The largest ID token file or input read, in bytes (an ID token is at most 16 KiB). */
const MAX_ID_TOKEN_BYTES = 16 * 1024 + 2;

/**
 * Runs `token` with the arguments after the word `token` and returns the exit code: 0 on
 * success, 1 when the token could not be had or the service refused it, 2 on a usage error.
 *
 * @example
 * ```ts ignore
 * import { tokenCommand } from "./token.ts";
 * Deno.exit(await tokenCommand(["exchange", "--policy", "ci", "--token-file", "id.jwt"]));
 * ```
 */
export async function tokenCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  try {
    switch (sub) {
      case "--help":
      case "-h":
        printOut(groupHelp("token"));
        return 0;
      case "exchange":
        return await exchange(rest);
      case undefined:
        throw new UsageError("token", "Missing subcommand: exchange");
      default:
        throw new UsageError("token", `Unknown subcommand ${sub.slice(0, 40)}`);
    }
  } catch (error) {
    return reportError(error instanceof RuntimeServiceError ? describeServiceError(error) : error);
  }
}

async function exchange(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("token exchange"));
  if (parsed.help) {
    printOut(commandHelp("token exchange"));
    return 0;
  }
  const policy = parsed.strings.get("policy");
  if (policy === undefined) throw new UsageError("token", "--policy is required");
  if (!TRUST_POLICY_NAME.test(policy)) {
    throw new UsageError(
      "token",
      "--policy must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
    );
  }
  const file = parsed.strings.get("token-file");
  const audience = parsed.strings.get("audience");
  if (file !== undefined && audience !== undefined) {
    throw new UsageError("token", "Give either --token-file or --audience, not both");
  }
  if (audience !== undefined && !/^[\x21-\x7e]{1,256}$/.test(audience)) {
    throw new UsageError("token", "--audience must be 1 to 256 printable characters");
  }
  const idempotencyKey = idempotencyKeyFlag("token", parsed.strings.get("idempotency-key"));
  const baseUrl = serviceUrl();
  const idToken = audience !== undefined
    ? await requestGitHubActionsIdToken({ audience })
    : await readIdToken(file);
  const issued = await exchangeToken({ baseUrl, idToken, policy, idempotencyKey });
  printOut(`export ${TOKEN_EXPORT_VARIABLE}=${issued.bearer}`);
  printErr(`Exchanged for principal ${issued.principalId}, expires ${issued.expiresAt}`);
  return 0;
}

/** The ID token of a file, or of standard input when `file` is undefined. */
async function readIdToken(file: string | undefined): Promise<string> {
  let text: string;
  if (file === undefined) {
    if (Deno.stdin.isTerminal()) {
      throw new UsageError(
        "token",
        "No ID token: pipe it on standard input, or give --token-file or --audience",
      );
    }
    text = await readStdinText(MAX_ID_TOKEN_BYTES);
  } else {
    try {
      const info = await Deno.stat(file);
      if (!info.isFile || info.size > MAX_ID_TOKEN_BYTES) {
        throw new Error(`${file} is not a file the size of an ID token`);
      }
      text = new TextDecoder("utf-8", { fatal: true }).decode(await Deno.readFile(file));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) throw new Error(`No such file: ${file}`);
      if (error instanceof TypeError) throw new Error(`${file} is not UTF-8 text`);
      throw error;
    }
  }
  const token = text.trim();
  if (token === "") throw new Error("The ID token is empty");
  if (!/^[A-Za-z0-9_.=-]+$/.test(token)) {
    throw new Error("The input is not an ID token (base64url segments joined by dots)");
  }
  return token;
}
