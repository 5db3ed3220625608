/**
 * `automation-runtime principal issue|revoke|list`: client commands over HTTP with the SDK.
 *
 * The bearer comes only from `AUTOMATION_RUNTIME_TOKEN` or, when that is unset, from the secret
 * file (`RUNTIME_BOOTSTRAP_ENV`, else the default path); never from an argument. The URL comes
 * from `AUTOMATION_RUNTIME_URL` (default `http://127.0.0.1:7777`).
 *
 * @module
 */
import { RuntimeServiceError } from "../sdk/mod.ts";
import type { RuntimeCapability } from "../sdk/mod.ts";
import { parseCapabilityList } from "../server/bootstrap/variables.ts";
import { parseRfc3339 } from "../server/time.ts";
import { parseArgs, parseIntegerFlag, UsageError } from "./_args.ts";
import {
  CLIENT_ENVIRONMENT_HELP,
  clientFromEnvironment,
  describeServiceError,
  idempotencyKeyFlag,
} from "./_client.ts";
import { printErr, printOut, PROGRAM, reportError } from "./_output.ts";

export { DEFAULT_URL, TOKEN_VARIABLE, URL_VARIABLE } from "./_client.ts";
/** Default lifetime of an issued principal, in days. */
export const DEFAULT_PRINCIPAL_TTL_DAYS = 7;

/** Help text of `principal`. */
export const PRINCIPAL_HELP: string = `Usage:
  ${PROGRAM} principal issue --capabilities LIST [--ttl-days N | --expires-at TIME]
                               [--principal-id UUID] [--idempotency-key KEY]
                               [--agent-ids LIST] [--max-active-runs N]
  ${PROGRAM} principal revoke ID [--idempotency-key KEY]
  ${PROGRAM} principal list

issue   Issues a scoped principal and prints it as JSON on stdout, with its one-time bearer.
        --capabilities LIST   comma-separated: session:read, session:write, session:approve
        --ttl-days N          lifetime in days, 1 to 90 (default ${DEFAULT_PRINCIPAL_TTL_DAYS})
        --expires-at TIME     RFC 3339 expiry instead of --ttl-days
        --principal-id UUID   lower-case UUID (default: a random one)
        --idempotency-key KEY retry-safe key; to replay an earlier issue, repeat the same key,
                              --principal-id and --expires-at
        --agent-ids LIST      comma-separated agent ids (1 to 32) the principal may start
                              runs on (default: any agent the issuer may use)
        --max-active-runs N   runs it may have active at once, 1 to 100 (service default 8)
revoke  Revokes the principal ID; its bearer stops working at once.
list    Prints the principals as JSON on stdout (never their bearers).

${CLIENT_ENVIRONMENT_HELP}`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Runs `principal` with the arguments after the word `principal` and returns the exit code: 0 on
 * success, 1 when the service refused or could not be reached, 2 on a usage error.
 *
 * @example
 * ```ts ignore
 * import { principalCommand } from "./principal.ts";
 * Deno.exit(await principalCommand(["issue", "--capabilities", "session:read"]));
 * ```
 */
export async function principalCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  try {
    switch (sub) {
      case "--help":
      case "-h":
        printOut(PRINCIPAL_HELP);
        return 0;
      case "issue":
        return await issue(rest);
      case "revoke":
        return await revoke(rest);
      case "list":
        return await list(rest);
      case undefined:
        throw new UsageError("principal", "Missing subcommand: issue, revoke or list");
      default:
        throw new UsageError("principal", `Unknown subcommand ${sub.slice(0, 40)}`);
    }
  } catch (error) {
    return reportError(error instanceof RuntimeServiceError ? describeServiceError(error) : error);
  }
}

