/**
 * Wire conformance: for every operation of the managed-agents client, the request it sends
 * (method, path, decoded query multiset, body JSON, version, beta and auth headers, content-type
 * presence) is compared with what the vendor's official TypeScript SDK (1.12.x, `maxRetries: 0`)
 * sends for the same call to the same recording server (`tests/support/recorder.ts`).
 *
 * Differences the spec mandates are listed in {@linkcode ALLOWED_DIFFERENCES} with the reason and
 * asserted exactly, never ignored: any other difference fails the test.
 */
import assert from "node:assert/strict";
import Vendor from "@anthropic-ai/sdk";
import { ProviderApiError, ProviderManagedAgentClient } from "../../client/mod.ts";
import { type RecordedRequest, Recorder } from "../support/recorder.ts";

const KEY = "sk-test-conformance";
const MANAGED = "managed-agents-2026-04-01";
const MEMORY = "agent-memory-2026-07-22";

/** Every difference between our requests and the vendor SDK's that the spec mandates. */
const ALLOWED_DIFFERENCES = {
  auth: "docs/library.md (vendor SDK): apiKey is sent as `x-api-key`; SDK 1.12.0 sends " +
    "every key as `Authorization: Bearer` (with authToken both send the same bearer header)",
  memoryBeta: "docs/library.md (vendor SDK): one beta value, `managed-agents-2026-04-01`, on " +
    "every managed-agents request; the SDK sends `agent-memory-2026-07-22` on memory stores, " +
    "memories and memory versions (the provider accepts either there)",
  environmentDefault: "docs/library.md (vendor SDK): environment creation defaults to a " +
    "cloud, unrestricted environment, so we send that `config` when the caller gives none",
} as const;

/** The semantically relevant view of a request: what the provider reads of it. */
interface WireView {
  method: string;
  path: string;
  query: string[];
  version: string | undefined;
  betas: string[];
  auth: string;
  workspace: string | undefined;
  hasContentType: boolean;
  body: unknown;
}

/** The vendor SDK writes its brand where we write `provider`: `<brand>-version`, `<brand>-beta`. */
function neutralHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const match = /^([a-z]+)-(version|beta|workspace-id)$/.exec(name);
    out[match ? `provider-${match[2]}` : name] = value;
  }
  return out;
}

function view(request: RecordedRequest): WireView {
  const headers = neutralHeaders(request.headers);
  const auth = headers["x-api-key"] !== undefined
    ? `x-api-key ${headers["x-api-key"]}`
    : headers["authorization"] ?? "none";
  return {
    method: request.method,
    path: request.path,
    query: request.query.map(([k, v]) => `${k}=${v}`).sort(),
    version: headers["provider-version"],
    betas: (headers["provider-beta"] ?? "").split(",").filter((b) => b !== "").sort(),
    auth,
    workspace: headers["provider-workspace-id"],
    hasContentType: headers["content-type"] !== undefined,
    body: request.bodyText === "" ? undefined : request.json ?? request.bodyText,
  };
}

type Ours = ProviderManagedAgentClient;
type Theirs = InstanceType<typeof Vendor>;

interface Case {
  name: string;
  ours: (client: Ours) => Promise<unknown>;
  theirs: (sdk: Theirs) => Promise<unknown>;
  /** Memory routes: the SDK sends the memory beta. */
  memory?: boolean;
  /** Applies an allowed body difference to the vendor view before comparing. */
  adjust?: (vendor: WireView) => void;
}

const text = [{ type: "text", text: "hi" }];
const rubric = { type: "text" as const, content: "All tests pass" };
const oauth = {
  type: "mcp_oauth" as const,
  mcp_server_url: "https://mcp.example/sse",
  access_token: "at",
  expires_at: "2026-01-01T00:00:00Z",
  refresh: {
    token_endpoint: "https://auth.example/token",
    client_id: "cid",
    refresh_token: "rt",
    token_endpoint_auth: { type: "client_secret_post" as const, client_secret: "cs" },
  },
};

/** Reads a stream to its end so the connection is released. */
async function drain(stream: ReadableStream<Uint8Array> | AsyncIterable<unknown>): Promise<void> {
  if (stream instanceof ReadableStream) {
    await stream.cancel();
    return;
  }
  for await (const _ of stream) {
    // consume
  }
}

