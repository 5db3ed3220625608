/**
 * Raw HTTP helpers of the MCP tests: JSON-RPC messages, an `initialize` handshake, an SSE
 * reader that stops at the answer it waits for, and raw HTTP/1.1 for a `Host` that `fetch`
 * would rewrite.
 *
 * @module
 */
import assert from "node:assert/strict";

/** The newest MCP revision, the one these tests speak. */
export const PROTOCOL_VERSION = "2025-11-25";

/** A JSON-RPC request. */
export function rpc(id: number, method: string, params: Record<string, unknown> = {}) {
  return { jsonrpc: "2.0", id, method, params };
}

/** The `initialize` request. */
export function initializeMessage(protocolVersion = PROTOCOL_VERSION) {
  return rpc(0, "initialize", {
    protocolVersion,
    capabilities: {},
    clientInfo: { name: "raw-test", version: "1.0.0" },
  });
}

/** Options of {@linkcode mcpFetch}. */
export interface McpFetchOptions {
  /** Method (default POST). */
  method?: string;
  /** Bearer (`null`: no `Authorization`). */
  bearer: string | null;
  /** Session id to send. */
  sessionId?: string;
  /** Body: objects are JSON; strings and streams are sent as they are. */
  body?: unknown;
  /** Header overrides; `null` drops one. */
  headers?: Record<string, string | null>;
}

/** Where requests go: a base URL, or a server's handler called in process. */
export type Target = string | ((request: Request) => Promise<Response>);

/**
 * Sends one request to `/v1/mcp` with the headers an MCP client sends.
 *
 * @example
 * ```ts ignore
 * const response = await mcpFetch(url, { bearer, body: initializeMessage() });
 * ```
 */
export async function mcpFetch(target: Target, options: McpFetchOptions): Promise<Response> {
  const method = options.method ?? "POST";
  const headers = new Headers({
    accept: method === "GET" ? "text/event-stream" : "application/json, text/event-stream",
  });
  if (method === "POST") headers.set("content-type", "application/json");
  if (options.bearer !== null) headers.set("authorization", `Bearer ${options.bearer}`);
  if (options.sessionId !== undefined) {
    headers.set("mcp-session-id", options.sessionId);
    headers.set("mcp-protocol-version", PROTOCOL_VERSION);
  }
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (value === null) headers.delete(name);
    else headers.set(name, value);
  }
  const raw = options.body;
  const body = raw === undefined
    ? undefined
    : typeof raw === "string" || raw instanceof ReadableStream
    ? raw as BodyInit
    : JSON.stringify(raw);
  if (typeof target === "string") return await fetch(`${target}/v1/mcp`, { method, headers, body });
  return await target(new Request("http://127.0.0.1:7777/v1/mcp", { method, headers, body }));
}

/** One server-sent event. */
export interface SseEvent {
  /** `id:` field, or null. */
  id: string | null;
  /** `data:` field. */
  data: string;
}

/**
 * Reads SSE events from a response until `until` accepts one (or the stream ends), then
 * cancels the rest. Returns every event read.
 *
 * @example
 * ```ts ignore
 * const events = await readEvents(response, (event) => event.data.includes('"id":1'));
 * ```
 */
export async function readEvents(
  response: Response,
  until: (event: SseEvent) => boolean,
): Promise<SseEvent[]> {
  assert.equal(response.headers.get("content-type"), "text/event-stream");
  // Proxies such as nginx pass it on unbuffered (docs/deployment.md); the MCP SDK's transport sets
  // it, as the run event streams do.
  assert.equal(response.headers.get("x-accel-buffering"), "no");
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const events: SseEvent[] = [];
  let buffer = "";
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return events;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf("\n\n")) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event: SseEvent = { id: null, data: "" };
        let comment = true;
        for (const line of block.split("\n")) {
          if (line.startsWith("id:")) event.id = line.slice(3).trim();
          if (line.startsWith("data:")) event.data += line.slice(5).trim();
          if (!line.startsWith(":")) comment = false;
        }
        if (comment) continue;
        events.push(event);
        if (until(event)) return events;
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/**
 * Reads the JSON-RPC answer with `id` from an SSE or JSON response.
 *
 * @example
 * ```ts ignore
 * const message = await answerOf(response, 1);
 * ```
 */
// deno-lint-ignore no-explicit-any
export async function answerOf(response: Response, id: number): Promise<any> {
  if (response.headers.get("content-type") === "application/json") return await response.json();
  const events = await readEvents(response, (event) => {
    if (event.data === "") return false;
    return JSON.parse(event.data).id === id;
  });
  const last = events.at(-1);
  assert.ok(last !== undefined && last.data !== "", "no answer on the stream");
  return JSON.parse(last.data);
}

/**
 * Opens a session: `initialize`, then `notifications/initialized`. Returns the session id.
 *
 * @example
 * ```ts ignore
 * const sessionId = await openSession(server.url, server.bearer);
 * ```
 */
export async function openSession(target: Target, bearer: string): Promise<string> {
  const response = await mcpFetch(target, { bearer, body: initializeMessage() });
  assert.equal(response.status, 200);
  const sessionId = response.headers.get("mcp-session-id");
  assert.ok(sessionId !== null, "no session id");
  const answer = await answerOf(response, 0);
  assert.equal(answer.result.protocolVersion, PROTOCOL_VERSION);
  const initialized = await mcpFetch(target, {
    bearer,
    sessionId,
    body: { jsonrpc: "2.0", method: "notifications/initialized" },
  });
  assert.equal(initialized.status, 202);
  await initialized.body?.cancel();
  return sessionId;
}

/** A raw HTTP answer. */
export interface RawAnswer {
  /** Status code. */
  status: number;
  /** Header block as received. */
  head: string;
  /** Body text (not de-chunked). */
  body: string;
}

/**
 * Sends one HTTP/1.1 request exactly as given (the `Host` line included) and reads the answer
 * up to the connection's close.
 *
 * @example
 * ```ts ignore
 * const answer = await rawHttp(server.url, "POST /v1/mcp HTTP/1.1", [["host", "evil:1"]], "{}");
 * ```
 */
export async function rawHttp(
  base: string,
  requestLine: string,
  headers: readonly (readonly [string, string])[],
  body = "",
): Promise<RawAnswer> {
  const url = new URL(base);
  const connection = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
  try {
    const payload = new TextEncoder().encode(body);
    let head = `${requestLine}\r\nconnection: close\r\n`;
    for (const [name, value] of headers) head += `${name}: ${value}\r\n`;
    head += `content-length: ${payload.length}\r\n\r\n`;
    const bytes = new Uint8Array([...new TextEncoder().encode(head), ...payload]);
    let written = 0;
    while (written < bytes.length) written += await connection.write(bytes.subarray(written));
    let text = "";
    const decoder = new TextDecoder();
    const buffer = new Uint8Array(16_384);
    while (true) {
      const read = await connection.read(buffer);
      if (read === null) break;
      text += decoder.decode(buffer.subarray(0, read), { stream: true });
    }
    const split = text.indexOf("\r\n\r\n");
    const headBlock = text.slice(0, split);
    return {
      status: Number(headBlock.split(" ")[1]),
      head: headBlock,
      body: text.slice(split + 4),
    };
  } finally {
    try {
      connection.close();
    } catch {
      // Closed by the server already.
    }
  }
}
