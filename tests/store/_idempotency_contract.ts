/**
 * The idempotency part of the store contract: a key is claimed once (also by fifty callers at
 * once), blocks or conflicts while claimed, replays its recorded answer, is completed or released
 * only with its token, is taken over once its lease ran out, and goes when it expired.
 * Registered by `runStoreContract` in `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type ContractCase,
  DAY,
  freshClaim,
  randomHex,
  testPrincipal,
  twinOf,
} from "./_fixtures.ts";

/** Registers the idempotency cases. */
export function runIdempotencyContract(test: ContractCase): void {
  test("idempotency: a claim blocks the same key (inFlight) and refuses another body (conflict)", async (store) => {
    const now = Date.now();
    const params = { scope: randomHex(), requestDigest: randomHex(), now, leaseMs: 60_000 };
    const claim = await store.idempotency.claim({ ...params, expiresAt: now + DAY });
    assert.equal(claim.state, "claimed");
    assert.ok(claim.state === "claimed" && claim.token.length > 0);
    const again = await store.idempotency.claim({ ...params, now: now + 1, expiresAt: now + DAY });
    assert.deepEqual(again, { state: "inFlight" });
    const other = await store.idempotency.claim({
      ...params,
      requestDigest: randomHex(),
      expiresAt: now + DAY,
    });
    assert.deepEqual(other, { state: "conflict" });
  });

  test("idempotency: lookup reads what a key holds and writes nothing", async (store) => {
    const now = Date.now();
    const params = freshClaim(now);
    assert.equal(await store.idempotency.lookup(params.scope, params.requestDigest, now), null);
    // Looking did not take the key.
    const claim = await store.idempotency.claim(params);
    assert.equal(claim.state, "claimed");
    assert.deepEqual(
      await store.idempotency.lookup(params.scope, params.requestDigest, now + 1),
      { state: "inFlight" },
    );
    assert.deepEqual(
      await store.idempotency.lookup(params.scope, randomHex(), now + 1),
      { state: "conflict" },
    );
    const response = { status: 201, body: '{"id":1}' };
    await store.idempotency.complete({
      scope: params.scope,
      token: claim.state === "claimed" ? claim.token : "",
      response,
      expiresAt: params.expiresAt,
    });
    assert.deepEqual(
      await store.idempotency.lookup(params.scope, params.requestDigest, now + 2),
      { state: "completed", response },
    );
    // Once expired, the key counts as unused.
    assert.equal(
      await store.idempotency.lookup(params.scope, params.requestDigest, params.expiresAt),
      null,
    );
  });

  test("idempotency: 50 concurrent claims of one key: exactly one owns it", async (store) => {
    const now = Date.now();
    const params = freshClaim(now);
    const claims = await Promise.all(
      Array.from({ length: 50 }, () => store.idempotency.claim(params)),
    );
    assert.equal(claims.filter((claim) => claim.state === "claimed").length, 1);
    assert.equal(claims.filter((claim) => claim.state === "inFlight").length, 49);
  });

  test("idempotency: a completed key replays its response for the same body and conflicts for another", async (store) => {
    const now = Date.now();
    const params = freshClaim(now);
    const claim = await store.idempotency.claim(params);
    assert.ok(claim.state === "claimed");
    const response = { status: 409, body: '{"error":{"code":"principalExists"}}' };
    await store.idempotency.complete({
      scope: params.scope,
      token: claim.token,
      response,
      expiresAt: params.expiresAt,
    });
    assert.deepEqual(await store.idempotency.claim({ ...params, now: now + 5 }), {
      state: "completed",
      response,
    });
    assert.deepEqual(
      await store.idempotency.claim({ ...params, requestDigest: randomHex() }),
      { state: "conflict" },
    );
  });

  test("idempotency: completing or releasing with a token that does not own the claim does nothing", async (store) => {
    const now = Date.now();
    const params = freshClaim(now);
    const claim = await store.idempotency.claim(params);
    assert.ok(claim.state === "claimed");
    const stranger = crypto.randomUUID();
    await store.idempotency.complete({
      scope: params.scope,
      token: stranger,
      response: { status: 200, body: "{}" },
      expiresAt: params.expiresAt,
    });
    await store.idempotency.release(params.scope, stranger);
    assert.deepEqual(await store.idempotency.claim(params), { state: "inFlight" });
  });

  test("idempotency: a released claim can be claimed again, with any body", async (store) => {
    const now = Date.now();
    const params = freshClaim(now);
    const claim = await store.idempotency.claim(params);
    assert.ok(claim.state === "claimed");
    await store.idempotency.release(params.scope, claim.token);
    const next = await store.idempotency.claim({ ...params, requestDigest: randomHex() });
    assert.equal(next.state, "claimed");
  });

  test("idempotency: a claim whose lease ran out is taken over; the old token then cannot complete", async (store) => {
    const now = Date.now();
    const params = freshClaim(now, 1_000);
    const first = await store.idempotency.claim(params);
    assert.ok(first.state === "claimed");
    assert.deepEqual(await store.idempotency.claim({ ...params, now: now + 500 }), {
      state: "inFlight",
    });
    const second = await store.idempotency.claim({ ...params, now: now + 1_500 });
    assert.ok(second.state === "claimed");
    assert.notEqual(second.token, first.token);
    await store.idempotency.complete({
      scope: params.scope,
      token: first.token,
      response: { status: 200, body: '{"who":"first"}' },
      expiresAt: params.expiresAt,
    });
    await store.idempotency.complete({
      scope: params.scope,
      token: second.token,
      response: { status: 200, body: '{"who":"second"}' },
      expiresAt: params.expiresAt,
    });
    assert.deepEqual(await store.idempotency.claim({ ...params, now: now + 2_000 }), {
      state: "completed",
      response: { status: 200, body: '{"who":"second"}' },
    });
  });

  test(
    "idempotency: a begun claim is never taken over: inFlight, then unsettled until completed",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const now = Date.now();
        const params = freshClaim(now, 1_000);
        const claim = await store.idempotency.claim(params);
        assert.ok(claim.state === "claimed");
        assert.equal(await store.idempotency.begin(params.scope, crypto.randomUUID()), false);
        assert.equal(await store.idempotency.begin(params.scope, claim.token), true);
        assert.equal(await store.idempotency.begin(params.scope, claim.token), true);
        assert.deepEqual(await twin.idempotency.claim({ ...params, now: now + 500 }), {
          state: "inFlight",
        });
        // Its lease ran out (its holder crashed): the key is spent, not free.
        assert.deepEqual(await twin.idempotency.claim({ ...params, now: now + 1_500 }), {
          state: "unsettled",
        });
        // Another body is still a conflict; the holder can still record its answer.
        assert.deepEqual(
          await twin.idempotency.claim({ ...params, requestDigest: randomHex(), now: now + 1_500 }),
          { state: "conflict" },
        );
        const response = { status: 202, body: '{"sent":true}' };
        await store.idempotency.complete({
          scope: params.scope,
          token: claim.token,
          response,
          expiresAt: params.expiresAt,
        });
        assert.deepEqual(await twin.idempotency.claim({ ...params, now: now + 2_000 }), {
          state: "completed",
          response,
        });
      } finally {
        await twin.close();
      }
    },
  );

  test("idempotency: abandoning a begun claim makes it unsettled at once; releasing frees it", async (store) => {
    const now = Date.now();
    const abandoned = freshClaim(now);
    const first = await store.idempotency.claim(abandoned);
    assert.ok(first.state === "claimed");
    // Not begun: abandoning changes nothing.
    await store.idempotency.abandon(abandoned.scope, first.token, now + 1);
    assert.deepEqual(await store.idempotency.claim({ ...abandoned, now: now + 2 }), {
      state: "inFlight",
    });
    assert.equal(await store.idempotency.begin(abandoned.scope, first.token), true);
    await store.idempotency.abandon(abandoned.scope, crypto.randomUUID(), now + 1);
    assert.deepEqual(await store.idempotency.claim({ ...abandoned, now: now + 2 }), {
      state: "inFlight",
    });
    await store.idempotency.abandon(abandoned.scope, first.token, now + 1);
    assert.deepEqual(await store.idempotency.claim({ ...abandoned, now: now + 2 }), {
      state: "unsettled",
    });

    // A begun claim whose effect did not happen after all is released like any other.
    const released = freshClaim(now);
    const second = await store.idempotency.claim(released);
    assert.ok(second.state === "claimed");
    assert.equal(await store.idempotency.begin(released.scope, second.token), true);
    await store.idempotency.release(released.scope, second.token);
    assert.equal((await store.idempotency.claim({ ...released, now: now + 1 })).state, "claimed");
  });

  test("idempotency: purgeExpired purges expired records only and counts them", async (store) => {
    const now = Date.now();
    const short = { scope: randomHex(), requestDigest: randomHex(), now, leaseMs: 100 };
    const long = { scope: randomHex(), requestDigest: randomHex(), now, leaseMs: 60_000 };
    const shortClaim = await store.idempotency.claim({ ...short, expiresAt: now + 1_000 });
    const longClaim = await store.idempotency.claim({ ...long, expiresAt: now + DAY });
    assert.ok(shortClaim.state === "claimed" && longClaim.state === "claimed");
    await store.idempotency.complete({
      scope: short.scope,
      token: shortClaim.token,
      response: { status: 200, body: "{}" },
      expiresAt: now + 1_000,
    });
    const record = testPrincipal();
    await store.principals.create(record);

    assert.equal(await store.idempotency.purgeExpired(now), 0);
    assert.equal(await store.idempotency.purgeExpired(now + 2_000), 1);
    assert.equal(await store.idempotency.purgeExpired(now + 2_000), 0);
    // The purged key is free again even at the original time; the other is untouched.
    assert.equal(
      (await store.idempotency.claim({ ...short, expiresAt: now + DAY })).state,
      "claimed",
    );
    assert.deepEqual(
      await store.idempotency.claim({ ...long, now: now + 1, expiresAt: now + DAY }),
      { state: "inFlight" },
    );
    assert.deepEqual(await store.principals.get(record.principalId), record);
  });
}
