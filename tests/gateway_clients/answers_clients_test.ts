/**
 * The SDK's `runs.pending`, `runs.confirmTool` and `runs.respondCustomTool`, and the CLI's
 * `run pending|approve|respond`, against the real gateway (served over HTTP in the test, in front
 * of the fake provider): what they send, print and exit with.
 */
import assert from "node:assert/strict";
import { RuntimeServiceClient, RuntimeServiceError } from "../../sdk/mod.ts";
import { CLI_PERMISSIONS, makeTempHome, REPO_ROOT } from "../support/cli.ts";
import { type Gateway, startGateway } from "../gateway/_harness.ts";
import { runCliWithInput } from "./_cli.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

interface Served {
  gateway: Gateway;
  url: string;
  runId: string;
  ask: string;
  custom: string;
  close(): Promise<void>;
}

async function serve(): Promise<Served> {
  const gateway = await startGateway();
  const http = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => gateway.server.handler(request),
  );
  gateway.fake.managedAgents!.script = () => [
    { type: "agent.tool_use", name: "bash", input: { command: "ls" }, evaluated_permission: "ask" },
    { type: "agent.custom_tool_use", name: "lookup", input: { q: "x" } },
  ];
  const started = await gateway.request("POST", "/v1/runs", { body: { input: "go" } });
  assert.equal(started.status, 201, started.text);
  const runId = started.json.runId;
  const events: Json[] = gateway.fake.managedAgents!.sessions.get(runId)!.events;
  return {
    gateway,
    url: `http://127.0.0.1:${http.addr.port}`,
    runId,
    ask: events.find((e) => e.type === "agent.tool_use").id,
    custom: events.find((e) => e.type === "agent.custom_tool_use").id,
    async close() {
      await http.shutdown();
      await gateway.close();
    },
  };
}

function sent(gateway: Gateway, runId: string, type: string): Json[] {
  return gateway.fake.managedAgents!.sessions.get(runId)!.events.filter((e: Json) =>
    e.type === type
  );
}

Deno.test("sdk: pending, confirmTool and respondCustomTool; a second answer rejects with alreadyAnswered", async () => {
  const served = await serve();
  try {
    const client = new RuntimeServiceClient({ baseUrl: served.url, token: served.gateway.admin });
    const pending = await client.runs.pending(served.runId);
    assert.deepEqual(pending.map((p) => [p.toolUseId, p.kind]), [
      [served.ask, "confirmation"],
      [served.custom, "custom_tool"],
    ]);
    const confirmed = await client.runs.confirmTool(
      served.runId,
      { toolUseId: served.ask, result: "allow" },
      { idempotencyKey: "allow-once" },
    );
    assert.equal(confirmed.result, "allow");
    assert.equal(confirmed.answeredBy, served.gateway.adminId);
    await assert.rejects(
      client.runs.confirmTool(served.runId, { toolUseId: served.ask, result: "deny" }),
      (error) =>
        error instanceof RuntimeServiceError && error.code === "alreadyAnswered" &&
        error.status === 409 && error.details.answeredBy === served.gateway.adminId,
    );
    const responded = await client.runs.respondCustomTool(served.runId, {
      toolUseId: served.custom,
      content: [{ type: "text", text: "42" }],
      isError: false,
    });
    assert.equal(responded.toolUseId, served.custom);
    assert.equal(sent(served.gateway, served.runId, "user.tool_confirmation").length, 1);
    assert.equal(sent(served.gateway, served.runId, "user.custom_tool_result").length, 1);
    assert.deepEqual(await client.runs.pending(served.runId), []);
    await assert.rejects(
      client.runs.confirmTool(served.runId, { toolUseId: "x", result: "maybe" as never }),
      TypeError,
    );
  } finally {
    await served.close();
  }
});

