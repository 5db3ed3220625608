/**
 * PostgreSQL store under concurrency: two independent pools (as two replicas would hold) race on
 * the same principal id, idempotency key and revocation, and exactly one wins each time; a lease
 * renewal waits for an epoch move in progress and returns its epoch.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import type { Store } from "../../server/store/types.ts";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import { testPrincipal } from "./contract.ts";

const ignore = ignorePostgresTests();

async function withReplicas(
  fn: (a: Store, b: Store) => Promise<void>,
): Promise<void> {
  await using db = await createTestDatabase();
  const namespace = crypto.randomUUID().replaceAll("-", "");
  const [a, b] = await Promise.all([
    openPostgresStore({ url: db.url, namespace }),
    openPostgresStore({ url: db.url, namespace }),
  ]);
  try {
    await fn(a, b);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

Deno.test({
  name: `postgres: one principal id created by racing replicas exactly once${skipNote()}`,
  ignore,
  fn: () =>
    withReplicas(async (a, b) => {
      const principalId = crypto.randomUUID();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? a : b).principals.create(testPrincipal({ principalId }))),
      );
      assert.equal(
        results.filter((r) =>
          r === "created"
        ).length,
        1,
      );
      assert.equal(results.filter((r) => r === "exists").length, 19);
      assert.equal((await a.principals.list()).length, 1);
    }),
});

Deno.test({
  name: `postgres: one idempotency key claimed by racing replicas exactly once${skipNote()}`,
  ignore,
  fn: () =>
    withReplicas(async (a, b) => {
      const now = Date.now();
      const params = {
        scope: "scope-race",
        requestDigest: "d".repeat(64),
        now,
        leaseMs: 30_000,
        expiresAt: now + 86_400_000,
      };
      const claims = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).idempotency.claim(params)),
      );
      assert.equal(claims.filter((c) => c.state === "claimed").length, 1);
      assert.equal(claims.filter((c) => c.state === "inFlight").length, 19);
    }),
});

Deno.test({
  name: `postgres: a creation and its idempotency completion commit together${skipNote()}`,
  ignore,
  fn: () =>
    withReplicas(async (a, b) => {
      const now = Date.now();
      const params = {
        scope: "scope-create",
        requestDigest: "e".repeat(64),
        now,
        leaseMs: 30_000,
        expiresAt: now + 86_400_000,
      };
      const claim = await a.idempotency.claim(params);
      assert.equal(claim.state, "claimed");
      if (claim.state !== "claimed") return;
      const response = { status: 201, body: '{"ok":true}' };
      const principal = testPrincipal();
      const completion = {
        scope: params.scope,
        token: claim.token,
        response,
        expiresAt: now + 86_400_000,
      };
      assert.equal(await a.principals.create(principal, completion), "created");
      assert.deepEqual(await b.idempotency.claim({ ...params, now: now + 1_000 }), {
        state: "completed",
        response,
      });
      assert.deepEqual(await b.principals.get(principal.principalId), principal);
    }),
});

Deno.test({
  name: `postgres: a taken-over claim cannot complete a creation${skipNote()}`,
  ignore,
  fn: () =>
    withReplicas(async (a, b) => {
      const now = Date.now();
      const params = {
        scope: "scope-lease",
        requestDigest: "f".repeat(64),
        now,
        leaseMs: 1_000,
        expiresAt: now + 86_400_000,
      };
      const first = await a.idempotency.claim(params);
      const second = await b.idempotency.claim({ ...params, now: now + 2_000 });
      assert.equal(first.state, "claimed");
      assert.equal(second.state, "claimed");
      if (first.state !== "claimed") return;
      const principal = testPrincipal();
      await assert.rejects(
        a.principals.create(principal, {
          scope: params.scope,
          token: first.token,
          response: { status: 201, body: "{}" },
          expiresAt: now + 86_400_000,
        }),
        { name: "IdempotencyLeaseLostError" },
      );
      assert.equal(await b.principals.get(principal.principalId), null);
    }),
});

Deno.test({
  name: `postgres: racing revocations answer revoked once${skipNote()}`,
  ignore,
  fn: () =>
    withReplicas(async (a, b) => {
      const principal = testPrincipal();
      assert.equal(await a.principals.create(principal), "created");
      const at = new Date().toISOString();
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 ? a : b).principals.revoke(principal.principalId, at)),
      );
      assert.equal(
        results.filter((r) =>
          r === "revoked"
        ).length,
        1,
      );
      assert.equal(results.filter((r) => r === "alreadyRevoked").length, 9);
      assert.equal((await b.principals.findByDigest(principal.bearerDigest))?.revokedAt, at);
      assert.equal(await a.principals.revoke(crypto.randomUUID(), at), "notFound");
    }),
});

Deno.test({
  name: `postgres: namespaces do not see each other's records${skipNote()}`,
  ignore,
  async fn() {
    await using db = await createTestDatabase();
    const one = await openPostgresStore({ url: db.url, namespace: "a".repeat(32) });
    const two = await openPostgresStore({ url: db.url, namespace: "b".repeat(32) });
    try {
      const principal = testPrincipal();
      assert.equal(await one.principals.create(principal), "created");
      assert.equal(await two.principals.findByDigest(principal.bearerDigest), null);
      assert.equal(await two.principals.get(principal.principalId), null);
      assert.deepEqual(await two.principals.list(), []);
      assert.equal(await two.principals.create(principal), "created");
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  },
});

Deno.test({
  name: `postgres: expired idempotency records are deleted in batches, live ones kept${skipNote()}`,
  ignore,
  async fn() {
    await using db = await createTestDatabase();
    const store = await openPostgresStore({
      url: db.url,
      namespace: "c".repeat(32),
      deleteBatchSize: 7,
    });
    try {
      const now = Date.now();
      for (let i = 0; i < 30; i++) {
        const claim = await store.idempotency.claim({
          scope: `scope-${i}`,
          requestDigest: "a".repeat(64),
          now,
          leaseMs: 60_000,
          expiresAt: i < 23 ? now + 10 : now + 86_400_000,
        });
        assert.equal(claim.state, "claimed");
      }
      assert.equal(await store.idempotency.purgeExpired(now + 1_000), 23);
      assert.equal(await store.idempotency.purgeExpired(now + 1_000), 0);
      const kept = await store.idempotency.claim({
        scope: "scope-29",
        requestDigest: "a".repeat(64),
        now: now + 1_000,
        leaseMs: 1_000,
        expiresAt: now + 86_400_000,
      });
      assert.equal(kept.state, "inFlight");
    } finally {
      await store.close();
    }
  },
});

Deno.test({
  name:
    `postgres: a lease renewal waits for an epoch move in progress and returns its epoch${skipNote()}`,
  ignore,
  async fn() {
    await using db = await createTestDatabase();
    const namespace = crypto.randomUUID().replaceAll("-", "");
    const store = await openPostgresStore({ url: db.url, namespace });
    const sql = postgres(db.url, { onnotice: () => {} });
    try {
      const holder = crypto.randomUUID();
      const before = await store.leases.renew({
        holder,
        epoch: "0".repeat(20),
        leaseMs: 3_000,
        now: Date.now(),
      });
      let renewed: Promise<{ epoch: string }> | null = null;
      let settledEarly = false;
      // An epoch move in progress (as the statement that revokes makes it) holds the namespace's
      // row; a renewal sent meanwhile must wait for it and see the moved epoch.
      await sql.begin(async (tx) => {
        await tx`
          UPDATE automation_runtime_namespaces SET revocations = revocations + 1
          WHERE namespace = ${namespace}`;
        renewed = store.leases.renew({
          holder,
          epoch: before.epoch,
          leaseMs: 3_000,
          now: Date.now(),
        });
        renewed.then(() => settledEarly = true, () => {});
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal(settledEarly, false, "the renewal waits for the move to commit");
      });
      const state = await renewed!;
      const after = await store.authority.readState();
      assert.ok(after.epoch > before.epoch);
      assert.equal(state.epoch, after.epoch);
      await store.leases.release(holder);
    } finally {
      await sql.end();
      await store.close();
    }
  },
});
