/**
 * `client.runs`, `client.audit` and the `runtime-service` provider module run unchanged in Node
 * 20+: `sdk/mod.ts` bundled for the browser platform, imported by Node, against the in-test
 * gateway.
 */
import assert from "node:assert/strict";
import { bundleForNode, nodeMajor } from "../support/node_bundle.ts";
import { FakeGateway } from "./_fake_gateway.ts";

const NODE_SCRIPT = `
import {
  RuntimeServiceClient,
  RuntimeServiceError,
  createRuntimeServiceProviderModule,
} from "./sdk.mjs";

if (typeof globalThis.Deno !== "undefined") throw new Error("not running in Node");
const [baseUrl, token] = process.argv.slice(2);
const client = new RuntimeServiceClient({ baseUrl, token });
const run = await client.runs.start({ input: "from node" }, { idempotencyKey: "node-1" });
const read = await client.runs.get(run.runId);
const sent = await client.runs.send(run.runId, { input: "more" });
const cancelled = await client.runs.cancel(run.runId);
const listed = [];
for await (const item of client.runs.listAll({ limit: 1 })) listed.push(item.runId);
const audit = await client.audit.list({ action: "run.started" });
let missing = null;
try {
  await client.runs.get("sesn_missing");
} catch (error) {
  if (!(error instanceof RuntimeServiceError)) throw error;
  missing = { status: error.status, code: error.code };
}
const contract = createRuntimeServiceProviderModule({ baseUrl, token }).createClient();
const started = await contract.startRun({ input: "contract" });
const status = await contract.getRun(started.runId);
console.log(JSON.stringify({
  node: process.versions.node,
  runId: run.runId,
  readId: read.runId,
  sentState: sent.state,
  cancelledState: cancelled.state,
  listed,
  auditActions: audit.entries.map((entry) => entry.action),
  missing,
  started,
  status,
}));
`;

const major = await nodeMajor();

Deno.test({
  name: "the bundled SDK's runs, audit and provider module work in Node 20+",
  ignore: major === null && !Deno.env.get("CI"),
  async fn() {
    assert.ok(major !== null && major >= 20, `Node 20+ is required, found ${major}`);
    const dir = await Deno.makeTempDir({ prefix: "art-node-runs-" });
    const gateway = FakeGateway.start();
    try {
      await bundleForNode("sdk/mod.ts", `${dir}/sdk.mjs`);
      await Deno.writeTextFile(`${dir}/main.mjs`, NODE_SCRIPT);
      const node = await new Deno.Command("node", {
        args: [`${dir}/main.mjs`, gateway.url, gateway.admin.token],
        cwd: dir,
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(node.code, 0, new TextDecoder().decode(node.stderr));
      const result = JSON.parse(new TextDecoder().decode(node.stdout));
      assert.equal(result.readId, result.runId);
      assert.equal(result.sentState, "running");
      assert.equal(result.cancelledState, "cancelled");
      assert.deepEqual(result.listed, [result.runId]);
      assert.deepEqual(result.auditActions, ["run.started"]);
      assert.deepEqual(result.missing, { status: 404, code: "runNotFound" });
      assert.equal(result.started.status, "started");
      assert.deepEqual(result.status, { runId: result.started.runId, status: "running" });
      assert.equal(gateway.runs.size, 2);
    } finally {
      await gateway.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
