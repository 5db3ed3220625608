/**
 * The operations of `ProviderManagedAgentClient` against the stateful fake provider: agents and
 * versions, environments, sessions, resources, events and answers, threads, memory stores and
 * memories (conflicts, preconditions, the 405 rule), memory versions, vaults and credentials,
 * deployments and runs, the work queue, pagination, paths and options.
 */
import assert from "node:assert/strict";
import {
  MemoryPathConflictError,
  PROVIDER_COLLECTION_PATHS,
  PROVIDER_MANAGED_AGENTS_BETA,
  providerAgentPath,
  ProviderApiError,
  providerEnvironmentPath,
  ProviderManagedAgentClient,
  providerSessionArchivePath,
  providerSessionEventsPath,
  providerSessionEventStreamPath,
  providerSessionPath,
  type ProviderTrace,
  readSessionEvents,
} from "../../client/mod.ts";
import { FakeProvider } from "../support/fake_provider.ts";

async function withClient(
  fn: (client: ProviderManagedAgentClient, fake: FakeProvider) => Promise<void>,
): Promise<void> {
  const fake = await FakeProvider.start();
  try {
    await fn(new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey: fake.apiKey }), fake);
  } finally {
    await fake.close();
  }
}

async function apiError(promise: Promise<unknown>): Promise<ProviderApiError> {
  const error = await promise.then(() => undefined, (e) => e);
  assert.ok(error instanceof ProviderApiError, `expected ProviderApiError, got ${error}`);
  return error;
}

const text = (t: string) => [{ type: "text", text: t }];

Deno.test("options: baseUrl and a credential are required; every request carries the beta header", async () => {
  assert.throws(() => new ProviderManagedAgentClient({ apiKey: "k" }), /baseUrl is required/);
  assert.throws(
    () => new ProviderManagedAgentClient({ baseUrl: "http://127.0.0.1:1" }),
    /apiKey or authToken is required/,
  );
  await withClient(async (client, fake) => {
    await client.createAgent({ name: "a", model: "m" });
    await client.listAgents();
    await client.createMemoryStore({ name: "s" });
    assert.ok(fake.requests.length >= 3);
    for (const request of fake.requests) {
      assert.equal(request.headers["provider-beta"], PROVIDER_MANAGED_AGENTS_BETA);
      assert.equal(request.headers["provider-version"], "2026-10-21");
      assert.equal(request.auth, "x-api-key");
    }
  });
});

Deno.test("a wrong key is a typed authentication error with the request id", async () => {
  await withClient(async (_client, fake) => {
    const wrong = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, authToken: "nope" });
    const error = await apiError(wrong.listAgents());
    assert.equal(error.status, 401);
    assert.equal(error.type, "authentication_error");
    assert.match(error.requestId ?? "", /^req_/);
    assert.equal(fake.requests.at(-1)?.auth, "bearer");
  });
});

Deno.test("agents: updates create versions, versions stay readable, archive hides them", async () => {
  await withClient(async (client) => {
    const agent = await client.createAgent({
      name: "coder",
      model: "model-a",
      system: "v1",
      mcpServers: [{ type: "url", name: "docs", url: "https://mcp.example" }],
    });
    assert.equal(agent.version, 1);
    assert.deepEqual(agent.mcp_servers, [{
      type: "url",
      name: "docs",
      url: "https://mcp.example",
    }]);
    const updated = await client.updateAgent(agent.id, { system: "v2" });
    assert.equal(updated.version, 2);
    assert.equal((await client.getAgent(agent.id)).system, "v2");
    assert.equal((await client.getAgent(agent.id, { version: 1 })).system, "v1");
    assert.deepEqual((await client.listAgentVersions(agent.id)).map((v) => v.version), [2, 1]);
    const stale = await apiError(client.updateAgent(agent.id, { system: "v3", version: 1 }));
    assert.equal(stale.status, 409);
    const archived = await client.archiveAgent(agent.id);
    assert.ok(archived.archived_at);
    assert.equal((await client.listAgents()).length, 0);
    assert.equal((await client.listAgents({ includeArchived: true })).length, 1);
    const env = await client.createEnvironment({ name: "e" });
    const refused = await apiError(
      client.createSession({ agentId: agent.id, environmentId: env.id }),
    );
    assert.equal(refused.status, 400);
  });
});