Deno.test("cli: run pending, run approve and run respond print JSON and exit 0, 1 or 2", async () => {
  const served = await serve();
  const temp = await makeTempHome();
  try {
    const env = {
      ...temp.env,
      AUTOMATION_RUNTIME_URL: served.url,
      AUTOMATION_RUNTIME_TOKEN: served.gateway.admin,
    };
    const listed = await runCliWithInput(["run", "pending", served.runId], { env });
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(JSON.parse(listed.stdout).pending.length, 2);

    const usage = await runCliWithInput(["run", "approve", served.runId, served.ask], { env });
    assert.equal(usage.code, 2);
    assert.equal(usage.stderr.trim().split("\n").length, 1);
    assert.match(usage.stderr, /--allow/);

    const denied = await runCliWithInput([
      "run",
      "approve",
      served.runId,
      served.ask,
      "--deny",
      "--message",
      "not here",
    ], { env });
    assert.equal(denied.code, 0, denied.stderr);
    assert.equal(JSON.parse(denied.stdout).result, "deny");
    const [confirmation] = sent(served.gateway, served.runId, "user.tool_confirmation");
    assert.equal(confirmation.deny_message, "not here");

    const twice = await runCliWithInput(
      ["run", "approve", served.runId, served.ask, "--allow"],
      { env },
    );
    assert.equal(twice.code, 1);
    assert.equal(twice.stderr.trim().split("\n").length, 1);
    assert.match(twice.stderr, /alreadyAnswered/);
    assert.match(twice.stderr, new RegExp(`answered by ${served.gateway.adminId}: deny`));

    const badJson = await runCliWithInput(["run", "respond", served.runId, served.custom], {
      env,
      stdin: "forty-two",
    });
    assert.equal(badJson.code, 2);
    assert.match(badJson.stderr, /not JSON/);

    const responded = await runCliWithInput(
      ["run", "respond", served.runId, served.custom, "--error"],
      { env, stdin: '[{"type": "text", "text": "lookup failed"}]' },
    );
    assert.equal(responded.code, 0, responded.stderr);
    assert.equal(JSON.parse(responded.stdout).toolUseId, served.custom);
    const [result] = sent(served.gateway, served.runId, "user.custom_tool_result");
    assert.equal(result.is_error, true);
    assert.deepEqual(result.content, [{ type: "text", text: "lookup failed" }]);

    const help = await runCliWithInput(["run", "respond", "--help"], { env });
    assert.equal(help.code, 0);
    assert.match(help.stdout, /content blocks/);
  } finally {
    await temp.cleanup();
    await served.close();
  }
});

Deno.test("cli: run pending without an ID lists the inbox; --follow then prints each change until the principal is revoked", async () => {
  const served = await serve();
  const temp = await makeTempHome();
  try {
    const owner = await served.gateway.issue(["session:read", "session:write"]);
    const mine = await served.gateway.request("POST", "/v1/runs", {
      bearer: owner.bearer,
      body: { input: "mine", title: "owned" },
    });
    assert.equal(mine.status, 201, mine.text);
    const env = { ...temp.env, AUTOMATION_RUNTIME_URL: served.url };
    // The admin's inbox holds every run's requests; the owner's only its own.
    let inbox: Json;
    for (;;) {
      const listed = await runCliWithInput(["run", "pending"], {
        env: { ...env, AUTOMATION_RUNTIME_TOKEN: served.gateway.admin },
      });
      assert.equal(listed.code, 0, listed.stderr);
      inbox = JSON.parse(listed.stdout);
      if (inbox.pending.length === 4) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(typeof inbox.activitySeq, "number");
    assert.deepEqual(
      new Set(inbox.pending.map((p: Json) => p.runId)),
      new Set([served.runId, mine.json.runId]),
    );
    const usage = await runCliWithInput(["run", "pending", served.runId, "--follow"], {
      env: { ...env, AUTOMATION_RUNTIME_TOKEN: served.gateway.admin },
    });
    assert.equal(usage.code, 2);

    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", ...CLI_PERMISSIONS, `${REPO_ROOT}cli/main.ts`, "run", "pending", "--follow"],
      cwd: REPO_ROOT,
      env: { ...env, AUTOMATION_RUNTIME_TOKEN: owner.bearer },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    const nextLine = async (): Promise<Json> => {
      while (!buffered.includes("\n")) {
        const { done, value } = await reader.read();
        if (done) throw new Error("the command ended");
        buffered += value;
      }
      const end = buffered.indexOf("\n");
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      return JSON.parse(line);
    };
    const first = await nextLine();
    assert.ok(first.pending.every((p: Json) => p.runId === mine.json.runId));
    assert.equal(first.pending.length, 2);
    const ask = first.pending.find((p: Json) => p.kind === "confirmation");
    const answer = await served.gateway.request(
      "POST",
      `/v1/runs/${mine.json.runId}/tool-confirmations`,
      {
        body: { toolUseId: ask.toolUseId, result: "allow" },
      },
    );
    assert.equal(answer.status, 200, answer.text);
    let change = await nextLine();
    while (change.type !== "tool.answered") change = await nextLine();
    assert.equal(change.toolUseId, ask.toolUseId);
    assert.equal(change.answeredBy, served.gateway.adminId);
    const revoked = await served.gateway.request("DELETE", `/v1/principals/${owner.principalId}`);
    assert.equal(revoked.status, 204);
    reader.releaseLock();
    await child.stdout.cancel().catch(() => {});
    const status = await child.status;
    const stderr = new TextDecoder().decode(await new Response(child.stderr).arrayBuffer());
    assert.equal(status.code, 1, stderr);
    assert.equal(stderr.trim().split("\n").length, 1, stderr);
    assert.match(stderr, /authenticationFailed|revoked/, stderr);
  } finally {
    await temp.cleanup();
    await served.close();
  }
});
