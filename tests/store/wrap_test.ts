/**
 * The store's one seam, `wrapStore`: every method of every part goes through it (and nothing
 * else a backend's part object holds), each wrapper built once; the metrics time store calls
 * through it under the operation names `/metrics` has always used.
 */
import assert from "node:assert/strict";
import { openKvStore, type Store, wrapStore } from "../../server/store/mod.ts";
import { measuredStore, RuntimeMetrics } from "../../server/metrics.ts";

/** Every method of every part, as the part interfaces declare them. */
const PART_METHODS: readonly string[] = [
  "principals.findByDigest",
  "principals.get",
  "principals.list",
  "principals.page",
  "principals.create",
  "principals.revoke",
  "principals.purgeRetired",
  "idempotency.claim",
  "idempotency.begin",
  "idempotency.complete",
  "idempotency.release",
  "idempotency.abandon",
  "idempotency.lookup",
  "idempotency.purgeExpired",
  "authority.claim",
  "authority.readState",
  "authority.purgeRetired",
  "leases.renew",
  "leases.release",
  "leases.list",
  "leases.purge",
  "leases.watch",
  "runs.reserveSlot",
  "runs.reserveRun",
  "runs.releaseSlot",
  "runs.countSlots",
  "runs.idleRuns",
  "runs.create",
  "runs.get",
  "runs.update",
  "runs.list",
  "runs.purgeEnded",
  "audit.append",
  "audit.list",
  "events.append",
  "events.appendBatch",
  "events.list",
  "events.listNative",
  "events.acquireLease",
  "events.releaseLease",
  "events.watch",
  "events.purge",
  "answers.claim",
  "answers.complete",
  "answers.release",
  "answers.get",
  "answers.list",
  "answers.recordWebhookDelivery",
  "answers.purge",
  "trustPolicies.create",
  "trustPolicies.get",
  "trustPolicies.page",
  "trustPolicies.delete",
  "trustPolicies.exchange",
  "trustPolicies.isTokenUsed",
  "trustPolicies.purgeTokenUses",
  "activity.append",
  "activity.list",
  "activity.listRun",
  "activity.head",
  "activity.watch",
  "activity.purge",
  "notifications.createSubscription",
  "notifications.getSubscription",
  "notifications.listSubscriptions",
  "notifications.updateSubscription",
  "notifications.recordOutcome",
  "notifications.deleteSubscription",
  "notifications.enqueue",
  "notifications.claimDue",
  "notifications.settle",
  "notifications.getDelivery",
  "notifications.listDeliveries",
  "notifications.redeliver",
  "notifications.readCursor",
  "notifications.advanceCursor",
  "notifications.purge",
  "spend.ledger",
  "spend.ledgers",
  "spend.release",
  "spend.settle",
  "spend.runHolds",
  "spend.openHolds",
  "spend.usage",
  "spend.purge",
];

Deno.test("wrapStore wraps every part method once, and only those; kind and close stay the store's", async () => {
  const store = await openKvStore({ path: ":memory:", namespace: "wrap-test" });
  const built: string[] = [];
  const calls: string[] = [];
  const wrapped = wrapStore(store, (part, method, call) => {
    built.push(`${part}.${method}`);
    return (...args) => {
      calls.push(`${part}.${method}`);
      return call(...args);
    };
  });
  assert.deepEqual([...built].sort(), [...PART_METHODS].sort());
  assert.equal(wrapped.kind, "kv");
  // Calls reach the store (the same records), each through its wrapper, nothing built again.
  const runId = `sesn_${crypto.randomUUID()}`;
  assert.equal(await wrapped.runs.get(runId), null);
  await wrapped.audit.append({
    at: new Date().toISOString(),
    action: "run.started",
    actorId: "a",
    runId,
    correlationId: "c",
    outcome: "ok",
  });
  assert.equal((await store.audit.list({ limit: 10 })).entries[0].runId, runId);
  assert.deepEqual(calls, ["runs.get", "audit.append"]);
  assert.equal(built.length, PART_METHODS.length);
  await wrapped.close();
  await assert.rejects(() => store.runs.get(runId), { name: "StoreUnavailableError" });
});

Deno.test("measuredStore times each call under the operation name /metrics has always used", async () => {
  const metrics = new RuntimeMetrics();
  const store: Store = measuredStore(
    await openKvStore({ path: ":memory:", namespace: "metrics-test" }),
    metrics,
  );
  await store.authority.readState();
  await store.principals.findByDigest("0".repeat(64));
  await store.idempotency.purgeExpired(Date.now());
  await store.runs.list({ limit: 1 });
  await store.leases.list({ now: Date.now(), graceMs: 0 });
  await store.close();
  // A call that fails is timed with outcome "error".
  await assert.rejects(() => store.runs.get("sesn_x"), { name: "StoreUnavailableError" });
  const text = await metrics.render();
  const count = (labels: string) =>
    Number(new RegExp(`_count\\{${labels}\\} (\\d+)`).exec(text)?.[1] ?? 0);
  for (
    const operation of [
      "readAuthorityState",
      "findPrincipalByDigest",
      "deleteExpired",
      "listAuthorityLeases",
    ]
  ) {
    assert.equal(count(`operation="${operation}",outcome="ok"`), 1, operation);
  }
  assert.equal(count('operation="listRuns",outcome="ok"'), 1);
  assert.equal(count('operation="getRun",outcome="error"'), 1);
});
