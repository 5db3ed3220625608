/**
 * Serving a runtime server over HTTP with `Deno.serve`, with a graceful shutdown that lets
 * requests in flight finish.
 *
 * @module
 */
import { defaultAllowedHosts } from "./mcp/origin.ts";
import { PROMETHEUS_CONTENT_TYPE, RuntimeMetrics } from "./metrics.ts";
import { createRuntimeServer, type RuntimeServer, type RuntimeServerOptions } from "./server.ts";

/** Options of {@linkcode serveRuntime}. */
export interface ServeRuntimeOptions extends RuntimeServerOptions {
  /** Address to bind (default `127.0.0.1`). */
  hostname?: string;
  /** Port to bind; 0 picks a free one (default 7777). */
  port?: number;
  /**
   * Port of the separate metrics listener answering `GET /metrics` (0 picks a free one); without
   * it there is no metrics listener and no metric is kept.
   */
  metricsPort?: number;
  /** Address of the metrics listener (default `127.0.0.1`). */
  metricsHostname?: string;
}

/** A runtime server listening on a socket. */
export interface RunningRuntime {
  /** The bound address. */
  readonly addr: Deno.NetAddr;
  /** Base URL, such as `http://127.0.0.1:7777`. */
  readonly url: string;
  /** The runtime server behind the socket. */
  readonly server: RuntimeServer;
  /** The metrics listener's address, when `metricsPort` was given. */
  readonly metricsAddr: Deno.NetAddr | null;
  /** Resolves once the listener has closed. */
  readonly finished: Promise<void>;
  /**
   * Lets requests in flight finish (new ones get 503 `shuttingDown` meanwhile), then closes the
   * listener, the MCP sessions and the server.
   */
  shutdown(): Promise<void>;
}

/**
 * Formats the base URL of a bound address (IPv6 in brackets).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatBaseUrl } from "./serve.ts";
 * assert.equal(formatBaseUrl({ transport: "tcp", hostname: "::1", port: 7777 }), "http://[::1]:7777");
 * ```
 */
export function formatBaseUrl(addr: Deno.NetAddr): string {
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  return `http://${host}:${addr.port}`;
}

/**
 * Creates a runtime server and serves it. The caller keeps ownership of the store.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deriveBootstrapCredential } from "./bootstrap/credential.ts";
 * import { createJsonLogger } from "./log.ts";
 * import { serveRuntime } from "./serve.ts";
 * import { openKvStore } from "./store/mod.ts";
 * const bootstrap = deriveBootstrapCredential({
 *   token: "art_" + crypto.randomUUID().replaceAll("-", "").repeat(2),
 *   principalId: crypto.randomUUID(),
 *   capabilities: ["authority:admin"],
 *   expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
 *   source: "environment",
 * });
 * const store = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
 * const logger = createJsonLogger({ write() {} });
 * const running = await serveRuntime({ bootstrap, store, port: 0, logger });
 * try {
 *   const response = await fetch(`${running.url}/healthz`);
 *   assert.deepEqual(await response.json(), { ok: true });
 * } finally {
 *   await running.shutdown();
 *   await store.close();
 * }
 * ```
 */
export async function serveRuntime(options: ServeRuntimeOptions): Promise<RunningRuntime> {
  const hostname = options.hostname ?? "127.0.0.1";
  const metrics = options.metricsPort === undefined
    ? options.metrics
    : options.metrics ?? new RuntimeMetrics();
  const port = options.port ?? 7777;
  // Without a public URL, deliveries link to the console at the bound address (a port known
  // before binding: not port 0).
  const publicUrl = options.publicUrl ??
    (port === 0 ? undefined : formatBaseUrl({ hostname, port, transport: "tcp" }));
  const server = createRuntimeServer({
    ...options,
    ...(publicUrl !== undefined ? { publicUrl } : {}),
    metrics,
    mcp: {
      ...options.mcp,
      allowedHosts: options.mcp?.allowedHosts ?? defaultAllowedHosts(hostname),
    },
  });
  const listening = Promise.withResolvers<Deno.NetAddr>();
  let http: Deno.HttpServer<Deno.NetAddr>;
  try {
    http = Deno.serve({
      hostname,
      port,
      onListen: (addr) => listening.resolve(addr),
    }, server.handler);
  } catch (error) {
    await server.close();
    throw error;
  }
  const addr = await listening.promise;
  let metricsHttp: Deno.HttpServer<Deno.NetAddr> | null = null;
  let metricsAddr: Deno.NetAddr | null = null;
  if (options.metricsPort !== undefined) {
    try {
      const bound = Promise.withResolvers<Deno.NetAddr>();
      metricsHttp = Deno.serve({
        hostname: options.metricsHostname ?? "127.0.0.1",
        port: options.metricsPort,
        onListen: (at) => bound.resolve(at),
      }, metricsHandler(metrics!));
      metricsAddr = await bound.promise;
    } catch (error) {
      await http.shutdown();
      await server.close();
      const reason = error instanceof Deno.errors.AddrInUse
        ? "the address is already in use"
        : (error as Error).message;
      throw new Error(
        `Cannot listen for metrics on ${options.metricsHostname ?? "127.0.0.1"}:` +
          `${options.metricsPort}: ${reason}`,
        { cause: error },
      );
    }
  }
  let stopping: Promise<void> | null = null;
  return {
    addr,
    metricsAddr,
    url: formatBaseUrl(addr),
    server,
    finished: http.finished,
    shutdown(): Promise<void> {
      stopping ??= (async () => {
        // Deno's own shutdown cuts request bodies still streaming in, so drain first.
        await server.drain();
        const draining = http.shutdown();
        // Open MCP SSE streams never finish on their own; end them so the drain can.
        await server.closeSessions();
        await draining;
        await metricsHttp?.shutdown();
        await server.close();
      })();
      return stopping;
    },
  };
}

/** Answers `GET /metrics` (and `HEAD`) of the metrics listener; anything else is 404 or 405. */
function metricsHandler(metrics: RuntimeMetrics): (request: Request) => Promise<Response> {
  return async (request) => {
    if (new URL(request.url).pathname !== "/metrics") {
      return new Response("Not found\n", { status: 404 });
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      return new Response("Method not allowed\n", { status: 405, headers: { allow: "GET, HEAD" } });
    }
    const text = await metrics.render();
    return new Response(request.method === "HEAD" ? null : text, {
      headers: { "content-type": PROMETHEUS_CONTENT_TYPE, "cache-control": "no-store" },
    });
  };
}
