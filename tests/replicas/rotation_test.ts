/**
 * Bootstrap rotation across PostgreSQL replicas. A new credential (`init --force`): once a
 * replica restarted with it has claimed the database, a replica still running with the old one
 * refuses every bearer on its next request (principals of the old namespace and its own old
 * bootstrap), and the old bootstrap cannot start a replica any more. A rotated bearer
 * (`init --rotate`: the same authority key, the next generation): the old bootstrap bearer is
 * refused on every replica, the issued principals stay valid everywhere.
 */
import assert from "node:assert/strict";
import { rotateBootstrapValues } from "../../server/bootstrap/variables.ts";
import type { Capability } from "../../server/store/types.ts";
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

Deno.test({
  name:
    `replicas: after --rotate on A, B refuses the old bootstrap bearer only; issued principals and replays stay${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    // A bootstrap in the environment, of the four variables only (made before rotation existed):
    // its rotation writes down the authority key its bearer derived.
    const old = createTestBootstrap();
    await using replicas = await startReplicas(db.url, { bootstrap: old });
    const [a, b] = replicas.servers;
    const body = issueBody();
    const issued = await issue(a, old.token, body, "pg-rotate-1");
    assert.equal(issued.status, 201);
    const bearer: string = issued.body.bearer;

    const next = rotateBootstrapValues(
      { ...old, capabilities: old.capabilities as Capability[], generation: 0 },
      { ttlDays: 10 },
    );
    await a.server!.stop();
    await using restarted = await startServer({
      bootstrap: { ...next, capabilities: next.capabilities },
      args: ["--store", db.url],
      env: {
        AUTOMATION_RUNTIME_BOOTSTRAP_AUTHORITY_KEY: next.authorityKey!,
        AUTOMATION_RUNTIME_BOOTSTRAP_GENERATION: String(next.generation),
      },
    });
    const client = Deno.createHttpClient({});
    const newA: Replica = { url: restarted.url, client };
    try {
      const refused = await use(b, old.token);
      assert.equal(refused.status, 401);
      assert.match(refused.body.error.message, /rotated away/);
      assert.equal((await use(b, bearer)).status, 200, "B keeps the issued principal");
      assert.equal((await use(newA, bearer)).status, 200, "so does the new A");
      assert.equal((await use(newA, next.token)).status, 200);
      assert.equal((await use(newA, old.token)).status, 401);
      const replayed = await issue(newA, next.token, body, "pg-rotate-1");
      assert.equal(replayed.status, 201);
      assert.equal(replayed.body.bearer, bearer, "a replay derives the same bearer");
      await assert.rejects(
        () => startServer({ bootstrap: old, args: ["--store", db.url], timeoutMs: 20_000 }),
        /rotated away on the store/,
      );
    } finally {
      client.close();
    }
  },
});
