/**
 * MCP tool calls count against the principal's in-flight quota for as long as they run: a
 * `run_events` call waiting with `waitMs` holds its slot until it returns, although its MCP
 * request (answered as a stream) was answered at once. Past the quota, calls are refused with
 * `resourceExhausted`, and the principal's HTTP requests meanwhile too.
 */
import assert from "node:assert/strict";
import { startGateway } from "../gateway/_harness.ts";
import { connect, listen } from "./_sdk.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

Deno.test("mcp: tool calls hold an in-flight slot for their whole run, waits included", async () => {
  const gateway = await startGateway({ serverOptions: { inFlightQuota: 4 } });
  const listener = listen((request) => gateway.server.handler(request));
  gateway.holdTurns(true);
  const { bearer } = await gateway.issue(["session:read", "session:write"]);
  const mcp = await connect(listener.url, bearer);
  try {
    const started = await gateway.request("POST", "/v1/runs", { bearer, body: { input: "go" } });
    assert.equal(started.status, 201, started.text);
    const runId = started.json.runId;
    // Where the log stands once the run's first events are in: nothing more comes after it.
    let after = 0;
    for (let i = 0; i < 100 && after < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = (await gateway.request("GET", `/v1/runs/${runId}/events`, { bearer })).json.nextAfter;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    after = (await gateway.request("GET", `/v1/runs/${runId}/events`, { bearer })).json.nextAfter;
    // Twelve waits on a run that says nothing more: each would hold the caller's slot 1.5 s.
    const calls = Array.from(
      { length: 12 },
      () =>
        mcp.client.callTool({ name: "run_events", arguments: { runId, after, waitMs: 1_500 } })
          .then(
            (result: Json) => {
              if (result.isError !== true) return "admitted";
              return JSON.parse(result.content[0].text).error.code;
            },
            (error: Error) =>
              /resourceExhausted/.test(String(error)) ? "resourceExhausted" : String(error),
          ),
    );
    await new Promise((resolve) => setTimeout(resolve, 400));
    // While they wait, the principal's slots are taken: its HTTP request is refused too.
    const meanwhile = await gateway.request("GET", "/v1/runtime", { bearer });
    assert.equal(meanwhile.status, 429, meanwhile.text);
    const outcomes = await Promise.all(calls);
    const admitted = outcomes.filter((outcome) => outcome === "admitted").length;
    assert.ok(admitted >= 1 && admitted <= 4, `admitted ${admitted}: ${outcomes.join(", ")}`);
    assert.ok(
      outcomes.every((outcome) => outcome === "admitted" || outcome === "resourceExhausted"),
      outcomes.join(", "),
    );
    // Once they returned, every slot is free again.
    assert.equal((await gateway.request("GET", "/v1/runtime", { bearer })).status, 200);
    const again = await mcp.client.callTool({
      name: "run_events",
      arguments: { runId, after, waitMs: 0 },
    });
    assert.equal(again.isError, undefined, JSON.stringify(again));
  } finally {
    await mcp.close();
    await listener.close();
    await gateway.close();
  }
});
