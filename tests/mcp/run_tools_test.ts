/**
 * The run tools through the official MCP SDK client, against a gateway whose provider is the
 * in-process fake: each principal is listed exactly the tools of its capabilities, and each
 * tool runs its HTTP twin (same validation, ownership, idempotency, audit).
 */
import assert from "node:assert/strict";
import { assertCode, type Gateway, startGateway } from "../gateway/_harness.ts";
import { callError, callOk, connect, type Connected, listen, toolNames } from "./_sdk.ts";
import { toolsFor } from "./_tools.ts";

function sessionCreations(gateway: Gateway): number {
  return gateway.fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/sessions")
    .length;
}

Deno.test("mcp run tools: listed by capability, each one running its HTTP twin", async (t) => {
  const gateway = await startGateway();
  const listener = listen((request) => gateway.server.handler(request));
  const open: Connected[] = [];
  const client = async (bearer: string) => {
    const connected = await connect(listener.url, bearer);
    open.push(connected);
    return connected;
  };
  try {
    gateway.holdTurns(true);
    const writer = await gateway.issue(["session:read", "session:write"], {
      agentIds: [gateway.agentId],
      maxActiveRuns: 4,
    });
    const other = await gateway.issue(["session:read", "session:write"]);
    const reader = await gateway.issue(["session:read"]);
    const approver = await gateway.issue(["session:read", "session:approve"]);
    const mcpWriter = await client(writer.bearer);
    const mcpOther = await client(other.bearer);
    const mcpReader = await client(reader.bearer);
    const mcpAdmin = await client(gateway.admin);
    let runId = "";

    await t.step("each principal is listed exactly the tools of its capabilities", async () => {
      assert.deepEqual(await toolNames(mcpWriter), toolsFor(["session:read", "session:write"]));
      assert.deepEqual(await toolNames(mcpReader), toolsFor(["session:read"]));
      const mcpApprover = await client(approver.bearer);
      assert.deepEqual(
        await toolNames(mcpApprover),
        toolsFor(["session:read", "session:approve"]),
      );
      assert.deepEqual(
        await toolNames(mcpAdmin),
        toolsFor(["session:read", "session:write", "session:approve", "authority:admin"]),
      );
    });

    await t.step("run_start's input schema is the route's body schema", async () => {
      const { tools } = await mcpWriter.client.listTools();
      const start = tools.find((tool) => tool.name === "run_start")!;
      assert.deepEqual(start.inputSchema.required, ["input"]);
      assert.deepEqual(
        Object.keys(start.inputSchema.properties ?? {}).sort(),
        ["idempotencyKey", "input", "metadata", "title"],
      );
      assert.equal(start.annotations?.readOnlyHint, false);
      const send = tools.find((tool) => tool.name === "run_send")!;
      assert.deepEqual([...(send.inputSchema.required ?? [])].sort(), ["input", "runId"]);
    });

    await t.step("run_start starts one run; a retry with its key replays it", async () => {
      const before = sessionCreations(gateway);
      const args = { input: "Summarize the repository", title: "mcp", idempotencyKey: "start-1" };
      const run = await callOk(mcpWriter, "run_start", args);
      runId = run.runId;
      assert.match(runId, /^sesn_/);
      assert.equal(run.principalId, writer.principalId);
      assert.equal(run.agentId, gateway.agentId);
      assert.equal(run.title, "mcp");
      assert.equal(run.state, "running");
      const again = await mcpWriter.client.callTool({ name: "run_start", arguments: args });
      assert.deepEqual(again.structuredContent, run);
      assert.equal(again._meta?.["automation-runtime/idempotent-replayed"], true);
      assert.equal(sessionCreations(gateway), before + 1, "one provider session");
      const changed = await callError(mcpWriter, "run_start", { ...args, title: "other" });
      assert.equal(changed.code, "idempotencyConflict");
      // The key is the HTTP twin's key too: the same key over HTTP replays the same run.
      const http = await gateway.request("POST", "/v1/runs", {
        bearer: writer.bearer,
        key: "start-1",
        body: { input: "Summarize the repository", title: "mcp" },
      });
      assert.equal(http.status, 201, http.text);
      assert.equal(http.json.runId, runId);
      assert.equal(http.headers.get("idempotent-replayed"), "true");
    });

    await t.step("run_get and run_list show the caller's own runs", async () => {
      const got = await callOk(mcpWriter, "run_get", { runId });
      assert.equal(got.runId, runId);
      const http = await gateway.request("GET", `/v1/runs/${runId}`, { bearer: writer.bearer });
      assert.deepEqual(got, http.json);
      const listed = await callOk(mcpWriter, "run_list", { limit: 5, state: "running" });
      assert.deepEqual(listed.runs.map((run: { runId: string }) => run.runId), [runId]);
      assert.equal(listed.nextCursor, null);
      const none = await callOk(mcpOther, "run_list", {});
      assert.deepEqual(none.runs, []);
    });

    await t.step("another principal's run is runNotFound, as over HTTP", async () => {
      assert.equal((await callError(mcpOther, "run_get", { runId })).code, "runNotFound");
      assert.equal(
        (await callError(mcpOther, "run_send", { runId, input: "hi" })).code,
        "runNotFound",
      );
      assert.equal((await callError(mcpOther, "run_cancel", { runId })).code, "runNotFound");
      const http = await gateway.request("GET", `/v1/runs/${runId}`, { bearer: other.bearer });
      assertCode(http, 404, "runNotFound");
    });

    await t.step("refusals carry the HTTP codes", async () => {
      const missing = await callError(mcpReader, "run_start", { input: "hi" });
      assert.equal(missing.code, "missingCapability");
      assert.equal(missing.requiredCapability, "session:write");
      const invalid = await callError(mcpWriter, "run_start", { input: "", title: "" });
      assert.equal(invalid.code, "invalidRequest");
      assert.deepEqual(
        invalid.details.map((detail: { path: string }) => detail.path).sort(),
        ["input", "title"],
      );
      const unknownArgument = await callError(mcpWriter, "run_get", { runId, extra: 1 });
      assert.equal(unknownArgument.code, "invalidRequest");
      const agent = await callError(mcpWriter, "run_start", {
        input: "hi",
        metadata: { agent_id: gateway.otherAgentId },
      });
      assert.equal(agent.code, "agentNotAllowed");
      const before = sessionCreations(gateway);
      const vault = await callError(mcpWriter, "run_start", {
        input: "hi",
        metadata: { vault_ids: ["vlt_elsewhere"] },
      });
      assert.equal(vault.code, "resourceNotAllowed");
      assert.equal(vault.field, "vault_ids");
      assert.equal(sessionCreations(gateway), before, "the provider never saw it");
      const badState = await callError(mcpWriter, "run_list", { state: "sleeping" });
      assert.equal(badState.code, "invalidRequest");
      const notMine = await callError(mcpWriter, "audit_list", {});
      assert.equal(notMine.code, "missingCapability");
      assert.equal(notMine.requiredCapability, "authority:admin");
    });

    await t.step("run_send and run_cancel act on the run", async () => {
      const sent = await callOk(mcpWriter, "run_send", {
        runId,
        input: [{ role: "user", content: "And the tests?" }],
        idempotencyKey: "send-1",
      });
      assert.equal(sent.runId, runId);
      const events = gateway.fake.requests
        .filter((r) => r.method === "POST" && r.path === `/v1/sessions/${runId}/events`)
        .flatMap((r) => (r.body as { events: { type: string }[] }).events);
      assert.ok(events.some((event) => event.type === "user.message"));
      const cancelled = await callOk(mcpWriter, "run_cancel", { runId, idempotencyKey: "c-1" });
      assert.equal(cancelled.runId, runId);
      assert.ok(
        events.length <
          gateway.fake.requests
            .filter((r) => r.method === "POST" && r.path === `/v1/sessions/${runId}/events`)
            .flatMap((r) => (r.body as { events: unknown[] }).events).length,
        "the cancel reached the provider",
      );
    });

    await t.step("audit_list shows the MCP calls as the HTTP ones", async () => {
      const page = await callOk(mcpAdmin, "audit_list", { action: "run.started", limit: 10 });
      const entry = page.entries.find((item: { runId?: string }) => item.runId === runId);
      assert.ok(entry, JSON.stringify(page));
      assert.equal(entry.actorId, writer.principalId);
      assert.equal(entry.outcome, "ok");
      const cancels = await callOk(mcpAdmin, "audit_list", { action: "run.cancelled" });
      assert.ok(cancels.entries.some((item: { runId?: string }) => item.runId === runId));
      assert.doesNotMatch(JSON.stringify(page), /art_|sk-fake/);
    });
  } finally {
    for (const connected of open) await connected.close();
    await listener.close();
    await gateway.close();
  }
});

