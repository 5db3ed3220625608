/**
 * The requests the MCP endpoint builds or rebuilds for a session's transport: the protocol
 * revision an `initialize` body asks for, the `initialize` a replica replays in process to adopt a
 * session opened elsewhere, and a request whose body was read already (for the body limit) handed
 * on to the transport. None of them leaves the process.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  isInitializeRequest,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";

const decoder = new TextDecoder();

/**
 * The protocol revision an `initialize` body asks for, as the SDK's server settles it: the
 * requested one when supported, else the latest. Null when the body is not an initialize
 * request (the transport then answers the error).
 */
export function negotiatedVersion(bytes: Uint8Array): string | null {
  let message: unknown;
  try {
    message = JSON.parse(decoder.decode(bytes));
  } catch {
    return null;
  }
  if (!isInitializeRequest(message)) return null;
  const requested = message.params.protocolVersion;
  return SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
}

/** The `initialize` request a replica replays to adopt a session opened elsewhere. */
export function initializeRequest(protocolVersion: string) {
  return {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: {
      protocolVersion,
      capabilities: {},
      clientInfo: { name: "automation-runtime/adopted-session", version: "0" },
    },
  };
}

/** An in-process POST to a session's transport; never sent over the network. */
export function internalPost(
  message: unknown,
  sessionId?: string,
  protocolVersion?: string,
): Request {
  const headers = new Headers({
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
  });
  if (sessionId !== undefined) headers.set("mcp-session-id", sessionId);
  if (protocolVersion !== undefined) headers.set("mcp-protocol-version", protocolVersion);
  return new Request("http://mcp.internal/v1/mcp", {
    method: "POST",
    headers,
    body: JSON.stringify(message),
  });
}

/** Copies a request with an already-read body, for the transport to parse. */
export function withBody(request: Request, bytes: Uint8Array): Request {
  const headers = new Headers(request.headers);
  headers.delete("content-length");
  headers.delete("transfer-encoding");
  const body = bytes as Uint8Array<ArrayBuffer>;
  return new Request(request.url, { method: request.method, headers, body });
}
