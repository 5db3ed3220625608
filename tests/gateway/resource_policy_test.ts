/**
 * The resource policy of principals: what an issued principal's runs may run in and attach
 * (`environmentIds`, `vaultIds`, `memoryStoreIds`, `repositories`, `fileIds`), how issuance,
 * `GET /v1/principals` and `GET /v1/runtime` answer it, and that a start outside it is refused
 * with 403 `resourceNotAllowed` naming the field, audited, and never sent to the provider.
 */
import assert from "node:assert/strict";
import { ProviderManagedAgentClient } from "../../client/mod.ts";
import { assertCode, type Gateway, startGateway } from "./_harness.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** The fake's session creations so far. */
function sessionCreations(gateway: Gateway): number {
  return gateway.fake.requests.filter((call) =>
    call.method === "POST" && call.path === "/v1/sessions"
  ).length;
}

/** Two vaults and a second environment in the fake. */
async function provision(gateway: Gateway) {
  const setup = new ProviderManagedAgentClient({
    baseUrl: gateway.fake.baseUrl,
    apiKey: gateway.providerKey,
  });
  const [vault, otherVault] = await Promise.all([
    setup.createVault({ displayName: "team-a" }),
    setup.createVault({ displayName: "team-b" }),
  ]);
  const otherEnvironment = await setup.createEnvironment({ name: "other" });
  return {
    vault: vault.id as string,
    otherVault: otherVault.id as string,
    otherEnvironment: otherEnvironment.id as string,
  };
}

Deno.test("resource policy: issuance, GET /v1/principals and GET /v1/runtime answer the lists", async () => {
  const gateway = await startGateway();
  try {
    const body = {
      principalId: crypto.randomUUID(),
      capabilities: ["session:read", "session:write"],
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
      environmentIds: [gateway.environmentId],
      vaultIds: ["vlt_a"],
      memoryStoreIds: ["memstore_a"],
      repositories: ["Acme/Tools"],
      fileIds: ["file_a", "file_b"],
    };
    const issued = await gateway.request("POST", "/v1/principals", { body });
    assert.equal(issued.status, 201, issued.text);
    const expected = {
      environmentIds: [gateway.environmentId],
      vaultIds: ["vlt_a"],
      memoryStoreIds: ["memstore_a"],
      repositories: ["acme/tools"],
      fileIds: ["file_a", "file_b"],
      maxActiveRuns: 8,
    };
    const policyOf = (answer: Json) => ({
      environmentIds: answer.environmentIds,
      vaultIds: answer.vaultIds,
      memoryStoreIds: answer.memoryStoreIds,
      repositories: answer.repositories,
      fileIds: answer.fileIds,
      maxActiveRuns: answer.maxActiveRuns,
    });
    assert.deepEqual(policyOf(issued.json), expected);
    assert.equal(issued.json.agentIds, undefined, "agents: the issuer's, any");

    const listed = (await gateway.request("GET", "/v1/principals")).json.principals
      .find((entry: Json) => entry.principalId === body.principalId);
    assert.deepEqual(policyOf(listed), expected);

    const self = await gateway.request("GET", "/v1/runtime", { bearer: issued.json.bearer });
    assert.equal(self.status, 200, self.text);
    assert.deepEqual(policyOf(self.json), expected);

    // Left out, the four attachable kinds are empty (none), the environments the issuer's (any).
    const plain = await gateway.issue(["session:read"]);
    const plainSelf = await gateway.request("GET", "/v1/runtime", { bearer: plain.bearer });
    assert.deepEqual(policyOf(plainSelf.json), {
      environmentIds: undefined,
      vaultIds: [],
      memoryStoreIds: [],
      repositories: [],
      fileIds: [],
      maxActiveRuns: 8,
    });
    // The bootstrap principal is limited in nothing: no list at all.
    const admin = await gateway.request("GET", "/v1/runtime");
    for (const field of ["agentIds", "environmentIds", "vaultIds", "fileIds"]) {
      assert.equal(admin.json[field], undefined, field);
    }
  } finally {
    await gateway.close();
  }
});

Deno.test("resource policy: malformed lists are 422 invalidRequest", async () => {
  const gateway = await startGateway();
  try {
    const base = {
      capabilities: ["session:read"],
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    };
    for (
      const [field, value] of [
        ["repositories", ["https://github.com/acme/tools"]],
        ["vaultIds", ["vlt_a", "vlt_a"]],
        ["environmentIds", []],
        ["fileIds", Array.from({ length: 33 }, (_, i) => `file_${i}`)],
      ] as const
    ) {
      const answer = await gateway.request("POST", "/v1/principals", {
        body: { ...base, principalId: crypto.randomUUID(), [field]: value },
      });
      assertCode(answer, 422, "invalidRequest");
      assert.ok(answer.json.error.details[0].path.startsWith(field), answer.text);
    }
  } finally {
    await gateway.close();
  }
});

