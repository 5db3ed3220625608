/**
 * The provider key stays inside the runtime: every run route, successes and failures (provider
 * errors that echo the key included), leaves it out of every response body and header, log line
 * and audit entry; `serve` takes it from the environment or the 0600 provider file, never from an
 * argument, and refuses a provider file others can read.
 */
import assert from "node:assert/strict";
import { makeTempHome, runCli } from "../support/cli.ts";
import { FakeProvider } from "../support/fake_provider.ts";
import { ProviderManagedAgentClient } from "../../client/mod.ts";
import { launch } from "../reliability/_serve.ts";
import { sharedHeaders } from "../support/server.ts";
import { type Answer, startGateway } from "./_harness.ts";

function assertNoKey(key: string, where: string, text: string): void {
  assert.ok(!text.includes(key), `the provider key appears in ${where}: ${text.slice(0, 300)}`);
}

function answerText(answer: Answer): string {
  return `${answer.status} ${JSON.stringify([...answer.headers])} ${answer.text}`;
}

Deno.test("the provider key appears in no response, header, log line or audit entry", async () => {
  const gateway = await startGateway({ maxActiveRuns: 50 });
  const key = gateway.providerKey;
  const fast = { "retry-after-ms": "1" };
  try {
    gateway.holdTurns(true);
    const writer = await gateway.issue(["session:read", "session:write"], {
      agentIds: [gateway.agentId],
    });
    const reader = await gateway.issue(["session:read"]);
    const started = await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "hello", title: "t" },
    });
    assert.equal(started.status, 201, started.text);
    const runId = started.json.runId;
    const key1 = crypto.randomUUID();
    await gateway.request("POST", "/v1/runs", { key: key1, body: { input: "replayed" } });
    await gateway.request("POST", "/v1/runs", { key: key1, body: { input: "replayed" } });
    await gateway.request("GET", "/v1/runtime", { bearer: writer.bearer });
    await gateway.request("GET", `/v1/runs/${runId}`, { bearer: writer.bearer });
    await gateway.request("GET", "/v1/runs", { bearer: writer.bearer });
    await gateway.request("GET", "/v1/runs?principalId=x", { bearer: writer.bearer });
    await gateway.request("POST", `/v1/runs/${runId}/messages`, {
      bearer: writer.bearer,
      body: { input: "more" },
    });
    await gateway.request("POST", `/v1/runs/${runId}/cancel`, { bearer: writer.bearer });
    await gateway.request("GET", `/v1/runs/${runId}`, { bearer: reader.bearer });
    await gateway.request("POST", "/v1/runs", { bearer: reader.bearer, body: { input: "x" } });
    await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "x", metadata: { agent_id: gateway.otherAgentId } },
    });
    await gateway.request("POST", "/v1/runs", { body: { input: "" } });
    // Provider failures, one of them echoing the key in its message.
    gateway.fake.failNext({
      method: "POST",
      path: "/v1/sessions",
      status: 401,
      type: "authentication_error",
      message: `invalid x-api-key ${key}`,
    });
    const echoed = await gateway.request("POST", "/v1/runs", { body: { input: "x" } });
    assert.equal(echoed.status, 502, echoed.text);
    assert.match(echoed.json.error.message, /\[redacted\]/);
    gateway.fake.failNext({ path: /\/events$/, status: 500, times: 3, headers: fast });
    await gateway.request("POST", `/v1/runs/${runId}/messages`, { body: { input: "x" } });
    gateway.fake.failNext({ path: /^\/v1\/sessions/, status: 429, times: 3, headers: fast });
    await gateway.request("POST", "/v1/runs", { body: { input: "x" } });
    gateway.fake.failNext({ method: "GET", status: 404, message: `no session for ${key}` });
    const second = await gateway.request("POST", "/v1/runs", { body: { input: "y" } });
    await gateway.request("GET", `/v1/runs/${second.json.runId}`);
    await gateway.request("GET", "/v1/audit");
    await gateway.request("GET", "/v1/principals");
    await gateway.request("DELETE", `/v1/principals/${reader.principalId}`);

    assert.ok(gateway.answers.length >= 20);
    const statuses = new Set(gateway.answers.map((answer) => answer.status));
    for (const status of [200, 201, 202, 403, 404, 422, 502, 503]) {
      assert.ok(statuses.has(status), `the routes answered ${status} at least once`);
    }
    for (const answer of gateway.answers) assertNoKey(key, "a response", answerText(answer));
    assert.ok(gateway.logs.length > 0);
    for (const line of gateway.logs) assertNoKey(key, "a log line", line);
    const audit = await gateway.store.audit.list({ limit: 100 });
    assert.ok(audit.entries.length >= 8);
    assertNoKey(key, "the audit log", JSON.stringify(audit.entries));
  } finally {
    await gateway.close();
  }
});

