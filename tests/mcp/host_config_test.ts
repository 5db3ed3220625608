/**
 * The host configurations documented in `docs/mcp.md`, tried with the official MCP client: each
 * JSON snippet is read from the page, its variables expanded as the host expands them, and the
 * SDK's transport built from exactly its URL (on this test's port) and headers, for the
 * principal the page says to mint.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { startGateway } from "../gateway/_harness.ts";
import { callOk, connectWith, listen, toolNames } from "./_sdk.ts";
import { toolsFor } from "./_tools.ts";

const DOCUMENTED_ORIGIN = "http://127.0.0.1:7777";

interface ServerEntry {
  type?: string;
  url: string;
  headers: Record<string, string>;
}

/** Every fenced JSON block of the MCP page that configures the runtime's server. */
async function documentedEntries(): Promise<{ key: string; entry: ServerEntry }[]> {
  const page = await Deno.readTextFile(
    fileURLToPath(new URL("../../docs/mcp.md", import.meta.url)),
  );
  const blocks = [...page.matchAll(/```json\n([\s\S]*?)```/g)].map((match) => JSON.parse(match[1]));
  return blocks.flatMap((config) => {
    for (const key of ["mcpServers", "servers"]) {
      const entry = config[key]?.["automation-runtime"];
      if (entry !== undefined) return [{ key, entry }];
    }
    return [];
  });
}

/** Expands `${NAME}`, `${env:NAME}` and `${input:id}` as the hosts do. */
function expand(value: string, env: Record<string, string>, inputs: Record<string, string>) {
  return value.replace(/\$\{(?:(env|input):)?([A-Za-z0-9_-]+)\}/g, (_match, kind, name) => {
    const found = kind === "input" ? inputs[name] : env[name];
    assert.ok(found !== undefined, `unknown variable ${name}`);
    return found;
  });
}

Deno.test("mcp host configuration: each documented snippet connects the official client", async () => {
  const entries = await documentedEntries();
  assert.equal(entries.length, 3, "Claude Code, Cursor and VS Code snippets");
  const gateway = await startGateway();
  const listener = listen((request) => gateway.server.handler(request));
  try {
    // The principal the page says to mint for a host.
    const host = await gateway.issue(["session:read", "session:write"], {
      agentIds: [gateway.agentId],
      maxActiveRuns: 2,
    });
    const env = { AUTOMATION_RUNTIME_TOKEN: host.bearer };
    const inputs = { "automation-runtime-token": host.bearer };
    for (const { key, entry } of entries) {
      assert.ok(entry.url.startsWith(`${DOCUMENTED_ORIGIN}/`), entry.url);
      assert.ok(entry.type === undefined || entry.type === "http", key);
      const url = listener.url + entry.url.slice(DOCUMENTED_ORIGIN.length);
      const headers = Object.fromEntries(
        Object.entries(entry.headers).map(([name, value]) => [name, expand(value, env, inputs)]),
      );
      assert.doesNotMatch(JSON.stringify(entry), /art_/, "no bearer in the documented file");
      const connected = await connectWith(url, headers);
      try {
        assert.deepEqual(await toolNames(connected), toolsFor(["session:read", "session:write"]));
        const info = await callOk(connected, "runtime_info");
        assert.equal(info.principalId, host.principalId);
        assert.deepEqual(info.agentIds, [gateway.agentId]);
      } finally {
        await connected.close();
      }
    }
  } finally {
    await listener.close();
    await gateway.close();
  }
});
