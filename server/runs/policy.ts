/**
 * The run policy of principals, and the one check every run start passes through.
 *
 * A principal's policy: `agentIds` (the agents it may start runs on), the resource policy
 * (`environmentIds`, `vaultIds`, `memoryStoreIds`, `repositories` as `owner/name`, `fileIds`),
 * `maxActiveRuns` (1 to 100, default 8), `allowAgentOverrides` (whether its runs may override the
 * agent's model, system prompt, tools, MCP servers or skills; default false) and its spend limits
 * (a budget, `maxRunCost`, `maxRunSeconds`: `spend.ts`). Each list is null when the principal is
 * not limited in that respect. The bootstrap principal is limited in none (any agent, environment
 * and resource, up to 100 runs, agent overrides allowed, no spend limit).
 *
 * Issuing ({@linkcode grantRunPolicy}): an issued principal's policy is a subset of its
 * issuer's. Each requested list must lie within the issuer's list when the issuer has one. Left
 * out, `agentIds` and `environmentIds` are the issuer's (any, when the issuer is not limited);
 * `vaultIds`, `memoryStoreIds`, `repositories` and `fileIds` are empty: an issued principal
 * attaches only what it was given (fail closed). Its limit is at most the issuer's. It may override
 * agents only when its issuance asks for it and the issuer may itself (never inherited). Its spend
 * limits lie within the issuer's (`grantSpendLimits`).
 *
 * Starting ({@linkcode startViolation}): a start is checked over its normalized fields
 * ({@linkcode RunStartScope}: the agent, its pinned version, the environment, the vault ids and
 * the resources), not over the body of one interface, so every interface that starts runs
 * through the gateway gets the same checks. A version pin is allowed on any agent the principal
 * may use: versions are not limited apart. An agent override is checked last, against
 * `allowAgentOverrides`. Resources are read by type: `github_repository` by
 * its `url` (`https://github.com/owner/name`, an optional `.git`; any other form is refused),
 * `file` by `file_id`, `memory_store` by `memory_store_id`. A principal limited in any resource
 * list gets a resource of another type, or a malformed one, refused.
 *
 * Content ({@linkcode contentViolation}): the events a run starts with, and every message, tool
 * result and outcome sent to it later, may name files by id (a document or image whose source is
 * a file, a rubric given as a file). Each `file_id` in them, at any depth, must be in the
 * principal's `fileIds`, as a mounted file must: otherwise a principal given no files could show
 * the agent any file of the provider's account by naming it in a message.
 *
 * Records written before the resource policy existed have no resource lists: their principals
 * may use any environment and attach nothing (read as empty lists), like newly issued ones.
 *
 * @module
 */
import type { ValidationDetail } from "../errors.ts";
import {
  grantSpendLimits,
  NO_SPEND_LIMITS,
  spendAnswer,
  type SpendHolder,
  type SpendLimits,
  spendLimitsOf,
} from "./spend.ts";
import {
  type PrincipalPolicy,
  RESOURCE_POLICY_FIELDS,
  type ResourcePolicyField,
} from "../../wire/mod.ts";

export type { ValidationDetail } from "../errors.ts";

/** `maxActiveRuns` of a principal issued without one (when the issuer allows that many). */
export const DEFAULT_MAX_ACTIVE_RUNS = 8;
/** The largest `maxActiveRuns`; also the bootstrap principal's. */
export const MAX_ACTIVE_RUNS_LIMIT = 100;
/** Most agent ids in `agentIds`. */
export const MAX_AGENT_IDS = 32;
/** Longest agent id accepted, in characters. */
export const MAX_AGENT_ID_LENGTH = 256;
/** Most ids in one list of the policy (`agentIds`, `environmentIds`, `vaultIds`...). */
export const MAX_POLICY_IDS: number = MAX_AGENT_IDS;

