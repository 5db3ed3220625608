/**
 * One rule order for HTTP and MCP (`server/rules/order.ts`): a request wrong in two ways is
 * refused for the same reason over both interfaces. Each case breaks two rules at once, so its
 * refusal names whichever of them runs first; the HTTP route and its MCP tool must agree.
 */
import assert from "node:assert/strict";
import { startGateway } from "../gateway/_harness.ts";
import { callError, connect, listen } from "./_sdk.ts";

/** 129 printable characters: one over the key's limit (rule 9). */
const TOO_LONG = "k".repeat(129);
const RUN = "sesn_rule_order";

interface Case {
  /** The MCP tool. */
  tool: string;
  /** Its HTTP twin's path (a run route's under `/v1/runs/{RUN}`). */
  path: string;
  /** The body both send: over MCP, its fields are the tool's arguments. */
  body: Record<string, unknown>;
  /** The `idempotency-key` both send. */
  key: string;
  /** Who calls: the admin, or a principal holding only `session:read`. */
  as: "admin" | "reader";
  /** The code of whichever broken rule runs first. */
  code: string;
}

const run = `/v1/runs/${RUN}`;

/** A malformed key (rule 9) and a malformed body (rule 12): the key is refused first. */
function badKeyAndBody(tool: string, path: string, body: Record<string, unknown>): Case {
  return { tool, path, body, key: TOO_LONG, as: "admin", code: "invalidHeader" };
}

const CASES: readonly Case[] = [
  badKeyAndBody("principal_issue", "/v1/principals", { capabilities: [] }),
  badKeyAndBody("run_start", "/v1/runs", { input: "" }),
  badKeyAndBody("run_send", `${run}/messages`, { input: 42 }),
  badKeyAndBody("run_confirm_tool", `${run}/tool-confirmations`, { toolUseId: "t", result: "?" }),
  badKeyAndBody("run_respond_custom_tool", `${run}/custom-tool-results`, { content: "x" }),
  // A valid key and a malformed body: the body is refused.
  { ...badKeyAndBody("run_start", "/v1/runs", { input: "" }), key: "k-1", code: "invalidRequest" },
  // A missing capability (rule 8) and a malformed key: the capability is refused first.
  {
    ...badKeyAndBody("run_start", "/v1/runs", { input: "" }),
    as: "reader",
    code: "missingCapability",
  },
];

Deno.test("HTTP and MCP refuse a request wrong in two ways for the same reason", async (t) => {
  const gateway = await startGateway();
  const listener = listen((request) => gateway.server.handler(request));
  const reader = await gateway.issue(["session:read"]);
  const bearers = { admin: gateway.admin, reader: reader.bearer };
  const mcp = {
    admin: await connect(listener.url, bearers.admin),
    reader: await connect(listener.url, bearers.reader),
  };
  try {
    for (const item of CASES) {
      await t.step(`${item.tool} as ${item.as}: ${item.code}`, async () => {
        const http = await gateway.request("POST", item.path, {
          bearer: bearers[item.as],
          key: item.key,
          body: item.body,
        });
        const params = item.path.startsWith(run) ? { runId: RUN } : {};
        const overMcp = await callError(mcp[item.as], item.tool, {
          ...params,
          ...item.body,
          idempotencyKey: item.key,
        });
        assert.equal(http.json?.error?.code, item.code, `HTTP: ${http.text}`);
        assert.equal(overMcp.code, item.code, `MCP: ${JSON.stringify(overMcp)}`);
      });
    }
  } finally {
    await mcp.reader.close();
    await mcp.admin.close();
    await listener.close();
    await gateway.close();
  }
});
