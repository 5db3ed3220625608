/**
 * The authority part of the store contract: a claim by another namespace retires the first for
 * good and moves its epoch, a revocation moves the epoch, the retention purges drop retired
 * principals and old namespaces only, and namespaces never see each other's records. Registered by `runStoreContract` in `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { SupersededNamespaceError } from "../../server/store/types.ts";
import { testSubscription } from "./_notification_contract.ts";
import { testTrustPolicy } from "./_trust_policy_contract.ts";
import {
  type ContractCase,
  DAY,
  freshClaim,
  randomHex,
  testPrincipal,
  testRun,
  type TwoNamespaceCase,
} from "./_fixtures.ts";

/** Registers the authority cases. */
export function runAuthorityContract(test: ContractCase, testTwo: TwoNamespaceCase): void {
  testTwo(
    "authority: a claim by another namespace retires the first, which cannot claim back",
    async (a, b) => {
      const now = Date.now();
      await a.authority.claim(now);
      assert.deepEqual(await a.authority.claim(now), { moved: null });
      assert.equal((await a.authority.readState()).current, true);
      const before = (await a.authority.readState()).epoch;
      const { moved: retired } = await b.authority.claim(now + 1);
      assert.equal((await b.authority.readState()).current, true);
      const after = await a.authority.readState();
      assert.equal(after.current, false);
      assert.ok(after.epoch > before, "the retired namespace's epoch moved forward");
      assert.equal(retired?.epoch, after.epoch);
      await assert.rejects(() => a.authority.claim(now + 2), SupersededNamespaceError);
      assert.equal((await a.authority.readState()).current, false);
      assert.equal((await b.authority.readState()).current, true);
    },
  );

  test("authority: a later bootstrap generation takes the store over; earlier ones and a second bearer of one generation are refused", async (store) => {
    const now = Date.now();
    const first = { generation: 1, digest: randomHex() };
    await store.authority.claim(now, first);
    await store.authority.claim(now, first);
    const held = await store.authority.readState();
    assert.equal(held.current, true);
    assert.equal(held.bootstrapGeneration, 1);
    const record = testPrincipal();
    assert.equal(await store.principals.create(record), "created");

    const second = { generation: 2, digest: randomHex() };
    const { moved } = await store.authority.claim(now + 1, second);
    const rotated = await store.authority.readState();
    assert.equal(rotated.current, true, "the namespace stays current");
    assert.equal(rotated.bootstrapGeneration, 2);
    assert.ok(rotated.epoch > held.epoch, "a rotation moves the epoch forward");
    assert.equal(moved?.epoch, rotated.epoch, "and says so, for the leases to acknowledge");
    assert.deepEqual(await store.principals.get(record.principalId), record, "principals stay");

    await assert.rejects(() => store.authority.claim(now + 2, first), SupersededNamespaceError);
    await assert.rejects(
      () => store.authority.claim(now + 2, { generation: 2, digest: randomHex() }),
      SupersededNamespaceError,
    );
    // A claim naming no bootstrap leaves the one the store holds.
    await store.authority.claim(now + 3);
    await store.authority.claim(now + 3, second);
    assert.equal((await store.authority.readState()).bootstrapGeneration, 2);
  });

  testTwo(
    "authority: a claim by another namespace brings its own bootstrap generation",
    async (a, b) => {
      const now = Date.now();
      await a.authority.claim(now, { generation: 5, digest: randomHex() });
      assert.equal((await a.authority.readState()).bootstrapGeneration, 5);
      await b.authority.claim(now + 1, { generation: 1, digest: randomHex() });
      assert.equal((await b.authority.readState()).bootstrapGeneration, 1);
      assert.equal((await a.authority.readState()).current, false);
    },
  );

  test("authority: a revocation moves the epoch; creations and repeated revocations do not", async (store) => {
    await store.authority.claim(Date.now());
    const record = testPrincipal();
    const first = await store.authority.readState();
    assert.equal((await store.authority.readState()).epoch, first.epoch);
    assert.equal(await store.principals.create(record), "created");
    assert.equal((await store.authority.readState()).epoch, first.epoch);
    assert.equal(await store.principals.revoke(record.principalId, record.createdAt), "revoked");
    const revoked = await store.authority.readState();
    assert.ok(revoked.epoch > first.epoch, "epochs grow as strings");
    assert.equal(revoked.epoch.length, 20);
    assert.equal(revoked.current, true);
    assert.equal(
      await store.principals.revoke(record.principalId, record.createdAt),
      "alreadyRevoked",
    );
    assert.equal(await store.principals.revoke(crypto.randomUUID(), record.createdAt), "notFound");
    assert.equal((await store.authority.readState()).epoch, revoked.epoch);
  });

  testTwo(
    "authority: purgeRetired keeps everything within retention, then drops retired principals and old namespaces only",
    async (old, current) => {
      const t0 = Date.now();
      const at = (ms: number) => new Date(t0 + ms).toISOString();
      const retentionMs = 30 * DAY;
      await old.authority.claim(t0);
      const oldRecord = testPrincipal();
      assert.equal(await old.principals.create(oldRecord), "created");
      const claim = {
        scope: randomHex(),
        requestDigest: randomHex(),
        now: t0,
        leaseMs: 100 * DAY,
        expiresAt: t0 + 100 * DAY,
      };
      assert.equal((await old.idempotency.claim(claim)).state, "claimed");
      const oldRun = testRun({ principalId: oldRecord.principalId });
      const slot = `reservation:${crypto.randomUUID()}`;
      const reserved = await old.runs.reserveSlot({
        principalId: oldRecord.principalId,
        slotId: slot,
        principalLimit: 8,
        serviceLimit: 1000,
        now: t0,
        leaseMs: 60_000,
      });
      assert.equal(reserved, "reserved");
      await old.runs.create(oldRun, slot);
      await old.audit.append({
        at: at(0),
        action: "run.started",
        actorId: oldRecord.principalId,
        runId: oldRun.runId,
        correlationId: crypto.randomUUID(),
        outcome: "ok",
      });
      const oldPolicy = testTrustPolicy();
      assert.equal(await old.trustPolicies.create(oldPolicy), "created");
      const oldSubscription = testSubscription(oldRecord.principalId);
      assert.equal(await old.notifications.createSubscription(oldSubscription, 5), true);
      await current.authority.claim(t0);

      const live = testPrincipal({ expiresAt: at(90 * DAY) });
      const revoked = testPrincipal({ expiresAt: at(90 * DAY) });
      const expired = testPrincipal({ createdAt: at(-2 * DAY), expiresAt: at(-DAY) });
      const revokedLater = testPrincipal({ expiresAt: at(90 * DAY) });
      for (const record of [live, revoked, expired, revokedLater]) {
        assert.equal(await current.principals.create(record), "created");
      }
      assert.equal(await current.principals.revoke(revoked.principalId, at(0)), "revoked");
      assert.equal(
        await current.principals.revoke(revokedLater.principalId, at(29 * DAY)),
        "revoked",
      );
      assert.equal((await current.idempotency.claim(claim)).state, "claimed");

      // The two retention purges, as the server's cleanup runs them.
      const purgeRetired = async (now: number) => ({
        principals: await current.principals.purgeRetired({ now, retentionMs }),
        namespaces: await current.authority.purgeRetired({ now, retentionMs }),
      });
      // Within the retention period nothing goes.
      assert.deepEqual(await purgeRetired(t0 + 10 * DAY), {
        principals: 0,
        namespaces: 0,
      });
      assert.equal((await current.principals.list()).length, 4);
      assert.deepEqual(await old.principals.get(oldRecord.principalId), oldRecord);

      const report = await purgeRetired(t0 + 31 * DAY);
      assert.equal(report.principals, 2);
      assert.ok(report.namespaces >= 1, "the old namespace was purged");
      const left = (await current.principals.list()).map((record) => record.principalId).sort();
      assert.deepEqual(left, [live.principalId, revokedLater.principalId].sort());
      assert.equal(await current.principals.findByDigest(revoked.bearerDigest), null);
      assert.equal(await current.principals.findByDigest(expired.bearerDigest), null);
      assert.deepEqual(await current.principals.findByDigest(live.bearerDigest), live);
      assert.deepEqual(
        await current.idempotency.claim({ ...claim, now: t0 + 31 * DAY }),
        { state: "inFlight" },
        "the current namespace's idempotency record stays",
      );
      assert.equal(await old.principals.get(oldRecord.principalId), null);
      assert.equal(await old.principals.findByDigest(oldRecord.bearerDigest), null);
      assert.deepEqual(await old.principals.list(), []);
      assert.equal(await old.runs.get(oldRun.runId), null, "the old namespace's run is gone");
      assert.deepEqual((await old.audit.list({ limit: 100 })).entries, [], "and its audit log");
      assert.equal(await old.trustPolicies.get(oldPolicy.name), null, "and its trust policies");
      assert.equal(
        await old.notifications.getSubscription(oldSubscription.subscriptionId),
        null,
        "and its notification subscriptions",
      );
      assert.equal(
        (await old.idempotency.claim({ ...claim, now: t0 + 31 * DAY, leaseMs: 1 })).state,
        "claimed",
        "the old namespace's idempotency record is gone",
      );
      // The retired mark outlives the purge: the old bootstrap still cannot claim the store.
      await assert.rejects(() => old.authority.claim(t0 + 31 * DAY), SupersededNamespaceError);
      assert.equal((await current.authority.readState()).current, true);
    },
  );

  testTwo("authority: namespaces never see each other's records", async (first, second) => {
    const record = testPrincipal();
    assert.equal(await first.principals.create(record), "created");
    assert.equal(await second.principals.get(record.principalId), null);
    assert.equal(await second.principals.findByDigest(record.bearerDigest), null);
    assert.deepEqual(await second.principals.list(), []);
    assert.equal(
      await second.principals.revoke(record.principalId, record.createdAt),
      "notFound",
    );
    assert.equal(await second.principals.create(record), "created");

    const now = Date.now();
    const params = freshClaim(now);
    assert.equal((await first.idempotency.claim(params)).state, "claimed");
    assert.equal((await second.idempotency.claim(params)).state, "claimed");
    assert.equal((await first.principals.get(record.principalId))?.revokedAt, null);
  });
}