/** A principal's effective run policy: each list null when it is not limited by it. */
export interface RunPolicy {
  /** The agents it may use, or null for any. */
  readonly agentIds: readonly string[] | null;
  /** The environments its runs may run in, or null for any. */
  readonly environmentIds: readonly string[] | null;
  /** The vaults its runs may attach, or null for any. */
  readonly vaultIds: readonly string[] | null;
  /** The memory stores its runs may mount, or null for any. */
  readonly memoryStoreIds: readonly string[] | null;
  /** The GitHub repositories (`owner/name`, lower case) its runs may mount, or null for any. */
  readonly repositories: readonly string[] | null;
  /** The files its runs may mount, or null for any. */
  readonly fileIds: readonly string[] | null;
  /** Its active-run limit. */
  readonly maxActiveRuns: number;
  /** Whether its runs may override the agent (model, system prompt, tools, MCP servers, skills). */
  readonly allowAgentOverrides: boolean;
  /** Its spend limits: budget, `maxRunCost`, `maxRunSeconds` (`spend.ts`). */
  readonly spend: SpendLimits;
}

/** The run policy fields of an issuance body, as validated. */
export type RunPolicyFields = PrincipalPolicy;

/** What a principal (a stored record, or an authenticated caller) holds of its policy. */
export interface PolicyHolder extends SpendHolder {
  /** Agent ids; absent or null: any. */
  readonly agentIds?: readonly string[] | null;
  /** Environment ids; absent or null: any. */
  readonly environmentIds?: readonly string[] | null;
  /** Vault ids; absent: none. */
  readonly vaultIds?: readonly string[] | null;
  /** Memory store ids; absent: none. */
  readonly memoryStoreIds?: readonly string[] | null;
  /** Repositories (`owner/name`); absent: none. */
  readonly repositories?: readonly string[] | null;
  /** File ids; absent: none. */
  readonly fileIds?: readonly string[] | null;
  /** The active-run limit; absent: the default. */
  readonly maxActiveRuns?: number;
  /** Whether its runs may override agents; absent: not. */
  readonly allowAgentOverrides?: boolean;
  /** Whether it is the bootstrap principal (unlimited). */
  readonly bootstrap?: boolean;
}

/** The lists that are empty, not the issuer's, when an issuance leaves them out. */
const NONE_WHEN_ABSENT: ReadonlySet<string> = new Set([
  "vaultIds",
  "memoryStoreIds",
  "repositories",
  "fileIds",
]);

const UNLIMITED: RunPolicy = Object.freeze({
  agentIds: null,
  environmentIds: null,
  vaultIds: null,
  memoryStoreIds: null,
  repositories: null,
  fileIds: null,
  maxActiveRuns: MAX_ACTIVE_RUNS_LIMIT,
  allowAgentOverrides: true,
  spend: NO_SPEND_LIMITS,
});

/**
 * The effective policy of a principal: the bootstrap principal's is unlimited; an issued one's
 * lists as recorded (`vaultIds`, `memoryStoreIds`, `repositories`, `fileIds` empty when absent).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runPolicyOf } from "./policy.ts";
 * const policy = runPolicyOf({ agentIds: ["a"] });
 * assert.deepEqual(policy.agentIds, ["a"]);
 * assert.equal(policy.environmentIds, null);
 * assert.deepEqual(policy.vaultIds, []);
 * assert.equal(policy.maxActiveRuns, 8);
 * assert.equal(runPolicyOf({ bootstrap: true }).vaultIds, null);
 * ```
 */
export function runPolicyOf(principal: PolicyHolder): RunPolicy {
  if (principal.bootstrap === true) return UNLIMITED;
  return {
    agentIds: principal.agentIds ?? null,
    environmentIds: principal.environmentIds ?? null,
    vaultIds: principal.vaultIds ?? [],
    memoryStoreIds: principal.memoryStoreIds ?? [],
    repositories: principal.repositories ?? [],
    fileIds: principal.fileIds ?? [],
    maxActiveRuns: principal.maxActiveRuns ?? DEFAULT_MAX_ACTIVE_RUNS,
    allowAgentOverrides: principal.allowAgentOverrides === true,
    spend: spendLimitsOf(principal),
  };
}