Deno.test("tool answers and webhooks leave the provider key and signing secrets out of every response, log line and audit entry", async () => {
  const secrets = [0, 1].map(() =>
    `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(24))))}`
  );
  const gateway = await startGateway({ webhookSecrets: secrets, pendingTimeoutMs: 200 });
  const key = gateway.providerKey;
  try {
    gateway.fake.managedAgents!.script = () => [
      { type: "agent.tool_use", name: "bash", input: {}, evaluated_permission: "ask" },
      { type: "agent.custom_tool_use", name: "lookup", input: {} },
      { type: "agent.tool_use", name: "rm", input: {}, evaluated_permission: "ask" },
    ];
    const started = await gateway.request("POST", "/v1/runs", { body: { input: "go" } });
    const runId = started.json.runId;
    const events = gateway.fake.managedAgents!.sessions.get(runId)!.events as {
      type: string;
      id: string;
    }[];
    const ids = events.filter((e) => e.type.endsWith("tool_use")).map((e) => e.id);
    const [ask, custom, late] = ids;
    await gateway.request("GET", `/v1/runs/${runId}/pending`);
    gateway.fake.failNext({
      path: /\/events$/,
      method: "POST",
      status: 400,
      message: `bad key ${key} ${secrets[0]}`,
    });
    const refused = await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
      body: { toolUseId: ask, result: "allow" },
    });
    assert.equal(refused.status, 502, refused.text);
    await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
      body: { toolUseId: ask, result: "allow" },
    });
    await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
      body: { toolUseId: ask, result: "deny" },
    });
    await gateway.request("POST", `/v1/runs/${runId}/custom-tool-results`, {
      body: { toolUseId: custom, content: [{ type: "text", text: "ok" }] },
    });
    await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
      body: { toolUseId: "sevt_none", result: "allow" },
    });
    // The fail-closed default answers the last request.
    await gateway.request("GET", `/v1/runs/${runId}`);
    const until = Date.now() + 10_000;
    while ((await gateway.store.answers.get(runId, late))?.state !== "answered") {
      assert.ok(Date.now() < until, "the fail-closed answer came");
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const { signManagedAgentWebhook } = await import("../../client/mod.ts");
    for (const signing of [...secrets, "whsec_AAAAAAAAAAAAAAAAAAAAAAAA"]) {
      const body = JSON.stringify({
        type: "event",
        id: `wevt_${crypto.randomUUID()}`,
        created_at: new Date().toISOString(),
        data: { type: "session.status_idled", id: runId },
      });
      const response = await gateway.server.handler(
        new Request("http://127.0.0.1/webhooks/provider", {
          method: "POST",
          headers: await signManagedAgentWebhook(body, signing),
          body,
        }),
      );
      const text = await response.text();
      for (const secret of [key, ...secrets]) {
        assertNoKey(
          secret,
          "a webhook response",
          `${JSON.stringify([...response.headers])} ${text}`,
        );
      }
    }
    for (const secret of [key, ...secrets]) {
      for (const answer of gateway.answers) assertNoKey(secret, "a response", answerText(answer));
      for (const line of gateway.logs) assertNoKey(secret, "a log line", line);
      const audit = await gateway.store.audit.list({ limit: 100 });
      assertNoKey(secret, "the audit log", JSON.stringify(audit.entries));
    }
    const actions = new Set(
      (await gateway.store.audit.list({ limit: 100 })).entries.map((entry) => entry.action),
    );
    for (const action of ["tool.confirmed", "tool.responded", "webhook.accepted"]) {
      assert.ok(actions.has(action as never), `the audit log holds ${action}`);
    }
  } finally {
    await gateway.close();
  }
});