const CASES: Case[] = [
  // agents
  {
    name: "createAgent",
    ours: (c) =>
      c.createAgent({
        name: "coder",
        model: "model-x",
        system: "Be brief",
        description: "d",
        tools: [{ type: "agent_toolset_20260401" }],
        mcpServers: [{ type: "url", name: "docs", url: "https://mcp.example" }],
        skills: [{ type: "custom", skill_id: "sk_1" }],
        multiagent: { type: "coordinator", agents: ["agent_2"] },
        metadata: { team: "a" },
      }),
    theirs: (s) =>
      s.beta.agents.create({
        name: "coder",
        model: "model-x",
        system: "Be brief",
        description: "d",
        tools: [{ type: "agent_toolset_20260401" }],
        mcp_servers: [{ type: "url", name: "docs", url: "https://mcp.example" }],
        skills: [{ type: "custom", skill_id: "sk_1" }],
        multiagent: { type: "coordinator", agents: ["agent_2"] },
        metadata: { team: "a" },
      } as never),
  },
  {
    name: "updateAgent",
    ours: (c) => c.updateAgent("agent_1", { system: "New", version: 2, metadata: { a: "b" } }),
    theirs: (s) =>
      s.beta.agents.update("agent_1", { system: "New", version: 2, metadata: { a: "b" } } as never),
  },
  {
    name: "getAgent",
    ours: (c) => c.getAgent("agent_1"),
    theirs: (s) => s.beta.agents.retrieve("agent_1"),
  },
  {
    name: "getAgent (version, id needing encoding)",
    ours: (c) => c.getAgent("agent 1/x", { version: 3 }),
    theirs: (s) => s.beta.agents.retrieve("agent 1/x", { version: 3 }),
  },
  {
    name: "listAgents",
    ours: (c) =>
      c.listAgents({
        limit: 5,
        includeArchived: true,
        createdAt: { gte: "2026-01-01T00:00:00Z", lte: "2026-02-01T00:00:00Z" },
      }),
    theirs: (s) =>
      s.beta.agents.list({
        limit: 5,
        include_archived: true,
        "created_at[gte]": "2026-01-01T00:00:00Z",
        "created_at[lte]": "2026-02-01T00:00:00Z",
      } as never),
  },
  {
    name: "listAgentVersions",
    ours: (c) => c.listAgentVersions("agent_1", { limit: 2, page: "p2" }),
    theirs: (s) => s.beta.agents.versions.list("agent_1", { limit: 2, page: "p2" }),
  },
  {
    name: "archiveAgent",
    ours: (c) => c.archiveAgent("agent_1"),
    theirs: (s) => s.beta.agents.archive("agent_1"),
  },
  // environments
  {
    name: "createEnvironment (explicit config)",
    ours: (c) =>
      c.createEnvironment({
        name: "env",
        description: "d",
        config: { type: "cloud", networking: { type: "limited", allowed_hosts: ["a.example"] } },
        metadata: { k: "v" },
      }),
    theirs: (s) =>
      s.beta.environments.create({
        name: "env",
        description: "d",
        config: { type: "cloud", networking: { type: "limited", allowed_hosts: ["a.example"] } },
        metadata: { k: "v" },
      } as never),
  },
  {
    name: "createEnvironment (default config)",
    ours: (c) => c.createEnvironment({ name: "env" }),
    theirs: (s) => s.beta.environments.create({ name: "env" }),
    adjust: (vendor) => {
      // ALLOWED_DIFFERENCES.environmentDefault
      assert.equal((vendor.body as { config?: unknown }).config, undefined);
      (vendor.body as Record<string, unknown>).config = {
        type: "cloud",
        networking: { type: "unrestricted" },
      };
    },
  },
  {
    name: "getEnvironment",
    ours: (c) => c.getEnvironment("env_1"),
    theirs: (s) => s.beta.environments.retrieve("env_1"),
  },
  {
    name: "listEnvironments",
    ours: (c) => c.listEnvironments({ includeArchived: false, limit: 10 }),
    theirs: (s) => s.beta.environments.list({ include_archived: false, limit: 10 }),
  },
  {
    name: "updateEnvironment",
    ours: (c) => c.updateEnvironment("env_1", { name: "n", metadata: { drop: null } }),
    theirs: (s) =>
      s.beta.environments.update("env_1", { name: "n", metadata: { drop: null } } as never),
  },
  {
    name: "deleteEnvironment",
    ours: (c) => c.deleteEnvironment("env_1"),
    theirs: (s) => s.beta.environments.delete("env_1"),
  },
  {
    name: "archiveEnvironment",
    ours: (c) => c.archiveEnvironment("env_1"),
    theirs: (s) => s.beta.environments.archive("env_1"),
  },
  // work queue
  {
    name: "getWorkQueueStats",
    ours: (c) => c.getWorkQueueStats("env_1"),
    theirs: (s) => s.beta.environments.work.stats("env_1"),
  },
  {
    name: "stopWork",
    ours: (c) => c.stopWork("env_1", "work_1"),
    theirs: (s) => s.beta.environments.work.stop("work_1", { environment_id: "env_1" }),
  },
  {
    name: "stopWork (force)",
    ours: (c) => c.stopWork("env_1", "work_1", { force: true }),
    theirs: (s) =>
      s.beta.environments.work.stop("work_1", { environment_id: "env_1", force: true }),
  },
  // sessions
  {
    name: "createSession (latest agent)",
    ours: (c) =>
      c.createSession({
        agentId: "agent_1",
        environmentId: "env_1",
        title: "t",
        resources: [{ type: "file", file_id: "file_1" }],
        vaultIds: ["vlt_1"],
        metadata: { a: "b" },
      }),
    theirs: (s) =>
      s.beta.sessions.create({
        agent: "agent_1",
        environment_id: "env_1",
        title: "t",
        resources: [{ type: "file", file_id: "file_1" }],
        vault_ids: ["vlt_1"],
        metadata: { a: "b" },
      } as never),
  },
  {
    name: "createSession (budget and initial events)",
    ours: (c) =>
      c.createSession({
        agentId: "agent_1",
        environmentId: "env_1",
        budget: { type: "limit", max_list_cost: { amount: "5.00", currency: "USD" } },
        initialEvents: [{ type: "user.message", content: text }],
      }),
    theirs: (s) =>
      s.beta.sessions.create({
        agent: "agent_1",
        environment_id: "env_1",
        budget: { type: "limit", max_list_cost: { amount: "5.00", currency: "USD" } },
        initial_events: [{ type: "user.message", content: text }],
      } as never),
  },
  {
    name: "rawRequest (a vault update passed on as it is, with the caller's version)",
    ours: (c) =>
      c.rawRequest({
        method: "POST",
        path: "/v1/vaults/vlt_1",
        query: "x=1",
        body: { display_name: "v" },
        providerVersion: "2026-10-21",
      }),
    theirs: (s) =>
      s.beta.vaults.update("vlt_1", { display_name: "v" } as never, {
        query: { x: 1 },
      }),
  },
  {
    name: "createSession (pinned version)",
    ours: (c) => c.createSession({ agentId: "agent_1", agentVersion: 4, environmentId: "env_1" }),
    theirs: (s) =>
      s.beta.sessions.create({
        agent: { type: "agent", id: "agent_1", version: 4 },
        environment_id: "env_1",
      }),
  },
  {
    name: "createSession (overrides)",
    ours: (c) =>
      c.createSession({
        agentId: "agent_1",
        agentVersion: 2,
        agentOverrides: { model: "model-y", system: null, tools: [] },
        environmentId: "env_1",
      }),
    theirs: (s) =>
      s.beta.sessions.create({
        agent: {
          type: "agent_with_overrides",
          id: "agent_1",
          version: 2,
          model: "model-y",
          system: null,
          tools: [],
        },
        environment_id: "env_1",
      } as never),
  },
  {
    name: "getSession",
    ours: (c) => c.getSession("sesn_1"),
    theirs: (s) => s.beta.sessions.retrieve("sesn_1"),
  },
  {
    name: "listSessions",
    ours: (c) =>
      c.listSessions({
        agentId: "agent_1",
        agentVersion: 2,
        deploymentId: "depl_1",
        memoryStoreId: "memstore_1",
        statuses: ["idle", "running"],
        includeArchived: true,
        order: "asc",
        createdAt: { gt: "2026-01-01T00:00:00Z", lt: "2026-03-01T00:00:00Z" },
        limit: 3,
      }),
    theirs: (s) =>
      s.beta.sessions.list({
        agent_id: "agent_1",
        agent_version: 2,
        deployment_id: "depl_1",
        memory_store_id: "memstore_1",
        statuses: ["idle", "running"],
        include_archived: true,
        order: "asc",
        "created_at[gt]": "2026-01-01T00:00:00Z",
        "created_at[lt]": "2026-03-01T00:00:00Z",
        limit: 3,
      } as never),
  },
  {
    name: "updateSession",
    ours: (c) =>
      c.updateSession("sesn_1", {
        title: "t2",
        metadata: { a: null },
        agent: { tools: [], mcp_servers: [] },
      }),
    theirs: (s) =>
      s.beta.sessions.update("sesn_1", {
        title: "t2",
        metadata: { a: null },
        agent: { tools: [], mcp_servers: [] },
      } as never),
  },
  {
    name: "deleteSession",
    ours: (c) => c.deleteSession("sesn_1"),
    theirs: (s) => s.beta.sessions.delete("sesn_1"),
  },
  {
    name: "archiveSession",
    ours: (c) => c.archiveSession("sesn_1"),
    theirs: (s) => s.beta.sessions.archive("sesn_1"),
  },
  // session resources
  {
    name: "addResource",
    ours: (c) => c.addResource("sesn_1", { type: "file", file_id: "file_1", mount_path: "/m" }),
    theirs: (s) =>
      s.beta.sessions.resources.add("sesn_1", {
        type: "file",
        file_id: "file_1",
        mount_path: "/m",
      }),
  },
  {
    name: "listResources",
    ours: (c) => c.listResources("sesn_1"),
    theirs: (s) => s.beta.sessions.resources.list("sesn_1"),
  },
  {
    name: "getResource",
    ours: (c) => c.getResource("sesn_1", "sesrsc_1"),
    theirs: (s) => s.beta.sessions.resources.retrieve("sesrsc_1", { session_id: "sesn_1" }),
  },
  {
    name: "updateResource",
    ours: (c) => c.updateResource("sesn_1", "sesrsc_1", { authorization_token: "tok" }),
    theirs: (s) =>
      s.beta.sessions.resources.update("sesrsc_1", {
        session_id: "sesn_1",
        authorization_token: "tok",
      }),
  },
  {
    name: "deleteResource",
    ours: (c) => c.deleteResource("sesn_1", "sesrsc_1"),
    theirs: (s) => s.beta.sessions.resources.delete("sesrsc_1", { session_id: "sesn_1" }),
  },
  // session events
  {
    name: "sendEvents",
    ours: (c) =>
      c.sendEvents("sesn_1", [
        { type: "user.message", content: text },
        { type: "system.message", content: text },
      ]),
    theirs: (s) =>
      s.beta.sessions.events.send("sesn_1", {
        events: [
          { type: "user.message", content: text },
          { type: "system.message", content: text },
        ],
      } as never),
  },
  {
    name: "sendMessage",
    ours: (c) => c.sendMessage("sesn_1", "hi"),
    theirs: (s) =>
      s.beta.sessions.events.send("sesn_1", {
        events: [{ type: "user.message", content: text }],
      } as never),
  },
  {
    name: "interruptSession",
    ours: (c) => c.interruptSession("sesn_1"),
    theirs: (s) =>
      s.beta.sessions.events.send("sesn_1", { events: [{ type: "user.interrupt" }] } as never),
  },
  {
    name: "interruptSession (one thread)",
    ours: (c) => c.interruptSession("sesn_1", { sessionThreadId: "sthr_2" }),
    theirs: (s) =>
      s.beta.sessions.events.send("sesn_1", {
        events: [{ type: "user.interrupt", session_thread_id: "sthr_2" }],
      } as never),
  },
  {
    name: "listEvents",
    ours: (c) =>
      c.listEvents("sesn_1", {
        limit: 1000,
        order: "desc",
        types: ["agent.message", "session.status_idle"],
        createdAt: { gte: "2026-01-01T00:00:00Z" },
      }),
    theirs: (s) =>
      s.beta.sessions.events.list("sesn_1", {
        limit: 1000,
        order: "desc",
        types: ["agent.message", "session.status_idle"],
        "created_at[gte]": "2026-01-01T00:00:00Z",
      } as never),
  },
  {
    name: "confirmTool (allow; thread id not on the wire)",
    ours: (c) =>
      c.confirmTool("sesn_1", { toolUseId: "sevt_9", result: "allow", sessionThreadId: "sthr_2" }),
    theirs: (s) =>
      s.beta.sessions.events.send("sesn_1", {
        events: [{ type: "user.tool_confirmation", tool_use_id: "sevt_9", result: "allow" }],
      }),
  },
  {
    name: "confirmTool (deny)",
    ours: (c) =>
      c.confirmTool("sesn_1", { toolUseId: "sevt_9", result: "deny", denyMessage: "no" }),
    theirs: (s) =>
      s.beta.sessions.events.send("sesn_1", {
        events: [{
          type: "user.tool_confirmation",
          tool_use_id: "sevt_9",
          result: "deny",
          deny_message: "no",
        }],
      }),
  },
  {
    name: "respondCustomTool",
    ours: (c) =>
      c.respondCustomTool("sesn_1", { toolUseId: "sevt_8", content: text, isError: true }),
    theirs: (s) =>
      s.beta.sessions.events.send("sesn_1", {
        events: [{
          type: "user.custom_tool_result",
          custom_tool_use_id: "sevt_8",
          content: text,
          is_error: true,
        }],
      } as never),
  },
  {
    name: "defineOutcome",
    ours: (c) => c.defineOutcome("sesn_1", { description: "ship", rubric, maxIterations: 5 }),
    theirs: (s) =>
      s.beta.sessions.events.send("sesn_1", {
        events: [{ type: "user.define_outcome", description: "ship", rubric, max_iterations: 5 }],
      } as never),
  },
  {
    name: "openEventStream",
    ours: async (c) => await drain(await c.openEventStream("sesn_1")),
    theirs: async (s) => await drain(await s.beta.sessions.events.stream("sesn_1")),
  },
  // threads
  {
    name: "listThreads",
    ours: (c) => c.listThreads("sesn_1", { statuses: ["running"] }),
    theirs: (s) => s.beta.sessions.threads.list("sesn_1", { statuses: ["running"] } as never),
  },
  {
    name: "getThread",
    ours: (c) => c.getThread("sesn_1", "sthr_1"),
    theirs: (s) => s.beta.sessions.threads.retrieve("sthr_1", { session_id: "sesn_1" }),
  },
  {
    name: "archiveThread",
    ours: (c) => c.archiveThread("sesn_1", "sthr_1"),
    theirs: (s) => s.beta.sessions.threads.archive("sthr_1", { session_id: "sesn_1" }),
  },
  {
    name: "listThreadEvents",
    ours: (c) => c.listThreadEvents("sesn_1", "sthr_1", { limit: 7 }),
    theirs: (s) =>
      s.beta.sessions.threads.events.list("sthr_1", { session_id: "sesn_1", limit: 7 }),
  },
  {
    name: "openThreadEventStream",
    ours: async (c) => await drain(await c.openThreadEventStream("sesn_1", "sthr_1")),
    theirs: async (s) =>
      await drain(await s.beta.sessions.threads.events.stream("sthr_1", { session_id: "sesn_1" })),
  },
  // memory stores
  {
    name: "createMemoryStore",
    memory: true,
    ours: (c) => c.createMemoryStore({ name: "m", description: "d", metadata: { a: "b" } }),
    theirs: (s) =>
      s.beta.memoryStores.create({ name: "m", description: "d", metadata: { a: "b" } }),
  },
  {
    name: "getMemoryStore",
    memory: true,
    ours: (c) => c.getMemoryStore("memstore_1"),
    theirs: (s) => s.beta.memoryStores.retrieve("memstore_1"),
  },
  {
    name: "listMemoryStores",
    memory: true,
    ours: (c) => c.listMemoryStores({ includeArchived: true }),
    theirs: (s) => s.beta.memoryStores.list({ include_archived: true }),
  },
  {
    name: "updateMemoryStore",
    memory: true,
    ours: (c) => c.updateMemoryStore("memstore_1", { name: "m2" }),
    theirs: (s) => s.beta.memoryStores.update("memstore_1", { name: "m2" }),
  },
  {
    name: "deleteMemoryStore",
    memory: true,
    ours: (c) => c.deleteMemoryStore("memstore_1"),
    theirs: (s) => s.beta.memoryStores.delete("memstore_1"),
  },
  {
    name: "archiveMemoryStore",
    memory: true,
    ours: (c) => c.archiveMemoryStore("memstore_1"),
    theirs: (s) => s.beta.memoryStores.archive("memstore_1"),
  },
  // memories
  {
    name: "createMemory",
    memory: true,
    ours: (c) => c.createMemory("memstore_1", { path: "/notes/a.md", content: "x" }),
    theirs: (s) =>
      s.beta.memoryStores.memories.create("memstore_1", { path: "/notes/a.md", content: "x" }),
  },
  {
    name: "getMemory",
    memory: true,
    ours: (c) => c.getMemory("memstore_1", "mem_1", "basic"),
    theirs: (s) =>
      s.beta.memoryStores.memories.retrieve("mem_1", {
        memory_store_id: "memstore_1",
        view: "basic",
      }),
  },
  {
    name: "listMemories",
    memory: true,
    ours: (c) => c.listMemories("memstore_1", { pathPrefix: "/notes/", depth: 1, view: "full" }),
    theirs: (s) =>
      s.beta.memoryStores.memories.list("memstore_1", {
        path_prefix: "/notes/",
        depth: 1,
        view: "full",
      }),
  },
  {
    name: "updateMemory",
    memory: true,
    ours: (c) =>
      c.updateMemory("memstore_1", "mem_1", {
        content: "y",
        path: "/notes/b.md",
        precondition: { type: "content_sha256", content_sha256: "ab" },
      }),
    theirs: (s) =>
      s.beta.memoryStores.memories.update("mem_1", {
        memory_store_id: "memstore_1",
        content: "y",
        path: "/notes/b.md",
        precondition: { type: "content_sha256", content_sha256: "ab" },
      }),
  },
  {
    name: "deleteMemory",
    memory: true,
    ours: (c) => c.deleteMemory("memstore_1", "mem_1"),
    theirs: (s) => s.beta.memoryStores.memories.delete("mem_1", { memory_store_id: "memstore_1" }),
  },
  // memory versions
  {
    name: "listMemoryVersions",
    memory: true,
    ours: (c) => c.listMemoryVersions("memstore_1", "mem_1"),
    theirs: (s) => s.beta.memoryStores.memoryVersions.list("memstore_1", { memory_id: "mem_1" }),
  },
  {
    name: "getMemoryVersion",
    memory: true,
    ours: (c) => c.getMemoryVersion("memstore_1", "memver_1"),
    theirs: (s) =>
      s.beta.memoryStores.memoryVersions.retrieve("memver_1", { memory_store_id: "memstore_1" }),
  },
  {
    name: "redactMemoryVersion",
    memory: true,
    ours: (c) => c.redactMemoryVersion("memstore_1", "memver_1"),
    theirs: (s) =>
      s.beta.memoryStores.memoryVersions.redact("memver_1", { memory_store_id: "memstore_1" }),
  },
  // vaults
  {
    name: "createVault",
    ours: (c) => c.createVault({ displayName: "v", metadata: { a: "b" } }),
    theirs: (s) => s.beta.vaults.create({ display_name: "v", metadata: { a: "b" } }),
  },
  {
    name: "getVault",
    ours: (c) => c.getVault("vlt_1"),
    theirs: (s) => s.beta.vaults.retrieve("vlt_1"),
  },
  {
    name: "listVaults",
    ours: (c) => c.listVaults(true),
    theirs: (s) => s.beta.vaults.list({ include_archived: true }),
  },
  {
    name: "updateVault",
    ours: (c) => c.updateVault("vlt_1", { displayName: "v2", metadata: { a: null } }),
    theirs: (s) =>
      s.beta.vaults.update("vlt_1", { display_name: "v2", metadata: { a: null } } as never),
  },
  {
    name: "deleteVault",
    ours: (c) => c.deleteVault("vlt_1"),
    theirs: (s) => s.beta.vaults.delete("vlt_1"),
  },
  {
    name: "archiveVault",
    ours: (c) => c.archiveVault("vlt_1"),
    theirs: (s) => s.beta.vaults.archive("vlt_1"),
  },
  // credentials
  {
    name: "createCredential (mcp_oauth)",
    ours: (c) => c.createCredential("vlt_1", { displayName: "c", auth: oauth }),
    theirs: (s) => s.beta.vaults.credentials.create("vlt_1", { display_name: "c", auth: oauth }),
  },
  {
    name: "createCredential (static_bearer)",
    ours: (c) =>
      c.createCredential("vlt_1", {
        auth: { type: "static_bearer", mcp_server_url: "https://m.example", token: "t" },
      }),
    theirs: (s) =>
      s.beta.vaults.credentials.create("vlt_1", {
        auth: { type: "static_bearer", mcp_server_url: "https://m.example", token: "t" },
      }),
  },
  {
    name: "getCredential",
    ours: (c) => c.getCredential("vlt_1", "vcrd_1"),
    theirs: (s) => s.beta.vaults.credentials.retrieve("vcrd_1", { vault_id: "vlt_1" }),
  },
  {
    name: "listCredentials",
    ours: (c) => c.listCredentials("vlt_1", false),
    theirs: (s) => s.beta.vaults.credentials.list("vlt_1", { include_archived: false }),
  },
  {
    name: "updateCredential",
    ours: (c) =>
      c.updateCredential("vlt_1", "vcrd_1", {
        displayName: "c2",
        auth: { type: "mcp_oauth", access_token: "at2" },
      }),
    theirs: (s) =>
      s.beta.vaults.credentials.update("vcrd_1", {
        vault_id: "vlt_1",
        display_name: "c2",
        auth: { type: "mcp_oauth", access_token: "at2" },
      } as never),
  },
  {
    name: "deleteCredential",
    ours: (c) => c.deleteCredential("vlt_1", "vcrd_1"),
    theirs: (s) => s.beta.vaults.credentials.delete("vcrd_1", { vault_id: "vlt_1" }),
  },
  {
    name: "archiveCredential",
    ours: (c) => c.archiveCredential("vlt_1", "vcrd_1"),
    theirs: (s) => s.beta.vaults.credentials.archive("vcrd_1", { vault_id: "vlt_1" }),
  },
  {
    name: "validateMcpOauthCredential",
    ours: (c) => c.validateMcpOauthCredential("vlt_1", "vcrd_1"),
    theirs: (s) => s.beta.vaults.credentials.mcpOAuthValidate("vcrd_1", { vault_id: "vlt_1" }),
  },
  // deployments
  {
    name: "createDeployment",
    ours: (c) =>
      c.createDeployment({
        name: "nightly",
        agentId: "agent_1",
        agentVersion: 3,
        environmentId: "env_1",
        initialEvents: [{ type: "user.message", content: text }],
        schedule: { type: "cron", expression: "0 3 * * *", timezone: "Europe/Berlin" },
        resources: [{ type: "file", file_id: "file_1" }],
        vaultIds: ["vlt_1"],
        metadata: { a: "b" },
      }),
    theirs: (s) =>
      s.beta.deployments.create({
        name: "nightly",
        agent: { type: "agent", id: "agent_1", version: 3 },
        environment_id: "env_1",
        initial_events: [{ type: "user.message", content: text }],
        schedule: { type: "cron", expression: "0 3 * * *", timezone: "Europe/Berlin" },
        resources: [{ type: "file", file_id: "file_1" }],
        vault_ids: ["vlt_1"],
        metadata: { a: "b" },
      } as never),
  },
  {
    name: "getDeployment",
    ours: (c) => c.getDeployment("depl_1"),
    theirs: (s) => s.beta.deployments.retrieve("depl_1"),
  },
  {
    name: "listDeployments",
    ours: (c) => c.listDeployments({ agentId: "agent_1", status: "paused" }),
    theirs: (s) => s.beta.deployments.list({ agent_id: "agent_1", status: "paused" } as never),
  },
  {
    name: "pauseDeployment",
    ours: (c) => c.pauseDeployment("depl_1"),
    theirs: (s) => s.beta.deployments.pause("depl_1"),
  },
  {
    name: "unpauseDeployment",
    ours: (c) => c.unpauseDeployment("depl_1"),
    theirs: (s) => s.beta.deployments.unpause("depl_1"),
  },
  {
    name: "archiveDeployment",
    ours: (c) => c.archiveDeployment("depl_1"),
    theirs: (s) => s.beta.deployments.archive("depl_1"),
  },
  {
    name: "runDeployment",
    ours: (c) => c.runDeployment("depl_1"),
    theirs: (s) => s.beta.deployments.run("depl_1"),
  },
  {
    name: "listDeploymentRuns",
    ours: (c) => c.listDeploymentRuns("depl_1", { hasError: true }),
    theirs: (s) => s.beta.deploymentRuns.list({ deployment_id: "depl_1", has_error: true }),
  },
  {
    name: "getDeploymentRun",
    ours: (c) => c.getDeploymentRun("drun_1"),
    theirs: (s) => s.beta.deploymentRuns.retrieve("drun_1"),
  },
];

