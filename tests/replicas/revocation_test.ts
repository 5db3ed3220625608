/**
 * Two real `serve` replicas on one PostgreSQL database: a principal issued on A works on B, and
 * once A has answered 204 to its revocation, the very next request on B gets 401, even though B
 * had just authenticated that bearer.
 */
import assert from "node:assert/strict";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import {
  assertNotLogged,
  issue,
  issueBody,
  list,
  revoke,
  startReplicas,
  use,
} from "./_replicas.ts";

Deno.test({
  name: `replicas: issued on A works on B; revoked on A is refused on B at once${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    await using replicas = await startReplicas(db.url);
    const [a, b] = replicas.servers;
    for (let round = 0; round < 5; round++) {
      const body = issueBody();
      const issued = await issue(a, replicas.admin, body);
      assert.equal(issued.status, 201);
      const bearer: string = issued.body.bearer;
      assert.match(bearer, /^art_[A-Za-z0-9_-]{43}$/);

      const onB = await use(b, bearer);
      assert.equal(onB.status, 200);
      assert.equal(onB.body.principalId, body.principalId);
      assert.equal((await use(a, bearer)).status, 200);

      assert.equal((await revoke(a, replicas.admin, body.principalId)).status, 204);
      const refused = await use(b, bearer);
      assert.equal(refused.status, 401);
      assert.equal(refused.body.error.code, "authenticationFailed");
      assert.equal(refused.headers.get("www-authenticate")?.startsWith("Bearer"), true);
      assert.equal((await use(a, bearer)).status, 401);
      assertNotLogged(replicas.servers, bearer);
    }
    assertNotLogged(replicas.servers, replicas.admin);
    const listed = await list(b, replicas.admin);
    assert.equal(listed.status, 200);
    assert.equal(listed.body.principals.length, 5);
    for (const principal of listed.body.principals) {
      assert.equal(typeof principal.revokedAt, "string");
    }
  },
});

Deno.test({
  name:
    `replicas: revoking on B what A issued is immediate on A; a second revoke is 204${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    await using replicas = await startReplicas(db.url);
    const [a, b] = replicas.servers;
    const body = issueBody();
    const issued = await issue(a, replicas.admin, body);
    assert.equal(issued.status, 201);
    assert.equal((await use(a, issued.body.bearer)).status, 200);
    assert.equal((await revoke(b, replicas.admin, body.principalId)).status, 204);
    assert.equal((await use(a, issued.body.bearer)).status, 401);
    assert.equal((await revoke(a, replicas.admin, body.principalId)).status, 204);
    const unknown = await revoke(a, replicas.admin, crypto.randomUUID());
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, "notFound");
  },
});
