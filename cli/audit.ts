/**
 * `automation-runtime audit list`: the service's audit log (needs `authority:admin`), as JSON
 * on stdout.
 *
 * @module
 */
import { RuntimeServiceError } from "../sdk/mod.ts";
import { parseArgs, parseIntegerFlag, UsageError } from "./_args.ts";
import { CLIENT_ENVIRONMENT_HELP, clientFromEnvironment, describeServiceError } from "./_client.ts";
import { printOut, PROGRAM, reportError } from "./_output.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ACTION = /^[a-z]+(?:\.[a-z_]+)+$/;

/** Help text of `audit`. */
export const AUDIT_HELP: string = `Usage:
  ${PROGRAM} audit list [--principal ID] [--action A] [--limit N] [--cursor C] [--all]

list    Prints one page of the audit log: {"entries": [...], "nextCursor": ...}.
        --principal ID   entries whose actor or subject is this principal
        --action A       principal.issued, principal.revoked, run.started, run.message,
                         run.cancelled, tool.confirmed, tool.responded or webhook.accepted
        --limit N        page size, 1 to 100
        --cursor C       the nextCursor of the previous page
        --all            every page (--limit is then the page size); nextCursor is null

${CLIENT_ENVIRONMENT_HELP}`;

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
        printOut(AUDIT_HELP);
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
  const parsed = parseArgs(args, {
    command: "audit",
    string: ["principal", "action", "limit", "cursor"],
    boolean: ["all"],
  });
  if (parsed.help) {
    printOut(AUDIT_HELP);
    return 0;
  }
  const principalId = parsed.strings.get("principal");
  if (principalId !== undefined && !UUID.test(principalId)) {
    throw new UsageError("audit", "--principal must be a lower-case UUID");
  }
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