async function withRecorder(fn: (recorder: Recorder) => Promise<void>): Promise<void> {
  const recorder = Recorder.start();
  try {
    await fn(recorder);
  } finally {
    await recorder.close();
  }
}

Deno.test("every client operation sends what the vendor SDK sends, apart from the listed differences", async (t) => {
  await withRecorder(async (recorder) => {
    const ours = new ProviderManagedAgentClient({ baseUrl: recorder.baseUrl, apiKey: KEY });
    const theirs = new Vendor({ apiKey: KEY, baseURL: recorder.baseUrl, maxRetries: 0 });
    for (const c of CASES) {
      await t.step(c.name, async () => {
        recorder.take();
        await c.ours(ours);
        const mine = recorder.take();
        await c.theirs(theirs);
        const vendor = recorder.take();
        assert.equal(mine.length, 1, "our client sends exactly one request");
        assert.equal(vendor.length, 1, "the SDK sends exactly one request");
        const a = view(mine[0]);
        const b = view(vendor[0]);
        // ALLOWED_DIFFERENCES.auth: asserted, then aligned.
        assert.equal(a.auth, `x-api-key ${KEY}`);
        assert.equal(b.auth, `Bearer ${KEY}`);
        b.auth = a.auth;
        // ALLOWED_DIFFERENCES.memoryBeta: asserted, then aligned.
        assert.deepEqual(a.betas, [MANAGED]);
        assert.deepEqual(b.betas, [c.memory ? MEMORY : MANAGED]);
        b.betas = a.betas;
        c.adjust?.(b);
        assert.deepEqual(a, b);
      });
    }
  });
});

