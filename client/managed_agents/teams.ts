/**
 * Teams on managed agents. A {@linkcode TeamManifest} describes teams and their members; each
 * team becomes a coordinator agent (`multiagent: {type: "coordinator"}`) and each member a roster
 * agent the coordinator may delegate to. Only topology and identity (teams, members, name, slug,
 * capabilities) come from the manifest; behaviour (model, system prompt, tools...) comes from
 * `metadata.<configKey>` of each team or member, or from the defaults in the options.
 *
 * {@linkcode buildManagedAgentTeamsPlan} is pure; {@linkcode provisionManagedAgentTeams} creates
 * the agents (members first, then coordinators) and returns their ids, which callers persist and
 * reference when creating sessions.
 *
 * One file because it is one concept: manifest validation, the plan and its provisioning, which
 * share one data model.
 *
 * @module
 */
import { isObject } from "../guards.ts";
import type { CreateManagedAgentParams, JsonObject, ManagedAgentAgent } from "./types.ts";

/** A member of a team: one agent the team's coordinator may delegate to. */
export interface TeamManifestMember {
  /** Unique within its team. */
  id: string;
  /** Display name, used as the agent name. */
  name: string;
  /** Lower-case kebab-case handle. */
  slug?: string;
  /** What the member can do (each non-empty, without commas). */
  capabilities?: string[];
  /** Free-form metadata; `metadata.<configKey>` holds the behaviour config. */
  metadata?: Record<string, unknown>;
}

/** A team: one coordinator agent and its members. */
export interface TeamManifestTeam {
  /** Unique within the manifest. */
  id: string;
  /** Display name, used as the coordinator's agent name. */
  name: string;
  /** Lower-case kebab-case handle. */
  slug?: string;
  /** Free-form metadata; `metadata.<configKey>` holds the coordinator's behaviour config. */
  metadata?: Record<string, unknown>;
  /** 1 to 20 members (the provider's roster limit). */
  members: TeamManifestMember[];
}

/** Teams and their members, as a document a caller can store and validate. */
export interface TeamManifest {
  /** Manifest format version; `1`. */
  version: 1;
  /** The teams. */
  teams: TeamManifestTeam[];
}

/** Behaviour config of an agent, read from `metadata.<configKey>` or the defaults. */
export interface ProviderAgentConfig {
  /** Model id. */
  model?: string;
  /** System prompt. */
  system?: string;
  /** Description shown to the coordinator. */
  description?: string;
  /** Tools (wire-shaped objects). */
  tools?: JsonObject[];
  /** MCP servers (wire-shaped objects). */
  mcpServers?: JsonObject[];
  /** Skills (wire-shaped objects). */
  skills?: JsonObject[];
}

/** Options of the team mapping. */
export interface ManagedAgentTeamMappingOptions {
  /** Config of members whose metadata lacks a field. */
  memberDefaults?: ProviderAgentConfig;
  /** Config of coordinators whose team metadata lacks a field. */
  coordinatorDefaults?: ProviderAgentConfig;
  /** Metadata key that holds the behaviour config (default `provider`). */
  configKey?: string;
}

/** The agent to create for one member. */
export interface ManagedAgentMemberPlan {
  /** Manifest member id. */
  memberId: string;
  /** Creation parameters. */
  agent: CreateManagedAgentParams;
}

/** The agents to create for one team. */
export interface ManagedAgentTeamPlan {
  /** Manifest team id. */
  teamId: string;
  /** One agent per member. */
  members: ManagedAgentMemberPlan[];
  /** The coordinator, without `multiagent`: its roster is filled at provisioning. */
  coordinator: Omit<CreateManagedAgentParams, "multiagent">;
}

/** Every agent a manifest needs. */
export interface ManagedAgentTeamsPlan {
  /** One entry per team, in manifest order. */
  teams: ManagedAgentTeamPlan[];
}

/** A created member agent. */
export interface ProvisionedManagedAgentMember {
  /** Manifest member id. */
  memberId: string;
  /** Created agent id. */
  agentId: string;
  /** Created agent version. */
  version?: number;
}

/** A created team. */
export interface ProvisionedManagedAgentTeam {
  /** Manifest team id. */
  teamId: string;
  /** Coordinator agent id. */
  coordinatorAgentId: string;
  /** Coordinator agent version. */
  coordinatorVersion?: number;
  /** The member agents, in manifest order. */
  members: ProvisionedManagedAgentMember[];
}

/** Every created agent of a manifest. */
export interface ProvisionedManagedAgentTeams {
  /** One entry per team, in manifest order. */
  teams: ProvisionedManagedAgentTeam[];
}

