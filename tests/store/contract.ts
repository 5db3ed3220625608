/**
 * The contract every {@linkcode Store} backend must pass. A backend's test file calls
 * {@linkcode runStoreContract} once; each case opens stores under fresh random namespaces, so
 * cases never see each other's records even on a shared database.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { PrincipalRecord, Store } from "../../server/store/types.ts";

/** Opens a store for `namespace` on the backend under test; every call shares one backend. */
export type OpenStore = (namespace: string) => Promise<Store>;

/** Options of {@linkcode runStoreContract}. */
export interface StoreContractOptions {
  /** Skip every case (for example when the backend is not reachable). */
  ignore?: boolean;
  /** Keep Deno's resource and op sanitizers on (default true). */
  sanitize?: boolean;
}

function randomNamespace(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

function randomHex(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function principal(overrides: Partial<PrincipalRecord> = {}): PrincipalRecord {
  return {
    principalId: crypto.randomUUID(),
    bearerDigest: randomHex(),
    capabilities: ["session:read"],
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    issuerId: crypto.randomUUID(),
    createdAt: new Date().toISOString(),
    revokedAt: null,
    nonce: "bm9uY2Utbm9uY2Utbm9uY2U",
    ...overrides,
  };
}

const DAY = 86_400_000;

/**
 * Registers the contract's `Deno.test` cases for one backend.
 *
 * @example
 * ```ts ignore
 * import { runStoreContract } from "./contract.ts";
 * import { openKvStore } from "../../server/store/kv.ts";
 * runStoreContract("kv", (namespace) => openKvStore({ path: "/tmp/x.kv", namespace }));
 * ```
 */
export function runStoreContract(
  name: string,
  open: OpenStore,
  options: StoreContractOptions = {},
): void {
  const sanitize = options.sanitize ?? true;

  function test(title: string, body: (store: Store) => Promise<void>): void {
    Deno.test({
      name: `${name} store: ${title}`,
      ignore: options.ignore ?? false,
      sanitizeOps: sanitize,
      sanitizeResources: sanitize,
      async fn() {
        const store = await open(randomNamespace());
        try {
          await body(store);
        } finally {
          await store.close();
        }
      },
    });
  }

  test("a created principal is found by id and by bearer digest, every field intact", async (store) => {
    const record = principal({ capabilities: ["session:read", "session:write"] });
    assert.equal(await store.createPrincipal(record), "created");
    assert.deepEqual(await store.getPrincipal(record.principalId), record);
    assert.deepEqual(await store.findPrincipalByDigest(record.bearerDigest), record);
    assert.equal(await store.getPrincipal(crypto.randomUUID()), null);
    assert.equal(await store.findPrincipalByDigest(randomHex()), null);
  });

  test("creating an existing id or digest answers exists and changes nothing", async (store) => {
    const record = principal();
    assert.equal(await store.createPrincipal(record), "created");
    const sameId = principal({ principalId: record.principalId });
    assert.equal(await store.createPrincipal(sameId), "exists");
    const sameDigest = principal({ bearerDigest: record.bearerDigest });
    assert.equal(await store.createPrincipal(sameDigest), "exists");
    assert.deepEqual(await store.getPrincipal(record.principalId), record);
    assert.equal(await store.findPrincipalByDigest(sameId.bearerDigest), null);
    assert.equal(await store.getPrincipal(sameDigest.principalId), null);
  });

  test("50 concurrent creations of one id: exactly one succeeds", async (store) => {
    const principalId = crypto.randomUUID();
    const records = Array.from({ length: 50 }, () => principal({ principalId }));
    const results = await Promise.all(records.map((record) => store.createPrincipal(record)));
    assert.equal(results.filter((result) => result === "created").length, 1);
    assert.equal(results.filter((result) => result === "exists").length, 49);
    const winner = records[results.indexOf("created")];
    assert.deepEqual(await store.getPrincipal(principalId), winner);
    assert.equal((await store.listPrincipals()).length, 1);
    for (const record of records) {
      const found = await store.findPrincipalByDigest(record.bearerDigest);
      assert.deepEqual(found, record === winner ? winner : null);
    }
  });

  test("revocation is recorded once and is idempotent; unknown ids are notFound", async (store) => {
    const record = principal();
    await store.createPrincipal(record);
    const first = "2026-01-02T03:04:05.000Z";
    assert.equal(await store.revokePrincipal(record.principalId, first), "revoked");
    assert.equal(
      await store.revokePrincipal(record.principalId, "2026-02-02T00:00:00.000Z"),
      "alreadyRevoked",
    );
    assert.equal((await store.getPrincipal(record.principalId))?.revokedAt, first);
    assert.equal((await store.findPrincipalByDigest(record.bearerDigest))?.revokedAt, first);
    assert.equal(await store.revokePrincipal(crypto.randomUUID(), first), "notFound");
  });

  test("listPrincipals returns every principal oldest first, revoked ones included", async (store) => {
    const base = Date.now();
    const middle = principal({ createdAt: new Date(base + 1_000).toISOString() });
    const oldest = principal({ createdAt: new Date(base).toISOString() });
    const newest = principal({ createdAt: new Date(base + 2_000).toISOString() });
    for (const record of [middle, newest, oldest]) await store.createPrincipal(record);
    await store.revokePrincipal(middle.principalId, new Date(base + 3_000).toISOString());
    const listed = await store.listPrincipals();
    assert.deepEqual(listed.map((record) => record.principalId), [
      oldest.principalId,
      middle.principalId,
      newest.principalId,
    ]);
    assert.equal(listed[1].revokedAt, new Date(base + 3_000).toISOString());
  });

  test("a claim blocks the same key (inFlight) and refuses another body (conflict)", async (store) => {
    const now = Date.now();
    const params = { scope: randomHex(), requestDigest: randomHex(), now, leaseMs: 60_000 };
    const claim = await store.claimIdempotency({ ...params, expiresAt: now + DAY });
    assert.equal(claim.state, "claimed");
    assert.ok(claim.state === "claimed" && claim.token.length > 0);
    const again = await store.claimIdempotency({ ...params, now: now + 1, expiresAt: now + DAY });
    assert.deepEqual(again, { state: "inFlight" });
    const other = await store.claimIdempotency({
      ...params,
      requestDigest: randomHex(),
      expiresAt: now + DAY,
    });
    assert.deepEqual(other, { state: "conflict" });
  });

  test("50 concurrent claims of one key: exactly one owns it", async (store) => {
    const now = Date.now();
    const params = {
      scope: randomHex(),
      requestDigest: randomHex(),
      now,
      leaseMs: 60_000,
      expiresAt: now + DAY,
    };
    const claims = await Promise.all(
      Array.from({ length: 50 }, () => store.claimIdempotency(params)),
    );
    assert.equal(claims.filter((claim) => claim.state === "claimed").length, 1);
    assert.equal(claims.filter((claim) => claim.state === "inFlight").length, 49);
  });

  test("a completed key replays its response for the same body and conflicts for another", async (store) => {
    const now = Date.now();
    const params = {
      scope: randomHex(),
      requestDigest: randomHex(),
      now,
      leaseMs: 60_000,
      expiresAt: now + DAY,
    };
    const claim = await store.claimIdempotency(params);
    assert.ok(claim.state === "claimed");
    const response = { status: 409, body: '{"error":{"code":"principalExists"}}' };
    await store.completeIdempotency({
      scope: params.scope,
      token: claim.token,
      response,
      expiresAt: params.expiresAt,
    });
    assert.deepEqual(await store.claimIdempotency({ ...params, now: now + 5 }), {
      state: "completed",
      response,
    });
    assert.deepEqual(
      await store.claimIdempotency({ ...params, requestDigest: randomHex() }),
      { state: "conflict" },
    );
  });

  test("completing or releasing with a token that does not own the claim does nothing", async (store) => {
    const now = Date.now();
    const params = {
      scope: randomHex(),
      requestDigest: randomHex(),
      now,
      leaseMs: 60_000,
      expiresAt: now + DAY,
    };
    const claim = await store.claimIdempotency(params);
    assert.ok(claim.state === "claimed");
    const stranger = crypto.randomUUID();
    await store.completeIdempotency({
      scope: params.scope,
      token: stranger,
      response: { status: 200, body: "{}" },
      expiresAt: params.expiresAt,
    });
    await store.releaseIdempotency(params.scope, stranger);
    assert.deepEqual(await store.claimIdempotency(params), { state: "inFlight" });
  });

  test("a released claim can be claimed again, with any body", async (store) => {
    const now = Date.now();
    const params = {
      scope: randomHex(),
      requestDigest: randomHex(),
      now,
      leaseMs: 60_000,
      expiresAt: now + DAY,
    };
    const claim = await store.claimIdempotency(params);
    assert.ok(claim.state === "claimed");
    await store.releaseIdempotency(params.scope, claim.token);
    const next = await store.claimIdempotency({ ...params, requestDigest: randomHex() });
    assert.equal(next.state, "claimed");
  });

  test("a claim whose lease ran out is taken over; the old token then cannot complete", async (store) => {
    const now = Date.now();
    const params = {
      scope: randomHex(),
      requestDigest: randomHex(),
      now,
      leaseMs: 1_000,
      expiresAt: now + DAY,
    };
    const first = await store.claimIdempotency(params);
    assert.ok(first.state === "claimed");
    assert.deepEqual(await store.claimIdempotency({ ...params, now: now + 500 }), {
      state: "inFlight",
    });
    const second = await store.claimIdempotency({ ...params, now: now + 1_500 });
    assert.ok(second.state === "claimed");
    assert.notEqual(second.token, first.token);
    await store.completeIdempotency({
      scope: params.scope,
      token: first.token,
      response: { status: 200, body: '{"who":"first"}' },
      expiresAt: params.expiresAt,
    });
    await store.completeIdempotency({
      scope: params.scope,
      token: second.token,
      response: { status: 200, body: '{"who":"second"}' },
      expiresAt: params.expiresAt,
    });
    assert.deepEqual(await store.claimIdempotency({ ...params, now: now + 2_000 }), {
      state: "completed",
      response: { status: 200, body: '{"who":"second"}' },
    });
  });

  test("createPrincipal completes the idempotency claim in the same step", async (store) => {
    const now = Date.now();
    const params = {
      scope: randomHex(),
      requestDigest: randomHex(),
      now,
      leaseMs: 60_000,
      expiresAt: now + DAY,
    };
    const claim = await store.claimIdempotency(params);
    assert.ok(claim.state === "claimed");
    const record = principal();
    const response = { status: 201, body: JSON.stringify({ principalId: record.principalId }) };
    const result = await store.createPrincipal(record, {
      scope: params.scope,
      token: claim.token,
      response,
      expiresAt: params.expiresAt,
    });
    assert.equal(result, "created");
    assert.deepEqual(await store.getPrincipal(record.principalId), record);
    assert.deepEqual(await store.claimIdempotency(params), { state: "completed", response });
  });

  test("createPrincipal that finds the id taken leaves the claim unfinished", async (store) => {
    const now = Date.now();
    const existing = principal();
    await store.createPrincipal(existing);
    const params = {
      scope: randomHex(),
      requestDigest: randomHex(),
      now,
      leaseMs: 60_000,
      expiresAt: now + DAY,
    };
    const claim = await store.claimIdempotency(params);
    assert.ok(claim.state === "claimed");
    const result = await store.createPrincipal(principal({ principalId: existing.principalId }), {
      scope: params.scope,
      token: claim.token,
      response: { status: 201, body: "{}" },
      expiresAt: params.expiresAt,
    });
    assert.equal(result, "exists");
    assert.deepEqual(await store.claimIdempotency(params), { state: "inFlight" });
    const conflict = { status: 409, body: '{"error":{"code":"principalExists"}}' };
    await store.completeIdempotency({
      scope: params.scope,
      token: claim.token,
      response: conflict,
      expiresAt: params.expiresAt,
    });
    assert.deepEqual(await store.claimIdempotency(params), {
      state: "completed",
      response: conflict,
    });
  });

  test("deleteExpired purges expired idempotency records only and counts them", async (store) => {
    const now = Date.now();
    const short = { scope: randomHex(), requestDigest: randomHex(), now, leaseMs: 100 };
    const long = { scope: randomHex(), requestDigest: randomHex(), now, leaseMs: 60_000 };
    const shortClaim = await store.claimIdempotency({ ...short, expiresAt: now + 1_000 });
    const longClaim = await store.claimIdempotency({ ...long, expiresAt: now + DAY });
    assert.ok(shortClaim.state === "claimed" && longClaim.state === "claimed");
    await store.completeIdempotency({
      scope: short.scope,
      token: shortClaim.token,
      response: { status: 200, body: "{}" },
      expiresAt: now + 1_000,
    });
    const record = principal();
    await store.createPrincipal(record);

    assert.equal(await store.deleteExpired(now), 0);
    assert.equal(await store.deleteExpired(now + 2_000), 1);
    assert.equal(await store.deleteExpired(now + 2_000), 0);
    // The purged key is free again even at the original time; the other is untouched.
    assert.equal(
      (await store.claimIdempotency({ ...short, expiresAt: now + DAY })).state,
      "claimed",
    );
    assert.deepEqual(
      await store.claimIdempotency({ ...long, now: now + 1, expiresAt: now + DAY }),
      { state: "inFlight" },
    );
    assert.deepEqual(await store.getPrincipal(record.principalId), record);
  });

  Deno.test({
    name: `${name} store: namespaces never see each other's records`,
    ignore: options.ignore ?? false,
    sanitizeOps: sanitize,
    sanitizeResources: sanitize,
    async fn() {
      const first = await open(randomNamespace());
      const second = await open(randomNamespace());
      try {
        const record = principal();
        assert.equal(await first.createPrincipal(record), "created");
        assert.equal(await second.getPrincipal(record.principalId), null);
        assert.equal(await second.findPrincipalByDigest(record.bearerDigest), null);
        assert.deepEqual(await second.listPrincipals(), []);
        assert.equal(
          await second.revokePrincipal(record.principalId, record.createdAt),
          "notFound",
        );
        assert.equal(await second.createPrincipal(record), "created");

        const now = Date.now();
        const params = {
          scope: randomHex(),
          requestDigest: randomHex(),
          now,
          leaseMs: 60_000,
          expiresAt: now + DAY,
        };
        assert.equal((await first.claimIdempotency(params)).state, "claimed");
        assert.equal((await second.claimIdempotency(params)).state, "claimed");
        assert.equal((await first.getPrincipal(record.principalId))?.revokedAt, null);
      } finally {
        await first.close();
        await second.close();
      }
    },
  });
}
