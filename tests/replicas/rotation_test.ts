/**
 * Bootstrap rotation across PostgreSQL replicas: once a replica restarted with a new bootstrap
 * has claimed the database, a replica still running with the old one refuses every bearer on its
 * next request (principals of the old namespace and its own old bootstrap), and the old
 * bootstrap cannot start a replica any more.
 */
import assert from "node:assert/strict";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import { createTestBootstrap, startServer } from "../support/server.ts";
import { issue, issueBody, type Replica, startReplicas, use } from "./_replicas.ts";

Deno.test({
  name:
    `replicas: after a rotation on A, B refuses old bearers at once; the old bootstrap cannot start${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    await using replicas = await startReplicas(db.url);
    const [a, b] = replicas.servers;
    const body = issueBody();
    const issued = await issue(a, replicas.admin, body);
    assert.equal(issued.status, 201);
    const bearer: string = issued.body.bearer;
    assert.equal((await use(b, bearer)).status, 200);
    assert.equal((await use(b, bearer)).status, 200);

    await a.server!.stop();
    const rotated = createTestBootstrap();
    await using restarted = await startServer({ bootstrap: rotated, args: ["--store", db.url] });
    const client = Deno.createHttpClient({});
    const newA: Replica = { url: restarted.url, client };
    try {
      for (const old of [bearer, replicas.admin]) {
        const refused = await use(b, old);
        assert.equal(refused.status, 401);
        assert.equal(refused.body.error.code, "authenticationFailed");
        assert.match(refused.body.error.message, /newer bootstrap/);
      }
      assert.equal((await use(newA, rotated.token)).status, 200);
      assert.equal((await use(newA, bearer)).status, 401);
      await assert.rejects(
        () =>
          startServer({
            bootstrap: { ...rotated, token: replicas.admin },
            args: ["--store", db.url],
            timeoutMs: 20_000,
          }),
        /replaced on the store/,
      );
    } finally {
      client.close();
    }
  },
});
