import assert from "node:assert/strict";
import {
  buildManagedAgentTeamsPlan,
  type ManagedAgentTeamsClient,
  provisionManagedAgentTeams,
  type TeamManifest,
  TeamManifestError,
  TeamProvisioningError,
  validateTeamManifest,
} from "../../client/managed_agents/teams.ts";
import type {
  CreateManagedAgentParams,
  ManagedAgentAgent,
} from "../../client/managed_agents/types.ts";

const SEARCH_TOOL = { type: "agent_toolset_20260401" };
const MCP = { type: "url", name: "docs", url: "https://mcp.example/docs" };

function manifest(): TeamManifest {
  return {
    version: 1,
    teams: [
      {
        id: "research",
        name: "Research",
        slug: "research",
        metadata: {
          provider: { model: "model-large", system: "Coordinate research." },
          owner: "x",
        },
        members: [
          {
            id: "reader",
            name: "Reader",
            slug: "reader",
            capabilities: ["read", "summarize"],
            metadata: { provider: { tools: [SEARCH_TOOL] } },
          },
          {
            id: "critic",
            name: "Critic",
            capabilities: [],
            metadata: { provider: { model: "model-tuned", description: "Finds holes." } },
          },
        ],
      },
      {
        id: "ops",
        name: "Operations",
        members: [{ id: "runner", name: "Runner", capabilities: ["deploy"] }],
      },
    ],
  };
}

const OPTIONS = {
  memberDefaults: { model: "model-small", mcpServers: [MCP] },
  coordinatorDefaults: { model: "model-medium", system: "You coordinate." },
};

/** Records every call; ids are handed out in call order. */
class RecordingClient implements ManagedAgentTeamsClient {
  calls: CreateManagedAgentParams[] = [];
  failAt = -1;
  async createAgent(params: CreateManagedAgentParams): Promise<ManagedAgentAgent> {
    await Promise.resolve();
    this.calls.push(structuredClone(params));
    if (this.calls.length - 1 === this.failAt) throw new Error("rate limited");
    return { id: `agent_${this.calls.length}`, version: this.calls.length * 10, name: params.name };
  }
}

Deno.test("the plan of a multi-team manifest follows the mapping rules", () => {
  const input = manifest();
  const before = structuredClone(input);
  const plan = buildManagedAgentTeamsPlan(input, OPTIONS);
  assert.deepEqual(input, before, "the manifest is not modified");
  assert.deepEqual(plan, {
    teams: [
      {
        teamId: "research",
        members: [
          {
            memberId: "reader",
            agent: {
              name: "Reader",
              model: "model-small",
              description: "Capabilities: read, summarize",
              tools: [SEARCH_TOOL],
              mcpServers: [MCP],
              metadata: {
                manifest_team_id: "research",
                manifest_member_id: "reader",
                manifest_role: "member",
                manifest_slug: "reader",
                manifest_capabilities: "read,summarize",
              },
            },
          },
          {
            memberId: "critic",
            agent: {
              name: "Critic",
              model: "model-tuned",
              description: "Finds holes.",
              mcpServers: [MCP],
              metadata: {
                manifest_team_id: "research",
                manifest_member_id: "critic",
                manifest_role: "member",
              },
            },
          },
        ],
        coordinator: {
          name: "Research",
          model: "model-large",
          system: "Coordinate research.",
          metadata: {
            manifest_team_id: "research",
            manifest_role: "coordinator",
            manifest_slug: "research",
          },
        },
      },
      {
        teamId: "ops",
        members: [
          {
            memberId: "runner",
            agent: {
              name: "Runner",
              model: "model-small",
              description: "Capabilities: deploy",
              mcpServers: [MCP],
              metadata: {
                manifest_team_id: "ops",
                manifest_member_id: "runner",
                manifest_role: "member",
                manifest_capabilities: "deploy",
              },
            },
          },
        ],
        coordinator: {
          name: "Operations",
          model: "model-medium",
          system: "You coordinate.",
          metadata: { manifest_team_id: "ops", manifest_role: "coordinator" },
        },
      },
    ],
  });
  for (const team of plan.teams) assert.ok(!("multiagent" in team.coordinator));
  assert.deepEqual(buildManagedAgentTeamsPlan(input, OPTIONS), plan, "pure: same input, same plan");
});

