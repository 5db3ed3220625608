/**
 * A real runtime service on loopback whose clock (its `now` option) is off the wall clock by a
 * given offset, recording the status of every answer: for the clock-skew tests of the SDK and the
 * command line.
 *
 * @module
 */
import { deriveBootstrapCredential } from "../../server/bootstrap/credential.ts";
import { createJsonLogger } from "../../server/log.ts";
import { createRuntimeServer } from "../../server/server.ts";
import { openKvStore } from "../../server/store/mod.ts";

/** One answer the service gave. */
export interface SeenAnswer {
  /** HTTP status. */
  status: number;
  /** Request method. */
  method: string;
  /** Request path. */
  path: string;
  /** The request's `x-deadline`. */
  deadline: string | null;
}

/** A running skewed service; {@linkcode SkewedService.close} stops it. */
export interface SkewedService {
  /** Base URL. */
  readonly url: string;
  /** The bootstrap bearer (capabilities `session:read`, `authority:admin`). */
  readonly token: string;
  /** The answers so far, in order. */
  readonly seen: SeenAnswer[];
  /** Stops the listener and closes the store. */
  close(): Promise<void>;
}

/**
 * Starts a service whose clock is `offsetMs` ahead of the wall clock (behind when negative).
 *
 * @example
 * ```ts ignore
 * const service = await startSkewedService(90_000);
 * try { ... } finally { await service.close(); }
 * ```
 */
export async function startSkewedService(offsetMs: number): Promise<SkewedService> {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const token = `art_${
    btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
  }`;
  const now = () => Date.now() + offsetMs;
  const bootstrap = deriveBootstrapCredential({
    token,
    principalId: crypto.randomUUID(),
    capabilities: ["session:read", "authority:admin"],
    expiresAt: new Date(now() + 86_400_000).toISOString(),
    source: "environment",
  });
  const store = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
  const server = createRuntimeServer({
    bootstrap,
    store,
    now,
    logger: createJsonLogger({ write() {} }),
  });
  const seen: SeenAnswer[] = [];
  const listening = Promise.withResolvers<Deno.NetAddr>();
  const http = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: (addr) => listening.resolve(addr) },
    async (request) => {
      const response = await server.handler(request);
      seen.push({
        status: response.status,
        method: request.method,
        path: new URL(request.url).pathname,
        deadline: request.headers.get("x-deadline"),
      });
      return response;
    },
  );
  const addr = await listening.promise;
  return {
    url: `http://127.0.0.1:${addr.port}`,
    token,
    seen,
    async close() {
      await http.shutdown();
      await server.close();
      await store.close();
    },
  };
}