Deno.test("every operation of the spec's table has a conformance case", () => {
  const operations = [
    "createAgent",
    "updateAgent",
    "getAgent",
    "listAgents",
    "listAgentVersions",
    "archiveAgent",
    "createEnvironment",
    "getEnvironment",
    "listEnvironments",
    "updateEnvironment",
    "deleteEnvironment",
    "archiveEnvironment",
    "createSession",
    "getSession",
    "listSessions",
    "updateSession",
    "deleteSession",
    "archiveSession",
    "addResource",
    "listResources",
    "getResource",
    "updateResource",
    "deleteResource",
    "sendEvents",
    "sendMessage",
    "interruptSession",
    "listEvents",
    "confirmTool",
    "respondCustomTool",
    "defineOutcome",
    "openEventStream",
    "listThreads",
    "getThread",
    "archiveThread",
    "listThreadEvents",
    "openThreadEventStream",
    "createMemoryStore",
    "getMemoryStore",
    "listMemoryStores",
    "deleteMemoryStore",
    "archiveMemoryStore",
    "createMemory",
    "getMemory",
    "listMemories",
    "updateMemory",
    "deleteMemory",
    "listMemoryVersions",
    "getMemoryVersion",
    "redactMemoryVersion",
    "createVault",
    "getVault",
    "listVaults",
    "updateVault",
    "deleteVault",
    "archiveVault",
    "createCredential",
    "getCredential",
    "listCredentials",
    "updateCredential",
    "deleteCredential",
    "archiveCredential",
    "validateMcpOauthCredential",
    "getWorkQueueStats",
    "stopWork",
    "createDeployment",
    "pauseDeployment",
    "unpauseDeployment",
    "archiveDeployment",
    "runDeployment",
    "listDeploymentRuns",
    "getDeploymentRun",
  ];
  const covered = new Set(CASES.map((c) => c.name.split(" ")[0]));
  for (const operation of operations) {
    assert.ok(covered.has(operation), `${operation} has a conformance case`);
    assert.equal(
      typeof (ProviderManagedAgentClient.prototype as unknown as Record<string, unknown>)[
        operation
      ],
      "function",
    );
  }
  assert.equal(Object.keys(ALLOWED_DIFFERENCES).length, 3);
});

