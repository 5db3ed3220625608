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
import { MAX_ACTIVE_RUNS_LIMIT, MAX_AGENT_ID_LENGTH, MAX_AGENT_IDS } from "../runs/policy.ts";
import {
  CAPABILITIES,
  type Capability,
  type CreatePrincipalBody,
  PRINCIPAL_LABEL_LIMITS,
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

/** Body of `POST /v1/principals`. */
export const createPrincipalBody = z.strictObject({
  principalId: z.string().regex(
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    "Must be a lower-case UUID",
  ).describe("Lower-case UUID of the new principal, chosen by the caller"),
  capabilities: z.array(capability)
    .min(1, "Must name at least one capability")
    .refine((list) => new Set(list).size === list.length, "Must not repeat a capability")
    .describe("Capabilities to grant: a subset of the caller's, never authority:admin"),
  expiresAt: z.string().refine(
    (value) => parseRfc3339(value) !== null,
    "Must be an RFC 3339 timestamp",
  ).describe("RFC 3339 expiry, in the future and at most 90 days ahead"),
  agentIds: z.array(
    z.string().min(1).max(MAX_AGENT_ID_LENGTH).regex(
      /^[\x21-\x7e]+$/,
      `Must be a non-empty printable id of at most ${MAX_AGENT_ID_LENGTH} characters`,
    ),
  ).min(1, `Must hold 1 to ${MAX_AGENT_IDS} agent ids`)
    .max(MAX_AGENT_IDS, `Must hold 1 to ${MAX_AGENT_IDS} agent ids`)
    .refine((list) => new Set(list).size === list.length, "Must not repeat an agent id")
    .optional()
    .describe(
      "Agent ids the principal may start runs on: a subset of the caller's (default: the caller's)",
    ),
  maxActiveRuns: z.number().int(`Must be a whole number from 1 to ${MAX_ACTIVE_RUNS_LIMIT}`)
    .min(1, `Must be a whole number from 1 to ${MAX_ACTIVE_RUNS_LIMIT}`)
    .max(MAX_ACTIVE_RUNS_LIMIT, `Must be a whole number from 1 to ${MAX_ACTIVE_RUNS_LIMIT}`)
    .optional()
    .describe(
      `Active runs allowed, 1 to ${MAX_ACTIVE_RUNS_LIMIT}, at most the caller's (default 8)`,
    ),
  name: principalName.optional(),
  metadata: principalMetadata.optional(),
}) satisfies z.ZodType<CreatePrincipalBody>;
