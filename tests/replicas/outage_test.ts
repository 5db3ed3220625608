/**
 * Two real `serve` replicas on a private PostgreSQL cluster that is stopped and started while
 * they serve, under a steady stream of issues: during the outage requests get 503
 * `storeUnavailable` JSON (an authenticated read of a cached principal once the replica's
 * authority lease, which it cannot renew, has lapsed); afterwards both replicas recover by
 * themselves, and every principal acknowledged with 201 (before or around the outage) still
 * works on both.
 */
import assert from "node:assert/strict";
import {
  ignoreClusterTests,
  skipNote,
  startPostgresCluster,
  type StopMode,
} from "../support/postgres.ts";
import {
  type Answer,
  assertNotLogged,
  issue,
  issueBody,
  list,
  listAll,
  recentTrouble,
  type Replica,
  startReplicas,
  use,
} from "./_replicas.ts";

function assertUnavailable(answer: Answer): void {
  assert.equal(answer.status, 503, JSON.stringify(answer.body));
  assert.equal(answer.headers.get("content-type")?.startsWith("application/json"), true);
  assert.equal(answer.body.error.code, "storeUnavailable");
  assert.equal(typeof answer.body.error.message, "string");
  assert.equal(typeof answer.body.error.correlationId, "string");
}

async function waitUntil(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

Deno.test({
  name: `replicas: a database restart gives 503s, then full recovery, nothing acknowledged lost${
    skipNote({ cluster: true })
  }`,
  ignore: ignoreClusterTests(),
  async fn() {
    await using cluster = await startPostgresCluster();
    await using replicas = await startReplicas(cluster.url);
    const servers = replicas.servers;
    const admin = replicas.admin;
    const acknowledged = new Map<string, string>();
    const seen = new Map<number, number>();

    // A steady stream of issues on both replicas for the whole test.
    let streaming = true;
    async function stream(server: Replica): Promise<void> {
      while (streaming) {
        const body = issueBody();
        const answer = await issue(server, admin, body);
        seen.set(answer.status, (seen.get(answer.status) ?? 0) + 1);
        if (answer.status === 201) acknowledged.set(body.principalId, answer.body.bearer);
        else assertUnavailable(answer);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
    // Settled into a value at once, so a failing stream is reported by the test, not as an
    // unhandled rejection.
    const streams = Promise.all(servers.map(stream)).then(() => null, (error: unknown) => error);

    async function scenario(): Promise<void> {
      await waitUntil(() => Promise.resolve(acknowledged.size >= 150), "150 principals exist");
      const [someId, someBearer] = [...acknowledged][0];
      for (const server of servers) assert.equal((await use(server, someBearer)).status, 200);

      for (const mode of ["fast", "immediate"] as StopMode[]) {
        await cluster.stop({ mode });
        for (const server of servers) {
          // No revocation can be committed while the database is down, so a replica may answer
          // from memory until its authority lease (3 s by default) lapses, and no longer.
          const lapsed = Date.now() + 3_000 + 1_000;
          let read = await use(server, someBearer);
          while (read.status === 200 && Date.now() < lapsed) {
            await new Promise((resolve) => setTimeout(resolve, 100));
            read = await use(server, someBearer);
          }
          assertUnavailable(read);
          assertUnavailable(await list(server, admin));
          assertUnavailable(await issue(server, admin, issueBody()));
          const health = await fetch(`${server.url}/healthz`, { client: server.client });
          await health.body?.cancel();
          assert.equal(health.status, 200);
        }
        await cluster.start();
        for (const server of servers) {
          await waitUntil(
            async () => (await use(server, someBearer)).status === 200,
            `${server.url} recovers`,
          );
        }
        const before = acknowledged.size;
        await waitUntil(
          () => Promise.resolve(acknowledged.size >= before + 4),
          "issues succeed again",
        );
      }
      assert.ok(acknowledged.has(someId));
    }
    const outcome = await scenario().then(() => null, (error: unknown) => error);
    streaming = false;
    const failure = await streams;
    if (failure !== null) {
      throw new Error(`A replica stopped answering:\n${recentTrouble(servers)}`, {
        cause: failure,
      });
    }
    if (outcome !== null) throw outcome;

    assert.ok((seen.get(503) ?? 0) > 0, "the stream never met the outage");
    assertNotLogged(servers, "postgres://");
    assertNotLogged(servers, `:${cluster.port}`);
    for (const server of servers) {
      // Every page: the stream may have issued more than one page's worth.
      const ids = new Set((await listAll(server, admin)).map((p) => p.principalId));
      for (const [principalId, bearer] of acknowledged) {
        assert.ok(ids.has(principalId), `acknowledged principal ${principalId} was lost`);
        assert.equal((await use(server, bearer)).status, 200);
      }
    }
  },
});