/**
 * Applies the subset rules to requested fields: returns the granted policy or the violations.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { grantRunPolicy, runPolicyOf } from "./policy.ts";
 * const issuer = runPolicyOf({ agentIds: ["a", "b"], vaultIds: ["v1"], maxActiveRuns: 4 });
 * const granted = grantRunPolicy({}, issuer);
 * assert.ok(!Array.isArray(granted));
 * assert.deepEqual(granted.agentIds, ["a", "b"]);
 * assert.deepEqual(granted.vaultIds, [], "vaults are granted only when asked for");
 * assert.equal(granted.maxActiveRuns, 4);
 * assert.ok(Array.isArray(grantRunPolicy({ agentIds: ["c"] }, issuer)));
 * assert.ok(Array.isArray(grantRunPolicy({ vaultIds: ["v2"] }, issuer)));
 * ```
 */
export function grantRunPolicy(
  fields: RunPolicyFields,
  issuer: RunPolicy,
): RunPolicy | ValidationDetail[] {
  const details: ValidationDetail[] = [];
  const lists = {} as Record<"agentIds" | ResourcePolicyField, readonly string[] | null>;
  for (const field of ["agentIds", ...RESOURCE_POLICY_FIELDS] as const) {
    const normalize = field === "repositories" ? lowerCase : same;
    const requested = fields[field]?.map(normalize);
    const allowed = issuer[field];
    if (requested === undefined) {
      lists[field] = NONE_WHEN_ABSENT.has(field) ? [] : allowed === null ? null : [...allowed];
      continue;
    }
    lists[field] = requested;
    if (allowed === null) continue;
    const within = new Set(allowed);
    const outside = requested.filter((id) => !within.has(id));
    if (outside.length > 0) {
      details.push({
        path: field,
        message: `Must be a subset of the caller's ${field}; not allowed: ${outside.join(", ")}`,
      });
    }
  }
  let maxActiveRuns = fields.maxActiveRuns ??
    Math.min(DEFAULT_MAX_ACTIVE_RUNS, issuer.maxActiveRuns);
  if (fields.maxActiveRuns !== undefined && fields.maxActiveRuns > issuer.maxActiveRuns) {
    details.push({
      path: "maxActiveRuns",
      message: `Must be at most the caller's own maxActiveRuns (${issuer.maxActiveRuns})`,
    });
    maxActiveRuns = issuer.maxActiveRuns;
  }
  const allowAgentOverrides = fields.allowAgentOverrides === true;
  if (allowAgentOverrides && !issuer.allowAgentOverrides) {
    details.push({
      path: "allowAgentOverrides",
      message: "The caller may not override agents itself, so it cannot grant it",
    });
  }
  const spend = grantSpendLimits(fields, issuer.spend);
  if (Array.isArray(spend)) details.push(...spend);
  return details.length > 0 || Array.isArray(spend)
    ? details
    : { ...lists, maxActiveRuns, allowAgentOverrides, spend };
}

function same(id: string): string {
  return id;
}

function lowerCase(id: string): string {
  return id.toLowerCase();
}

/**
 * The policy as the API answers it (issuance, `GET /v1/principals`, `GET /v1/runtime`): each
 * list present when the principal is limited by it, and the limit.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { policyAnswer, runPolicyOf } from "./policy.ts";
 * assert.deepEqual(policyAnswer(runPolicyOf({ agentIds: ["a"] })), {
 *   agentIds: ["a"], vaultIds: [], memoryStoreIds: [], repositories: [], fileIds: [],
 *   maxActiveRuns: 8,
 * });
 * assert.deepEqual(policyAnswer(runPolicyOf({ bootstrap: true })), {
 *   maxActiveRuns: 100,
 *   allowAgentOverrides: true,
 * });
 * ```
 */
