/**
 * The one place the provider simulator touches a runtime's server API: it serves a fetch handler
 * on a socket with `Deno.serve` when it runs in Deno, and with `node:http` (loaded only then)
 * when it runs in Node. Everything else in `testing/` is web standards.
 *
 * Under Node a request body is read whole (at most `maxBodyBytes`, else 413) before the handler
 * runs; an answer's body is written as it comes, its headers first, so an event stream starts at
 * once. An answer body that errors cuts the connection (what a dropped stream looks like to a
 * client), and a client that goes away cancels the answer's body.
 *
 * @module
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";

/** A fetch-style handler. */
export type FetchHandler = (request: Request) => Promise<Response>;

/** A handler served on a socket. */
export interface Listening {
  /** The port bound (the one picked when 0 was asked for). */
  readonly port: number;
  /** Stops accepting connections, ends open ones and resolves once the server stopped. */
  close(): Promise<void>;
}

/** Options of {@linkcode listen}. */
export interface ListenOptions {
  /** Address to bind. */
  hostname: string;
  /** Port to bind; 0 picks a free one. */
  port: number;
  /** Largest request body read under Node, in bytes. */
  maxBodyBytes: number;
}

/** The part of Deno's namespace used here, read from `globalThis` (no Deno types needed). */
interface DenoServe {
  serve(
    options: {
      hostname: string;
      port: number;
      onListen(addr: { port: number }): void;
    },
    handler: FetchHandler,
  ): { shutdown(): Promise<void> };
}

/**
 * Serves `handler` on `hostname:port` and resolves once it listens.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listen } from "./_listen.ts";
 * const listening = await listen(() => Promise.resolve(new Response("hi")), {
 *   hostname: "127.0.0.1",
 *   port: 0,
 *   maxBodyBytes: 1024,
 * });
 * try {
 *   assert.equal(await (await fetch(`http://127.0.0.1:${listening.port}/`)).text(), "hi");
 * } finally {
 *   await listening.close();
 * }
 * ```
 */
export function listen(handler: FetchHandler, options: ListenOptions): Promise<Listening> {
  const deno = (globalThis as { Deno?: Partial<DenoServe> }).Deno;
  if (typeof deno?.serve === "function") return listenDeno(deno as DenoServe, handler, options);
  return listenNode(handler, options);
}

function listenDeno(
  deno: DenoServe,
  handler: FetchHandler,
  options: ListenOptions,
): Promise<Listening> {
  return new Promise((resolve, reject) => {
    try {
      const server = deno.serve({
        hostname: options.hostname,
        port: options.port,
        onListen: (addr) => resolve({ port: addr.port, close: () => server.shutdown() }),
      }, handler);
    } catch (error) {
      reject(error);
    }
  });
}

async function listenNode(handler: FetchHandler, options: ListenOptions): Promise<Listening> {
  const http = await import("node:http");
  const server: Server = http.createServer((request, response) => {
    respond(request, response, handler, options).catch(() => response.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : options.port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function respond(
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  handler: FetchHandler,
  options: ListenOptions,
): Promise<void> {
  const method = incoming.method ?? "GET";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of incoming as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > options.maxBodyBytes) {
      outgoing.writeHead(413, { "content-type": "text/plain" }).end("Request body too large");
      return;
    }
    chunks.push(chunk);
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (Array.isArray(value)) { for (const item of value) headers.append(name, item); }
    else if (value !== undefined) headers.set(name, value);
  }
  const closed = new AbortController();
  outgoing.on("close", () => closed.abort());
  const body = method === "GET" || method === "HEAD" ? undefined : concat(chunks, size);
  const host = headers.get("host") ?? `${options.hostname}:${options.port}`;
  const request = new Request(`http://${host}${incoming.url ?? "/"}`, {
    method,
    headers,
    body,
    signal: closed.signal,
  });
  const response = await handler(request);
  const head: Record<string, string | string[]> = {};
  for (const [name, value] of response.headers) {
    const before = head[name];
    head[name] = before === undefined
      ? value
      : Array.isArray(before)
      ? [...before, value]
      : [before, value];
  }
  outgoing.writeHead(response.status, head);
  if (response.body === null) {
    outgoing.end();
    return;
  }
  // An event stream may say nothing for a while: send the headers now.
  outgoing.flushHeaders();
  const reader = response.body.getReader();
  outgoing.on("close", () => reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!outgoing.write(value)) {
        await new Promise<void>((resolve) => {
          outgoing.once("drain", resolve);
          outgoing.once("close", resolve);
        });
      }
    }
    outgoing.end();
  } catch {
    // The body errored (a dropped stream): cut the connection mid-answer.
    outgoing.destroy();
  }
}

function concat(chunks: Uint8Array[], size: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
