/**
 * Two real `serve` replicas on one PostgreSQL database take 200 mixed requests (issue, use,
 * revoke, list), spread over both, 16 at a time. Nothing acknowledged is lost: afterwards both
 * replicas list exactly the principals that got 201, the revoked ones are refused everywhere and
 * every other bearer works everywhere.
 */
import assert from "node:assert/strict";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import { issue, issueBody, list, type Replica, revoke, startReplicas, use } from "./_replicas.ts";

type Operation = "issue" | "use" | "revoke" | "list";

const PLAN: readonly Operation[] = [
  ...Array<Operation>(80).fill("issue"),
  ...Array<Operation>(80).fill("use"),
  ...Array<Operation>(20).fill("revoke"),
  ...Array<Operation>(20).fill("list"),
];

function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}

Deno.test({
  name: `replicas: 200 mixed requests over two replicas lose nothing${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    await using replicas = await startReplicas(db.url);
    const servers = replicas.servers;
    const admin = replicas.admin;
    const live = new Map<string, string>();
    const revoking = new Set<string>();
    const revoked = new Map<string, string>();
    // The first 16 (one per worker) are issues, so that uses and revokes soon have targets.
    const queue = [...PLAN.slice(0, 16), ...shuffled(PLAN.slice(16))];
    let served = 0;

    /** Picks a live principal; one picked for revocation is marked at once, so never twice. */
    async function pick(forRevoke: boolean): Promise<[string, string]> {
      for (let waited = 0; waited < 10_000; waited += 10) {
        const candidates = [...live].filter(([id]) => !revoking.has(id));
        if (candidates.length > 0) {
          const picked = candidates[Math.floor(Math.random() * candidates.length)];
          if (forRevoke) revoking.add(picked[0]);
          return picked;
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error("No live principal to use or revoke");
    }

    async function perform(operation: Operation, server: Replica): Promise<void> {
      served++;
      if (operation === "list") {
        const answer = await list(server, admin);
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        return;
      }
      if (operation === "issue") {
        const body = issueBody();
        const answer = await issue(server, admin, body);
        assert.equal(answer.status, 201, JSON.stringify(answer.body));
        live.set(body.principalId, answer.body.bearer);
        return;
      }
      const [principalId, bearer] = await pick(operation === "revoke");
      if (operation === "use") {
        const answer = await use(server, bearer);
        if (answer.status === 401) {
          assert.ok(revoking.has(principalId), "a live bearer was refused");
        } else {
          assert.equal(answer.status, 200, JSON.stringify(answer.body));
          assert.equal(answer.body.principalId, principalId);
        }
        return;
      }
      const answer = await revoke(server, admin, principalId);
      assert.equal(answer.status, 204, JSON.stringify(answer.body));
      revoked.set(principalId, bearer);
    }

    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < queue.length) {
        const index = next++;
        await perform(queue[index], servers[index % servers.length]);
      }
    }));
    assert.equal(served, 200);
    assert.equal(revoked.size, 20);

    for (const server of servers) {
      const listed = await list(server, admin);
      assert.equal(listed.status, 200);
      const byId = new Map<string, { revokedAt?: string }>(
        listed.body.principals.map((p: { principalId: string }) => [p.principalId, p]),
      );
      assert.deepEqual([...byId.keys()].sort(), [...live.keys()].sort());
      for (const [principalId, bearer] of live) {
        const gone = revoked.has(principalId);
        assert.equal(typeof byId.get(principalId)?.revokedAt, gone ? "string" : "undefined");
        assert.equal((await use(server, bearer)).status, gone ? 401 : 200);
      }
    }
  },
});