export function policyAnswer(policy: RunPolicy): PrincipalPolicy {
  const answer: PrincipalPolicy = {};
  for (const field of ["agentIds", ...RESOURCE_POLICY_FIELDS] as const) {
    const list = policy[field];
    if (list !== null) answer[field] = [...list];
  }
  answer.maxActiveRuns = policy.maxActiveRuns;
  if (policy.allowAgentOverrides) answer.allowAgentOverrides = true;
  return Object.assign(answer, spendAnswer(policy.spend));
}

/**
 * Whether a policy lets its principal start a run on `agentId`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { allowsAgent, runPolicyOf } from "./policy.ts";
 * assert.equal(allowsAgent(runPolicyOf({ agentIds: ["a"] }), "b"), false);
 * ```
 */
export function allowsAgent(policy: RunPolicy, agentId: string): boolean {
  return policy.agentIds === null || policy.agentIds.includes(agentId);
}

/**
 * A run start in the provider's terms, after the service's defaults were applied: what every
 * interface that starts runs maps its request into before the policy check.
 */
export interface RunStartScope {
  /** The agent to run. */
  readonly agentId: string;
  /** A pinned agent version, when one is given. */
  readonly agentVersion?: number;
  /** The environment to run in. */
  readonly environmentId: string;
  /** Vault ids to attach (`vault_ids`). */
  readonly vaultIds?: readonly string[];
  /** Resources to mount (`resources`), in the provider's shape: objects with a `type`. */
  readonly resources?: readonly Readonly<Record<string, unknown>>[];
  /** Whether it overrides the agent (`agent_with_overrides` with a model, system prompt, …). */
  readonly agentOverrides?: boolean;
  /**
   * The events it starts with, by the request field that carried them (`input` on `/v1`,
   * `initial_events` on the provider's API): the files their content refers to are checked.
   */
  readonly content?: readonly StartContent[];
}

/** Events of a start, with the request field that carried them. */
export interface StartContent {
  /** The request field. */
  readonly field: ContentField;
  /** Its events, in the provider's shape. */
  readonly events: readonly unknown[];
}

/**
 * A request field whose content may refer to files: a start's `input` or `initial_events`, the
 * `events` sent to a session, a custom tool's result `content`.
 */
export type ContentField = "input" | "initial_events" | "events" | "content";

/** Why a start was refused: which request field, and which policy list (when one) refused it. */
export interface PolicyViolation {
  /** The error code: `agentNotAllowed`, `resourceNotAllowed` or `agentOverrideNotAllowed`. */
  readonly code: "agentNotAllowed" | "resourceNotAllowed" | "agentOverrideNotAllowed";
  /**
   * The request field in the provider's terms: `agent_id`, `environment_id`, `vault_ids`,
   * `resources`, `agent` (an override), or a field of events whose content refers to a file
   * (`input`, `initial_events`, `events`, `content`).
   */
  readonly field:
    | "agent_id"
    | "environment_id"
    | "vault_ids"
    | "resources"
    | "agent"
    | ContentField;
  /** The principal's policy list that refused it, or absent for a resource of no known type. */
  readonly policyField?: "agentIds" | ResourcePolicyField;
  /** What was refused, in a sentence. */
  readonly message: string;
}

/** A resource of a start, read by type (see the module doc); `kind: "unknown"` is refused. */
export type StartResource =
  | { readonly kind: "repositories" | "fileIds" | "memoryStoreIds"; readonly id: string }
  | { readonly kind: "unknown"; readonly type: string };

const GITHUB_HOSTS: ReadonlySet<string> = new Set(["github.com", "www.github.com"]);
const REPOSITORY_PATH = /^\/([A-Za-z0-9-]{1,39})\/([A-Za-z0-9._-]{1,100}?)(?:\.git)?\/?$/;

