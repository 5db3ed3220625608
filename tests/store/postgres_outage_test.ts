/**
 * PostgreSQL store failures: an unreachable or refusing database fails the open with one line
 * that never holds the URL or its password, and an outage while open surfaces as
 * `StoreUnavailableError` until the database is back, when the pool recovers by itself.
 */
import assert from "node:assert/strict";
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import { StoreUnavailableError } from "../../server/store/types.ts";
import {
  createTestDatabase,
  ignoreClusterTests,
  ignorePostgresTests,
  skipNote,
  startPostgresCluster,
} from "../support/postgres.ts";
import { testPrincipal } from "./contract.ts";

const PASSWORD = "pw-Zq8xK2-not-for-logs";

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

function assertSafe(error: unknown, url: string): asserts error is Error {
  assert.ok(error instanceof Error);
  assert.ok(!error.message.includes(PASSWORD), error.message);
  assert.ok(!error.message.includes(url), error.message);
  assert.ok(!error.message.includes("\n"), error.message);
  assert.ok(!String(error.stack).includes(PASSWORD));
}

Deno.test("postgres: an unreachable database fails the open with a clear line, no URL", async () => {
  const url = `postgres://app:${PASSWORD}@127.0.0.1:${freePort()}/app`;
  const started = performance.now();
  const error = await openPostgresStore({ url, namespace: "a".repeat(32) }).then(
    () => assert.fail("opened"),
    (error: unknown) => error,
  );
  assertSafe(error, url);
  assert.ok(error instanceof StoreUnavailableError);
  assert.equal(error.code, "storeUnavailable");
  assert.equal(error.message, "PostgreSQL is unreachable: connection refused (ECONNREFUSED)");
  assert.ok(performance.now() - started < 10_000);
});

Deno.test("postgres: a malformed URL is refused without echoing it", async () => {
  for (const url of [`postgres://app:${PASSWORD}@[::1/app`, `mysql://app:${PASSWORD}@h/app`]) {
    const error = await openPostgresStore({ url, namespace: "a".repeat(32) }).then(
      () => assert.fail("opened"),
      (error: unknown) => error,
    );
    assertSafe(error, url);
    assert.equal((error as { code?: string }).code, "invalidStoreUrl");
    assert.match(error.message, /^Invalid PostgreSQL store URL/);
  }
});

Deno.test({
  name: `postgres: a missing database fails the open with the server's reason${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const url = new URL(db.url);
    url.password = PASSWORD;
    url.pathname = `/${db.name}_missing`;
    const error = await openPostgresStore({ url: url.href, namespace: "a".repeat(32) }).then(
      () => assert.fail("opened"),
      (error: unknown) => error,
    );
    assertSafe(error, url.href);
    assert.ok(error instanceof StoreUnavailableError);
    assert.match(error.message, /^PostgreSQL error at start: database does not exist: .*3D000/);
  },
});

Deno.test({
  name: `postgres: an outage gives StoreUnavailableError, then recovers with data intact${
    skipNote({ cluster: true })
  }`,
  ignore: ignoreClusterTests(),
  async fn() {
    await using cluster = await startPostgresCluster();
    const store = await openPostgresStore({ url: cluster.url, namespace: "a".repeat(32) });
    try {
      const principal = testPrincipal();
      assert.equal(await store.principals.create(principal), "created");
      await cluster.stop();
      for (let i = 0; i < 3; i++) {
        const error = await store.principals.findByDigest(principal.bearerDigest).then(
          () => assert.fail("read during the outage"),
          (error: unknown) => error,
        );
        assert.ok(error instanceof StoreUnavailableError, String(error));
        assertSafe(error, cluster.url);
      }
      await cluster.start();
      assert.deepEqual(await store.principals.findByDigest(principal.bearerDigest), principal);
    } finally {
      await store.close();
    }
  },
});
