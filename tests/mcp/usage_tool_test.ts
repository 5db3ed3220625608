/**
 * `usage_get`, the MCP twin of `GET /v1/usage`: the same sums, only the caller's own for a
 * non-admin, and the same refusal for another principal's.
 */
import assert from "node:assert/strict";
import { startGateway } from "../gateway/_harness.ts";
import { runWhen, script, spend, waitFor } from "../gateway/_spend.ts";
import { agentMessage } from "../../testing/mod.ts";
import { callError, callOk, connect, listen } from "./_sdk.ts";

Deno.test("mcp usage_get: the route's sums, the caller's own, another's refused", async () => {
  const gateway = await startGateway();
  const listener = listen((request) => gateway.server.handler(request));
  const writer = await gateway.issue(["session:read", "session:write"]);
  const mcp = await connect(listener.url, writer.bearer);
  try {
    script(gateway, () => [spend(25), agentMessage("done")]);
    const started = await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "go" },
    });
    await runWhen(gateway, started.json.runId, (run) => run.listCost?.amount === "25");
    await waitFor(async () =>
      (await gateway.request("GET", "/v1/usage")).json.total.listCost.amount === "25"
    );
    const sums = await callOk(mcp, "usage_get", { groupBy: "principal" });
    const http = await gateway.request("GET", "/v1/usage?groupBy=principal", {
      bearer: writer.bearer,
    });
    assert.deepEqual({ ...sums, to: undefined }, { ...http.json, to: undefined });
    assert.deepEqual(sums.groups.map((group: { key: string }) => group.key), [writer.principalId]);
    const refused = await callError(mcp, "usage_get", { principalId: gateway.adminId });
    assert.equal(refused.code, "missingCapability");
  } finally {
    await mcp.close();
    await listener.close();
    await gateway.close();
  }
});