Deno.test("authToken is sent as the same bearer header the vendor SDK sends", async () => {
  await withRecorder(async (recorder) => {
    const ours = new ProviderManagedAgentClient({
      baseUrl: recorder.baseUrl,
      apiKey: "ignored-key",
      authToken: KEY,
    });
    const theirs = new Vendor({ apiKey: KEY, baseURL: recorder.baseUrl, maxRetries: 0 });
    await ours.getSession("sesn_1");
    await theirs.beta.sessions.retrieve("sesn_1");
    const [a, b] = recorder.take();
    assert.equal(a.headers["authorization"], `Bearer ${KEY}`);
    assert.equal(a.headers["x-api-key"], undefined);
    assert.equal(a.headers["authorization"], b.headers["authorization"]);
  });
});

Deno.test("a memory path conflict surfaces the same status, type and request id in both clients", async () => {
  await withRecorder(async (recorder) => {
    const conflict = () =>
      new Response(
        JSON.stringify({
          type: "error",
          error: { type: "memory_path_conflict_error", message: "Path is taken" },
          request_id: "req_body",
        }),
        {
          status: 409,
          headers: {
            "content-type": "application/json",
            "request-id": "req_conflict",
            "x-should-retry": "false",
          },
        },
      );
    const ours = new ProviderManagedAgentClient({ baseUrl: recorder.baseUrl, apiKey: KEY });
    const theirs = new Vendor({ apiKey: KEY, baseURL: recorder.baseUrl, maxRetries: 0 });
    recorder.respondNext(conflict);
    const mine = await ours.createMemory("memstore_1", { path: "/a", content: "x" }).catch((e) =>
      e
    );
    recorder.respondNext(conflict);
    const vendor = await theirs.beta.memoryStores.memories.create("memstore_1", {
      path: "/a",
      content: "x",
    }).catch((e) => e);
    assert.ok(mine instanceof ProviderApiError);
    assert.equal(mine.status, vendor.status);
    assert.equal(mine.type, vendor.type ?? vendor.error?.error?.type);
    assert.equal(mine.requestId, vendor.requestID);
    assert.equal(mine.message, "Path is taken");
    assert.equal(recorder.take().length, 2, "neither client retried");
  });
});
