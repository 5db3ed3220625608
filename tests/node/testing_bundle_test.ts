/**
 * The provider simulator runs unchanged in Node 20+: `testing/mod.ts` is bundled with
 * `deno bundle` (ESM), imported by Node, which serves it with `node:http`; the client bundle then
 * runs the demo agent's turn through it (a tool confirmation, usage with its list cost), and the
 * fault switches answer an overload, hold an answer and cut a stream mid-frame there too.
 */
import assert from "node:assert/strict";
import { bundleForNode, nodeMajor } from "../support/node_bundle.ts";

const major = await nodeMajor();

const NODE_SCRIPT = `
import { addDemoAgent, ProviderSimulator } from "./testing.mjs";
import { ProviderManagedAgentClient } from "./client.mjs";

if (typeof globalThis.Deno !== "undefined") throw new Error("not running in Node");
const simulator = await ProviderSimulator.start({ apiKey: "sk-node-simulator-0001" });
const out = { node: process.versions.node };
try {
  const demo = addDemoAgent(simulator.managedAgents);
  const client = new ProviderManagedAgentClient({
    baseUrl: simulator.baseUrl,
    apiKey: simulator.apiKey,
    agentId: demo.agentId,
    environmentId: demo.environmentId,
  });
  const started = await client.startRun({ input: "Triage the open issues" });
  out.waiting = (await client.getRun(started.runId)).status;
  const call = simulator.managedAgents.sessions.get(started.runId).events
    .find((event) => event.type === "agent.tool_use");
  await client.confirmTool(started.runId, { toolUseId: call.id, result: "allow" });
  let run = await client.getRun(started.runId);
  for (let i = 0; i < 100 && run.status !== "completed"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    run = await client.getRun(started.runId);
  }
  out.run = run;
  out.listCost = (await client.getSession(started.runId)).usage.list_cost;

  const headers = { "x-api-key": simulator.apiKey, "provider-beta": "managed-agents-2026-04-01" };
  simulator.failNext({ path: "/v1/agents", status: 529, headers: { "retry-after": "2" } });
  const overloaded = await fetch(simulator.baseUrl + "/v1/agents", { headers });
  out.overloaded = {
    status: overloaded.status,
    retryAfter: overloaded.headers.get("retry-after"),
    type: (await overloaded.json()).error.type,
  };

  simulator.delayNext({ path: "/v1/agents", ms: 300 });
  const before = Date.now();
  await (await fetch(simulator.baseUrl + "/v1/agents", { headers })).arrayBuffer();
  out.delayedMs = Date.now() - before;

  simulator.dropNextStream({ afterBytes: 20 });
  const stream = await fetch(
    simulator.baseUrl + "/v1/sessions/" + started.runId + "/events/stream",
    { headers },
  );
  out.streamStatus = stream.status;
  simulator.managedAgents.emit(started.runId, {
    type: "agent.message",
    content: [{ type: "text", text: "a frame longer than twenty bytes" }],
  });
  const reader = stream.body.getReader();
  let received = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        out.streamEnd = "ended";
        break;
      }
      received += value.length;
    }
  } catch {
    out.streamEnd = "cut";
  }
  out.streamBytes = received;
} finally {
  await simulator.close();
}
console.log(JSON.stringify(out));
`;

Deno.test({
  name: "testing/mod.ts bundled by deno bundle serves the simulator in Node 20+",
  ignore: major === null && !Deno.env.get("CI"),
  async fn() {
    assert.ok(major !== null && major >= 20, `Node 20+ is required, found ${major}`);
    const dir = await Deno.makeTempDir({ prefix: "testing-bundle-" });
    try {
      await bundleForNode("testing/mod.ts", `${dir}/testing.mjs`);
      await bundleForNode("client/mod.ts", `${dir}/client.mjs`);
      await Deno.writeTextFile(`${dir}/run.mjs`, NODE_SCRIPT);
      const run = await new Deno.Command("node", {
        args: [`${dir}/run.mjs`],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.ok(run.success, new TextDecoder().decode(run.stderr));
      const out = JSON.parse(new TextDecoder().decode(run.stdout));
      assert.ok(Number(out.node.split(".")[0]) >= 20);
      assert.equal(out.waiting, "requires_action");
      assert.equal(out.run.status, "completed");
      assert.equal(out.run.usage.input_tokens, 24_000);
      assert.equal(out.run.usage.output_tokens, 1_800);
      assert.deepEqual(out.listCost, { amount: "10", currency: "USD" });
      assert.deepEqual(out.overloaded, {
        status: 529,
        retryAfter: "2",
        type: "overloaded_error",
      });
      assert.ok(out.delayedMs >= 290, `held ${out.delayedMs} ms`);
      assert.equal(out.streamStatus, 200);
      assert.equal(out.streamEnd, "cut");
      assert.equal(out.streamBytes, 20);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