Deno.test({
  name: "mcp run tools: events paged to the terminal one, an approval, 409 on a second answer",
  async fn() {
    const gateway = await startGateway();
    const listener = listen((request) => gateway.server.handler(request));
    const open: Connected[] = [];
    try {
      const state = gateway.fake.managedAgents!;
      state.script = () => [
        { type: "agent.message", content: [{ type: "text", text: "Working" }] },
        {
          type: "agent.tool_use",
          name: "bash",
          input: { command: "ls" },
          evaluated_permission: "ask",
        },
      ];
      state.continuation = () => [
        { type: "agent.message", content: [{ type: "text", text: "Done" }] },
      ];
      const writer = await gateway.issue(["session:read", "session:write"], {
        agentIds: [gateway.agentId],
      });
      const approver = await gateway.issue(["session:read", "session:approve"]);
      const mcpWriter = await connect(listener.url, writer.bearer);
      open.push(mcpWriter);
      const mcpApprover = await connect(listener.url, approver.bearer);
      open.push(mcpApprover);
      for (const name of ["run_events", "run_pending"]) {
        assert.ok((await toolNames(mcpWriter)).includes(name), `${name} is offered`);
      }
      assert.ok((await toolNames(mcpApprover)).includes("run_confirm_tool"));

      const run = await callOk(mcpWriter, "run_start", {
        input: "List files",
        idempotencyKey: "k",
      });
      const runId = run.runId as string;

      // Wait (server side, never polling faster than the tool's own wait) for the request.
      let pending: { toolUseId: string; kind: string; name: string }[] = [];
      for (let attempt = 0; attempt < 20 && pending.length === 0; attempt++) {
        await callOk(mcpWriter, "run_events", { runId, waitMs: 1000 });
        pending = (await callOk(mcpWriter, "run_pending", { runId })).pending;
      }
      assert.equal(pending.length, 1, "one confirmation is pending");
      assert.equal(pending[0].kind, "confirmation");
      assert.equal(pending[0].name, "bash");

      const writerAnswer = await callError(mcpWriter, "run_confirm_tool", {
        runId,
        toolUseId: pending[0].toolUseId,
        result: "allow",
      });
      assert.equal(writerAnswer.code, "missingCapability", "approval needs session:approve");
      const answer = await callOk(mcpApprover, "run_confirm_tool", {
        runId,
        toolUseId: pending[0].toolUseId,
        result: "allow",
        idempotencyKey: "approve-1",
      });
      assert.equal(answer.toolUseId, pending[0].toolUseId);
      assert.equal(answer.result, "allow");
      assert.equal(answer.answeredBy, approver.principalId);
      const second = await callError(mcpApprover, "run_confirm_tool", {
        runId,
        toolUseId: pending[0].toolUseId,
        result: "deny",
        idempotencyKey: "approve-2",
      });
      assert.equal(second.code, "alreadyAnswered");
      const admin = await connect(listener.url, gateway.admin);
      open.push(admin);
      const third = await callError(admin, "run_confirm_tool", {
        runId,
        toolUseId: pending[0].toolUseId,
        result: "allow",
      });
      assert.equal(third.code, "alreadyAnswered", "by anyone");

      // Page the log to its terminal event: contiguous seqs, nothing repeated.
      const seqs: number[] = [];
      const types: string[] = [];
      let after = 0;
      let terminal = false;
      for (let page = 0; page < 60 && !terminal; page++) {
        const answer = await callOk(mcpWriter, "run_events", {
          runId,
          after,
          limit: 2,
          waitMs: 2000,
        });
        for (const event of answer.events) {
          seqs.push(event.seq);
          types.push(event.type);
        }
        after = answer.nextAfter;
        terminal = answer.terminal;
      }
      assert.ok(terminal, `the terminal event arrived: ${types.join(", ")}`);
      assert.deepEqual(seqs, seqs.map((_, index) => index + 1));
      assert.equal(types.at(-1), "run.completed");
      assert.ok(types.includes("tool.call"));
      const tail = await callOk(mcpWriter, "run_events", { runId, after, waitMs: 0 });
      assert.deepEqual(tail.events, []);
      assert.equal(tail.terminal, true);
    } finally {
      for (const connected of open) await connected.close();
      await listener.close();
      await gateway.close();
    }
  },
});
