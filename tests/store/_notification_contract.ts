/**
 * The notifications part of the store contract: subscriptions in a principal's slots (never more
 * than the limit, also when two handles create at once), compare-and-set updates, the failure
 * count that disables once, deletion with the deliveries; deliveries created once per id and
 * bounded per subscription, leased to one sender at a time (also when two handles claim at once),
 * fairly (one in flight per subscription, a bound per owner, across handles), settled only by
 * their sender, listed newest first, redelivered; the dispatch cursor; the purge.
 * Registered by `runStoreContract` in `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Store, StoredDelivery, StoredSubscription } from "../../server/store/types.ts";
import { type ContractCase, twinOf } from "./_fixtures.ts";

/** A subscription record of `principalId` (fields overridable). */
export function testSubscription(
  principalId: string,
  overrides: Partial<StoredSubscription> = {},
): StoredSubscription {
  return {
    subscriptionId: `sub_${crypto.randomUUID().replaceAll("-", "")}`,
    principalId,
    url: "https://hooks.example.com/runtime",
    events: ["run.completed", "tool.answered"],
    format: "standard",
    state: "active",
    consecutiveFailures: 0,
    createdAt: new Date().toISOString(),
    secrets: [{ iv: "aXY=", ciphertext: "c2VjcmV0", expiresAt: null }],
    startSeq: 0,
    ...overrides,
  };
}

function delivery(
  sub: StoredSubscription,
  seq: number,
  overrides: Partial<StoredDelivery> = {},
): StoredDelivery {
  const now = Date.now();
  return {
    deliveryId: `msg_${sub.subscriptionId.slice(4, 12)}_${seq}`,
    subscriptionId: sub.subscriptionId,
    eventType: "run.completed",
    runId: `sesn_${seq}`,
    createdAt: new Date(now).toISOString(),
    state: "pending",
    attempts: [],
    nextAttemptAt: new Date(now).toISOString(),
    principalId: sub.principalId,
    activitySeq: seq,
    body: JSON.stringify({ seq }),
    createdMs: now,
    nextAttemptMs: now,
    ...overrides,
  };
}

/**
 * Two subscriptions, of `owners[0]` and `owners[1]`, each with one delivery due: seq 1 (due
 * first) and seq 2. Answers the subscriptions.
 */
async function twoDue(
  store: Store,
  owners: readonly [string, string],
  now: number,
): Promise<[StoredSubscription, StoredSubscription]> {
  const [x, y] = [testSubscription(owners[0]), testSubscription(owners[1])];
  await store.notifications.createSubscription(x, 5);
  await store.notifications.createSubscription(y, 5);
  await store.notifications.enqueue([
    delivery(x, 1, { nextAttemptMs: now - 2 }),
    delivery(y, 2, { nextAttemptMs: now - 1 }),
  ], 10);
  return [x, y];
}