Deno.test("lists walk every page; iterators fetch lazily; page starts from a cursor", async () => {
  await withClient(async (client, fake) => {
    for (let i = 0; i < 25; i++) await client.createAgent({ name: `a${i}`, model: "m" });
    const before = fake.requests.length;
    const all = await client.listAgents({ limit: 10 });
    assert.equal(all.length, 25);
    assert.deepEqual(all.map((a) => a.name), Array.from({ length: 25 }, (_, i) => `a${i}`));
    assert.equal(fake.requests.length - before, 3);
    assert.deepEqual(fake.requests.slice(-3).map((r) => r.query), [
      "limit=10",
      "limit=10&page=p10",
      "limit=10&page=p20",
    ]);
    const lazy = fake.requests.length;
    const firstThree: string[] = [];
    for await (const agent of client.iterateAgents({ limit: 10 })) {
      firstThree.push(agent.name!);
      if (firstThree.length === 3) break;
    }
    assert.equal(fake.requests.length - lazy, 1, "one page fetched for three records");
    assert.equal((await client.listAgents({ limit: 10, page: "p10" })).length, 15);
  });
});

Deno.test("environments: default cloud config, update, archive and delete", async () => {
  await withClient(async (client) => {
    const env = await client.createEnvironment({ name: "e", metadata: { team: "x" } });
    assert.deepEqual(env.config, { type: "cloud", networking: { type: "unrestricted" } });
    const updated = await client.updateEnvironment(env.id, {
      name: "e2",
      metadata: { team: null },
    });
    assert.equal(updated.name, "e2");
    assert.deepEqual(updated.metadata, {});
    const bad = await apiError(
      client.updateEnvironment(env.id, { config: { type: "self_hosted" } }),
    );
    assert.equal(bad.status, 400);
    assert.equal((await client.getEnvironment(env.id)).name, "e2");
    assert.equal((await client.listEnvironments()).length, 1);
    const archived = await client.archiveEnvironment(env.id);
    assert.ok(archived.archived_at);
    assert.equal(await client.deleteEnvironment(env.id), undefined);
    assert.equal((await apiError(client.getEnvironment(env.id))).status, 404);
  });
});

async function agentAndEnv(client: ProviderManagedAgentClient) {
  const agent = await client.createAgent({ name: "a", model: "model-a" });
  const env = await client.createEnvironment({ name: "e" });
  return { agentId: agent.id, environmentId: env.id };
}

Deno.test("sessions: create, read, filter, update, archive and delete", async () => {
  await withClient(async (client, fake) => {
    const { agentId, environmentId } = await agentAndEnv(client);
    const vault = await client.createVault({ displayName: "v" });
    const session = await client.createSession({ agentId, environmentId, title: "t" });
    assert.equal(session.status, "idle");
    const busy = await client.createSession({ agentId, environmentId });
    fake.managedAgents!.script = () => [{ delayMs: 60_000 }];
    await client.sendMessage(busy.id, "work");
    assert.deepEqual((await client.listSessions({ statuses: ["running"] })).map((s) => s.id), [
      busy.id,
    ]);
    assert.equal((await client.listSessions({ agentId })).length, 2);
    const updated = await client.updateSession(session.id, {
      title: "t2",
      vaultIds: [vault.id],
      agent: { tools: [] },
    });
    assert.equal(updated.title, "t2");
    assert.deepEqual(updated.vault_ids, [vault.id]);
    assert.equal((await apiError(client.updateSession(busy.id, { vaultIds: [] }))).status, 400);
    const archived = await client.archiveSession(session.id);
    assert.ok(archived.archived_at);
    assert.equal((await apiError(client.sendMessage(session.id, "late"))).status, 400);
    assert.equal(await client.deleteSession(session.id), undefined);
    const gone = await apiError(client.getSession(session.id));
    assert.equal(gone.status, 404);
    assert.equal(gone.type, "not_found_error");
  });
});

