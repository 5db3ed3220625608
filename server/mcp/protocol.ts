/**
 * The MCP protocol server of one session: the SDK's `Server` answering `initialize`, `ping`,
 * `logging/setLevel` (the `logging` capability is declared), `tools/list` and `tools/call`. The low-level `Server` is used rather than `McpServer` because
 * the tool list depends on the caller of each request, and because tool failures must carry
 * the runtime's error codes instead of the SDK's validation messages.
 *
 * The caller of each request reaches the handlers through the transport's `authInfo`; see
 * {@linkcode requestAuthInfo}.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/server/auth/types"
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { Server } from "@modelcontextprotocol/sdk/server";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import type { McpToolCall, McpToolset } from "./tools.ts";

/** Name and version the runtime reports in `initialize`. */
export const MCP_SERVER_INFO: Readonly<{ name: string; version: string }> = Object.freeze({
  name: "automation-runtime",
  version: "0.1.0",
});

const INSTRUCTIONS = "Automation runtime. runtime_info tells who you are and what you may do. " +
  "run_start starts a managed-agent run; run_events (with waitMs) follows it to its terminal " +
  "event; run_pending, run_confirm_tool and run_respond_custom_tool answer its tool requests; " +
  "holders of authority:admin can list, issue and revoke scoped principals. Tool errors carry " +
  'a JSON body {"error": {"code", "message", ...}} with the same codes as the HTTP API.';

const CALL_KEY = "automation-runtime/call";

/**
 * The `authInfo` handed to the transport for one request: the principal authenticated on it
 * (as client id and scopes) and the request's correlation id and deadline. The bearer itself
 * never travels past authentication, so `token` stays empty.
 */
export function requestAuthInfo(call: McpToolCall): AuthInfo {
  return {
    token: "",
    clientId: call.principal.principalId,
    scopes: [...call.principal.capabilities],
    expiresAt: Math.floor(call.principal.expiresAtMs / 1000),
    extra: { [CALL_KEY]: call },
  };
}

function callOf(authInfo: AuthInfo | undefined): McpToolCall {
  const call = authInfo?.extra?.[CALL_KEY];
  if (call === undefined) throw new McpError(ErrorCode.InvalidRequest, "Unauthenticated request");
  return call as McpToolCall;
}

/**
 * Creates the protocol server of one session over the runtime's tools.
 */
export function createProtocolServer(tools: McpToolset): Server {
  const server = new Server({ ...MCP_SERVER_INFO }, {
    capabilities: { tools: { listChanged: false }, logging: {} },
    instructions: INSTRUCTIONS,
  });
  server.setRequestHandler(ListToolsRequestSchema, (_request, extra) => ({
    tools: tools.list(callOf(extra.authInfo).principal),
  }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const call = callOf(extra.authInfo);
    if (!tools.has(request.params.name)) {
      throw new McpError(ErrorCode.InvalidParams, "Unknown tool");
    }
    return tools.call(request.params.name, request.params.arguments, {
      ...call,
      signal: extra.signal,
    });
  });
  return server;
}
