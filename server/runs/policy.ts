/**
 * Run policy of principals: `agentIds` (the agents a principal may start runs on; absent: any the
 * issuer may use) and `maxActiveRuns` (1 to 100, default 8). An issued principal's policy is a
 * subset of its issuer's: its agents lie within the issuer's list when the issuer has one, and its
 * limit is at most the issuer's. The bootstrap principal may use any agent, up to 100 runs.
 *
 * @module
 */
import type { ValidationDetail } from "../errors.ts";

export type { ValidationDetail } from "../errors.ts";

/** `maxActiveRuns` of a principal issued without one (when the issuer allows that many). */
export const DEFAULT_MAX_ACTIVE_RUNS = 8;
/** The largest `maxActiveRuns`; also the bootstrap principal's. */
export const MAX_ACTIVE_RUNS_LIMIT = 100;
/** Most agent ids in `agentIds`. */
export const MAX_AGENT_IDS = 32;
/** Longest agent id accepted, in characters. */
export const MAX_AGENT_ID_LENGTH = 256;

/** A principal's effective run policy. */
export interface RunPolicy {
  /** The agents it may use, or null for any. */
  readonly agentIds: readonly string[] | null;
  /** Its active-run limit. */
  readonly maxActiveRuns: number;
}

/** The run policy fields of an issuance body, as validated. */
export interface RunPolicyFields {
  /** Requested agent ids. */
  agentIds?: string[];
  /** Requested active-run limit. */
  maxActiveRuns?: number;
}

/**
 * The effective policy of an authenticated principal.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runPolicyOf } from "./policy.ts";
 * assert.deepEqual(runPolicyOf({ agentIds: ["a"] }), { agentIds: ["a"], maxActiveRuns: 8 });
 * ```
 */
export function runPolicyOf(principal: {
  readonly agentIds?: readonly string[] | null;
  readonly maxActiveRuns?: number;
  readonly bootstrap?: boolean;
}): RunPolicy {
  if (principal.bootstrap === true) {
    return { agentIds: null, maxActiveRuns: MAX_ACTIVE_RUNS_LIMIT };
  }
  return {
    agentIds: principal.agentIds ?? null,
    maxActiveRuns: principal.maxActiveRuns ?? DEFAULT_MAX_ACTIVE_RUNS,
  };
}

/**
 * Applies the subset rules to requested fields: returns the granted policy or the violations.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { grantRunPolicy } from "./policy.ts";
 * const issuer = { agentIds: ["a", "b"], maxActiveRuns: 4 };
 * assert.deepEqual(grantRunPolicy({}, issuer), { agentIds: ["a", "b"], maxActiveRuns: 4 });
 * const refused = grantRunPolicy({ agentIds: ["c"] }, issuer);
 * assert.ok(Array.isArray(refused));
 * ```
 */
export function grantRunPolicy(
  fields: RunPolicyFields,
  issuer: RunPolicy,
): RunPolicy | ValidationDetail[] {
  const details: ValidationDetail[] = [];
  let agentIds: readonly string[] | null = fields.agentIds ?? issuer.agentIds;
  if (fields.agentIds !== undefined && issuer.agentIds !== null) {
    const allowed = new Set(issuer.agentIds);
    const outside = fields.agentIds.filter((id) => !allowed.has(id));
    if (outside.length > 0) {
      details.push({
        path: "agentIds",
        message: `Must be a subset of the caller's agentIds; not allowed: ${outside.join(", ")}`,
      });
    }
  }
  if (agentIds !== null) agentIds = [...agentIds];
  let maxActiveRuns = fields.maxActiveRuns ??
    Math.min(DEFAULT_MAX_ACTIVE_RUNS, issuer.maxActiveRuns);
  if (fields.maxActiveRuns !== undefined && fields.maxActiveRuns > issuer.maxActiveRuns) {
    details.push({
      path: "maxActiveRuns",
      message: `Must be at most the caller's own maxActiveRuns (${issuer.maxActiveRuns})`,
    });
    maxActiveRuns = issuer.maxActiveRuns;
  }
  return details.length > 0 ? details : { agentIds, maxActiveRuns };
}

/**
 * Whether a policy lets its principal start a run on `agentId`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { allowsAgent } from "./policy.ts";
 * assert.equal(allowsAgent({ agentIds: ["a"], maxActiveRuns: 1 }, "b"), false);
 * ```
 */
export function allowsAgent(policy: RunPolicy, agentId: string): boolean {
  return policy.agentIds === null || policy.agentIds.includes(agentId);
}