Deno.test("session resources: add, list, read, rotate a token (never echoed) and delete", async () => {
  await withClient(async (client) => {
    const { agentId, environmentId } = await agentAndEnv(client);
    const session = await client.createSession({
      agentId,
      environmentId,
      resources: [{
        type: "github_repository",
        url: "https://git.example/r",
        authorization_token: "secret-1",
      }],
    });
    const file = await client.addResource(session.id, { type: "file", file_id: "file_1" });
    assert.equal(file.mount_path, "/mnt/session/uploads/file_1");
    const resources = await client.listResources(session.id);
    assert.equal(resources.length, 2);
    const repo = resources.find((r) => r.type === "github_repository")!;
    const rotated = await client.updateResource(session.id, repo.id, {
      authorization_token: "secret-2",
    });
    assert.equal(JSON.stringify(rotated).includes("secret"), false);
    assert.equal((await client.getResource(session.id, file.id)).type, "file");
    assert.equal(await client.deleteResource(session.id, file.id), undefined);
    assert.equal((await client.listResources(session.id)).length, 1);
  });
});

Deno.test("events: send, list by type and order, answer tools and define outcomes", async () => {
  await withClient(async (client, fake) => {
    const { agentId, environmentId } = await agentAndEnv(client);
    const session = await client.createSession({ agentId, environmentId });
    const recorded = await client.sendEvents(session.id, [{
      type: "user.message",
      content: text("hi"),
    }]);
    assert.equal(recorded.length, 1);
    assert.match(String(recorded[0].id), /^sevt_/);
    const types = (await client.listEvents(session.id)).map((e) => e.type);
    assert.deepEqual(types, [
      "user.message",
      "session.status_running",
      "agent.message",
      "session.status_idle",
    ]);
    const newest = await client.listEvents(session.id, { order: "desc", types: ["agent.message"] });
    assert.equal(newest.length, 1);

    fake.managedAgents!.script = () => [
      { type: "agent.tool_use", name: "bash", input: {}, evaluated_permission: "ask" },
      { type: "agent.custom_tool_use", name: "lookup", input: { key: "k" } },
    ];
    await client.sendMessage(session.id, "use tools");
    const pending = await client.listEvents(session.id, {
      types: ["agent.tool_use", "agent.custom_tool_use"],
    });
    const [toolUse, customUse] = pending;
    await client.confirmTool(session.id, {
      toolUseId: String(toolUse.id),
      result: "deny",
      denyMessage: "no",
    });
    const twice = await apiError(
      client.confirmTool(session.id, { toolUseId: String(toolUse.id), result: "allow" }),
    );
    assert.equal(twice.status, 400, "a second answer to the same call is refused");
    await client.respondCustomTool(session.id, {
      toolUseId: String(customUse.id),
      content: text("value"),
      isError: false,
    });
    const after = await client.listEvents(session.id, {
      order: "desc",
      types: ["session.status_idle"],
    });
    assert.deepEqual(after[0].stop_reason, { type: "end_turn" });

    assert.throws(
      () =>
        client.defineOutcome(session.id, {
          description: "x",
          rubric: { type: "text", content: "y" },
          maxIterations: 21,
        }),
      RangeError,
    );
    await client.defineOutcome(session.id, {
      description: "ship it",
      rubric: { type: "text", content: "tests pass" },
      maxIterations: 2,
    });
    const outcome = await client.listEvents(session.id, { types: ["span.outcome_evaluation_end"] });
    assert.equal(outcome[0].result, "satisfied");
    await assert.rejects(async () => await client.sendEvents(session.id, []), TypeError);
  });
});