Deno.test("serve takes the key from the environment, never an argument, and never prints it", async () => {
  const providerKey = `sk-fake-${crypto.randomUUID()}`;
  const fake = await FakeProvider.start({ apiKey: providerKey });
  // Turns last, so the cancel below reaches the provider (a finished run needs no interrupt).
  fake.managedAgents!.script = () => [{ delayMs: 600_000 }];
  const setup = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey: providerKey });
  const agent = await setup.createAgent({ name: "a", model: "m" });
  const environment = await setup.createEnvironment({ name: "e" });
  const server = await launch({
    env: { AUTOMATION_RUNTIME_PROVIDER_API_KEY: providerKey },
    args: [
      "--provider-base-url",
      fake.baseUrl,
      "--default-agent",
      agent.id as string,
      "--default-environment",
      environment.id as string,
      "--max-active-runs",
      "5",
    ],
  });
  try {
    const cmdline = await Deno.readTextFile(`/proc/${server.pid}/cmdline`);
    assertNoKey(providerKey, "the process arguments", cmdline);
    const headers = (extra: Record<string, string> = {}) =>
      sharedHeaders(server.bearer, { "content-type": "application/json", ...extra });
    const runtime = await fetch(`${server.url}/v1/runtime`, { headers: headers() });
    const info = await runtime.json();
    assert.equal(info.runs, true);
    const start = await fetch(`${server.url}/v1/runs`, {
      method: "POST",
      headers: headers({ "idempotency-key": crypto.randomUUID() }),
      body: JSON.stringify({ input: "through the real serve" }),
    });
    const run = await start.json();
    assert.equal(start.status, 201, JSON.stringify(run));
    assert.equal(run.agentId, agent.id);
    // Only the interrupt fails (the run's tail talks to the provider too).
    fake.failNext({ method: "POST", status: 400, message: `bad ${providerKey}` });
    const failed = await fetch(`${server.url}/v1/runs/${run.runId}/cancel`, {
      method: "POST",
      headers: headers({ "idempotency-key": crypto.randomUUID() }),
    });
    const failedText = await failed.text();
    assert.equal(failed.status, 502, failedText);
    assertNoKey(providerKey, "a response", failedText);
    for (const line of server.logTail()) assertNoKey(providerKey, "a log line", line);
    assert.ok(server.logTail().some((line) => line.includes('"runs":true')));
  } finally {
    assert.equal(await server.stop(), 0);
    await fake.close();
  }
});

Deno.test("serve reads the 0600 provider file and refuses one others can read, naming it", async () => {
  const temp = await makeTempHome();
  const providerKey = `sk-fake-${crypto.randomUUID()}`;
  try {
    assert.equal((await runCli(["init"], { env: temp.env })).code, 0);
    const directory = `${temp.configDir}/automation-runtime`;
    const file = `${directory}/provider.env`;
    await Deno.writeTextFile(
      file,
      `AUTOMATION_RUNTIME_PROVIDER_API_KEY=${providerKey}\n` +
        "AUTOMATION_RUNTIME_PROVIDER_BASE_URL=http://127.0.0.1:9\n",
      { mode: 0o600 },
    );
    await Deno.chmod(file, 0o644);
    const refused = await runCli(["serve", "--port", "0"], { env: temp.env, timeoutMs: 20_000 });
    assert.equal(refused.code, 1, refused.stderr);
    const line = refused.stderr.trim();
    assert.equal(line.split("\n").length, 1, line);
    assert.ok(line.includes(file) && line.includes("chmod 600"), line);
    assertNoKey(providerKey, "stderr", refused.stderr + refused.stdout);

    await Deno.writeTextFile(file, "not a dotenv line\n");
    await Deno.chmod(file, 0o600);
    const corrupt = await runCli(["serve", "--port", "0"], { env: temp.env, timeoutMs: 20_000 });
    assert.equal(corrupt.code, 1, corrupt.stderr);
    assert.ok(corrupt.stderr.includes(file), corrupt.stderr);

    // A file named by RUNTIME_PROVIDER_ENV, with the key but no base URL, fails closed too.
    const named = `${temp.home}/elsewhere.env`;
    await Deno.writeTextFile(named, `AUTOMATION_RUNTIME_PROVIDER_API_KEY=${providerKey}\n`, {
      mode: 0o600,
    });
    const noUrl = await runCli(["serve", "--port", "0"], {
      env: { ...temp.env, RUNTIME_PROVIDER_ENV: named },
      timeoutMs: 20_000,
    });
    assert.equal(noUrl.code, 1, noUrl.stderr);
    const fix = noUrl.stderr.trim();
    assert.equal(fix.split("\n").length, 1, fix);
    // One line naming each way to fix it: the flag, the variable, the file and its key.
    for (
      const part of [
        "--provider-base-url",
        "AUTOMATION_RUNTIME_PROVIDER_BASE_URL=URL",
        named,
        "provider init --base-url",
      ]
    ) {
      assert.ok(fix.includes(part), `${part}: ${fix}`);
    }
    assertNoKey(providerKey, "stderr", noUrl.stderr);
  } finally {
    await temp.cleanup();
  }
});

Deno.test("serve with the provider file beside the secret file reports runs: true", async () => {
  const providerKey = `sk-fake-${crypto.randomUUID()}`;
  const home = await Deno.makeTempDir({ prefix: "art-provider-" });
  try {
    const directory = `${home}/.config/automation-runtime`;
    await Deno.mkdir(directory, { recursive: true, mode: 0o700 });
    await Deno.writeTextFile(
      `${directory}/provider.env`,
      `AUTOMATION_RUNTIME_PROVIDER_API_KEY=${providerKey}\n` +
        "AUTOMATION_RUNTIME_PROVIDER_BASE_URL=http://127.0.0.1:9\n",
      { mode: 0o600 },
    );
    const server = await launch({ home });
    try {
      const runtime = await fetch(`${server.url}/v1/runtime`, {
        headers: sharedHeaders(server.bearer),
      });
      assert.equal((await runtime.json()).runs, true);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
