/**
 * The client package runs unchanged in Node 20+: `client/mod.ts` is bundled with `deno bundle`
 * (browser platform, ESM), imported by Node, and runs a `streamRun` against the fake provider.
 */
import assert from "node:assert/strict";
import { ProviderManagedAgentClient } from "../../client/mod.ts";
import { FakeProvider } from "../support/fake_provider.ts";
import { bundleForNode, nodeMajor } from "../support/node_bundle.ts";

const major = await nodeMajor();

const NODE_SCRIPT = `
import { ProviderManagedAgentClient, isTerminalRunStreamEvent, ProviderAbortError } from "./client.mjs";

const [baseUrl, apiKey, agentId, environmentId] = process.argv.slice(2);
if (typeof globalThis.Deno !== "undefined") throw new Error("not running in Node");
const client = new ProviderManagedAgentClient({ baseUrl, apiKey, agentId, environmentId });
const events = [];
const result = await client.streamRun({ input: "hello from node" }, {
  onEvent(event) {
    events.push(event);
  },
});
const controller = new AbortController();
let aborted = null;
try {
  await client.streamRun({ input: "slow" }, {
    onEvent(event) {
      if (event.type === "run.started") controller.abort();
    },
  }, { signal: controller.signal });
} catch (error) {
  aborted = error instanceof ProviderAbortError ? error.code : String(error);
}
console.log(JSON.stringify({
  node: process.versions.node,
  events,
  terminal: result.terminal,
  terminalIsTerminal: isTerminalRunStreamEvent(result.terminal),
  aborted,
}));
`;

Deno.test({
  name: "client/mod.ts bundled by deno bundle runs streamRun in Node 20+",
  ignore: major === null && !Deno.env.get("CI"),
  async fn() {
    assert.ok(major !== null && major >= 20, `Node 20+ is required, found ${major}`);
    const dir = await Deno.makeTempDir({ prefix: "client-bundle-" });
    const fake = await FakeProvider.start();
    try {
      await bundleForNode("client/mod.ts", `${dir}/client.mjs`);
      await Deno.writeTextFile(`${dir}/run.mjs`, NODE_SCRIPT);

      const admin = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey: fake.apiKey });
      const agent = await admin.createAgent({ name: "node", model: "m" });
      const env = await admin.createEnvironment({ name: "node" });
      fake.managedAgents!.script = ({ text }) =>
        text === "slow"
          ? [{ delayMs: 60_000 }]
          : [{ type: "agent.message", content: [{ type: "text", text: `Echo: ${text}` }] }];
      const run = await new Deno.Command("node", {
        args: [`${dir}/run.mjs`, fake.baseUrl, fake.apiKey, agent.id, env.id],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.ok(run.success, new TextDecoder().decode(run.stderr));
      const out = JSON.parse(new TextDecoder().decode(run.stdout));
      assert.ok(Number(out.node.split(".")[0]) >= 20);
      const sessionId = out.terminal.runId;
      assert.deepEqual(out.events, [
        { type: "run.started", runId: sessionId },
        { type: "message.completed", runId: sessionId, text: "Echo: hello from node" },
        { type: "run.completed", runId: sessionId, stopReason: "end_turn" },
      ]);
      assert.equal(out.terminalIsTerminal, true);
      assert.equal(out.aborted, "providerAborted");
      assert.equal(fake.requests.at(-1)?.headers["provider-beta"], "managed-agents-2026-04-01");
    } finally {
      await fake.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