Deno.test("interruptSession stops the turn and openEventStream delivers live events", async () => {
  await withClient(async (client, fake) => {
    const { agentId, environmentId } = await agentAndEnv(client);
    const session = await client.createSession({ agentId, environmentId });
    fake.managedAgents!.script = () => [
      { type: "agent.message", content: text("partial") },
      { delayMs: 60_000 },
    ];
    const controller = new AbortController();
    const body = await client.openEventStream(session.id, controller.signal);
    await client.sendMessage(session.id, "go");
    await client.interruptSession(session.id);
    const kinds: string[] = [];
    for await (const event of readSessionEvents(body, { signal: controller.signal })) {
      kinds.push(event.type);
      if (event.type === "session.status_idle") break;
    }
    assert.deepEqual(kinds, [
      "user.message",
      "session.status_running",
      "agent.message",
      "user.interrupt",
      "session.status_idle",
    ]);
    assert.equal((await client.getSession(session.id)).status, "idle");
  });
});

Deno.test("threads: the primary thread is listed; sub-threads get their own events and stream", async () => {
  await withClient(async (client, fake) => {
    const { agentId, environmentId } = await agentAndEnv(client);
    const session = await client.createSession({ agentId, environmentId });
    const [primary] = await client.listThreads(session.id);
    assert.equal(primary.parent_thread_id, null);
    fake.managedAgents!.script = () => [
      { type: "session.thread_created", session_thread_id: "sthr_sub", agent_name: "researcher" },
      { type: "agent.message", session_thread_id: "sthr_sub", content: text("from the sub-agent") },
      {
        type: "session.thread_status_idle",
        session_thread_id: "sthr_sub",
        stop_reason: { type: "end_turn" },
      },
      { type: "agent.message", content: text("from the primary") },
    ];
    await client.sendMessage(session.id, "delegate");
    const threads = await client.listThreads(session.id);
    assert.equal(threads.length, 2);
    const sub = await client.getThread(session.id, "sthr_sub");
    assert.equal(sub.parent_thread_id, primary.id);
    assert.equal(sub.status, "idle");
    assert.deepEqual((await client.listThreads(session.id, { statuses: ["idle"] })).length, 2);
    const subEvents = await client.listThreadEvents(session.id, "sthr_sub");
    assert.deepEqual(subEvents.map((e) => e.type), [
      "session.thread_created",
      "agent.message",
      "session.thread_status_idle",
    ]);
    const live = await client.openThreadEventStream(session.id, "sthr_sub");
    fake.managedAgents!.emit(session.id, {
      type: "agent.message",
      session_thread_id: "sthr_sub",
      content: text("live"),
    });
    fake.managedAgents!.emit(session.id, {
      type: "agent.message",
      content: text("not for this thread"),
    });
    fake.managedAgents!.emit(session.id, {
      type: "session.thread_status_terminated",
      session_thread_id: "sthr_sub",
    });
    const seen: string[] = [];
    for await (const event of readSessionEvents(live)) {
      seen.push(event.kind === "message" ? event.text : event.type);
      if (event.type === "session.thread_status_terminated") break;
    }
    assert.deepEqual(seen, ["live", "session.thread_status_terminated"]);
    assert.ok((await client.archiveThread(session.id, "sthr_sub")).archived_at);
  });
});

Deno.test("memories: a taken path is a MemoryPathConflictError, never retried", async () => {
  await withClient(async (client, fake) => {
    const store = await client.createMemoryStore({ name: "notes", description: "d" });
    const memory = await client.createMemory(store.id, { path: "/notes/a.md", content: "alpha" });
    assert.equal(memory.content, "alpha");
    assert.match(String(memory.content_sha256), /^[0-9a-f]{64}$/);
    const before = fake.requests.length;
    const error = await client.createMemory(store.id, { path: "/notes/a.md", content: "beta" })
      .catch((e) => e);
    assert.ok(error instanceof MemoryPathConflictError);
    assert.ok(error instanceof ProviderApiError);
    assert.equal(error.status, 409);
    assert.equal(error.type, "memory_path_conflict_error");
    assert.equal(error.conflictingMemoryId, memory.id);
    assert.equal(error.conflictingPath, "/notes/a.md");
    assert.equal(error.retryable, false);
    assert.equal(fake.requests.length - before, 1, "not retried");

    const other = await client.createMemory(store.id, { path: "/notes/b.md", content: "b" });
    const rename = await client.updateMemory(store.id, other.id, { path: "/notes/a.md" }).catch((
      e,
    ) => e);
    assert.ok(rename instanceof MemoryPathConflictError);
  });
});