/**
 * The `owner/name` (lower case) of a `github_repository` resource's `url`, or null for anything
 * but a plain `https://github.com/owner/name` URL (an optional `.git` and trailing slash).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { repositoryOfUrl } from "./policy.ts";
 * assert.equal(repositoryOfUrl("https://github.com/Acme/Tools.git"), "acme/tools");
 * assert.equal(repositoryOfUrl("https://user@github.com/acme/tools"), null);
 * assert.equal(repositoryOfUrl("https://example.com/acme/tools"), null);
 * ```
 */
export function repositoryOfUrl(url: unknown): string | null {
  if (typeof url !== "string" || url.length > 2048) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (
    parsed.protocol !== "https:" || !GITHUB_HOSTS.has(parsed.hostname) || parsed.port !== "" ||
    parsed.username !== "" || parsed.password !== "" || parsed.search !== "" || parsed.hash !== ""
  ) {
    return null;
  }
  const match = REPOSITORY_PATH.exec(parsed.pathname);
  return match === null ? null : `${match[1]}/${match[2]}`.toLowerCase();
}

/**
 * Reads one resource of a start by its type: the policy list that covers it and the id it is
 * checked by, or `unknown` (an unknown type, or a known one without its id).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startResourceOf } from "./policy.ts";
 * assert.deepEqual(startResourceOf({ type: "file", file_id: "file_1" }), { kind: "fileIds", id: "file_1" });
 * assert.deepEqual(startResourceOf({ type: "code_repository" }), { kind: "unknown", type: "code_repository" });
 * ```
 */
export function startResourceOf(resource: Readonly<Record<string, unknown>>): StartResource {
  const type = typeof resource.type === "string" ? resource.type : "";
  let kind: "repositories" | "fileIds" | "memoryStoreIds" | null = null;
  let id: unknown = null;
  if (type === "github_repository") {
    kind = "repositories";
    id = repositoryOfUrl(resource.url);
  } else if (type === "file") {
    kind = "fileIds";
    id = resource.file_id;
  } else if (type === "memory_store") {
    kind = "memoryStoreIds";
    id = resource.memory_store_id;
  }
  if (kind === null || typeof id !== "string" || id === "") return { kind: "unknown", type };
  return { kind, id };
}

/**
 * The first reason `policy` refuses `start`, or null when it may start: the agent, then the
 * environment, the vaults, the resources, the files its events refer to and an agent override,
 * in order (see the module doc).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runPolicyOf, startViolation } from "./policy.ts";
 * const policy = runPolicyOf({ agentIds: ["a"], vaultIds: ["v1"] });
 * assert.equal(startViolation(policy, { agentId: "a", environmentId: "e", vaultIds: ["v1"] }), null);
 * const refused = startViolation(policy, { agentId: "a", environmentId: "e", vaultIds: ["v2"] });
 * assert.equal(refused?.code, "resourceNotAllowed");
 * assert.equal(refused?.field, "vault_ids");
 * assert.equal(refused?.policyField, "vaultIds");
 * ```
 */
export function startViolation(policy: RunPolicy, start: RunStartScope): PolicyViolation | null {
  if (!allowsAgent(policy, start.agentId)) {
    return {
      code: "agentNotAllowed",
      field: "agent_id",
      policyField: "agentIds",
      message: "The principal may not start runs on this agent",
    };
  }
  if (policy.environmentIds !== null && !policy.environmentIds.includes(start.environmentId)) {
    return refused("environment_id", "environmentIds", `environment ${start.environmentId}`);
  }
  if (policy.vaultIds !== null) {
    for (const vaultId of start.vaultIds ?? []) {
      if (!policy.vaultIds.includes(vaultId)) {
        return refused("vault_ids", "vaultIds", `vault ${vaultId}`);
      }
    }
  }
  const resources = start.resources ?? [];
  const limited = policy.memoryStoreIds !== null || policy.repositories !== null ||
    policy.fileIds !== null;
  for (const resource of limited ? resources : []) {
    const read = startResourceOf(resource);
    if (read.kind === "unknown") {
      return {
        code: "resourceNotAllowed",
        field: "resources",
        message:
          `The principal may not attach a resource of type ${
            JSON.stringify(read.type.slice(0, 64))
          }: only github_repository (https://github.com/owner/name), file and memory_store ` +
          "resources are checked, anything else is refused",
      };
    }
    const allowed = policy[read.kind];
    if (allowed !== null && !allowed.includes(read.id)) {
      return refused("resources", read.kind, `${RESOURCE_NOUN[read.kind]} ${read.id}`);
    }
  }
  for (const { field, events } of start.content ?? []) {
    const violation = contentViolation(policy, field, events);
    if (violation !== null) return violation;
  }
  if (start.agentOverrides === true && !policy.allowAgentOverrides) {
    return {
      code: "agentOverrideNotAllowed",
      field: "agent",
      message: "The principal may not override the agent's model, system prompt, tools, MCP " +
        "servers or skills",
    };
  }
  return null;
}