/** One agent created during provisioning, as reported when provisioning stops midway. */
export interface ProvisionedManagedAgentRecord {
  /** Manifest team id. */
  teamId: string;
  /** Manifest member id; absent for the coordinator. */
  memberId?: string;
  /** Created agent id. */
  agentId: string;
  /** Created agent version. */
  version?: number;
}

/** What provisioning needs of a client. */
export interface ManagedAgentTeamsClient {
  /** Creates an agent. */
  createAgent(params: CreateManagedAgentParams): Promise<ManagedAgentAgent>;
}

/** Options of {@linkcode provisionManagedAgentTeams}. */
export interface ProvisionManagedAgentTeamsOptions extends ManagedAgentTeamMappingOptions {
  /**
   * Agents created by an earlier attempt (the `created` of a {@linkcode TeamProvisioningError});
   * they are reused instead of created again.
   */
  resume?: readonly ProvisionedManagedAgentRecord[];
  /** Stops before the next creation when aborted. */
  signal?: AbortSignal;
}

/** A manifest, or the config it points at, cannot be mapped. `issues` lists every problem. */
export class TeamManifestError extends Error {
  /** Stable error code. */
  readonly code = "invalidTeamManifest" as const;
  /** One line per problem, each starting with the path of the offending field. */
  readonly issues: readonly string[];

  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { TeamManifestError } from "@automation/runtime/client";
   * const error = new TeamManifestError(["teams[0].name: must be a non-empty string"]);
   * assert.equal(error.message, "Invalid team manifest: teams[0].name: must be a non-empty string");
   * assert.deepEqual(error.issues, ["teams[0].name: must be a non-empty string"]);
   * ```
   */
  constructor(issues: readonly string[]) {
    super(`Invalid team manifest: ${issues.join("; ")}`);
    this.name = "TeamManifestError";
    this.issues = issues;
  }
}

/**
 * Creating an agent failed partway through provisioning. `created` lists every agent that exists
 * now, so the caller can archive them or pass them as `resume` to try again; `cause` holds the
 * client's error.
 */
export class TeamProvisioningError extends Error {
  /** Stable error code. */
  readonly code = "teamProvisioningFailed" as const;
  /** Agents created before the failure, in creation order. */
  readonly created: readonly ProvisionedManagedAgentRecord[];
  /** The agent whose creation failed. */
  readonly failed: { teamId: string; memberId?: string };

  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { TeamProvisioningError } from "@automation/runtime/client";
   * const error = new TeamProvisioningError(
   *   [{ teamId: "research", memberId: "reader", agentId: "agent_1" }],
   *   { teamId: "research" },
   *   { cause: new Error("rate limited") },
   * );
   * assert.deepEqual(error.created.map((agent) => agent.agentId), ["agent_1"]);
   * assert.equal(
   *   error.message,
   *   "Creating the coordinator of team research failed; agents already created: agent_1",
   * );
   * ```
   */
  constructor(
    created: readonly ProvisionedManagedAgentRecord[],
    failed: { teamId: string; memberId?: string },
    options?: ErrorOptions,
  ) {
    const target = failed.memberId === undefined
      ? `the coordinator of team ${failed.teamId}`
      : `member ${failed.memberId} of team ${failed.teamId}`;
    const ids = created.length === 0 ? "none" : created.map((agent) => agent.agentId).join(", ");
    super(`Creating ${target} failed; agents already created: ${ids}`, options);
    this.name = "TeamProvisioningError";
    this.created = created;
    this.failed = failed;
  }
}

const MAX_ROSTER = 20;
const MAX_METADATA_VALUE = 512;
const SLUG_RE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const CONFIG_KEYS = new Set(["model", "system", "description", "tools", "mcpServers", "skills"]);

/**
 * Checks that a value is a {@linkcode TeamManifest} and returns it typed. Throws
 * {@linkcode TeamManifestError} listing every problem found, each with its path.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TeamManifestError, validateTeamManifest } from "@automation/runtime/client";
 * const manifest = validateTeamManifest(JSON.parse(
 *   '{"version":1,"teams":[{"id":"t","name":"Team","members":[{"id":"m","name":"Member"}]}]}',
 * ));
 * assert.equal(manifest.teams[0].members[0].name, "Member");
 * assert.throws(() => validateTeamManifest({ version: 2, teams: [] }), TeamManifestError);
 * ```
 */