Deno.test("memories: views, prefixes, preconditions, versions, redaction and the 405 rule", async () => {
  await withClient(async (client, fake) => {
    const store = await client.createMemoryStore({ name: "notes" });
    const a = await client.createMemory(store.id, { path: "/notes/a.md", content: "alpha" });
    await client.createMemory(store.id, { path: "/notes/deep/b.md", content: "beta" });
    await client.createMemory(store.id, { path: "/other.md", content: "other" });
    assert.equal((await client.getMemory(store.id, a.id, "basic")).content, null);
    assert.equal((await client.getMemory(store.id, a.id)).content, "alpha");
    const listed = await client.listMemories(store.id, { pathPrefix: "/notes/", depth: 1 });
    assert.deepEqual(listed.map((m) => [m.type, m.path]), [
      ["memory", "/notes/a.md"],
      ["memory_prefix", "/notes/deep/"],
    ]);
    assert.equal(listed[0].content, null, "basic view by default");

    const stale = await apiError(
      client.updateMemory(store.id, a.id, {
        content: "new",
        precondition: { type: "content_sha256", content_sha256: "0".repeat(64) },
      }),
    );
    assert.equal(stale.status, 409);
    assert.equal(stale.type, "memory_precondition_failed_error");
    const updated = await client.updateMemory(store.id, a.id, {
      content: "alpha 2",
      precondition: { type: "content_sha256", content_sha256: String(a.content_sha256) },
    });
    assert.equal(updated.content, "alpha 2");

    const patch = await fetch(`${fake.baseUrl}/v1/memory_stores/${store.id}/memories/${a.id}`, {
      method: "PATCH",
      headers: { "x-api-key": fake.apiKey, "provider-beta": PROVIDER_MANAGED_AGENTS_BETA },
      body: "{}",
    });
    await patch.body?.cancel();
    assert.equal(patch.status, 405);
    assert.match(patch.headers.get("allow") ?? "", /\bPOST\b/);

    const versions = await client.listMemoryVersions(store.id, a.id);
    assert.deepEqual(versions.map((v) => v.operation), ["modified", "created"]);
    assert.equal((await client.listMemoryVersions(store.id)).length, 4);
    const first = await client.getMemoryVersion(store.id, versions[1].id);
    assert.equal(first.content, "alpha");
    const redacted = await client.redactMemoryVersion(store.id, first.id);
    assert.equal(redacted.content, null);
    assert.ok(redacted.redacted_at);
    assert.equal((await client.getMemoryVersion(store.id, first.id)).memory_id, a.id);

    assert.equal(await client.deleteMemory(store.id, a.id), undefined);
    assert.equal((await apiError(client.getMemory(store.id, a.id))).status, 404);
    assert.ok((await client.archiveMemoryStore(store.id)).archived_at);
    assert.equal(
      (await apiError(client.createMemory(store.id, { path: "/x", content: "" }))).status,
      400,
    );
    assert.equal((await client.listMemoryStores()).length, 0);
    assert.equal((await client.listMemoryStores({ includeArchived: true })).length, 1);
    assert.equal((await client.getMemoryStore(store.id)).name, "notes");
    assert.equal(
      (await client.updateMemoryStore(store.id, { name: "x" }).catch((e) => e)).status,
      400,
    );
    assert.equal(await client.deleteMemoryStore(store.id), undefined);
  });
});

