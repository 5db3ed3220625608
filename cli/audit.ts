/**
 * `automation-runtime audit list`: the service's audit log (needs `authority:admin`), as JSON
 * on stdout.
 *
 * @module
 */
import { RuntimeServiceError } from "../sdk/mod.ts";
import { checkPrincipalId, parseArgs, parseIntegerFlag, UsageError } from "./_args.ts";
import { clientFromEnvironment, describeServiceError } from "./_client.ts";
import { argSpecOf, commandHelp, groupHelp } from "./_help.ts";
import { printOut, reportError } from "./_output.ts";

const ACTION = /^[a-z][A-Za-z]*(?:\.[a-z_]+)+$/;

/**
 * Runs `audit` with the arguments after the word `audit` and returns the exit code: 0 on
 * success, 1 when the service refused or could not be reached, 2 on a usage error.
 *
 * @example
 * ```ts ignore
 * import { auditCommand } from "./audit.ts";
 * Deno.exit(await auditCommand(["list", "--action", "run.started"]));
 * ```
 */
export async function auditCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  try {
    switch (sub) {
      case "--help":
      case "-h":
        printOut(groupHelp("audit"));
        return 0;
      case "list":
        return await list(rest);
      case undefined:
        throw new UsageError("audit", "Missing subcommand: list");
      default:
        throw new UsageError("audit", `Unknown subcommand ${sub.slice(0, 40)}`);
    }
  } catch (error) {
    return reportError(error instanceof RuntimeServiceError ? describeServiceError(error) : error);
  }
}

async function list(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("audit list"));
  if (parsed.help) {
    printOut(commandHelp("audit list"));
    return 0;
  }
  const principalId = parsed.strings.get("principal");
  if (principalId !== undefined) checkPrincipalId(principalId, "audit", "--principal");
  const action = parsed.strings.get("action");
  if (action !== undefined && (action.length > 64 || !ACTION.test(action))) {
    throw new UsageError("audit", "--action must be an action name such as run.started");
  }
  const limitText = parsed.strings.get("limit");
  const limit = limitText === undefined
    ? undefined
    : parseIntegerFlag(limitText, { command: "audit", flag: "limit", min: 1, max: 100 });
  const cursor = parsed.strings.get("cursor");
  const all = parsed.booleans.has("all");
  if (all && cursor !== undefined) throw new UsageError("audit", "Give either --all or --cursor");
  const client = await clientFromEnvironment();
  if (all) {
    const entries = [];
    for await (const entry of client.audit.listAll({ limit, principalId, action })) {
      entries.push(entry);
    }
    printOut(JSON.stringify({ entries, nextCursor: null }, null, 2));
  } else {
    const page = await client.audit.list({ limit, cursor, principalId, action });
    printOut(JSON.stringify(page, null, 2));
  }
  return 0;
}