Deno.test("configKey selects which metadata entry holds the behaviour config", () => {
  const input = manifest();
  input.teams[1].members[0].metadata = { other: { model: "model-other" } };
  const plan = buildManagedAgentTeamsPlan(input, { ...OPTIONS, configKey: "other" });
  assert.equal(plan.teams[1].members[0].agent.model, "model-other");
  // The `provider` entries are ignored under another key, so the defaults apply.
  assert.equal(plan.teams[0].coordinator.model, "model-medium");
  assert.equal(plan.teams[0].members[1].agent.model, "model-small");
});

Deno.test("provisioning creates members first, then coordinators with their rosters", async () => {
  const client = new RecordingClient();
  const result = await provisionManagedAgentTeams(client, manifest(), OPTIONS);
  assert.deepEqual(
    client.calls.map((call) => [call.name, call.metadata?.manifest_role]),
    [
      ["Reader", "member"],
      ["Critic", "member"],
      ["Runner", "member"],
      ["Research", "coordinator"],
      ["Operations", "coordinator"],
    ],
  );
  assert.deepEqual(client.calls[3].multiagent, {
    type: "coordinator",
    agents: [
      { type: "agent", id: "agent_1", version: 10 },
      { type: "agent", id: "agent_2", version: 20 },
    ],
  });
  assert.deepEqual(client.calls[4].multiagent, {
    type: "coordinator",
    agents: [{ type: "agent", id: "agent_3", version: 30 }],
  });
  for (const call of client.calls.slice(0, 3)) assert.equal(call.multiagent, undefined);
  assert.deepEqual(result, {
    teams: [
      {
        teamId: "research",
        coordinatorAgentId: "agent_4",
        coordinatorVersion: 40,
        members: [
          { memberId: "reader", agentId: "agent_1", version: 10 },
          { memberId: "critic", agentId: "agent_2", version: 20 },
        ],
      },
      {
        teamId: "ops",
        coordinatorAgentId: "agent_5",
        coordinatorVersion: 50,
        members: [{ memberId: "runner", agentId: "agent_3", version: 30 }],
      },
    ],
  });
});

Deno.test("a missing model throws before any call and names every agent lacking one", async () => {
  const client = new RecordingClient();
  const input = manifest();
  const error = await provisionManagedAgentTeams(client, input, {
    memberDefaults: { mcpServers: [MCP] },
  }).then(() => assert.fail("expected a rejection"), (e: unknown) => e);
  assert.ok(error instanceof TeamManifestError);
  assert.equal(error.code, "invalidTeamManifest");
  assert.equal(client.calls.length, 0, "no agent was created");
  // research's coordinator and the critic have their own model; the rest have none.
  assert.deepEqual(error.issues, [
    "teams[0].members[0] (member reader): no model; set metadata.provider.model or " +
    "memberDefaults.model",
    "teams[1].members[0] (member runner): no model; set metadata.provider.model or " +
    "memberDefaults.model",
    "teams[1] (team ops): no model; set metadata.provider.model or coordinatorDefaults.model",
  ]);
});