Deno.test("resource policy: a start outside it is 403 resourceNotAllowed, audited, never sent", async (t) => {
  const gateway = await startGateway();
  gateway.holdTurns(true);
  try {
    const { vault, otherVault, otherEnvironment } = await provision(gateway);
    const scoped = await gateway.issue(["session:read", "session:write"], {
      agentIds: [gateway.agentId],
      environmentIds: [gateway.environmentId],
      vaultIds: [vault],
      memoryStoreIds: ["memstore_a"],
      repositories: ["acme/tools"],
      fileIds: ["file_a"],
    });
    const start = (metadata: Json) =>
      gateway.request("POST", "/v1/runs", {
        bearer: scoped.bearer,
        body: { input: "go", metadata },
      });

    await t.step("everything inside the policy starts, and the provider gets it", async () => {
      const before = sessionCreations(gateway);
      const answer = await start({
        environment_id: gateway.environmentId,
        agent_version: 1,
        vault_ids: [vault],
        resources: [
          { type: "github_repository", url: "https://github.com/Acme/tools.git" },
          { type: "file", file_id: "file_a" },
          { type: "memory_store", memory_store_id: "memstore_a" },
        ],
      });
      assert.equal(answer.status, 201, answer.text);
      assert.equal(sessionCreations(gateway), before + 1);
      const session = gateway.fake.managedAgents!.sessions.get(answer.json.runId)!;
      assert.deepEqual(session.record.vault_ids, [vault]);
      await gateway.request("POST", `/v1/runs/${answer.json.runId}/cancel`, {
        bearer: scoped.bearer,
      });
    });

    const refusals: [string, Json, string, string | undefined][] = [
      [
        "another environment",
        { environment_id: otherEnvironment },
        "environment_id",
        "environmentIds",
      ],
      ["another vault", { vault_ids: [vault, otherVault] }, "vault_ids", "vaultIds"],
      [
        "another memory store",
        { resources: [{ type: "memory_store", memory_store_id: "memstore_b" }] },
        "resources",
        "memoryStoreIds",
      ],
      [
        "another repository",
        { resources: [{ type: "github_repository", url: "https://github.com/other/tools" }] },
        "resources",
        "repositories",
      ],
      [
        "a repository URL of another form",
        { resources: [{ type: "github_repository", url: "https://tok@github.com/acme/tools" }] },
        "resources",
        undefined,
      ],
      [
        "another file",
        { resources: [{ type: "file", file_id: "file_b" }] },
        "resources",
        "fileIds",
      ],
      [
        "a resource of an unknown type",
        { resources: [{ type: "code_repository", url: "https://example.com/x" }] },
        "resources",
        undefined,
      ],
    ];
    for (const [what, metadata, field, policyField] of refusals) {
      await t.step(`${what}: 403 resourceNotAllowed naming ${field}`, async () => {
        const before = sessionCreations(gateway);
        const answer = await start(metadata);
        assertCode(answer, 403, "resourceNotAllowed");
        assert.equal(answer.json.error.field, field);
        assert.equal(answer.json.error.policyField, policyField);
        assert.equal(sessionCreations(gateway), before, "the provider never saw the start");
      });
    }

    await t.step("each refusal is audited like agentNotAllowed", async () => {
      const audit = await gateway.request("GET", "/v1/audit?action=run.started&limit=100");
      const mine = audit.json.entries.filter((entry: Json) =>
        entry.actorId === scoped.principalId && entry.outcome === "resourceNotAllowed"
      );
      assert.equal(mine.length, refusals.length);
    });

    await t.step("the agent check still comes first, with its own code", async () => {
      const answer = await start({ agent_id: gateway.otherAgentId, vault_ids: [otherVault] });
      assertCode(answer, 403, "agentNotAllowed");
    });
  } finally {
    await gateway.close();
  }
});

Deno.test("resource policy: an issued principal without lists attaches nothing; the bootstrap anything", async () => {
  const gateway = await startGateway();
  gateway.holdTurns(true);
  try {
    const { vault, otherEnvironment } = await provision(gateway);
    const plain = await gateway.issue(["session:read", "session:write"]);
    const before = sessionCreations(gateway);
    for (
      const metadata of [
        { vault_ids: [vault] },
        { resources: [{ type: "file", file_id: "file_a" }] },
        { resources: [{ type: "memory_store", memory_store_id: "memstore_a" }] },
        { resources: [{ type: "github_repository", url: "https://github.com/acme/tools" }] },
      ]
    ) {
      const answer = await gateway.request("POST", "/v1/runs", {
        bearer: plain.bearer,
        body: { input: "go", metadata },
      });
      assertCode(answer, 403, "resourceNotAllowed");
    }
    assert.equal(sessionCreations(gateway), before);
    // Environments were not limited: the issuer's, any.
    const anywhere = await gateway.request("POST", "/v1/runs", {
      bearer: plain.bearer,
      body: { input: "go", metadata: { environment_id: otherEnvironment } },
    });
    assert.equal(anywhere.status, 201, anywhere.text);
    // The bootstrap principal attaches what it likes.
    const admin = await gateway.request("POST", "/v1/runs", {
      body: {
        input: "go",
        metadata: {
          vault_ids: [vault],
          resources: [{ type: "code_repository", url: "https://example.com/x" }],
        },
      },
    });
    assert.equal(admin.status, 201, admin.text);
  } finally {
    await gateway.close();
  }
});

