/**
 * The authority leases part of the store contract: a renewal records what its holder
 * acknowledges and returns the current state; dead records are skipped and deleted; a watcher
 * wakes on another handle's epoch move and acknowledging renewal; a claim moves the retired
 * namespace's epoch and lists its leases. How each backend orders a renewal against an epoch
 * move that overtakes its read is tested with that backend (`kv_test.ts`,
 * `postgres_races_test.ts`). Registered by `runStoreContract` in `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { FIRST_EPOCH, type Store } from "../../server/store/types.ts";
import { type ContractCase, testPrincipal, type TwoNamespaceCase } from "./_fixtures.ts";

/** Wall clock and a generous grace, for a list that should see every lease renewed just now. */
function listNow(): { now: number; graceMs: number } {
  return { now: Date.now(), graceMs: 60_000 };
}

function renewal(holder: string, epoch: string, leaseMs = 3_000) {
  return { holder, epoch, leaseMs, now: Date.now() };
}

/** Resolves once `listener` of a watch on `store` was called, or rejects after `ms`. */
function woken(store: Store, options: { namespace?: string } = {}, ms = 3_000) {
  const { promise, resolve, reject } = Promise.withResolvers<void>();
  const stop = store.leases.watch(resolve, options);
  const timer = setTimeout(() => reject(new Error(`no wake-up within ${ms} ms`)), ms);
  return {
    promise: promise.finally(() => {
      clearTimeout(timer);
      stop();
    }),
    // The watch may need a moment to be in place (a LISTEN, a KV watch's first reading).
    ready: new Promise((resolve) => setTimeout(resolve, 250)),
  };
}

/** Registers the leases cases. */
export function runLeaseContract(test: ContractCase, testTwo: TwoNamespaceCase): void {
  test("leases: a renewal records its epoch and returns the current state; release deletes it", async (store) => {
    const holder = crypto.randomUUID();
    assert.deepEqual(await store.leases.list(listNow()), []);
    const state = await store.leases.renew(renewal(holder, FIRST_EPOCH, 2_500));
    assert.deepEqual(state, await store.authority.readState());
    const [lease, ...rest] = await store.leases.list(listNow());
    assert.deepEqual(rest, []);
    assert.equal(lease.holder, holder);
    assert.equal(lease.epoch, FIRST_EPOCH);
    assert.equal(lease.leaseMs, 2_500);
    assert.equal(typeof lease.renewedAt, "number");
    // Renewed again under the epoch it answers under now: one record, the new epoch.
    await store.leases.renew(renewal(holder, state.epoch));
    assert.deepEqual((await store.leases.list(listNow())).map((l) => l.epoch), [state.epoch]);
    await store.leases.release(holder);
    assert.deepEqual(await store.leases.list(listNow()), []);
    await store.leases.release(holder);
  });

  test("leases: after a revocation a renewal returns the newer epoch, and records what it was given", async (store) => {
    const holder = crypto.randomUUID();
    const before = await store.leases.renew(renewal(holder, FIRST_EPOCH));
    const record = testPrincipal();
    assert.equal(await store.principals.create(record), "created");
    assert.equal(await store.principals.revoke(record.principalId, record.createdAt), "revoked");
    const moved = (await store.authority.readState()).epoch;
    assert.ok(moved > before.epoch, "epochs grow as strings");
    const after = await store.leases.renew(renewal(holder, before.epoch));
    assert.equal(after.epoch, moved);
    const [lease] = await store.leases.list(listNow());
    assert.equal(lease.epoch, before.epoch, "the record says what the holder had adopted");
    await store.leases.renew(renewal(holder, after.epoch));
    assert.equal((await store.leases.list(listNow()))[0].epoch, moved);
    await store.leases.release(holder);
  });

  test("leases: a record not renewed for its lease and the grace is dead: not listed, deleted", async (store) => {
    const dead = crypto.randomUUID();
    const live = crypto.randomUUID();
    await store.leases.renew(renewal(dead, FIRST_EPOCH, 1));
    await store.leases.renew(renewal(live, FIRST_EPOCH, 60_000));
    await new Promise((resolve) => setTimeout(resolve, 30));
    const strict = () => ({ now: Date.now(), graceMs: 0 });
    assert.deepEqual((await store.leases.list(strict())).map((l) => l.holder), [live]);
    // Gone for good: even a list with a long grace no longer finds it.
    assert.deepEqual((await store.leases.list(listNow())).map((l) => l.holder), [live]);
    await store.leases.renew(renewal(dead, FIRST_EPOCH, 1));
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(await store.leases.purge(strict()), 1);
    assert.equal(await store.leases.purge(strict()), 0);
    assert.deepEqual((await store.leases.list(listNow())).map((l) => l.holder), [live]);
    await store.leases.release(live);
  });

  test(
    "leases: a watcher wakes on another handle's revocation and acknowledging renewal",
    async (store, openTwin) => {
      const other = await openTwin();
      try {
        const record = testPrincipal();
        assert.equal(await other.principals.create(record), "created");
        const revoked = woken(store);
        await revoked.ready;
        assert.equal(
          await other.principals.revoke(record.principalId, record.createdAt),
          "revoked",
        );
        await revoked.promise;

        const holder = crypto.randomUUID();
        await other.leases.renew(renewal(holder, FIRST_EPOCH));
        const acknowledged = woken(store);
        await acknowledged.ready;
        await other.leases.renew(renewal(holder, (await other.authority.readState()).epoch));
        await acknowledged.promise;
        await other.leases.release(holder);
      } finally {
        await other.close();
      }
    },
  );

  testTwo(
    "leases: a claim retiring a namespace moves its epoch, wakes its watchers and lists its leases",
    async (a, b) => {
      const now = Date.now();
      // A store shared with the other cases may be claimed by another namespace already.
      await a.authority.claim(now);
      assert.deepEqual(await a.authority.claim(now), { moved: null }, "a claim of its own");
      const holder = crypto.randomUUID();
      const before = await a.leases.renew(renewal(holder, FIRST_EPOCH));
      const retiring = woken(a);
      await retiring.ready;
      const { moved: retired } = await b.authority.claim(now + 1);
      await retiring.promise;
      assert.ok(retired !== null);
      assert.ok(retired.epoch > before.epoch);
      const after = await a.authority.readState();
      assert.deepEqual(after, { current: false, epoch: retired.epoch, bootstrapGeneration: 0 });
      // The claimer lists the retired namespace's leases by name.
      const listed = await b.leases.list({ ...listNow(), namespace: retired.namespace });
      assert.deepEqual(listed.map((lease) => [lease.holder, lease.epoch]), [[
        holder,
        before.epoch,
      ]]);
      assert.deepEqual(await b.leases.list(listNow()), [], "not its own");
      const renewed = await a.leases.renew(renewal(holder, before.epoch));
      assert.equal(renewed.current, false);
      await a.leases.release(holder);
      assert.deepEqual(await b.leases.list({ ...listNow(), namespace: retired.namespace }), []);
    },
  );
}