export function validateTeamManifest(value: unknown): TeamManifest {
  const issues: string[] = [];
  if (!isObject(value)) throw new TeamManifestError(["manifest: must be an object"]);
  if (value.version !== 1) issues.push("version: must be 1");
  if (!Array.isArray(value.teams) || value.teams.length === 0) {
    issues.push("teams: must be a non-empty array");
  } else {
    const teamIds = new Set<string>();
    const teamSlugs = new Set<string>();
    value.teams.forEach((team: unknown, t: number) => {
      const at = `teams[${t}]`;
      if (!isObject(team)) {
        issues.push(`${at}: must be an object`);
        return;
      }
      checkIdentity(team, at, teamIds, teamSlugs, issues);
      checkMetadata(team, at, issues);
      if (!Array.isArray(team.members) || team.members.length === 0) {
        issues.push(`${at}.members: must be a non-empty array`);
        return;
      }
      if (team.members.length > MAX_ROSTER) {
        issues.push(`${at}.members: at most ${MAX_ROSTER} members (the provider's roster limit)`);
      }
      const memberIds = new Set<string>();
      const memberSlugs = new Set<string>();
      team.members.forEach((member: unknown, m: number) => {
        const memberAt = `${at}.members[${m}]`;
        if (!isObject(member)) {
          issues.push(`${memberAt}: must be an object`);
          return;
        }
        checkIdentity(member, memberAt, memberIds, memberSlugs, issues);
        checkMetadata(member, memberAt, issues);
        checkCapabilities(member.capabilities, `${memberAt}.capabilities`, issues);
      });
    });
  }
  if (issues.length > 0) throw new TeamManifestError(issues);
  return value as unknown as TeamManifest;
}

/**
 * Maps a manifest onto the agents to create, without calling anything. Each team yields one
 * coordinator spec (roster left empty) and one spec per member. Identity goes into each agent's
 * `name` and `metadata` (`manifest_team_id`, `manifest_member_id`, `manifest_role`,
 * `manifest_slug`, `manifest_capabilities`); a member without a configured description is
 * described by its capabilities. Behaviour comes field by field from `metadata.<configKey>`, else
 * from the defaults. Throws {@linkcode TeamManifestError} when the manifest is invalid or no
 * model can be resolved for some agent (it never guesses one).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildManagedAgentTeamsPlan } from "@automation/runtime/client";
 * const plan = buildManagedAgentTeamsPlan({
 *   version: 1,
 *   teams: [{
 *     id: "research",
 *     name: "Research",
 *     members: [{ id: "reader", name: "Reader", capabilities: ["read"] }],
 *   }],
 * }, { memberDefaults: { model: "model-small" }, coordinatorDefaults: { model: "model-large" } });
 * assert.equal(plan.teams[0].coordinator.model, "model-large");
 * assert.equal(plan.teams[0].members[0].agent.model, "model-small");
 * ```
 */
export function buildManagedAgentTeamsPlan(
  manifest: TeamManifest,
  options: ManagedAgentTeamMappingOptions = {},
): ManagedAgentTeamsPlan {
  const valid = validateTeamManifest(manifest);
  const configKey = options.configKey ?? "provider";
  if (typeof configKey !== "string" || configKey === "") {
    throw new TypeError("configKey must be a non-empty string");
  }
  const issues: string[] = [];
  const memberDefaults = readConfig(options.memberDefaults, "memberDefaults", issues);
  const coordinatorDefaults = readConfig(
    options.coordinatorDefaults,
    "coordinatorDefaults",
    issues,
  );
  const teams = valid.teams.map((team, t): ManagedAgentTeamPlan => {
    const at = `teams[${t}]`;
    const members = team.members.map((member, m): ManagedAgentMemberPlan => {
      const memberAt = `${at}.members[${m}]`;
      const config = {
        ...memberDefaults,
        ...readConfig(member.metadata?.[configKey], `${memberAt}.metadata.${configKey}`, issues),
      };
      const capabilities = member.capabilities ?? [];
      const metadata: Record<string, string> = {
        manifest_team_id: team.id,
        manifest_member_id: member.id,
        manifest_role: "member",
      };
      if (member.slug !== undefined) metadata.manifest_slug = member.slug;
      if (capabilities.length > 0) metadata.manifest_capabilities = capabilities.join(",");
      if (config.description === undefined && capabilities.length > 0) {
        config.description = `Capabilities: ${capabilities.join(", ")}`;
      }
      return {
        memberId: member.id,
        agent: toParams(
          member.name,
          config,
          metadata,
          `${memberAt} (member ${member.id}): no model; set metadata.${configKey}.model or ` +
            "memberDefaults.model",
          issues,
        ),
      };
    });
    const config = {
      ...coordinatorDefaults,
      ...readConfig(team.metadata?.[configKey], `${at}.metadata.${configKey}`, issues),
    };
    const metadata: Record<string, string> = {
      manifest_team_id: team.id,
      manifest_role: "coordinator",
    };
    if (team.slug !== undefined) metadata.manifest_slug = team.slug;
    const coordinator = toParams(
      team.name,
      config,
      metadata,
      `${at} (team ${team.id}): no model; set metadata.${configKey}.model or ` +
        "coordinatorDefaults.model",
      issues,
    );
    return { teamId: team.id, members, coordinator };
  });
  if (issues.length > 0) throw new TeamManifestError(issues);
  return { teams };
}

