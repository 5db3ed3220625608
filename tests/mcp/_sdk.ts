/**
 * The official MCP SDK client against a runtime listening on loopback: a listener in front of
 * a server's handler, and a client connected with a bearer (or built from a host
 * configuration's URL and headers).
 *
 * @module
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

// deno-lint-ignore no-explicit-any
type Json = any;

/** A loopback listener in front of a fetch-style handler. */
export interface Listener {
  /** Base URL, such as `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Stops listening. */
  close(): Promise<void>;
}

/** Serves `handler` on an ephemeral loopback port. */
export function listen(handler: (request: Request) => Promise<Response>): Listener {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    async close() {
      await server.shutdown();
    },
  };
}

/** An MCP client and its transport. */
export interface Connected {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
  /** Ends the session (DELETE) and closes the client. */
  close(): Promise<void>;
}

/** Connects the SDK client to `endpoint` with these request headers. */
export async function connectWith(
  endpoint: string,
  headers: Record<string, string>,
): Promise<Connected> {
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
    requestInit: { headers },
    reconnectionOptions: {
      maxRetries: 0,
      initialReconnectionDelay: 1000,
      maxReconnectionDelay: 1000,
      reconnectionDelayGrowFactor: 1,
    },
  });
  const client = new Client({ name: "sdk-test", version: "1.0.0" });
  await client.connect(transport);
  return {
    client,
    transport,
    async close() {
      try {
        await transport.terminateSession();
      } catch {
        // Already ended (its principal was revoked, or the server stopped).
      }
      await client.close();
    },
  };
}

/** Connects the SDK client to `${url}/v1/mcp` with a bearer. */
export function connect(url: string, bearer: string): Promise<Connected> {
  return connectWith(`${url}/v1/mcp`, { authorization: `Bearer ${bearer}` });
}

/** Names of the tools a client is listed. */
export async function toolNames(connected: Connected): Promise<string[]> {
  return (await connected.client.listTools()).tools.map((tool) => tool.name);
}

/** Calls a tool that must succeed; returns its structured result. */
export async function callOk(
  connected: Connected,
  name: string,
  args: Record<string, unknown> = {},
): Promise<Json> {
  const result = await connected.client.callTool({ name, arguments: args }) as CallToolResult;
  assert.equal(result.isError, undefined, `${name}: ${JSON.stringify(result)}`);
  const [content] = result.content;
  assert.equal(content.type, "text");
  assert.deepEqual(JSON.parse((content as { text: string }).text), result.structuredContent);
  return result.structuredContent;
}

/** Calls a tool that must fail; returns the error body's `error`. */
export async function callError(
  connected: Connected,
  name: string,
  args: Record<string, unknown> = {},
): Promise<Json> {
  const result = await connected.client.callTool({ name, arguments: args }) as CallToolResult;
  assert.equal(result.isError, true, `${name}: ${JSON.stringify(result)}`);
  assert.equal(result.structuredContent, undefined);
  const [content] = result.content;
  return JSON.parse((content as { text: string }).text).error;
}
