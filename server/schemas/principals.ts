/**
 * The request body of `POST /v1/principals` as a zod schema ({@linkcode createPrincipalBody}):
 * the one definition the route validates with (loaded on the first body, see `lazy.ts`) and the
 * `principal_issue` MCP tool publishes as its JSON Schema. It checks the shape only; the
 * authority rules (subset of the issuer's capabilities, expiry bounds) come after.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createPrincipalBody } from "./principals.ts";
 * assert.equal(createPrincipalBody.safeParse({ principalId: "x" }).success, false);
 * ```
 *
 * @module
 */
import { z } from "zod";
import { MAX_ACTIVE_RUNS_LIMIT, MAX_AGENT_ID_LENGTH, MAX_POLICY_IDS } from "../runs/policy.ts";
import { MAX_AMOUNT_DIGITS, MAX_RUN_SECONDS_LIMIT } from "../runs/spend.ts";
import {
  BUDGET_PERIODS,
  CAPABILITIES,
  type Capability,
  type CreatePrincipalBody,
  CURRENCIES,
  type MonetaryAmount,
  PRINCIPAL_ID_PATTERN,
  PRINCIPAL_LABEL_LIMITS,
  type PrincipalPolicy,
  type PrincipalSpend,
} from "../../wire/mod.ts";
import { parseRfc3339 } from "../time.ts";

/** One known capability. */
export const capability: z.ZodType<Capability> = z.enum(
  CAPABILITIES,
  `Must be one of ${CAPABILITIES.join(", ")}`,
);

const LIMITS = PRINCIPAL_LABEL_LIMITS;
/** No control, format, surrogate or line/paragraph separator character. */
const PRINTABLE = /^[^\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]*$/u;

/** A principal's name: 1 to 64 printable characters, not blank. */
export const principalName: z.ZodType<string> = z.string()
  .refine(
    (value) =>
      value.trim() !== "" && [...value].length <= LIMITS.nameLength && PRINTABLE.test(value),
    `Must be 1 to ${LIMITS.nameLength} printable characters, not blank`,
  )
  .describe(
    `A name for people, such as the CI job it is for (1 to ${LIMITS.nameLength} characters)`,
  );

/** A principal's metadata: up to 16 string pairs with bounded keys and values. */
export const principalMetadata: z.ZodType<Record<string, string>> = z.record(
  z.string().regex(
    new RegExp(`^[\\x21-\\x7e]{1,${LIMITS.metadataKeyLength}}$`),
    `Keys must be 1 to ${LIMITS.metadataKeyLength} printable ASCII characters without spaces`,
  ),
  z.string().max(
    LIMITS.metadataValueLength,
    `Values must be strings of at most ${LIMITS.metadataValueLength} characters`,
  ).regex(PRINTABLE, "Values must not hold control characters"),
).refine(
  (pairs) => Object.keys(pairs).length <= LIMITS.metadataPairs,
  `Must hold at most ${LIMITS.metadataPairs} pairs`,
).describe(`Up to ${LIMITS.metadataPairs} string pairs, such as {"job": "nightly"}`);

/** One id of a policy list: non-empty printable ASCII of at most 256 characters. */
const policyId = z.string().min(1).max(MAX_AGENT_ID_LENGTH).regex(
  /^[\x21-\x7e]+$/,
  `Must be a non-empty printable id of at most ${MAX_AGENT_ID_LENGTH} characters`,
);

/** A GitHub repository as `owner/name`. */
const repository = z.string().regex(
  /^[A-Za-z0-9-]{1,39}\/[A-Za-z0-9._-]{1,100}$/,
  "Must be a GitHub repository as owner/name",
);

/**
 * An amount of money of an issuance body: at least one minor unit, as an integer string of at
 * most 15 digits without leading zeros, in a currency the provider prices in.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { positiveMoney } from "./principals.ts";
 * assert.equal(positiveMoney.safeParse({ amount: "2500", currency: "USD" }).success, true);
 * assert.equal(positiveMoney.safeParse({ amount: "25.00", currency: "USD" }).success, false);
 * assert.equal(positiveMoney.safeParse({ amount: "0", currency: "USD" }).success, false);
 * ```
 */
