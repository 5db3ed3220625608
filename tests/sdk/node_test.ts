import assert from "node:assert/strict";
import { startServer } from "../support/server.ts";
import { bundleForNode } from "../support/node_bundle.ts";

const NODE_SCRIPT = `
import { RuntimeServiceClient, RuntimeServiceError } from "./sdk.mjs";

// baseUrl and token left out: the SDK reads AUTOMATION_RUNTIME_URL and AUTOMATION_RUNTIME_TOKEN.
const client = new RuntimeServiceClient({});
const issued = await client.createPrincipal({
  capabilities: ["session:read"],
  expiresAt: new Date(Date.now() + 3600_000),
});
const scoped = new RuntimeServiceClient({
  baseUrl: process.env.AUTOMATION_RUNTIME_URL,
  token: issued.bearer,
});
const self = await scoped.runtime();
await client.revokePrincipal(issued.principalId);
let afterRevoke = null;
try {
  await scoped.runtime();
} catch (error) {
  if (!(error instanceof RuntimeServiceError)) throw error;
  afterRevoke = { status: error.status, code: error.code, layer: error.layer };
}
const listed = await client.listPrincipals();
console.log(JSON.stringify({
  node: process.versions.node,
  principalId: issued.principalId,
  selfId: self.principalId,
  bearerShape: /^art_[A-Za-z0-9_-]{43}$/.test(issued.bearer),
  afterRevoke,
  revokedAt: listed.find((p) => p.principalId === issued.principalId)?.revokedAt ?? null,
}));
`;

Deno.test("the bundled SDK creates and revokes a principal from Node 20", async () => {
  const dir = await Deno.makeTempDir({ prefix: "art-node-" });
  const server = await startServer();
  try {
    await bundleForNode("sdk/mod.ts", `${dir}/sdk.mjs`);

    await Deno.writeTextFile(`${dir}/main.mjs`, NODE_SCRIPT);
    const node = await new Deno.Command("node", {
      args: [`${dir}/main.mjs`],
      cwd: dir,
      env: { AUTOMATION_RUNTIME_URL: server.url, AUTOMATION_RUNTIME_TOKEN: server.bearer },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(node.stderr);
    assert.equal(node.code, 0, stderr);
    const result = JSON.parse(new TextDecoder().decode(node.stdout));
    assert.equal(Number(result.node.split(".")[0]) >= 20, true);
    assert.equal(result.selfId, result.principalId);
    assert.equal(result.bearerShape, true);
    assert.deepEqual(result.afterRevoke, {
      status: 401,
      code: "authenticationFailed",
      layer: "auth",
    });
    assert.ok(typeof result.revokedAt === "string");
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