/**
 * Creates the agents of a manifest: every member agent first, then each coordinator with its
 * roster (`multiagent: {type: "coordinator", agents: [...]}`) naming the created member agents
 * by id and version. Returns the ids to persist; sessions then reference them, nothing is
 * provisioned per run. Before any call it builds the plan, so an invalid manifest or an agent
 * without a model throws {@linkcode TeamManifestError} having created nothing. When a creation
 * fails, {@linkcode TeamProvisioningError} lists the agents already created; pass them back as
 * `resume` to finish without duplicates.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { provisionManagedAgentTeams } from "@automation/runtime/client";
 * let next = 0;
 * const client = {
 *   createAgent: (params: { name: string }) =>
 *     Promise.resolve({ id: `agent_${++next}`, version: 1, name: params.name }),
 * };
 * const result = await provisionManagedAgentTeams(client, {
 *   version: 1,
 *   teams: [{ id: "research", name: "Research", members: [{ id: "reader", name: "Reader" }] }],
 * }, { memberDefaults: { model: "model-small" }, coordinatorDefaults: { model: "model-large" } });
 * // Members are created before the coordinator that delegates to them.
 * assert.equal(result.teams[0].coordinatorAgentId, "agent_2");
 * assert.equal(next, 2);
 * ```
 */
export async function provisionManagedAgentTeams(
  client: ManagedAgentTeamsClient,
  manifest: TeamManifest,
  options: ProvisionManagedAgentTeamsOptions = {},
): Promise<ProvisionedManagedAgentTeams> {
  const plan = buildManagedAgentTeamsPlan(manifest, options);
  const { signal } = options;
  signal?.throwIfAborted();
  const reuse = new Map<string, ProvisionedManagedAgentRecord>();
  for (const record of options.resume ?? []) {
    reuse.set(recordKey(record.teamId, record.memberId), record);
  }
  const created: ProvisionedManagedAgentRecord[] = [];

  async function create(
    teamId: string,
    memberId: string | undefined,
    params: CreateManagedAgentParams,
  ): Promise<ProvisionedManagedAgentRecord> {
    const previous = reuse.get(recordKey(teamId, memberId));
    if (previous !== undefined) {
      created.push(previous);
      return previous;
    }
    const failed = memberId === undefined ? { teamId } : { teamId, memberId };
    let agent: ManagedAgentAgent;
    try {
      signal?.throwIfAborted();
      agent = await client.createAgent(params);
      if (!isObject(agent) || typeof agent.id !== "string" || agent.id === "") {
        throw new TypeError("createAgent returned no agent id");
      }
    } catch (cause) {
      throw new TeamProvisioningError([...created], failed, { cause });
    }
    const record: ProvisionedManagedAgentRecord = { ...failed, agentId: agent.id };
    if (typeof agent.version === "number") record.version = agent.version;
    created.push(record);
    return record;
  }

  const members: ProvisionedManagedAgentMember[][] = [];
  for (const team of plan.teams) {
    const teamMembers: ProvisionedManagedAgentMember[] = [];
    for (const member of team.members) {
      const record = await create(team.teamId, member.memberId, member.agent);
      teamMembers.push(withVersion({ memberId: member.memberId, agentId: record.agentId }, record));
    }
    members.push(teamMembers);
  }
  const teams: ProvisionedManagedAgentTeam[] = [];
  for (const [t, team] of plan.teams.entries()) {
    const roster = members[t].map((member) =>
      member.version === undefined
        ? { type: "agent", id: member.agentId }
        : { type: "agent", id: member.agentId, version: member.version }
    );
    const record = await create(team.teamId, undefined, {
      ...team.coordinator,
      multiagent: { type: "coordinator", agents: roster },
    });
    const provisioned: ProvisionedManagedAgentTeam = {
      teamId: team.teamId,
      coordinatorAgentId: record.agentId,
      members: members[t],
    };
    if (record.version !== undefined) provisioned.coordinatorVersion = record.version;
    teams.push(provisioned);
  }
  return { teams };
}

