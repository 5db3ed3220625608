/**
 * `automation-runtime principal issue|revoke|list`: client commands over HTTP with the SDK.
 * `issue` takes a `--name` and `--metadata` for people (the CI job a principal is for), which
 * `list` prints with every principal.
 *
 * The bearer comes only from `AUTOMATION_RUNTIME_TOKEN` or, when that is unset, from the secret
 * file (`RUNTIME_BOOTSTRAP_ENV`, else the default path); never from an argument. The URL comes
 * from `AUTOMATION_RUNTIME_URL` (default `http://127.0.0.1:7777`).
 *
 * @module
 */
import { BUDGET_PERIODS, PRINCIPAL_LABEL_LIMITS, RuntimeServiceError } from "../sdk/mod.ts";
import type {
  BudgetPeriod,
  CreatePrincipalParams,
  ResourcePolicyField,
  RuntimeCapability,
} from "../sdk/mod.ts";
import { parseCapabilityList } from "../server/bootstrap/variables.ts";
import { parseRfc3339 } from "../server/time.ts";
import { checkPrincipalId, parseArgs, parseIntegerFlag, UsageError } from "./_args.ts";
import { argSpecOf, commandHelp, groupHelp } from "./_help.ts";
import { DEFAULT_PRINCIPAL_TTL_DAYS } from "./command_table.ts";
import { clientFromEnvironment, describeServiceError, idempotencyKeyFlag } from "./_client.ts";
import { printErr, printOut, reportError } from "./_output.ts";

export { DEFAULT_URL, TOKEN_VARIABLE, URL_VARIABLE } from "./_client.ts";
export { DEFAULT_PRINCIPAL_TTL_DAYS } from "./command_table.ts";

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
        printOut(groupHelp("principal"));
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
  const parsed = parseArgs(args, argSpecOf("principal issue"));
  if (parsed.help) {
    printOut(commandHelp("principal issue"));
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
  checkPrincipalId(principalId, "principal", "--principal-id");
  const idempotencyKey = idempotencyKeyFlag("principal", parsed.strings.get("idempotency-key"));
  const lists: Partial<Record<PolicyListField, string[]>> = {};
  for (const [flag, field] of Object.entries(POLICY_LIST_FLAGS)) {
    const value = parsed.strings.get(flag);
    if (value !== undefined) lists[field] = idListFlag(flag, value);
  }
  const maxText = parsed.strings.get("max-active-runs");
  const maxActiveRuns = maxText === undefined ? undefined : parseIntegerFlag(maxText, {
    command: "principal",
    flag: "max-active-runs",
    min: 1,
    max: 100,
  });

  const spend = spendFlags(parsed.strings);
  const name = nameFlag(parsed.strings.get("name"));
  const metadata = metadataFlag(parsed.strings.get("metadata"));
  const client = await clientFromEnvironment();
  const issued = await client.createPrincipal(
    {
      principalId,
      capabilities: capabilities as RuntimeCapability[],
      expiresAt,
      ...lists,
      maxActiveRuns,
      ...(parsed.booleans.has("allow-agent-overrides") ? { allowAgentOverrides: true } : {}),
      ...spend,
      ...(name !== undefined ? { name } : {}),
      ...(metadata !== undefined ? { metadata } : {}),
    },
    { idempotencyKey },
  );
  printOut(JSON.stringify(issued, null, 2));
  printErr("The bearer above is shown only this once; hand it to the principal's owner now.");
  return 0;
}

/** An amount flag in minor units (`5000`), or a usage error. */
function centsFlag(flag: string, value: string): { amount: string; currency: "USD" } {
  if (!/^[1-9][0-9]{0,14}$/.test(value)) {
    throw new UsageError(
      "principal",
      `--${flag} must be a whole number of cents, 1 to 15 digits (5000 is $50.00)`,
    );
  }
  return { amount: value, currency: "USD" };
}

/** The spend limit flags: `--budget`, `--budget-period`, `--max-run-cost`, `--max-run-seconds`. */
function spendFlags(strings: ReadonlyMap<string, string>): Pick<
  CreatePrincipalParams,
  "budget" | "maxRunCost" | "maxRunSeconds"
> {
  const out: Pick<CreatePrincipalParams, "budget" | "maxRunCost" | "maxRunSeconds"> = {};
  const budget = strings.get("budget");
  const period = strings.get("budget-period");
  if (period !== undefined && !(BUDGET_PERIODS as readonly string[]).includes(period)) {
    throw new UsageError(
      "principal",
      `--budget-period must be one of ${BUDGET_PERIODS.join(", ")}`,
    );
  }
  if (period !== undefined && budget === undefined) {
    throw new UsageError("principal", "--budget-period goes with --budget");
  }
  if (budget !== undefined) {
    out.budget = { ...centsFlag("budget", budget), period: (period ?? "total") as BudgetPeriod };
  }
  const cost = strings.get("max-run-cost");
  if (cost !== undefined) out.maxRunCost = centsFlag("max-run-cost", cost);
  const seconds = strings.get("max-run-seconds");
  if (seconds !== undefined) {
    out.maxRunSeconds = parseIntegerFlag(seconds, {
      command: "principal",
      flag: "max-run-seconds",
      min: 1,
      max: 604_800,
    });
  }
  return out;
}