export const positiveMoney = z.strictObject({
  amount: z.string().regex(
    new RegExp(`^[1-9][0-9]{0,${MAX_AMOUNT_DIGITS - 1}}$`),
    `Must be a whole number of minor units (cents), 1 to ${MAX_AMOUNT_DIGITS} digits, as a ` +
      "string without leading zeros",
  ).describe('Minor units of the currency (cents for USD) as an integer string: "2500" is $25'),
  currency: z.enum(CURRENCIES, `Must be one of ${CURRENCIES.join(", ")}`),
});

/** Money in an answer: minor units as an integer string, and the currency. */
export const moneyAnswer = z.strictObject({
  amount: z.string().regex(/^(0|[1-9][0-9]*)$/).describe("Minor units as an integer string"),
  currency: z.enum(CURRENCIES),
}) satisfies z.ZodType<MonetaryAmount>;

/** A whole number from 1 to `max`. */
function wholeNumber(max: number): z.ZodNumber {
  const message = `Must be a whole number from 1 to ${max}`;
  return z.number().int(message).min(1, message).max(max, message);
}

/** A list of distinct ids of a policy field, `min` to {@linkcode MAX_POLICY_IDS} long. */
function idList(item: z.ZodString, min: number, noun: string) {
  const bounds = `Must hold ${min} to ${MAX_POLICY_IDS} ${noun}`;
  return z.array(item).min(min, bounds).max(MAX_POLICY_IDS, bounds)
    .refine((list) => new Set(list).size === list.length, `Must not repeat ${noun}`)
    .optional();
}

/**
 * The run policy fields of an issuance body, as a zod shape (spread it into a body schema):
 * `agentIds`, the resource policy lists and `maxActiveRuns`. Shape only; the subset rules of
 * `runs/policy.ts` (`grantRunPolicy`) come after.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { principalPolicyShape } from "./principals.ts";
 * const schema = z.strictObject(principalPolicyShape());
 * assert.equal(schema.safeParse({ repositories: ["acme/tools"] }).success, true);
 * assert.equal(schema.safeParse({ repositories: ["https://github.com/acme/tools"] }).success, false);
 * ```
 */
export function principalPolicyShape() {
  return {
    agentIds: idList(policyId, 1, "agent ids").describe(
      "Agent ids the principal may start runs on: a subset of the caller's (default: the caller's)",
    ),
    environmentIds: idList(policyId, 1, "environment ids").describe(
      "Environment ids its runs may run in: a subset of the caller's (default: the caller's)",
    ),
    vaultIds: idList(policyId, 0, "vault ids").describe(
      "Vault ids its runs may attach: a subset of the caller's (default: none)",
    ),
    memoryStoreIds: idList(policyId, 0, "memory store ids").describe(
      "Memory store ids its runs may mount: a subset of the caller's (default: none)",
    ),
    repositories: idList(repository, 0, "repositories").describe(
      "GitHub repositories (owner/name) its runs may mount: a subset of the caller's " +
        "(default: none)",
    ),
    fileIds: idList(policyId, 0, "file ids").describe(
      "File ids its runs may mount: a subset of the caller's (default: none)",
    ),
    maxActiveRuns: wholeNumber(MAX_ACTIVE_RUNS_LIMIT).optional().describe(
      `Active runs allowed, 1 to ${MAX_ACTIVE_RUNS_LIMIT}, at most the caller's (default 8)`,
    ),
    allowAgentOverrides: z.boolean().optional().describe(
      "Whether its runs may override the agent's model, system prompt, tools, MCP servers or " +
        "skills (default false; only when the caller may)",
    ),
    budget: positiveMoney.extend({
      period: z.enum(BUDGET_PERIODS, `Must be one of ${BUDGET_PERIODS.join(", ")}`),
    }).optional().describe(
      "The most its runs may spend together (list cost) in each period: total, each UTC day or " +
        "each UTC month; at most the caller's over a period at least as long (default: the " +
        "caller's, if any)",
    ),
    maxRunCost: positiveMoney.optional().describe(
      "The most one of its runs may spend over all its turns; at most the caller's (default: " +
        "the caller's, if any)",
    ),
    maxRunSeconds: wholeNumber(MAX_RUN_SECONDS_LIMIT).optional().describe(
      "The longest one of its runs may stay active at a stretch, in seconds, before the " +
        "runtime interrupts it; at most the caller's (default: the caller's, if any)",
    ),
  } satisfies { [F in keyof Required<PrincipalPolicy>]: z.ZodType };
}