function recordKey(teamId: string, memberId: string | undefined): string {
  return JSON.stringify([teamId, memberId ?? null]);
}

function withVersion(
  member: ProvisionedManagedAgentMember,
  record: ProvisionedManagedAgentRecord,
): ProvisionedManagedAgentMember {
  if (record.version !== undefined) member.version = record.version;
  return member;
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === "string" && value.trim() !== "";
}

function checkIdentity(
  entry: Record<string, unknown>,
  at: string,
  ids: Set<string>,
  slugs: Set<string>,
  issues: string[],
): void {
  if (!isNonEmptyString(entry.id)) {
    issues.push(`${at}.id: must be a non-empty string`);
  } else if (entry.id.length > MAX_METADATA_VALUE) {
    issues.push(`${at}.id: at most ${MAX_METADATA_VALUE} characters`);
  } else if (ids.has(entry.id)) {
    issues.push(`${at}.id: duplicate id ${JSON.stringify(entry.id)}`);
  } else {
    ids.add(entry.id);
  }
  if (!isNonEmptyString(entry.name)) issues.push(`${at}.name: must be a non-empty string`);
  if (entry.slug !== undefined) {
    if (typeof entry.slug !== "string" || !SLUG_RE.test(entry.slug)) {
      issues.push(`${at}.slug: must be lower-case kebab-case (a-z, 0-9, single hyphens)`);
    } else if (entry.slug.length > MAX_METADATA_VALUE) {
      issues.push(`${at}.slug: at most ${MAX_METADATA_VALUE} characters`);
    } else if (slugs.has(entry.slug)) {
      issues.push(`${at}.slug: duplicate slug ${JSON.stringify(entry.slug)}`);
    } else {
      slugs.add(entry.slug);
    }
  }
}

function checkMetadata(entry: Record<string, unknown>, at: string, issues: string[]): void {
  if (entry.metadata !== undefined && !isObject(entry.metadata)) {
    issues.push(`${at}.metadata: must be an object`);
  }
}

function checkCapabilities(value: unknown, at: string, issues: string[]): void {
  if (value === undefined) return;
  if (!Array.isArray(value)) {
    issues.push(`${at}: must be an array of strings`);
    return;
  }
  const seen = new Set<string>();
  value.forEach((capability: unknown, c: number) => {
    if (!isNonEmptyString(capability) || capability.includes(",")) {
      issues.push(`${at}[${c}]: must be a non-empty string without commas`);
    } else if (seen.has(capability)) {
      issues.push(`${at}[${c}]: duplicate capability ${JSON.stringify(capability)}`);
    } else {
      seen.add(capability);
    }
  });
  if (value.every((c) => typeof c === "string") && value.join(",").length > MAX_METADATA_VALUE) {
    issues.push(`${at}: at most ${MAX_METADATA_VALUE} characters when joined with commas`);
  }
}

/** Reads a behaviour config, recording problems; returns only the fields that are set. */
function readConfig(value: unknown, at: string, issues: string[]): ProviderAgentConfig {
  if (value === undefined) return {};
  if (!isObject(value)) {
    issues.push(`${at}: must be an object`);
    return {};
  }
  const config: ProviderAgentConfig = {};
  for (const [key, field] of Object.entries(value)) {
    if (!CONFIG_KEYS.has(key)) {
      issues.push(`${at}.${key}: unknown field (expected ${[...CONFIG_KEYS].join(", ")})`);
      continue;
    }
    if (field === undefined) continue;
    if (key === "model" || key === "system" || key === "description") {
      if (!isNonEmptyString(field)) issues.push(`${at}.${key}: must be a non-empty string`);
      else config[key] = field;
    } else if (!Array.isArray(field) || !field.every(isObject)) {
      issues.push(`${at}.${key}: must be an array of objects`);
    } else {
      config[key as "tools" | "mcpServers" | "skills"] = field as JsonObject[];
    }
  }
  return config;
}

function toParams(
  name: string,
  config: ProviderAgentConfig,
  metadata: Record<string, string>,
  missingModel: string,
  issues: string[],
): CreateManagedAgentParams {
  if (config.model === undefined) issues.push(missingModel);
  const params: CreateManagedAgentParams = { name, model: config.model ?? "" };
  if (config.system !== undefined) params.system = config.system;
  if (config.description !== undefined) params.description = config.description;
  if (config.tools !== undefined) params.tools = config.tools;
  if (config.mcpServers !== undefined) params.mcpServers = config.mcpServers;
  if (config.skills !== undefined) params.skills = config.skills;
  params.metadata = metadata;
  return params;
}