async function revoke(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("principal revoke"));
  if (parsed.help) {
    printOut(commandHelp("principal revoke"));
    return 0;
  }
  const [principalId] = parsed.positionals;
  if (principalId === undefined) throw new UsageError("principal", "Missing principal ID");
  checkPrincipalId(principalId, "principal", "The principal ID");
  const idempotencyKey = idempotencyKeyFlag("principal", parsed.strings.get("idempotency-key"));
  const client = await clientFromEnvironment();
  await client.revokePrincipal(principalId, { idempotencyKey });
  printErr(`Revoked principal ${principalId}`);
  return 0;
}

async function list(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("principal list"));
  if (parsed.help) {
    printOut(commandHelp("principal list"));
    return 0;
  }
  const client = await clientFromEnvironment();
  const principals = await client.listPrincipals();
  printOut(JSON.stringify(principals, null, 2));
  return 0;
}

const LIMITS = PRINCIPAL_LABEL_LIMITS;
/** Any character but a control, format, surrogate or line/paragraph separator. */
const PRINTABLE = /^[^\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]*$/u;

function nameFlag(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === "" || [...value].length > LIMITS.nameLength || !PRINTABLE.test(value)) {
    throw new UsageError(
      "principal issue",
      `--name must be 1 to ${LIMITS.nameLength} printable characters`,
    );
  }
  return value;
}

/**
 * `--metadata`: `key=value` pairs separated by commas, or a JSON object of strings (for values
 * holding a comma). Checked against the service's bounds, so a mistake is a usage error.
 */
function metadataFlag(value: string | undefined): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  const refuse = (why: string): never => {
    throw new UsageError("principal issue", `--metadata ${why}`);
  };
  let pairs: [string, unknown][];
  if (value.trimStart().startsWith("{")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      return refuse("is not a JSON object");
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      return refuse("is not a JSON object");
    }
    pairs = Object.entries(parsed);
  } else {
    pairs = value.split(",").map((pair) => {
      const equals = pair.indexOf("=");
      return equals < 1 ? refuse("must be key=value pairs separated by commas") : [
        pair.slice(0, equals),
        pair.slice(equals + 1),
      ];
    });
  }
  if (pairs.length > LIMITS.metadataPairs) refuse(`holds more than ${LIMITS.metadataPairs} pairs`);
  const metadata: Record<string, string> = {};
  for (const [key, text] of pairs) {
    if (!/^[\x21-\x7e]+$/.test(key) || key.length > LIMITS.metadataKeyLength) {
      refuse(`keys must be 1 to ${LIMITS.metadataKeyLength} printable characters without spaces`);
    }
    if (
      typeof text !== "string" || text.length > LIMITS.metadataValueLength ||
      !PRINTABLE.test(text)
    ) {
      refuse(
        `values must be strings of at most ${LIMITS.metadataValueLength} printable characters`,
      );
    }
    if (Object.hasOwn(metadata, key)) refuse(`names the key ${key.slice(0, 40)} twice`);
    metadata[key] = text as string;
  }
  return metadata;
}

/** A policy list field of `createPrincipal`. */
type PolicyListField = "agentIds" | ResourcePolicyField;

/** The flags of the policy lists, and the field each sets. */
const POLICY_LIST_FLAGS: Readonly<Record<string, PolicyListField>> = {
  "agent-ids": "agentIds",
  "environment-ids": "environmentIds",
  "vault-ids": "vaultIds",
  "memory-store-ids": "memoryStoreIds",
  "repositories": "repositories",
  "file-ids": "fileIds",
};

/** A comma-separated list of 1 to 32 distinct ids (repositories: `owner/name`). */
function idListFlag(flag: string, value: string): string[] {
  const ids = value.split(",");
  const shape = flag === "repositories"
    ? /^[A-Za-z0-9-]{1,39}\/[A-Za-z0-9._-]{1,100}$/
    : /^[\x21-\x7e]{1,256}$/;
  if (ids.length > 32 || new Set(ids).size !== ids.length || !ids.every((id) => shape.test(id))) {
    const what = flag === "repositories" ? "repositories as owner/name" : "ids without spaces";
    throw new UsageError(
      "principal issue",
      `--${flag} must be 1 to 32 distinct comma-separated ${what}`,
    );
  }
  return ids;
}