Deno.test("a failure midway reports the agents already created, and resume finishes the job", async () => {
  const client = new RecordingClient();
  client.failAt = 3; // the first coordinator
  const error = await provisionManagedAgentTeams(client, manifest(), OPTIONS).then(
    () => assert.fail("expected a rejection"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof TeamProvisioningError);
  assert.equal(error.code, "teamProvisioningFailed");
  assert.deepEqual(error.failed, { teamId: "research" });
  assert.deepEqual(error.created, [
    { teamId: "research", memberId: "reader", agentId: "agent_1", version: 10 },
    { teamId: "research", memberId: "critic", agentId: "agent_2", version: 20 },
    { teamId: "ops", memberId: "runner", agentId: "agent_3", version: 30 },
  ]);
  assert.match(error.message, /coordinator of team research/);
  assert.match(error.message, /agent_1, agent_2, agent_3/);
  assert.equal((error.cause as Error).message, "rate limited");

  client.failAt = -1;
  const result = await provisionManagedAgentTeams(client, manifest(), {
    ...OPTIONS,
    resume: error.created,
  });
  assert.deepEqual(client.calls.slice(4).map((call) => call.name), ["Research", "Operations"]);
  assert.equal(result.teams[0].coordinatorAgentId, "agent_5");
  assert.deepEqual(result.teams[0].members.map((m) => m.agentId), ["agent_1", "agent_2"]);
  assert.deepEqual(client.calls[4].multiagent, {
    type: "coordinator",
    agents: [
      { type: "agent", id: "agent_1", version: 10 },
      { type: "agent", id: "agent_2", version: 20 },
    ],
  });
});

Deno.test("a failure on the first call reports that nothing was created", async () => {
  const client = new RecordingClient();
  client.failAt = 0;
  const error = await provisionManagedAgentTeams(client, manifest(), OPTIONS).then(
    () => assert.fail("expected a rejection"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof TeamProvisioningError);
  assert.deepEqual(error.created, []);
  assert.deepEqual(error.failed, { teamId: "research", memberId: "reader" });
  assert.match(
    error.message,
    /member reader of team research failed; agents already created: none/,
  );
});

Deno.test("an agent without an id from the client counts as a failure", async () => {
  const client: ManagedAgentTeamsClient = {
    createAgent: () => Promise.resolve({ id: "" }),
  };
  await assert.rejects(
    provisionManagedAgentTeams(client, manifest(), OPTIONS),
    (e) => e instanceof TeamProvisioningError && e.created.length === 0,
  );
});

Deno.test("an aborted signal stops before the next creation", async () => {
  const controller = new AbortController();
  const client = new RecordingClient();
  const original = client.createAgent.bind(client);
  client.createAgent = async (params) => {
    const agent = await original(params);
    if (client.calls.length === 2) controller.abort(new Error("stop"));
    return agent;
  };
  const error = await provisionManagedAgentTeams(client, manifest(), {
    ...OPTIONS,
    signal: controller.signal,
  }).then(() => assert.fail("expected a rejection"), (e: unknown) => e);
  assert.ok(error instanceof TeamProvisioningError);
  assert.equal(client.calls.length, 2);
  assert.deepEqual(error.created.map((r) => r.agentId), ["agent_1", "agent_2"]);
});

Deno.test("validation lists every problem with its path", () => {
  const bad = {
    version: 2,
    teams: [
      {
        id: "a",
        name: "",
        slug: "Bad Slug",
        members: [
          { id: "m", name: "M", capabilities: ["x,y", "", "z", "z"] },
          { id: "m", name: "M2", metadata: [] },
          "nope",
        ],
      },
      { id: "a", name: "B", members: [] },
      {
        id: "c",
        name: "C",
        members: Array.from({ length: 21 }, (_, i) => ({ id: `m${i}`, name: "M" })),
      },
    ],
  };
  const error = (() => {
    try {
      validateTeamManifest(bad);
    } catch (e) {
      return e;
    }
    assert.fail("expected a throw");
  })();
  assert.ok(error instanceof TeamManifestError);
  assert.deepEqual(error.issues, [
    "version: must be 1",
    "teams[0].name: must be a non-empty string",
    "teams[0].slug: must be lower-case kebab-case (a-z, 0-9, single hyphens)",
    "teams[0].members[0].capabilities[0]: must be a non-empty string without commas",
    "teams[0].members[0].capabilities[1]: must be a non-empty string without commas",
    'teams[0].members[0].capabilities[3]: duplicate capability "z"',
    'teams[0].members[1].id: duplicate id "m"',
    "teams[0].members[1].metadata: must be an object",
    "teams[0].members[2]: must be an object",
    'teams[1].id: duplicate id "a"',
    "teams[1].members: must be a non-empty array",
    "teams[2].members: at most 20 members (the provider's roster limit)",
  ]);
  assert.throws(() => validateTeamManifest(null), TeamManifestError);
  assert.throws(
    () => validateTeamManifest({ version: 1, teams: [] }),
    /teams: must be a non-empty array/,
  );
  assert.equal(validateTeamManifest(manifest()).teams.length, 2);
});

Deno.test("a malformed behaviour config is refused with its path", () => {
  const input = manifest();
  input.teams[0].members[0].metadata = {
    provider: { model: 5, mcp_servers: [], tools: ["bash"] },
  };
  input.teams[1].metadata = { provider: "model-x" };
  assert.throws(
    () => buildManagedAgentTeamsPlan(input, OPTIONS),
    (e) =>
      e instanceof TeamManifestError &&
      e.issues.join("\n") === [
          "teams[0].members[0].metadata.provider.model: must be a non-empty string",
          "teams[0].members[0].metadata.provider.mcp_servers: unknown field (expected model, " +
          "system, description, tools, mcpServers, skills)",
          "teams[0].members[0].metadata.provider.tools: must be an array of objects",
          "teams[1].metadata.provider: must be an object",
        ].join("\n"),
  );
  assert.throws(
    () => buildManagedAgentTeamsPlan(manifest(), { coordinatorDefaults: { model: "" } }),
    /coordinatorDefaults.model: must be a non-empty string/,
  );
});