Deno.test("resource policy: a file named in a message, an outcome or a tool result is checked like a mounted one", async (t) => {
  const gateway = await startGateway();
  try {
    gateway.fake.managedAgents!.script = () => [
      { type: "agent.custom_tool_use", name: "lookup", input: { q: "x" } },
    ];
    const scoped = await gateway.issue(["session:read", "session:write"], {
      agentIds: [gateway.agentId],
      fileIds: ["file_a"],
    });
    const bearer = scoped.bearer;
    const document = (fileId: string) => ({
      type: "document",
      source: { type: "file", file_id: fileId },
    });
    const message = (fileId: string) => ({ type: "user.message", content: [document(fileId)] });
    const outcome = (fileId: unknown) => ({
      type: "user.define_outcome",
      description: "done",
      rubric: { type: "file", file_id: fileId },
    });
    /** Every event the fake provider took for any session, as JSON text. */
    const sentText = () =>
      JSON.stringify([...gateway.fake.managedAgents!.sessions.values()].map((s) => s.events));
    const refused = (answer: Json, field: string) => {
      assert.equal(answer.status, 403, answer.text);
      const error = answer.json.error;
      // /v1 answers {error: {code, field}}; the provider's API {error: {type, details}}.
      const code = error.code ?? error.details?.error_code;
      assert.equal(code, "resourceNotAllowed", answer.text);
      if (error.code !== undefined) {
        assert.equal(error.field, field);
        assert.equal(error.policyField, "fileIds");
      }
    };

    let runId = "";
    await t.step("a start whose input names a file of the policy starts", async () => {
      const answer = await gateway.request("POST", "/v1/runs", {
        bearer,
        body: { input: [{ role: "user", content: [document("file_a")] }] },
      });
      assert.equal(answer.status, 201, answer.text);
      runId = answer.json.runId;
    });

    await t.step("another file in a start's input, or in initial_events, is refused", async () => {
      const before = sessionCreations(gateway);
      refused(
        await gateway.request("POST", "/v1/runs", {
          bearer,
          body: { input: [{ role: "user", content: [document("file_b")] }] },
        }),
        "input",
      );
      for (const event of [message("file_b"), outcome("file_b"), outcome(7)]) {
        refused(
          await gateway.request("POST", "/provider/v1/sessions", {
            bearer,
            body: {
              agent: gateway.agentId,
              environment_id: gateway.environmentId,
              initial_events: [event],
            },
          }),
          "initial_events",
        );
      }
      assert.equal(sessionCreations(gateway), before, "the provider never saw the starts");
    });

    await t.step("a follow-up or a sent event naming another file is refused", async () => {
      refused(
        await gateway.request("POST", `/v1/runs/${runId}/messages`, {
          bearer,
          body: { input: [{ role: "user", content: [document("file_b")] }] },
        }),
        "input",
      );
      for (const event of [message("file_b"), outcome("file_b")]) {
        refused(
          await gateway.request("POST", `/provider/v1/sessions/${runId}/events`, {
            bearer,
            body: { events: [event] },
          }),
          "events",
        );
      }
    });

    await t.step("a custom tool's result naming another file is refused", async () => {
      const toolUse = gateway.fake.managedAgents!.sessions.get(runId)!.events
        .find((event: Json) => event.type === "agent.custom_tool_use");
      assert.ok(toolUse, "the fake asked for the custom tool");
      refused(
        await gateway.request("POST", `/v1/runs/${runId}/custom-tool-results`, {
          bearer,
          body: { toolUseId: toolUse.id, content: [document("file_b")] },
        }),
        "content",
      );
      refused(
        await gateway.request("POST", `/provider/v1/sessions/${runId}/events`, {
          bearer,
          body: {
            events: [{
              type: "user.custom_tool_result",
              custom_tool_use_id: toolUse.id,
              content: [document("file_b")],
            }],
          },
        }),
        "events",
      );
      assert.ok(!sentText().includes("file_b"), "no event naming file_b reached the provider");
      const answer = await gateway.request("POST", `/v1/runs/${runId}/custom-tool-results`, {
        bearer,
        body: { toolUseId: toolUse.id, content: [document("file_a")] },
      });
      assert.equal(answer.status, 200, answer.text);
    });

    await t.step("the refusals are audited; the bootstrap principal names any file", async () => {
      const audit = await gateway.request("GET", "/v1/audit?limit=100");
      const mine = audit.json.entries.filter((entry: Json) =>
        entry.actorId === scoped.principalId && entry.outcome === "resourceNotAllowed"
      );
      assert.equal(mine.length, 9, JSON.stringify(mine));
      const answer = await gateway.request("POST", "/v1/runs", {
        body: { input: [{ role: "user", content: [document("file_b")] }] },
      });
      assert.equal(answer.status, 201, answer.text);
    });
  } finally {
    await gateway.close();
  }
});
