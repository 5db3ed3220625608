/**
 * The route table of a server with default options, for writing and checking the committed
 * document without a running service: an in-memory store and a throwaway bootstrap, closed
 * before it returns.
 *
 * @module
 */
import { deriveBootstrapCredential } from "../bootstrap/credential.ts";
import { createJsonLogger } from "../log.ts";
import type { RouteDefinition } from "../router.ts";
import { loadBodySchemas } from "../schemas/lazy.ts";
import { createRuntimeServer } from "../server.ts";
import { openKvStore } from "../store/mod.ts";

/**
 * The routes a server with default options has.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultRouteTable } from "./table.ts";
 * const routes = await defaultRouteTable();
 * assert.ok(routes.some((route) => route.path === "/openapi.json"));
 * ```
 */
export async function defaultRouteTable(): Promise<readonly RouteDefinition[]> {
  const bootstrap = deriveBootstrapCredential({
    token: "art_" + crypto.randomUUID().replaceAll("-", "").repeat(2),
    principalId: crypto.randomUUID(),
    capabilities: ["authority:admin"],
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    source: "environment",
  });
  const store = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
  // A provider and a webhook secret, both throwaway, so the run and webhook routes exist; the
  // document describes routes only, never settings.
  const server = createRuntimeServer({
    bootstrap,
    store,
    logger: createJsonLogger({ write() {} }),
    provider: {
      apiKey: "unused",
      webhookSecrets: ["whsec_" + btoa(crypto.randomUUID())],
    },
  });
  try {
    await loadBodySchemas(server.routes);
    return server.routes;
  } finally {
    await server.close();
    await store.close();
  }
}