/** Registers the notification cases. */
export function runNotificationContract(test: ContractCase): void {
  test("notifications: subscriptions take a principal's slots up to the limit; a deletion frees one", async (store) => {
    const owner = crypto.randomUUID();
    const made = [testSubscription(owner), testSubscription(owner), testSubscription(owner)];
    for (const sub of made) {
      assert.equal(await store.notifications.createSubscription(sub, 3), true);
    }
    assert.equal(await store.notifications.createSubscription(testSubscription(owner), 3), false);
    // Another principal's slots are its own.
    const other = testSubscription(crypto.randomUUID());
    assert.equal(await store.notifications.createSubscription(other, 3), true);
    assert.deepEqual(await store.notifications.getSubscription(made[1].subscriptionId), made[1]);
    assert.equal(await store.notifications.getSubscription("sub_none"), null);
    const own = await store.notifications.listSubscriptions({ principalId: owner, limit: 2 });
    assert.equal(own.items.length, 2);
    assert.equal(typeof own.nextCursor, "string");
    const rest = await store.notifications.listSubscriptions({
      principalId: owner,
      limit: 2,
      cursor: own.nextCursor!,
    });
    assert.equal(rest.nextCursor, null);
    assert.deepEqual(
      new Set([...own.items, ...rest.items].map((s) => s.subscriptionId)),
      new Set(made.map((s) => s.subscriptionId)),
    );
    const all = await store.notifications.listSubscriptions({ limit: 100 });
    assert.equal(all.items.length, 4);
    assert.equal(await store.notifications.deleteSubscription(made[0].subscriptionId), true);
    assert.equal(await store.notifications.deleteSubscription(made[0].subscriptionId), false);
    assert.equal(await store.notifications.getSubscription(made[0].subscriptionId), null);
    assert.equal(await store.notifications.createSubscription(testSubscription(owner), 3), true);
  });

  test(
    "notifications: ten creations at once over two handles fill exactly the limit",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const owner = crypto.randomUUID();
        const results = await Promise.all(
          Array.from(
            { length: 10 },
            (_, i) =>
              (i % 2 === 0 ? store : twin).notifications.createSubscription(
                testSubscription(owner),
                3,
              ),
          ),
        );
        assert.equal(results.filter(Boolean).length, 3);
        const page = await store.notifications.listSubscriptions({ principalId: owner, limit: 10 });
        assert.equal(page.items.length, 3);
      } finally {
        await twin.close();
      }
    },
  );

  test("notifications: an update is a compare-and-set; failures in a row disable once", async (store) => {
    const sub = testSubscription(crypto.randomUUID());
    await store.notifications.createSubscription(sub, 5);
    const rotated = { ...sub, secretRotatedAt: new Date().toISOString() };
    assert.equal(await store.notifications.updateSubscription(rotated, sub), true);
    assert.equal(await store.notifications.updateSubscription({ ...sub, url: "x" }, sub), false);
    const id = sub.subscriptionId;
    const at = new Date().toISOString();
    assert.deepEqual(await store.notifications.recordOutcome(id, false, at, 3), {
      disabled: false,
    });
    assert.deepEqual(await store.notifications.recordOutcome(id, true, at, 3), { disabled: false });
    assert.equal((await store.notifications.getSubscription(id))!.consecutiveFailures, 0);
    const outcomes = [];
    for (let i = 0; i < 5; i++) {
      outcomes.push(await store.notifications.recordOutcome(id, false, at, 3));
    }
    assert.deepEqual(outcomes.map((o) => o!.disabled), [false, false, true, false, false]);
    const disabled = (await store.notifications.getSubscription(id))!;
    assert.equal(disabled.state, "disabled");
    assert.equal(disabled.disabledAt, at);
    assert.equal(disabled.consecutiveFailures, 3);
    assert.equal(await store.notifications.recordOutcome("sub_none", false, at, 3), null);
  });

  test("notifications: a delivery is created once per id, at most maxPending pending per subscription", async (store) => {
    const sub = testSubscription(crypto.randomUUID());
    await store.notifications.createSubscription(sub, 5);
    const first = [delivery(sub, 1), delivery(sub, 2)];
    assert.equal(await store.notifications.enqueue(first, 3), 2);
    assert.equal(await store.notifications.enqueue([delivery(sub, 1)], 3), 0);
    assert.equal(
      await store.notifications.enqueue([delivery(sub, 3), delivery(sub, 4), delivery(sub, 5)], 3),
      1,
    );
    const page = await store.notifications.listDeliveries(sub.subscriptionId, { limit: 2 });
    assert.deepEqual(page.items.map((d) => d.activitySeq), [3, 2]);
    const next = await store.notifications.listDeliveries(sub.subscriptionId, {
      limit: 2,
      cursor: page.nextCursor!,
    });
    assert.deepEqual(next.items.map((d) => d.activitySeq), [1]);
    assert.equal(next.nextCursor, null);
    assert.deepEqual(
      await store.notifications.getDelivery(sub.subscriptionId, first[0].deliveryId),
      first[0],
    );
    assert.equal(await store.notifications.getDelivery("sub_other", first[0].deliveryId), null);
  });

  test("notifications: due deliveries are leased to one sender, settled only by it, redelivered", async (store) => {
    const sub = testSubscription(crypto.randomUUID());
    await store.notifications.createSubscription(sub, 5);
    const now = Date.now();
    const due = delivery(sub, 1, { nextAttemptMs: now - 10 });
    const later = delivery(sub, 2, { nextAttemptMs: now + 60_000 });
    await store.notifications.enqueue([due, later], 10);
    const claimed = await store.notifications.claimDue({
      now,
      holder: "a",
      leaseMs: 30_000,
      limit: 10,
      perOwner: 4,
    });
    assert.deepEqual(claimed.map((d) => d.deliveryId), [due.deliveryId]);
    assert.equal(claimed[0].leaseHolder, "a");
    assert.deepEqual(
      await store.notifications.claimDue({
        now,
        holder: "b",
        leaseMs: 30_000,
        limit: 10,
        perOwner: 4,
      }),
      [],
    );
    // A lapsed lease is taken again.
    const retaken = await store.notifications.claimDue({
      now: now + 31_000,
      holder: "b",
      leaseMs: 30_000,
      limit: 1,
      perOwner: 4,
    });
    assert.deepEqual(retaken.map((d) => d.deliveryId), [due.deliveryId]);
    const attempt = { at: new Date(now).toISOString(), status: 200, durationMs: 3 };
    const delivered: StoredDelivery = { ...retaken[0], state: "delivered", attempts: [attempt] };
    delete delivered.nextAttemptAt;
    assert.equal(await store.notifications.settle(delivered, "a"), false);
    assert.equal(await store.notifications.settle(delivered, "b"), true);
    const stored = (await store.notifications.getDelivery(sub.subscriptionId, due.deliveryId))!;
    assert.equal(stored.state, "delivered");
    assert.deepEqual(stored.attempts, [attempt]);
    assert.equal(stored.leaseHolder, undefined);
    assert.deepEqual(
      await store.notifications.claimDue({
        now: now + 31_000,
        holder: "c",
        leaseMs: 1,
        limit: 9,
        perOwner: 4,
      }),
      [],
    );
    const again = await store.notifications.redeliver(
      sub.subscriptionId,
      due.deliveryId,
      now + 40_000,
    );
    assert.equal(again?.state, "pending");
    assert.equal(
      await store.notifications.redeliver("sub_other", due.deliveryId, now),
      null,
    );
    const redue = await store.notifications.claimDue({
      now: now + 40_000,
      holder: "c",
      leaseMs: 1_000,
      limit: 9,
      perOwner: 4,
    });
    assert.deepEqual(redue.map((d) => d.deliveryId), [due.deliveryId]);
    assert.deepEqual(redue[0].attempts, [attempt]);
  });

  test("notifications: a claim takes one delivery per subscription and perOwner per owner, counting live leases; settling, redelivering and lapsing free them", async (store) => {
    const now = Date.now();
    const owner = crypto.randomUUID();
    const [a1, a2, a3] = [
      testSubscription(owner),
      testSubscription(owner),
      testSubscription(owner),
    ];
    const b1 = testSubscription(crypto.randomUUID());
    const queued: StoredDelivery[] = [];
    // The owner's deliveries all came due before the other owner's one.
    for (const [k, sub] of [a1, a2, a3].entries()) {
      await store.notifications.createSubscription(sub, 5);
      for (let i = 0; i < 3; i++) {
        queued.push(delivery(sub, 10 * k + i + 1, { nextAttemptMs: now - 100 + 10 * k + i }));
      }
    }
    await store.notifications.createSubscription(b1, 5);
    queued.push(delivery(b1, 99, { nextAttemptMs: now - 1 }));
    await store.notifications.enqueue(queued, 100);
    const claim = (holder: string, at = now, limit = 10) =>
      store.notifications.claimDue({ now: at, holder, leaseMs: 10_000, limit, perOwner: 2 });
    const seqs = (claimed: StoredDelivery[]) => claimed.map((d) => d.activitySeq);

    // The heads of a1 and a2 (the owner's bound), then b1's: never a second of one subscription.
    const first = await claim("h1");
    assert.deepEqual(seqs(first), [1, 11, 99]);
    assert.deepEqual(await claim("h2"), [], "every subscription or owner is busy");
    // Settling a1's head frees a1 and one of the owner's two: a1's next comes before a3's head.
    const [a1Head, a2Head] = first;
    const delivered: StoredDelivery = { ...a1Head, state: "delivered" };
    delete delivered.nextAttemptAt;
    assert.equal(await store.notifications.settle(delivered, "h1"), true);
    assert.deepEqual(seqs(await claim("h2")), [2]);
    assert.deepEqual(await claim("h2"), []);
    // A redelivery drops the lease too: a2 and the owner's share are free again, and a2's
    // earliest due delivery goes next (the redelivered one is due later now).
    const redone = await store.notifications.redeliver(a2.subscriptionId, a2Head.deliveryId, now);
    assert.equal(redone?.state, "pending");
    assert.deepEqual(seqs(await claim("h3")), [12]);
    // Leases that lapsed hold nothing: the earliest heads again, within the owner's bound; a
    // limit below that takes the earliest.
    assert.deepEqual(seqs(await claim("h4", now + 10_001, 2)), [2, 12]);
    assert.deepEqual(seqs(await claim("h5", now + 10_001)), [99]);
  });

  test("notifications: a claim finds another owner's delivery behind hundreds of a busy owner's", async (store) => {
    const now = Date.now();
    const busy = crypto.randomUUID();
    const queued: StoredDelivery[] = [];
    for (const k of [0, 1]) {
      const sub = testSubscription(busy);
      await store.notifications.createSubscription(sub, 5);
      for (let i = 0; i < 150; i++) {
        queued.push(delivery(sub, 1_000 * k + i, { nextAttemptMs: now - 10_000 + 2 * i + k }));
      }
    }
    const other = testSubscription(crypto.randomUUID());
    await store.notifications.createSubscription(other, 5);
    queued.push(delivery(other, 9_999, { nextAttemptMs: now - 1 }));
    for (let i = 0; i < queued.length; i += 100) {
      await store.notifications.enqueue(queued.slice(i, i + 100), 1_000);
    }
    const claim = (holder: string) =>
      store.notifications.claimDue({ now, holder, leaseMs: 60_000, limit: 4, perOwner: 2 });
    // The busy owner's two heads go first; its 298 others wait, all due before the other one.
    assert.deepEqual((await claim("a")).map((d) => d.activitySeq), [0, 1_000, 9_999]);
    const seconds = await claim("b");
    assert.deepEqual(seconds, []);
  });

  test("notifications: a claim takes none of the owners it is told to skip", async (store) => {
    const now = Date.now();
    const skipped = crypto.randomUUID();
    await twoDue(store, [skipped, crypto.randomUUID()], now);
    const claim = (skipOwners: string[]) =>
      store.notifications.claimDue({
        now,
        holder: "h",
        leaseMs: 60_000,
        limit: 5,
        perOwner: 2,
        skipOwners,
      });
    assert.deepEqual((await claim([skipped])).map((d) => d.activitySeq), [2]);
    assert.deepEqual((await claim([])).map((d) => d.activitySeq), [1]);
  });

  test("notifications: deleting a subscription whose delivery is leased frees its owner's share", async (store) => {
    const now = Date.now();
    const owner = crypto.randomUUID();
    const [x] = await twoDue(store, [owner, owner], now);
    const claim = () =>
      store.notifications.claimDue({ now, holder: "h", leaseMs: 60_000, limit: 5, perOwner: 1 });
    assert.deepEqual((await claim()).map((d) => d.activitySeq), [1]);
    assert.deepEqual(await claim(), [], "the owner has one under a lease");
    assert.equal(await store.notifications.deleteSubscription(x.subscriptionId), true);
    assert.deepEqual((await claim()).map((d) => d.activitySeq), [2]);
  });

  test(
    "notifications: two handles claiming at once never take one delivery twice, two of one subscription, nor more than perOwner of one owner",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const now = Date.now();
        const owners = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
        const subs = owners.flatMap((owner) =>
          Array.from({ length: 4 }, () => testSubscription(owner))
        );
        for (const sub of subs) await store.notifications.createSubscription(sub, 5);
        await store.notifications.enqueue(
          subs.flatMap((sub, k) =>
            [1, 2].map((i) => delivery(sub, 10 * k + i, { nextAttemptMs: now - 1 }))
          ),
          100,
        );
        const claims = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            (i % 2 === 0 ? store : twin).notifications.claimDue({
              now,
              holder: `h${i}`,
              leaseMs: 60_000,
              limit: 3,
              perOwner: 2,
            })),
        );
        // Then one more: whatever a lost race left, each owner ends with exactly its bound.
        claims.push(
          await store.notifications.claimDue({
            now,
            holder: "last",
            leaseMs: 60_000,
            limit: 12,
            perOwner: 2,
          }),
        );
        const claimed = claims.flat();
        const ids = claimed.map((d) => d.deliveryId);
        assert.equal(new Set(ids).size, ids.length, "a delivery leased twice");
        const bySub = claimed.map((d) => d.subscriptionId);
        assert.equal(new Set(bySub).size, bySub.length, "two of one subscription in flight");
        for (const owner of owners) {
          assert.equal(claimed.filter((d) => d.principalId === owner).length, 2, owner);
        }
      } finally {
        await twin.close();
      }
    },
  );

  test("notifications: deleting a subscription deletes its deliveries; the cursor moves by compare-and-set; the purge keeps pending ones", async (store) => {
    const sub = testSubscription(crypto.randomUUID());
    await store.notifications.createSubscription(sub, 5);
    const old = Date.now() - 10 * 86_400_000;
    await store.notifications.enqueue([
      delivery(sub, 1, { createdMs: old, state: "delivered" }),
      delivery(sub, 2, { createdMs: old }),
      delivery(sub, 3),
    ], 10);
    assert.equal(await store.notifications.purge(Date.now() - 86_400_000), 1);
    const left = await store.notifications.listDeliveries(sub.subscriptionId, { limit: 10 });
    assert.deepEqual(left.items.map((d) => d.activitySeq), [3, 2]);
    assert.equal(await store.notifications.deleteSubscription(sub.subscriptionId), true);
    assert.deepEqual(
      (await store.notifications.listDeliveries(sub.subscriptionId, { limit: 10 })).items,
      [],
    );
    assert.deepEqual(
      await store.notifications.claimDue({
        now: Date.now(),
        holder: "x",
        leaseMs: 1,
        limit: 10,
        perOwner: 4,
      }),
      [],
    );
    assert.equal(await store.notifications.readCursor(), 0);
    assert.equal(await store.notifications.advanceCursor(0, 5), true);
    assert.equal(await store.notifications.advanceCursor(0, 7), false);
    assert.equal(await store.notifications.advanceCursor(5, 9), true);
    assert.equal(await store.notifications.readCursor(), 9);
  });
}
