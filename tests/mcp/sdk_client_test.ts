/**
 * The official MCP SDK's `Client` with `StreamableHTTPClientTransport` driving the real
 * `serve` over `/v1/mcp`.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { type CallToolResult, McpError } from "@modelcontextprotocol/sdk/types.js";
import { call } from "../server/_http.ts";
import { startServer } from "../support/server.ts";
import { toolsFor } from "./_tools.ts";

const DAY = 86_400_000;

interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
}

async function connect(url: string, bearer: string): Promise<Connected> {
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/v1/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${bearer}` } },
    reconnectionOptions: {
      maxRetries: 0,
      initialReconnectionDelay: 1000,
      maxReconnectionDelay: 1000,
      reconnectionDelayGrowFactor: 1,
    },
  });
  const client = new Client({ name: "sdk-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

async function disconnect({ client, transport }: Connected): Promise<void> {
  try {
    await transport.terminateSession();
  } catch {
    // Already ended (for example, its principal was revoked).
  }
  await client.close();
}

// deno-lint-ignore no-explicit-any
function errorOf(answer: unknown): any {
  const result = answer as CallToolResult;
  assert.ok(Array.isArray(result.content), JSON.stringify(answer));
  assert.equal(result.isError, true, JSON.stringify(result));
  assert.equal(result.structuredContent, undefined);
  const [content] = result.content;
  assert.equal(content.type, "text");
  return JSON.parse((content as { text: string }).text).error;
}

function issueArgs(capabilities: string[], extra: Record<string, unknown> = {}) {
  return {
    principalId: crypto.randomUUID(),
    capabilities,
    expiresAt: new Date(Date.now() + DAY).toISOString(),
    ...extra,
  };
}

Deno.test("mcp sdk: initialize, tools per capability, every tool, issue and revoke", async (t) => {
  const server = await startServer();
  const admin = await connect(server.url, server.bearer);
  let reader: Connected | undefined;
  try {
    await t.step("initialize negotiates 2025-11-25 and opens a session", () => {
      assert.deepEqual(admin.client.getServerVersion(), {
        name: "automation-runtime",
        version: "0.1.0",
      });
      assert.equal(admin.transport.protocolVersion, "2025-11-25");
      assert.match(
        admin.transport.sessionId ?? "",
        /^[A-Za-z0-9_-]{22}\.2025-11-25\.[A-Za-z0-9_-]{43}$/,
      );
      assert.ok(admin.client.getServerCapabilities()?.tools);
      assert.ok(admin.client.getServerCapabilities()?.logging);
    });

    await t.step("an admin sees every tool, with input and output schemas", async () => {
      const { tools } = await admin.client.listTools();
      assert.deepEqual(tools.map((tool) => tool.name), toolsFor(server.bootstrap.capabilities));
      for (const tool of tools) {
        assert.equal(tool.inputSchema.type, "object", tool.name);
        assert.ok((tool.description ?? "").length > 0, tool.name);
      }
      for (const name of ["runtime_info", "principals_list", "principal_issue"]) {
        const tool = tools.find((entry) => entry.name === name)!;
        assert.equal(tool.outputSchema?.type, "object", name);
      }
      const issue = tools.find((tool) => tool.name === "principal_issue")!;
      assert.deepEqual(issue.inputSchema.required, ["principalId", "capabilities", "expiresAt"]);
      assert.ok(issue.inputSchema.properties?.idempotencyKey);
      // The run and resource policy fields come from the same body schema as the route's.
      for (
        const field of [
          "agentIds",
          "environmentIds",
          "vaultIds",
          "memoryStoreIds",
          "repositories",
          "fileIds",
        ]
      ) {
        assert.ok(issue.inputSchema.properties?.[field], field);
      }
    });

    await t.step("runtime_info answers the caller's own principal", async () => {
      const result = await admin.client.callTool({ name: "runtime_info", arguments: {} });
      assert.equal(result.isError, undefined);
      assert.deepEqual(result.structuredContent, {
        interfaceVersion: "2026-07-23",
        principalId: server.bootstrap.principalId,
        capabilities: server.bootstrap.capabilities,
        expiresAt: server.bootstrap.expiresAt,
        runs: false,
        maxActiveRuns: 100,
        // The bootstrap may override agents (through the provider's API).
        allowAgentOverrides: true,
      });
    });

    let issued: { principalId: string; bearer: string; capabilities: string[] } | undefined;
    await t.step(
      "principal_issue returns a one-time bearer; a retry with its key replays it",
      async () => {
        const args = issueArgs(["session:read"], { idempotencyKey: "issue-reader-1" });
        const first = await admin.client.callTool({ name: "principal_issue", arguments: args });
        assert.equal(first.isError, undefined, JSON.stringify(first));
        const body = first.structuredContent as typeof issued & { expiresAt: string };
        assert.equal(body!.principalId, args.principalId);
        assert.deepEqual(body!.capabilities, ["session:read"]);
        assert.match(body!.bearer, /^art_[A-Za-z0-9_-]{43}$/);
        assert.equal(first._meta, undefined);
        const again = await admin.client.callTool({ name: "principal_issue", arguments: args });
        assert.deepEqual(again.structuredContent, first.structuredContent);
        assert.equal(again._meta?.["automation-runtime/idempotent-replayed"], true);
        const changed = await admin.client.callTool({
          name: "principal_issue",
          arguments: { ...args, capabilities: ["session:read", "session:write"] },
        });
        assert.equal(errorOf(changed).code, "idempotencyConflict");
        issued = body;

        const http = await call(server.url, "GET", "/v1/runtime", { bearer: body!.bearer });
        assert.equal(http.status, 200, http.text);
        assert.equal(http.json.principalId, args.principalId);
      },
    );

    await t.step("a session:read principal sees and may call its read tools only", async () => {
      reader = await connect(server.url, issued!.bearer);
      const { tools } = await reader.client.listTools();
      assert.deepEqual(tools.map((tool) => tool.name), toolsFor(["session:read"]));
      const info = await reader.client.callTool({ name: "runtime_info", arguments: {} });
      assert.equal(
        (info.structuredContent as { principalId: string }).principalId,
        issued!.principalId,
      );
      for (const name of ["principals_list", "principal_issue", "principal_revoke"]) {
        const refused = await reader.client.callTool({
          name,
          arguments: name === "principal_revoke" ? { principalId: issued!.principalId } : {},
        });
        const error = errorOf(refused);
        assert.equal(error.code, "missingCapability", name);
        assert.equal(error.requiredCapability, "authority:admin", name);
      }
    });

    await t.step("principals_list shows the issued principal without secrets", async () => {
      const result = await admin.client.callTool({ name: "principals_list", arguments: {} });
      const { principals } = result.structuredContent as {
        principals: Record<string, unknown>[];
      };
      const entry = principals.find((principal) => principal.principalId === issued!.principalId);
      assert.ok(entry);
      assert.equal(entry.issuerId, server.bootstrap.principalId);
      assert.equal(entry.revokedAt, undefined);
      assert.doesNotMatch(JSON.stringify(result), /art_|bearerDigest|nonce/);
    });

    await t.step("tool errors carry the HTTP error codes", async () => {
      const admin403 = await admin.client.callTool({
        name: "principal_issue",
        arguments: issueArgs(["authority:admin"]),
      });
      const invalid = errorOf(admin403);
      assert.equal(invalid.code, "invalidRequest");
      assert.equal(invalid.layer, "authority");
      assert.ok(Array.isArray(invalid.details));
      const badShape = await admin.client.callTool({
        name: "principal_issue",
        arguments: { principalId: "NOT-A-UUID", capabilities: [], expiresAt: "soon" },
      });
      const shape = errorOf(badShape);
      assert.equal(shape.code, "invalidRequest");
      assert.deepEqual(
        shape.details.map((detail: { path: string }) => detail.path).sort(),
        ["capabilities", "expiresAt", "principalId"],
      );
      const badKey = await admin.client.callTool({
        name: "principal_issue",
        arguments: issueArgs(["session:read"], { idempotencyKey: "" }),
      });
      assert.equal(errorOf(badKey).code, "invalidHeader");
      const bootstrap = await admin.client.callTool({
        name: "principal_revoke",
        arguments: { principalId: server.bootstrap.principalId },
      });
      assert.equal(errorOf(bootstrap).code, "invalidRequest");
      const unknown = await admin.client.callTool({
        name: "principal_revoke",
        arguments: { principalId: crypto.randomUUID() },
      });
      assert.equal(errorOf(unknown).code, "notFound");
      const extra = await admin.client.callTool({
        name: "runtime_info",
        arguments: { surprise: true },
      });
      assert.equal(errorOf(extra).code, "invalidRequest");
      await assert.rejects(
        admin.client.callTool({ name: "no_such_tool", arguments: {} }),
        (error: unknown) => error instanceof McpError && error.code === -32602,
      );
    });

    await t.step("principal_revoke over MCP refuses the bearer on /v1/* and on MCP", async () => {
      const result = await admin.client.callTool({
        name: "principal_revoke",
        arguments: { principalId: issued!.principalId },
      });
      assert.deepEqual(result.structuredContent, {
        principalId: issued!.principalId,
        revoked: true,
      });
      const http = await call(server.url, "GET", "/v1/runtime", { bearer: issued!.bearer });
      assert.equal(http.status, 401, http.text);
      assert.equal(http.json.error.code, "authenticationFailed");
      await assert.rejects(
        reader!.client.callTool({ name: "runtime_info", arguments: {} }),
        (error: unknown) => error instanceof StreamableHTTPError && error.code === 401,
      );
      const again = await admin.client.callTool({
        name: "principal_revoke",
        arguments: { principalId: issued!.principalId },
      });
      assert.equal(again.isError, undefined, "revoking twice succeeds again");
      const listed = await admin.client.callTool({ name: "principals_list", arguments: {} });
      const entry = (listed.structuredContent as { principals: { principalId: string }[] })
        .principals.find((principal) => principal.principalId === issued!.principalId);
      assert.match((entry as { revokedAt?: string }).revokedAt ?? "", /^\d{4}-/);
    });
  } finally {
    if (reader !== undefined) await disconnect(reader);
    await disconnect(admin);
    await server.stop();
  }
});

Deno.test("mcp sdk: serve shuts down cleanly while a client holds an open session", async () => {
  const server = await startServer();
  const connected = await connect(server.url, server.bearer);
  try {
    const info = await connected.client.callTool({ name: "runtime_info", arguments: {} });
    assert.equal(info.isError, undefined);
    const started = Date.now();
    assert.equal(await server.stop(), 0);
    assert.ok(Date.now() - started < 8000, "open SSE streams must not hold the shutdown");
  } finally {
    await connected.client.close();
    await server.stop();
  }
});