Deno.test("vaults and credentials: secrets are write-only, one active per server URL, archive cascades", async () => {
  await withClient(async (client) => {
    const vault = await client.createVault({ displayName: "prod", metadata: { env: "prod" } });
    const auth = {
      type: "mcp_oauth" as const,
      mcp_server_url: "https://mcp.example/sse",
      access_token: "access-secret",
      refresh: {
        token_endpoint: "https://auth.example/token",
        client_id: "cid",
        refresh_token: "refresh-secret",
        token_endpoint_auth: {
          type: "client_secret_basic" as const,
          client_secret: "client-secret",
        },
      },
    };
    const credential = await client.createCredential(vault.id, { displayName: "docs", auth });
    const leaks = (record: unknown) =>
      /access-secret|refresh-secret|client-secret/.test(JSON.stringify(record));
    assert.equal(leaks(credential), false);
    const duplicate = await apiError(client.createCredential(vault.id, { auth }));
    assert.equal(duplicate.status, 409);
    assert.equal(
      (await client.validateMcpOauthCredential(vault.id, credential.id)).status,
      "valid",
    );
    const locked = await apiError(
      client.updateCredential(vault.id, credential.id, {
        auth: { type: "mcp_oauth", mcp_server_url: "https://elsewhere.example" },
      }),
    );
    assert.equal(locked.status, 400);
    const renamed = await client.updateCredential(vault.id, credential.id, {
      displayName: "docs 2",
      auth: { type: "mcp_oauth", access_token: "new-access-secret" },
    });
    assert.equal(renamed.display_name, "docs 2");
    assert.equal(leaks(renamed), false);
    assert.ok((await client.archiveCredential(vault.id, credential.id)).archived_at);
    const replacement = await client.createCredential(vault.id, { auth });
    assert.equal((await client.listCredentials(vault.id)).length, 1);
    assert.equal((await client.listCredentials(vault.id, true)).length, 2);
    assert.equal((await client.getCredential(vault.id, replacement.id)).id, replacement.id);
    const updatedVault = await client.updateVault(vault.id, { displayName: "prod 2" });
    assert.equal(updatedVault.display_name, "prod 2");
    assert.ok((await client.archiveVault(vault.id)).archived_at);
    assert.ok((await client.getCredential(vault.id, replacement.id)).archived_at, "cascaded");
    assert.equal((await client.listVaults()).length, 0);
    assert.equal((await client.listVaults(true)).length, 1);
    assert.equal(await client.deleteCredential(vault.id, replacement.id), undefined);
    assert.equal(await client.deleteVault(vault.id), undefined);
    assert.equal((await apiError(client.getVault(vault.id))).status, 404);
  });
});

Deno.test("deployments: cron parsing, pause, manual runs, failed runs and archive", async () => {
  await withClient(async (client) => {
    const { agentId, environmentId } = await agentAndEnv(client);
    const deployment = await client.createDeployment({
      name: "quarter-hourly",
      agentId,
      environmentId,
      initialEvents: [{ type: "user.message", content: text("report") }],
      schedule: { type: "cron", expression: "*/15 * * * *", timezone: "UTC" },
    });
    const upcoming = (deployment.schedule as { upcoming_runs_at: string[] }).upcoming_runs_at;
    assert.equal(upcoming.length, 5);
    for (let i = 1; i < upcoming.length; i++) {
      assert.equal(Date.parse(upcoming[i]) - Date.parse(upcoming[i - 1]), 15 * 60_000);
    }
    assert.equal(new Date(upcoming[0]).getUTCMinutes() % 15, 0);
    const paused = await client.pauseDeployment(deployment.id);
    assert.equal(paused.status, "paused");
    const run = await client.runDeployment(deployment.id);
    assert.equal(run.error, null);
    assert.ok(run.session_id);
    assert.equal(
      (await client.getSession(run.session_id!)).status,
      "idle",
      "the manual run ran its turn",
    );
    assert.equal((await client.unpauseDeployment(deployment.id)).status, "active");
    await client.archiveAgent(agentId);
    const failed = await client.runDeployment(deployment.id);
    assert.equal(failed.session_id, null);
    assert.equal(failed.error?.type, "agent_archived_error");
    assert.equal((await client.listDeploymentRuns(deployment.id)).length, 2);
    const errors = await client.listDeploymentRuns(deployment.id, { hasError: true });
    assert.deepEqual(errors.map((r) => r.id), [failed.id]);
    assert.equal((await client.getDeploymentRun(run.id)).deployment_id, deployment.id);
    assert.equal((await client.getDeployment(deployment.id)).name, "quarter-hourly");
    assert.equal((await client.listDeployments()).length, 1);
    assert.ok((await client.archiveDeployment(deployment.id)).archived_at);
    assert.equal((await apiError(client.pauseDeployment(deployment.id))).status, 400);
    const badZone = await apiError(
      client.createDeployment({
        name: "x",
        agentId: (await client.createAgent({ name: "b", model: "m" })).id,
        environmentId,
        initialEvents: [{ type: "user.message", content: text("r") }],
        schedule: { type: "cron", expression: "0 * * * *", timezone: "Mars/Olympus" },
      }),
    );
    assert.equal(badZone.status, 400);
  });
});

