/**
 * `automation-runtime usage`: the tokens and list cost settled in a range, summed by principal,
 * agent or UTC day, as JSON on stdout (`GET /v1/usage` through the SDK). Admins see every
 * principal's usage; everyone else their own.
 *
 * @module
 */
import { RuntimeServiceError, USAGE_GROUPS, type UsageGroupBy } from "../sdk/mod.ts";
import { parseRfc3339 } from "../server/time.ts";
import { checkPrincipalId, parseArgs, UsageError } from "./_args.ts";
import { clientFromEnvironment, describeServiceError } from "./_client.ts";
import { argSpecOf, commandHelp } from "./_help.ts";
import { printOut, reportError } from "./_output.ts";

/**
 * Runs `usage` with the arguments after the word `usage` and returns the exit code: 0 on
 * success, 1 when the service refused or could not be reached, 2 on a usage error.
 *
 * @example
 * ```ts ignore
 * import { usageCommand } from "./usage.ts";
 * Deno.exit(await usageCommand(["--group-by", "agent"]));
 * ```
 */
export async function usageCommand(args: string[]): Promise<number> {
  try {
    const parsed = parseArgs(args, argSpecOf("usage"));
    if (parsed.help) {
      printOut(commandHelp("usage"));
      return 0;
    }
    const time = (flag: "from" | "to"): string | undefined => {
      const value = parsed.strings.get(flag);
      if (value !== undefined && parseRfc3339(value) === null) {
        throw new UsageError("usage", `--${flag} must be an RFC 3339 timestamp`);
      }
      return value;
    };
    const from = time("from");
    const to = time("to");
    const groupBy = parsed.strings.get("group-by");
    if (groupBy !== undefined && !(USAGE_GROUPS as readonly string[]).includes(groupBy)) {
      throw new UsageError("usage", `--group-by must be one of ${USAGE_GROUPS.join(", ")}`);
    }
    const principalId = parsed.strings.get("principal");
    if (principalId !== undefined) checkPrincipalId(principalId, "usage", "--principal");
    const client = await clientFromEnvironment();
    const page = await client.usage({
      ...(from !== undefined ? { from } : {}),
      ...(to !== undefined ? { to } : {}),
      ...(groupBy !== undefined ? { groupBy: groupBy as UsageGroupBy } : {}),
      ...(principalId !== undefined ? { principalId } : {}),
    });
    printOut(JSON.stringify(page, null, 2));
    return 0;
  } catch (error) {
    return reportError(error instanceof RuntimeServiceError ? describeServiceError(error) : error);
  }
}
