/**
 * Two real `serve` replicas on one PostgreSQL database: the same idempotency key sent to A and
 * B at the same moment creates one principal, and every answer carries the same bearer or says
 * the first is still in flight; one principal id sent with two keys is created once.
 */
import assert from "node:assert/strict";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import { issue, issueBody, list, startReplicas, use } from "./_replicas.ts";

Deno.test({
  name: `replicas: one idempotency key sent to A and B at once creates one principal${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    await using replicas = await startReplicas(db.url);
    const [a, b] = replicas.servers;
    const created: string[] = [];
    for (let round = 0; round < 10; round++) {
      const body = issueBody();
      const key = crypto.randomUUID();
      const answers = await Promise.all([
        issue(a, replicas.admin, body, key),
        issue(b, replicas.admin, body, key),
      ]);
      const statuses = answers.map((answer) => answer.status).sort();
      assert.ok(
        statuses[0] === 201 && (statuses[1] === 201 || statuses[1] === 409),
        `statuses ${statuses}`,
      );
      const ok = answers.filter((answer) => answer.status === 201);
      for (const answer of ok) assert.equal(answer.body.bearer, ok[0].body.bearer);
      for (const answer of answers.filter((answer) => answer.status === 409)) {
        assert.equal(answer.body.error.code, "idempotencyInFlight");
        assert.equal(answer.headers.get("retry-after"), "1");
      }
      // A retry on either replica replays the one creation.
      const replay = await issue(round % 2 ? a : b, replicas.admin, body, key);
      assert.equal(replay.status, 201);
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
      assert.equal(replay.body.bearer, ok[0].body.bearer);
      assert.equal((await use(round % 2 ? b : a, replay.body.bearer)).status, 200);
      created.push(body.principalId);
    }
    const listed = await list(a, replicas.admin);
    assert.deepEqual(
      listed.body.principals.map((p: { principalId: string }) => p.principalId).sort(),
      created.sort(),
    );
  },
});

Deno.test({
  name: `replicas: one principal id sent to A and B with two keys is created once${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    await using replicas = await startReplicas(db.url);
    const [a, b] = replicas.servers;
    for (let round = 0; round < 10; round++) {
      const body = issueBody();
      const answers = await Promise.all([
        issue(a, replicas.admin, body),
        issue(b, replicas.admin, body),
      ]);
      const statuses = answers.map((answer) => answer.status).sort();
      assert.deepEqual(statuses, [201, 409]);
      const loser = answers.find((answer) => answer.status === 409)!;
      assert.equal(loser.body.error.code, "principalExists");
      const winner = answers.find((answer) => answer.status === 201)!;
      assert.equal((await use(a, winner.body.bearer)).status, 200);
      assert.equal((await use(b, winner.body.bearer)).status, 200);
    }
    assert.equal((await list(b, replicas.admin)).body.principals.length, 10);
  },
});
