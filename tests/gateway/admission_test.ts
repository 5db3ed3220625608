/**
 * Run admission under contention: many starts at once over several principals, through two
 * replicas sharing one Deno KV file, never answer 503 for the store's contention, and the
 * service's and each principal's active-run limits hold exactly (issue 34, item 9).
 */
import assert from "node:assert/strict";
import { openKvStore } from "../../server/store/kv/mod.ts";
import { type Gateway, startGateway } from "./_harness.ts";

/** Two replicas of one gateway over one KV file in a fresh directory. */
async function twoReplicas(
  maxActiveRuns: number,
): Promise<{ a: Gateway; b: Gateway; close(): Promise<void> }> {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/store.kv`;
  const a = await startGateway({
    maxActiveRuns,
    store: (namespace) => openKvStore({ path, namespace }),
  });
  const b = await startGateway({
    replicaOf: a,
    maxActiveRuns,
    store: (namespace) => openKvStore({ path, namespace }),
  });
  return {
    a,
    b,
    async close() {
      await b.close();
      await a.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** 120 starts at once, alternating replicas, principal `i % 10` for start `i`. */
function startAll(
  a: Gateway,
  b: Gateway,
  principals: readonly { bearer: string }[],
): ReturnType<Gateway["request"]>[] {
  return Array.from({ length: 120 }, (_, i) =>
    (i % 2 === 0 ? a : b).request("POST", "/v1/runs", {
      bearer: principals[i % principals.length].bearer,
      body: { input: `start ${i}` },
    }));
}

Deno.test("admission: 120 concurrent starts over 10 principals while runs end: never 503", async () => {
  const { a, b, close } = await twoReplicas(1000);
  try {
    const principals: { bearer: string; principalId: string }[] = [];
    // The default policy: 8 active runs each. The fake's turns end at once, so the runs' tails
    // write their ends (and free their slots) while the other starts reserve theirs.
    for (let i = 0; i < 10; i++) principals.push(await a.issue(["session:read", "session:write"]));
    const answers = await Promise.all(startAll(a, b, principals));
    assert.deepEqual(
      answers.filter((answer) => answer.status !== 201 && answer.status !== 429).map((answer) =>
        answer.text
      ),
      [],
      "only admissions and quota refusals, never a 503 for contention",
    );
    for (const answer of answers.filter((answer) => answer.status === 429)) {
      assert.equal(answer.json.error.code, "runQuotaExceeded");
    }
  } finally {
    await close();
  }
});

Deno.test("admission: 120 concurrent starts on two replicas admit exactly the service's limit", async () => {
  const serviceLimit = 100;
  const principalLimit = 12;
  const { a, b, close } = await twoReplicas(serviceLimit);
  // Every run lasts: each admitted start keeps its slot for the whole test.
  a.holdTurns(true);
  try {
    const principals: { bearer: string; principalId: string }[] = [];
    for (let i = 0; i < 10; i++) {
      principals.push(
        await a.issue(["session:read", "session:write"], { maxActiveRuns: principalLimit }),
      );
    }
    const answers = await Promise.all(startAll(a, b, principals));
    const statuses = answers.map((answer) => answer.status);
    assert.deepEqual(
      answers.filter((answer) => answer.status !== 201 && answer.status !== 429).map((answer) =>
        answer.text
      ),
      [],
      "only admissions and quota refusals",
    );
    const admitted = answers.filter((answer) => answer.status === 201);
    // Twelve each would be 120: the service's limit binds, exactly.
    assert.equal(admitted.length, serviceLimit, `statuses: ${statuses.join(",")}`);
    for (const principal of principals) {
      const own = admitted.filter((answer) => answer.json.principalId === principal.principalId);
      assert.ok(own.length <= principalLimit, `${own.length} runs for one principal`);
    }
    assert.equal(await a.store.runs.countSlots(null, Date.now()), serviceLimit);
    for (const answer of answers.filter((answer) => answer.status === 429)) {
      assert.equal(answer.json.error.code, "runQuotaExceeded");
    }
  } finally {
    await close();
  }
});