async function issue(args: string[]): Promise<number> {
  const parsed = parseArgs(args, {
    command: "principal",
    string: [
      "capabilities",
      "ttl-days",
      "expires-at",
      "principal-id",
      "idempotency-key",
      "agent-ids",
      "max-active-runs",
    ],
  });
  if (parsed.help) {
    printOut(PRINCIPAL_HELP);
    return 0;
  }
  const capabilityText = parsed.strings.get("capabilities");
  if (capabilityText === undefined) throw new UsageError("principal", "--capabilities is required");
  const capabilities = parseCapabilityList(capabilityText);
  if (typeof capabilities === "string") {
    throw new UsageError("principal", `--capabilities ${capabilities}`);
  }
  const ttlText = parsed.strings.get("ttl-days");
  const expiresText = parsed.strings.get("expires-at");
  if (ttlText !== undefined && expiresText !== undefined) {
    throw new UsageError("principal", "Give either --ttl-days or --expires-at, not both");
  }
  let expiresAt: string;
  if (expiresText !== undefined) {
    if (parseRfc3339(expiresText) === null) {
      throw new UsageError("principal", "--expires-at must be an RFC 3339 timestamp");
    }
    expiresAt = expiresText;
  } else {
    const days = ttlText === undefined
      ? DEFAULT_PRINCIPAL_TTL_DAYS
      : parseIntegerFlag(ttlText, { command: "principal", flag: "ttl-days", min: 1, max: 90 });
    expiresAt = new Date(Date.now() + days * 86_400_000).toISOString();
  }
  const principalId = parsed.strings.get("principal-id") ?? crypto.randomUUID();
  if (!UUID.test(principalId)) {
    throw new UsageError("principal", "--principal-id must be a lower-case UUID");
  }
  const idempotencyKey = idempotencyKeyFlag("principal", parsed.strings.get("idempotency-key"));
  const agentIds = agentIdsFlag(parsed.strings.get("agent-ids"));
  const maxText = parsed.strings.get("max-active-runs");
  const maxActiveRuns = maxText === undefined ? undefined : parseIntegerFlag(maxText, {
    command: "principal",
    flag: "max-active-runs",
    min: 1,
    max: 100,
  });

  const client = await clientFromEnvironment();
  const issued = await client.createPrincipal(
    {
      principalId,
      capabilities: capabilities as RuntimeCapability[],
      expiresAt,
      agentIds,
      maxActiveRuns,
    },
    { idempotencyKey },
  );
  printOut(JSON.stringify(issued, null, 2));
  printErr("The bearer above is shown only this once; hand it to the principal's owner now.");
  return 0;
}

async function revoke(args: string[]): Promise<number> {
  const parsed = parseArgs(args, {
    command: "principal",
    string: ["idempotency-key"],
    maxPositionals: 1,
  });
  if (parsed.help) {
    printOut(PRINCIPAL_HELP);
    return 0;
  }
  const [principalId] = parsed.positionals;
  if (principalId === undefined) throw new UsageError("principal", "Missing principal ID");
  if (!UUID.test(principalId)) {
    throw new UsageError("principal", "The principal ID must be a lower-case UUID");
  }
  const idempotencyKey = idempotencyKeyFlag("principal", parsed.strings.get("idempotency-key"));
  const client = await clientFromEnvironment();
  await client.revokePrincipal(principalId, { idempotencyKey });
  printErr(`Revoked principal ${principalId}`);
  return 0;
}

async function list(args: string[]): Promise<number> {
  const parsed = parseArgs(args, { command: "principal" });
  if (parsed.help) {
    printOut(PRINCIPAL_HELP);
    return 0;
  }
  const client = await clientFromEnvironment();
  const principals = await client.listPrincipals();
  printOut(JSON.stringify(principals, null, 2));
  return 0;
}

function agentIdsFlag(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const ids = value.split(",");
  if (
    ids.length > 32 || new Set(ids).size !== ids.length ||
    !ids.every((id) => /^[\x21-\x7e]{1,256}$/.test(id))
  ) {
    throw new UsageError(
      "principal",
      "--agent-ids must be 1 to 32 distinct comma-separated agent ids without spaces",
    );
  }
  return ids;
}