/**
 * The file ids that content refers to: the `file_id` of every object in it, at any depth (a
 * document or an image whose `source` is a file, an outcome's `rubric` given as a file, a
 * container upload, and whatever else the provider's API names a file by), in the order met. A
 * `file_id` that is not a non-empty string reads as `""`, which no policy lists.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referencedFileIds } from "./policy.ts";
 * assert.deepEqual(
 *   referencedFileIds([
 *     { type: "user.message", content: [{ type: "document", source: { type: "file", file_id: "f1" } }] },
 *     { type: "user.define_outcome", description: "d", rubric: { type: "file", file_id: 7 } },
 *   ]),
 *   ["f1", ""],
 * );
 * ```
 */
export function referencedFileIds(content: unknown): string[] {
  const ids: string[] = [];
  // A walk of its own stack: content nested deeper than the call stack cannot overflow it.
  const stack: unknown[] = [content];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value !== "object" || value === null) continue;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push(value[i]);
      continue;
    }
    const record = value as Record<string, unknown>;
    if (Object.hasOwn(record, "file_id")) {
      const id = record.file_id;
      ids.push(typeof id === "string" ? id : "");
    }
    const children = Object.values(record);
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return ids;
}

/**
 * The first file that content sent by a principal refers to outside its `fileIds`, as a
 * violation of `field`; null when every file is allowed (or the principal is not limited in
 * files). A principal limited in files may refer only to the files it may attach: a file id in a
 * message, an outcome's rubric or a tool result reaches the agent as surely as a mounted file.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { contentViolation, runPolicyOf } from "./policy.ts";
 * const policy = runPolicyOf({ fileIds: ["f1"] });
 * const rubric = (file_id: string) => [{ type: "user.define_outcome", rubric: { type: "file", file_id } }];
 * assert.equal(contentViolation(policy, "events", rubric("f1")), null);
 * assert.equal(contentViolation(policy, "events", rubric("f2"))?.policyField, "fileIds");
 * assert.equal(contentViolation(runPolicyOf({ bootstrap: true }), "events", rubric("f2")), null);
 * ```
 */
export function contentViolation(
  policy: RunPolicy,
  field: ContentField,
  content: unknown,
): PolicyViolation | null {
  const allowed = policy.fileIds;
  if (allowed === null) return null;
  for (const id of referencedFileIds(content)) {
    if (id === "") {
      return {
        code: "resourceNotAllowed",
        field,
        policyField: "fileIds",
        message: "The principal may not refer to a file whose file_id is not a string",
      };
    }
    if (!allowed.includes(id)) return refused(field, "fileIds", `file ${id}`);
  }
  return null;
}

const RESOURCE_NOUN = {
  repositories: "repository",
  fileIds: "file",
  memoryStoreIds: "memory store",
} as const;

function refused(
  field: PolicyViolation["field"],
  policyField: ResourcePolicyField,
  what: string,
): PolicyViolation {
  return {
    code: "resourceNotAllowed",
    field,
    policyField,
    message: `The principal may not use ${what}: it lies outside its ${policyField}`,
  };
}
