/**
 * End to end through the real service: `provider init` writes the provider file, `serve` runs
 * against the in-process fake provider, a `session:write` principal limited to one agent starts
 * a run with the CLI and reads, lists, follows up and cancels it with the SDK.
 */
import assert from "node:assert/strict";
import { ProviderManagedAgentClient } from "../../client/mod.ts";
import { RuntimeServiceClient, RuntimeServiceError } from "../../sdk/mod.ts";
import { FakeProvider } from "../support/fake_provider.ts";
import { startServer } from "../support/server.ts";
import { lines, runCliWithInput } from "./_cli.ts";

const NAME = "e2e: provider init, serve, a principal limited to one agent, run start by CLI, " +
  "runs.get/list/send/cancel by SDK";

function denoDir(): string {
  return Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME") ?? "/root"}/.cache/deno`;
}

Deno.test({
  name: NAME,
  async fn() {
    const apiKey = `sk-fake-${crypto.randomUUID()}`;
    const fake = await FakeProvider.start({ apiKey });
    // Turns last, so the run is still active when it is cancelled (the run's tail would
    // otherwise record the echo turn's end first, and a finished run needs no interrupt).
    fake.managedAgents!.script = () => [{ delayMs: 600_000 }];
    const home = await Deno.makeTempDir({ prefix: "art-gateway-e2e-" });
    const cliEnv: Record<string, string> = {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: home,
      XDG_CONFIG_HOME: `${home}/.config`,
      DENO_DIR: denoDir(),
      NO_COLOR: "1",
    };
    let server: Awaited<ReturnType<typeof startServer>> | undefined;
    try {
      // The provider's agents: one the principal may run, one it may not.
      const provider = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey });
      const agent = await provider.createAgent({ name: "allowed", model: "model-small" });
      const other = await provider.createAgent({ name: "other", model: "model-small" });
      const environment = await provider.createEnvironment({ name: "env" });

      // provider init writes provider.env beside the (default) bootstrap secret file.
      const init = await runCliWithInput(["provider", "init"], {
        env: cliEnv,
        stdin: `${apiKey}\n`,
      });
      assert.equal(init.code, 0, init.stderr);
      const providerFile = `${home}/.config/automation-runtime/provider.env`;
      assert.equal((await Deno.stat(providerFile)).mode! & 0o777, 0o600);

      server = await startServer({ home, args: ["--provider-base-url", fake.baseUrl] });
      const admin = new RuntimeServiceClient({ baseUrl: server.url, token: server.bearer });
      assert.equal((await admin.runtime()).runs, true, "the service read the provider file");

      const issued = await admin.createPrincipal({
        capabilities: ["session:read", "session:write"],
        expiresAt: new Date(Date.now() + 86_400_000),
        agentIds: [agent.id],
      });
      assert.deepEqual(issued.agentIds, [agent.id]);
      const env = { ...cliEnv, AUTOMATION_RUNTIME_URL: server.url };
      const scopedEnv = { ...env, AUTOMATION_RUNTIME_TOKEN: issued.bearer };

      // run start by the CLI.
      const started = await runCliWithInput([
        "run",
        "start",
        "--agent",
        agent.id,
        "--environment",
        environment.id,
        "--title",
        "e2e",
        "--message",
        "hello gateway",
      ], { env: scopedEnv });
      assert.equal(started.code, 0, started.stderr);
      const run = JSON.parse(started.stdout);
      assert.equal(run.principalId, issued.principalId);
      assert.equal(run.agentId, agent.id);
      assert.equal(run.environmentId, environment.id);
      assert.equal(run.title, "e2e");
      const session = fake.managedAgents!.sessions.get(run.runId);
      assert.ok(session, "the run id is the provider's session id");
      const userTexts = () =>
        session.events.filter((event) => event.type === "user.message").map((event) =>
          JSON.stringify(event.content)
        );
      assert.ok(userTexts().some((text) => text.includes("hello gateway")), "kickoff sent");

      // Another agent is refused by policy.
      const refused = await runCliWithInput(
        ["run", "start", "--agent", other.id, "--environment", environment.id, "--message", "x"],
        { env: scopedEnv },
      );
      assert.equal(refused.code, 1);
      assert.equal(lines(refused.stderr).length, 1, refused.stderr);
      assert.ok(refused.stderr.includes("agentNotAllowed"), refused.stderr);

      // get, list, send, cancel by the SDK with the scoped bearer.
      const scoped = new RuntimeServiceClient({ baseUrl: server.url, token: issued.bearer });
      const read = await scoped.runs.get(run.runId);
      assert.equal(read.runId, run.runId);
      assert.equal(read.principalId, issued.principalId);
      const page = await scoped.runs.list({ limit: 10 });
      assert.deepEqual(page.runs.map((r) => r.runId), [run.runId], "only its own run");
      const walked = [];
      for await (const item of scoped.runs.listAll({ limit: 1 })) walked.push(item.runId);
      assert.deepEqual(walked, [run.runId]);

      const followed = await scoped.runs.send(run.runId, { input: "and a follow-up" });
      assert.equal(followed.runId, run.runId);
      assert.ok(userTexts().some((text) => text.includes("and a follow-up")), "message sent");

      const cancelled = await scoped.runs.cancel(run.runId);
      assert.equal(cancelled.runId, run.runId);
      assert.ok(
        session.events.some((event) => event.type === "user.interrupt"),
        "cancel interrupts the provider session",
      );

      // Another principal does not learn the run exists.
      const stranger = await admin.createPrincipal({
        capabilities: ["session:read"],
        expiresAt: new Date(Date.now() + 86_400_000),
      });
      const strangerClient = new RuntimeServiceClient({
        baseUrl: server.url,
        token: stranger.bearer,
      });
      await assert.rejects(
        strangerClient.runs.get(run.runId),
        (error: unknown) =>
          error instanceof RuntimeServiceError && error.status === 404 &&
          error.code === "runNotFound",
      );

      // The audit log has the start, by the CLI.
      const audit = await runCliWithInput(
        ["audit", "list", "--action", "run.started", "--principal", issued.principalId],
        { env: { ...env, AUTOMATION_RUNTIME_TOKEN: server.bearer } },
      );
      assert.equal(audit.code, 0, audit.stderr);
      const entries = JSON.parse(audit.stdout).entries;
      assert.ok(
        entries.some((entry: { runId?: string }) => entry.runId === run.runId),
        audit.stdout,
      );

      // The provider key never leaves the provider file.
      for (const text of [init.stdout, init.stderr, started.stdout, started.stderr, audit.stdout]) {
        assert.ok(!text.includes(apiKey));
      }
      assert.ok(!server.logs().join("\n").includes(apiKey), "no provider key in the logs");
    } finally {
      await server?.stop();
      await fake.close();
      await Deno.remove(home, { recursive: true }).catch(() => {});
    }
  },
});