/**
 * The run policy fields of an answer (issuance, `GET /v1/principals` entries, `GET /v1/runtime`)
 * as a zod shape: each list present when the principal is limited by it, and the limit. The
 * OpenAPI schemas and the MCP tools' output schemas spread it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { principalPolicyAnswerShape } from "./principals.ts";
 * const schema = z.strictObject(principalPolicyAnswerShape());
 * assert.equal(schema.safeParse({ vaultIds: [], maxActiveRuns: 8 }).success, true);
 * ```
 */
export function principalPolicyAnswerShape() {
  const list = (what: string) =>
    z.array(z.string()).optional().describe(`${what}; absent: not limited`);
  return {
    agentIds: list("agents the principal may start runs on"),
    environmentIds: list("environments its runs may run in"),
    vaultIds: list("vaults its runs may attach"),
    memoryStoreIds: list("memory stores its runs may mount"),
    repositories: list("GitHub repositories (owner/name) its runs may mount"),
    fileIds: list("files its runs may mount"),
    maxActiveRuns: z.int().min(1).describe("runs it may have active at once"),
    allowAgentOverrides: z.literal(true).optional().describe(
      "present when its runs may override the agent",
    ),
    budget: moneyAnswer.extend({ period: z.enum(BUDGET_PERIODS) }).optional()
      .describe("the most its runs may spend in each period; absent: no budget"),
    maxRunCost: moneyAnswer.optional().describe("the most one run may spend; absent: no cap"),
    maxRunSeconds: z.int().min(1).optional()
      .describe("the longest active stretch of a run, in seconds; absent: no limit"),
  } satisfies { [F in keyof Required<PrincipalPolicy>]: z.ZodType };
}

/**
 * The capabilities an issuance grants: known ones, at least one, no repeats (the authority rules
 * come after). Shared by `POST /v1/principals` and `POST /v1/trust-policies`.
 */
export const grantedCapabilities: z.ZodType<Capability[]> = z.array(capability)
  .min(1, "Must name at least one capability")
  .refine((list) => new Set(list).size === list.length, "Must not repeat a capability")
  .describe("Capabilities to grant: a subset of the caller's, never authority:admin");

/**
 * What a principal with a budget spent and holds in the current period, in an answer
 * (`GET /v1/runtime`, `GET /v1/principals`).
 */
export const principalSpendSchema = z.strictObject({
  periodStart: z.string().optional().describe("RFC 3339 start of the period (UTC)"),
  periodEnd: z.string().optional().describe("RFC 3339 start of the next period"),
  spent: moneyAnswer.describe("settled list cost in the period"),
  reserved: moneyAnswer.describe("held for active runs, not settled"),
  left: moneyAnswer.describe("the budget less spent and reserved"),
}) satisfies z.ZodType<PrincipalSpend>;

/** Body of `POST /v1/principals`. */
export const createPrincipalBody = z.strictObject({
  principalId: z.string().regex(
    PRINCIPAL_ID_PATTERN,
    "Must be a lower-case UUID",
  ).describe("Lower-case UUID of the new principal, chosen by the caller"),
  capabilities: grantedCapabilities,
  expiresAt: z.string().refine(
    (value) => parseRfc3339(value) !== null,
    "Must be an RFC 3339 timestamp",
  ).describe("RFC 3339 expiry, in the future and at most 90 days ahead"),
  ...principalPolicyShape(),
  name: principalName.optional(),
  metadata: principalMetadata.optional(),
}) satisfies z.ZodType<CreatePrincipalBody>;