Deno.test("work queue: a self-hosted session queues work; stats and stop", async () => {
  await withClient(async (client, fake) => {
    const agent = await client.createAgent({ name: "a", model: "m" });
    const env = await client.createEnvironment({ name: "own", config: { type: "self_hosted" } });
    await client.createSession({ agentId: agent.id, environmentId: env.id });
    const stats = await client.getWorkQueueStats(env.id);
    assert.equal(stats.type, "work_queue_stats");
    assert.equal(stats.depth, 1);
    const [work] = [...fake.managedAgents!.work.values()];
    const stopped = await client.stopWork(env.id, String(work.id), { force: true });
    assert.equal(stopped.state, "stopped");
    assert.equal((await client.getWorkQueueStats(env.id)).depth, 0);
    assert.equal((await apiError(client.stopWork(env.id, "work_missing"))).status, 404);
  });
});

Deno.test("onTrace reports each request without headers or bodies", async () => {
  const fake = await FakeProvider.start();
  try {
    const traces: ProviderTrace[] = [];
    const client = new ProviderManagedAgentClient({
      baseUrl: fake.baseUrl,
      apiKey: fake.apiKey,
      onTrace: (t) => traces.push(t),
    });
    await client.createAgent({ name: "secret-name", model: "m" });
    await client.listAgents({ limit: 3 });
    assert.deepEqual(traces.map((t) => [t.method, t.path, t.status, t.attempt]), [
      ["POST", "/v1/agents", 200, 0],
      ["GET", "/v1/agents", 200, 0],
    ]);
    assert.match(traces[0].requestId ?? "", /^req_/);
    assert.equal(JSON.stringify(traces).includes("secret-name"), false);
    assert.equal(JSON.stringify(traces).includes(fake.apiKey), false);
  } finally {
    await fake.close();
  }
});

Deno.test("paths: collection paths, helpers, and ids that cannot escape their segment", () => {
  assert.deepEqual(PROVIDER_COLLECTION_PATHS, {
    agents: "/v1/agents",
    sessions: "/v1/sessions",
    environments: "/v1/environments",
    memoryStores: "/v1/memory_stores",
    vaults: "/v1/vaults",
    deployments: "/v1/deployments",
    deploymentRuns: "/v1/deployment_runs",
  });
  assert.ok(Object.isFrozen(PROVIDER_COLLECTION_PATHS));
  assert.equal(providerAgentPath("agent_1"), "/v1/agents/agent_1");
  assert.equal(providerEnvironmentPath("env_1"), "/v1/environments/env_1");
  assert.equal(providerSessionPath("sesn_1"), "/v1/sessions/sesn_1");
  assert.equal(providerSessionArchivePath("sesn_1"), "/v1/sessions/sesn_1/archive");
  assert.equal(providerSessionEventsPath("sesn_1"), "/v1/sessions/sesn_1/events");
  assert.equal(providerSessionEventStreamPath("sesn_1"), "/v1/sessions/sesn_1/events/stream");
  assert.equal(providerAgentPath("a/b?c#d e"), "/v1/agents/a%2Fb%3Fc%23d%20e");
  for (const bad of ["", ".", "..", ";x"]) {
    assert.throws(() => providerSessionPath(bad), TypeError, JSON.stringify(bad));
  }
  assert.equal(
    providerSessionPath("%2e%2e"),
    "/v1/sessions/%252e%252e",
    "percent signs are encoded",
  );
});
