/**
 * The contract every {@linkcode Store} backend must pass. A backend's test file calls
 * {@linkcode runStoreContract} once; each case opens stores under fresh random namespaces, so
 * cases never see each other's records even on a shared database.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  IdempotencyLeaseLostError,
  type PrincipalRecord,
  type Store,
  SupersededNamespaceError,
} from "../../server/store/types.ts";
import { auditInput, runRunContract, testRun } from "./_run_contract.ts";
import { runAnswerContract } from "./_answer_contract.ts";
import { runEventContract } from "./_event_contract.ts";

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

/**
 * A valid principal record with fresh random ids, digest and nonce, expiring in a day; every
 * store test builds its records with it.
 */
export function testPrincipal(overrides: Partial<PrincipalRecord> = {}): PrincipalRecord {
  return {
    principalId: crypto.randomUUID(),
    bearerDigest: randomHex(),
    capabilities: ["session:read"],
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    issuerId: crypto.randomUUID(),
    createdAt: new Date().toISOString(),
    revokedAt: null,
    nonce: randomHex().slice(0, 22),
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

  function test(
    title: string,
    body: (store: Store, openTwin: () => Promise<Store>) => Promise<void>,
  ): void {
    Deno.test({
      name: `${name} store: ${title}`,
      ignore: options.ignore ?? false,
      sanitizeOps: sanitize,
      sanitizeResources: sanitize,
      async fn() {
        const namespace = randomNamespace();
        const store = await open(namespace);
        try {
          // A second handle on the same namespace: another replica sharing the store.
          await body(store, () => open(namespace));
        } finally {
          await store.close();
        }
      },
    });
  }

  test("a created principal is found by id and by bearer digest, every field intact", async (store) => {
    const record = testPrincipal({ capabilities: ["session:read", "session:write"] });
    assert.equal(await store.createPrincipal(record), "created");
    assert.deepEqual(await store.getPrincipal(record.principalId), record);
    assert.deepEqual(await store.findPrincipalByDigest(record.bearerDigest), record);
    assert.equal(await store.getPrincipal(crypto.randomUUID()), null);
    assert.equal(await store.findPrincipalByDigest(randomHex()), null);
  });

  test("a principal's run policy (agentIds, maxActiveRuns) reads back intact", async (store) => {
    const record = testPrincipal({ agentIds: ["agent_a", "agent_b"], maxActiveRuns: 3 });
    assert.equal(await store.createPrincipal(record), "created");
    assert.deepEqual(await store.getPrincipal(record.principalId), record);
    assert.deepEqual(await store.findPrincipalByDigest(record.bearerDigest), record);
  });

  runRunContract(test);
  runAnswerContract(test);
  runEventContract(test);

  test("creating an existing id or digest answers exists and changes nothing", async (store) => {
    const record = testPrincipal();
    assert.equal(await store.createPrincipal(record), "created");
    const sameId = testPrincipal({ principalId: record.principalId });
    assert.equal(await store.createPrincipal(sameId), "exists");
    const sameDigest = testPrincipal({ bearerDigest: record.bearerDigest });
    assert.equal(await store.createPrincipal(sameDigest), "exists");
    assert.deepEqual(await store.getPrincipal(record.principalId), record);
    assert.equal(await store.findPrincipalByDigest(sameId.bearerDigest), null);
    assert.equal(await store.getPrincipal(sameDigest.principalId), null);
  });

  test("50 concurrent creations of one id: exactly one succeeds", async (store) => {
    const principalId = crypto.randomUUID();
    const records = Array.from({ length: 50 }, () => testPrincipal({ principalId }));
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
    const record = testPrincipal();
    await store.createPrincipal(record);
    const first = "2026-01-02T03:04:05.000Z";
    // The audit entry goes with the revocation that happens, and with no other answer.
    const entry = (subjectId: string) =>
      auditInput({ at: first, action: "principal.revoked", subjectId });
    const revocations = async () =>
      (await store.listAudit({ limit: 100, action: "principal.revoked" })).entries;
    const audited = entry(record.principalId);
    assert.equal(await store.revokePrincipal(record.principalId, first, audited), "revoked");
    assert.deepEqual(
      (await revocations()).map(({ actorId, subjectId, correlationId }) => ({
        actorId,
        subjectId,
        correlationId,
      })),
      [{
        actorId: audited.actorId,
        subjectId: record.principalId,
        correlationId: audited.correlationId,
      }],
    );
    assert.equal(
      await store.revokePrincipal(
        record.principalId,
        "2026-02-02T00:00:00.000Z",
        entry(record.principalId),
      ),
      "alreadyRevoked",
    );
    const unknown = crypto.randomUUID();
    assert.equal(await store.revokePrincipal(unknown, first, entry(unknown)), "notFound");
    assert.equal((await revocations()).length, 1);
    assert.equal((await store.getPrincipal(record.principalId))?.revokedAt, first);
    assert.equal((await store.findPrincipalByDigest(record.bearerDigest))?.revokedAt, first);
    assert.equal(await store.revokePrincipal(crypto.randomUUID(), first), "notFound");
  });

  test("listPrincipals returns every principal oldest first, revoked ones included", async (store) => {
    const base = Date.now();
    const middle = testPrincipal({ createdAt: new Date(base + 1_000).toISOString() });
    const oldest = testPrincipal({ createdAt: new Date(base).toISOString() });
    const newest = testPrincipal({ createdAt: new Date(base + 2_000).toISOString() });
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

  test("createPrincipal appends its audit entry in the same step, and none when nothing is created", async (store) => {
    const now = Date.now();
    const entry = (subjectId: string) =>
      auditInput({ at: new Date(now).toISOString(), action: "principal.issued", subjectId });
    const issued = async () =>
      (await store.listAudit({ limit: 100, action: "principal.issued" })).entries;
    // Without an idempotency key.
    const plain = testPrincipal();
    assert.equal(
      await store.createPrincipal(plain, undefined, entry(plain.principalId)),
      "created",
    );
    assert.equal(
      await store.createPrincipal(
        { ...testPrincipal(), principalId: plain.principalId },
        undefined,
        entry(plain.principalId),
      ),
      "exists",
    );
    // Recorded under an unclaimed key, sixteen at once (a group commit), then a repeat.
    const recording = () => ({
      scope: randomHex(),
      requestDigest: randomHex(),
      now,
      response: { status: 201, body: "{}" },
      expiresAt: now + DAY,
    });
    const many = Array.from({ length: 16 }, () => testPrincipal());
    // Racing appends of other entries, which share the log's seq.
    const others = Array.from(
      { length: 8 },
      () => store.appendAudit({ ...entry(crypto.randomUUID()), action: "run.started" }),
    );
    const results = await Promise.all(
      many.map((record) => store.createPrincipal(record, recording(), entry(record.principalId))),
    );
    assert.deepEqual(results, many.map(() => "created"));
    await Promise.all(others);
    const used = recording();
    const first = testPrincipal();
    assert.equal(await store.createPrincipal(first, used, entry(first.principalId)), "created");
    const repeat = await store.createPrincipal(testPrincipal(), used, entry("repeat"));
    assert.notEqual(repeat, "created");
    // Completing a claim.
    const scope = randomHex();
    const claim = await store.claimIdempotency({
      scope,
      requestDigest: randomHex(),
      now,
      leaseMs: 60_000,
      expiresAt: now + DAY,
    });
    assert.ok(claim.state === "claimed");
    const claimed = testPrincipal();
    assert.equal(
      await store.createPrincipal(claimed, {
        scope,
        token: claim.token,
        response: { status: 201, body: "{}" },
        expiresAt: now + DAY,
      }, entry(claimed.principalId)),
      "created",
    );
    const entries = await issued();
    const subjects = entries.map((item) => item.subjectId).sort();
    const expected = [plain, ...many, first, claimed].map((record) => record.principalId).sort();
    assert.deepEqual(subjects, expected, "one entry per creation, none for a refused one");
    const all = (await store.listAudit({ limit: 100 })).entries;
    assert.equal(all.length, entries.length + 8);
    assert.equal(new Set(all.map((item) => item.seq)).size, all.length, "no two share a seq");
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
    const record = testPrincipal();
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
    const existing = testPrincipal();
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
    const result = await store.createPrincipal(
      testPrincipal({ principalId: existing.principalId }),
      {
        scope: params.scope,
        token: claim.token,
        response: { status: 201, body: "{}" },
        expiresAt: params.expiresAt,
      },
    );
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

  test("createPrincipal with a claim taken over writes nothing and throws IdempotencyLeaseLostError", async (store) => {
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
    const second = await store.claimIdempotency({ ...params, now: now + 1_500 });
    assert.ok(second.state === "claimed");
    const record = testPrincipal();
    await assert.rejects(
      () =>
        store.createPrincipal(record, {
          scope: params.scope,
          token: first.token,
          response: { status: 201, body: "{}" },
          expiresAt: params.expiresAt,
        }),
      IdempotencyLeaseLostError,
    );
    assert.equal(await store.getPrincipal(record.principalId), null);
    assert.equal(await store.findPrincipalByDigest(record.bearerDigest), null);
    assert.deepEqual(await store.claimIdempotency({ ...params, now: now + 1_600 }), {
      state: "inFlight",
    });
  });

  /** A recording for a fresh key, the answer naming the principal. */
  function recording(record: PrincipalRecord, now = Date.now()) {
    return {
      scope: randomHex(),
      requestDigest: randomHex(),
      now,
      response: { status: 201, body: JSON.stringify({ principalId: record.principalId }) },
      expiresAt: now + DAY,
    };
  }

  test("createPrincipal with a recording creates and records the answer in one step", async (store) => {
    const record = testPrincipal();
    const params = recording(record);
    assert.equal(await store.createPrincipal(record, params), "created");
    assert.deepEqual(await store.getPrincipal(record.principalId), record);
    assert.deepEqual(await store.findPrincipalByDigest(record.bearerDigest), record);
    const claim = { ...params, now: params.now + 1, leaseMs: 60_000 };
    assert.deepEqual(await store.claimIdempotency(claim), {
      state: "completed",
      response: params.response,
    });
    assert.deepEqual(
      await store.claimIdempotency({ ...claim, requestDigest: randomHex() }),
      { state: "conflict" },
    );
  });

  test("a recording on a used key writes nothing and reports what the key holds", async (store) => {
    const first = testPrincipal();
    const params = recording(first);
    assert.equal(await store.createPrincipal(first, params), "created");
    const again = testPrincipal();
    assert.deepEqual(
      await store.createPrincipal(again, { ...params, now: params.now + 1 }),
      { state: "completed", response: params.response },
    );
    assert.deepEqual(
      await store.createPrincipal(again, { ...params, requestDigest: randomHex() }),
      { state: "conflict" },
    );

    const held = recording(again);
    const claim = await store.claimIdempotency({ ...held, leaseMs: 60_000 });
    assert.ok(claim.state === "claimed");
    assert.deepEqual(await store.createPrincipal(again, { ...held, now: held.now + 1 }), {
      state: "inFlight",
    });
    assert.deepEqual(await store.createPrincipal(again, { ...held, requestDigest: randomHex() }), {
      state: "conflict",
    });
    assert.equal(await store.getPrincipal(again.principalId), null);
    assert.equal(await store.findPrincipalByDigest(again.bearerDigest), null);
    assert.equal((await store.listPrincipals()).length, 1);
  });

  test("a recording whose id or digest is taken answers exists and leaves the key unused", async (store) => {
    const existing = testPrincipal();
    assert.equal(await store.createPrincipal(existing), "created");
    const sameId = testPrincipal({ principalId: existing.principalId });
    const byId = recording(sameId);
    assert.equal(await store.createPrincipal(sameId, byId), "exists");
    const sameDigest = testPrincipal({ bearerDigest: existing.bearerDigest });
    const byDigest = recording(sameDigest);
    assert.equal(await store.createPrincipal(sameDigest, byDigest), "exists");
    assert.deepEqual(await store.getPrincipal(existing.principalId), existing);
    assert.equal(await store.getPrincipal(sameDigest.principalId), null);
    for (const params of [byId, byDigest]) {
      assert.equal((await store.claimIdempotency({ ...params, leaseMs: 60_000 })).state, "claimed");
    }
  });

  test("a recording takes over an expired record, or a lapsed claim of the same body", async (store) => {
    const now = Date.now();
    const lapsed = testPrincipal();
    const stale = recording(lapsed, now);
    const claim = await store.claimIdempotency({ ...stale, leaseMs: 1_000 });
    assert.ok(claim.state === "claimed");
    assert.deepEqual(
      await store.createPrincipal(lapsed, {
        ...stale,
        requestDigest: randomHex(),
        now: now + 1_500,
      }),
      { state: "conflict" },
      "a lapsed claim of another body still holds the key",
    );
    assert.equal(await store.createPrincipal(lapsed, { ...stale, now: now + 1_500 }), "created");
    await store.completeIdempotency({
      scope: stale.scope,
      token: claim.token,
      response: { status: 200, body: '{"who":"crashed"}' },
      expiresAt: stale.expiresAt,
    });
    assert.deepEqual(await store.claimIdempotency({ ...stale, now: now + 2_000, leaseMs: 1 }), {
      state: "completed",
      response: stale.response,
    });

    const old = recording(testPrincipal(), now);
    const oldClaim = await store.claimIdempotency({
      ...old,
      leaseMs: 100,
      expiresAt: now + 1_000,
    });
    assert.ok(oldClaim.state === "claimed");
    await store.completeIdempotency({
      scope: old.scope,
      token: oldClaim.token,
      response: { status: 422, body: "{}" },
      expiresAt: now + 1_000,
    });
    const fresh = testPrincipal();
    const renewed = { ...old, requestDigest: randomHex(), now: now + 2_000 };
    assert.equal(await store.createPrincipal(fresh, renewed), "created");
    assert.deepEqual(await store.claimIdempotency({ ...renewed, now: now + 2_001, leaseMs: 1 }), {
      state: "completed",
      response: old.response,
    });
    // The purge keeps the renewed record: it expires a day after the takeover.
    assert.equal(await store.deleteExpired(now + 3_000), 0);
  });

  test("50 concurrent recordings on one key: exactly one creates, the others get its answer", async (store) => {
    const now = Date.now();
    const params = recording(testPrincipal(), now);
    const records = Array.from({ length: 50 }, () => testPrincipal());
    const results = await Promise.all(
      records.map((record) => store.createPrincipal(record, params)),
    );
    assert.equal(results.filter((result) => result === "created").length, 1);
    for (const result of results.filter((result) => result !== "created")) {
      assert.deepEqual(result, { state: "completed", response: params.response });
    }
    const winner = records[results.indexOf("created")];
    assert.deepEqual(
      (await store.listPrincipals()).map((record) => record.principalId),
      [winner.principalId],
    );
  });

  test("50 concurrent recordings of one id under 50 keys: one creates, the others exist", async (store) => {
    const principalId = crypto.randomUUID();
    const records = Array.from({ length: 50 }, () => testPrincipal({ principalId }));
    const params = records.map((record) => recording(record));
    const results = await Promise.all(
      records.map((record, index) => store.createPrincipal(record, params[index])),
    );
    assert.equal(results.filter((result) => result === "created").length, 1);
    assert.equal(results.filter((result) => result === "exists").length, 49);
    const winner = results.indexOf("created");
    assert.deepEqual(await store.getPrincipal(principalId), records[winner]);
    for (const [index, key] of params.entries()) {
      const claim = await store.claimIdempotency({ ...key, now: key.now + 1, leaseMs: 60_000 });
      assert.equal(claim.state, index === winner ? "completed" : "claimed");
    }
  });

  test("concurrent recordings of many principals, some sharing a key or an id, each decide alone", async (store) => {
    const now = Date.now();
    const records = Array.from({ length: 30 }, () => testPrincipal());
    const keys = records.map((record) => recording(record, now));
    const sameKey = Array.from({ length: 5 }, () => testPrincipal());
    const sameId = Array.from(
      { length: 5 },
      () => testPrincipal({ principalId: records[1].principalId }),
    );
    const calls = [
      ...records.map((record, index) => ({ record, params: keys[index] })),
      ...sameKey.map((record) => ({ record, params: keys[0] })),
      ...sameId.map((record) => ({ record, params: recording(record, now) })),
    ];
    const results = await Promise.all(
      calls.map(({ record, params }) => store.createPrincipal(record, params)),
    );
    const keyUsers = [0, ...sameKey.map((_, index) => 30 + index)];
    const keyWinners = keyUsers.filter((index) => results[index] === "created");
    assert.equal(keyWinners.length, 1);
    for (const index of keyUsers.filter((index) => index !== keyWinners[0])) {
      assert.deepEqual(results[index], { state: "completed", response: keys[0].response });
    }
    const idUsers = [1, ...sameId.map((_, index) => 35 + index)];
    const idWinners = idUsers.filter((index) => results[index] === "created");
    assert.equal(idWinners.length, 1);
    for (const index of idUsers.filter((index) => index !== idWinners[0])) {
      assert.equal(results[index], "exists");
    }
    for (let index = 2; index < 30; index++) assert.equal(results[index], "created");
    const listed = await store.listPrincipals();
    assert.equal(listed.length, 30);
    assert.deepEqual(await store.getPrincipal(records[1].principalId), calls[idWinners[0]].record);
    for (let index = 2; index < 30; index++) {
      assert.deepEqual(
        await store.findPrincipalByDigest(records[index].bearerDigest),
        records[index],
      );
    }
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
    const record = testPrincipal();
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

  // -- Cross-process authority, paging and retention.

  /** Runs `body` with stores of two fresh namespaces on the shared backend. */
  function testTwo(title: string, body: (a: Store, b: Store) => Promise<void>): void {
    Deno.test({
      name: `${name} store: ${title}`,
      ignore: options.ignore ?? false,
      sanitizeOps: sanitize,
      sanitizeResources: sanitize,
      async fn() {
        const a = await open(randomNamespace());
        const b = await open(randomNamespace());
        try {
          await body(a, b);
        } finally {
          await a.close();
          await b.close();
        }
      },
    });
  }

  testTwo(
    "a claim by another namespace retires the first, which cannot claim back",
    async (a, b) => {
      const now = Date.now();
      await a.claimAuthority(now);
      await a.claimAuthority(now);
      assert.equal((await a.readAuthorityState()).current, true);
      const before = (await a.readAuthorityState()).epoch;
      await b.claimAuthority(now + 1);
      assert.equal((await b.readAuthorityState()).current, true);
      const after = await a.readAuthorityState();
      assert.equal(after.current, false);
      assert.notEqual(after.epoch, before);
      await assert.rejects(() => a.claimAuthority(now + 2), SupersededNamespaceError);
      assert.equal((await a.readAuthorityState()).current, false);
      assert.equal((await b.readAuthorityState()).current, true);
    },
  );

  test("a revocation moves the epoch; creations and repeated revocations do not", async (store) => {
    await store.claimAuthority(Date.now());
    const record = testPrincipal();
    const first = await store.readAuthorityState();
    assert.equal((await store.readAuthorityState()).epoch, first.epoch);
    assert.equal(await store.createPrincipal(record), "created");
    assert.equal((await store.readAuthorityState()).epoch, first.epoch);
    assert.equal(await store.revokePrincipal(record.principalId, record.createdAt), "revoked");
    const revoked = await store.readAuthorityState();
    assert.notEqual(revoked.epoch, first.epoch);
    assert.equal(revoked.current, true);
    assert.equal(
      await store.revokePrincipal(record.principalId, record.createdAt),
      "alreadyRevoked",
    );
    assert.equal(await store.revokePrincipal(crypto.randomUUID(), record.createdAt), "notFound");
    assert.equal((await store.readAuthorityState()).epoch, revoked.epoch);
  });

  testTwo(
    "changeMarker is null, or stays equal until anything is committed by any handle",
    async (a, b) => {
      const marker = a.changeMarker();
      if (marker === null) return;
      assert.equal(a.changeMarker(), marker, "nothing committed: the marker holds");
      await a.getPrincipal(crypto.randomUUID());
      assert.equal(a.changeMarker(), marker, "a read commits nothing");
      // Another handle (another connection, as another process has) commits: even an unrelated
      // write in another namespace moves the marker.
      assert.equal(await b.createPrincipal(testPrincipal()), "created");
      const moved = a.changeMarker();
      assert.notEqual(moved, marker);
      const record = testPrincipal();
      assert.equal(await a.createPrincipal(record), "created");
      const own = a.changeMarker();
      assert.notEqual(own, moved, "this handle's own commits move it too");
      assert.equal(await b.revokePrincipal(crypto.randomUUID(), record.createdAt), "notFound");
      await b.claimAuthority(Date.now());
      assert.notEqual(a.changeMarker(), own, "a claim by another handle moves it");
    },
  );

  test("listPrincipalPage pages oldest first with no gap or repeat", async (store) => {
    const base = Date.now() - DAY;
    const records: PrincipalRecord[] = [];
    for (let i = 0; i < 7; i++) {
      // Two share each creation time: the id breaks the tie.
      const record = testPrincipal({ createdAt: new Date(base + Math.floor(i / 2)).toISOString() });
      records.push(record);
      assert.equal(await store.createPrincipal(record), "created");
    }
    const all = await store.listPrincipals();
    const seen: PrincipalRecord[] = [];
    const sizes: number[] = [];
    let after = undefined;
    do {
      const page: Awaited<ReturnType<Store["listPrincipalPage"]>> = await store.listPrincipalPage(
        after === undefined ? { limit: 3 } : { limit: 3, after },
      );
      sizes.push(page.records.length);
      seen.push(...page.records);
      after = page.next ?? undefined;
    } while (after !== undefined);
    assert.deepEqual(sizes, [3, 3, 1]);
    assert.deepEqual(seen, all);
    assert.equal(seen.length, 7);
    const exact = await store.listPrincipalPage({ limit: 7 });
    assert.equal(exact.records.length, 7);
    assert.equal(exact.next, null);
  });

  testTwo(
    "purgeRetired keeps everything within retention, then drops retired principals and old namespaces only",
    async (old, current) => {
      const t0 = Date.now();
      const at = (ms: number) => new Date(t0 + ms).toISOString();
      const retentionMs = 30 * DAY;
      await old.claimAuthority(t0);
      const oldRecord = testPrincipal();
      assert.equal(await old.createPrincipal(oldRecord), "created");
      const claim = {
        scope: randomHex(),
        requestDigest: randomHex(),
        now: t0,
        leaseMs: 100 * DAY,
        expiresAt: t0 + 100 * DAY,
      };
      assert.equal((await old.claimIdempotency(claim)).state, "claimed");
      const oldRun = testRun({ principalId: oldRecord.principalId });
      const slot = `reservation:${crypto.randomUUID()}`;
      const reserved = await old.reserveRunSlot({
        principalId: oldRecord.principalId,
        slotId: slot,
        principalLimit: 8,
        serviceLimit: 1000,
        now: t0,
        leaseMs: 60_000,
      });
      assert.equal(reserved, "reserved");
      await old.createRun(oldRun, slot);
      await old.appendAudit({
        at: at(0),
        action: "run.started",
        actorId: oldRecord.principalId,
        runId: oldRun.runId,
        correlationId: crypto.randomUUID(),
        outcome: "ok",
      });
      await current.claimAuthority(t0);

      const live = testPrincipal({ expiresAt: at(90 * DAY) });
      const revoked = testPrincipal({ expiresAt: at(90 * DAY) });
      const expired = testPrincipal({ createdAt: at(-2 * DAY), expiresAt: at(-DAY) });
      const revokedLater = testPrincipal({ expiresAt: at(90 * DAY) });
      for (const record of [live, revoked, expired, revokedLater]) {
        assert.equal(await current.createPrincipal(record), "created");
      }
      assert.equal(await current.revokePrincipal(revoked.principalId, at(0)), "revoked");
      assert.equal(
        await current.revokePrincipal(revokedLater.principalId, at(29 * DAY)),
        "revoked",
      );
      assert.equal((await current.claimIdempotency(claim)).state, "claimed");

      // Within the retention period nothing goes.
      assert.deepEqual(await current.purgeRetired({ now: t0 + 10 * DAY, retentionMs }), {
        principals: 0,
        namespaces: 0,
      });
      assert.equal((await current.listPrincipals()).length, 4);
      assert.deepEqual(await old.getPrincipal(oldRecord.principalId), oldRecord);

      const report = await current.purgeRetired({ now: t0 + 31 * DAY, retentionMs });
      assert.equal(report.principals, 2);
      assert.ok(report.namespaces >= 1, "the old namespace was purged");
      const left = (await current.listPrincipals()).map((record) => record.principalId).sort();
      assert.deepEqual(left, [live.principalId, revokedLater.principalId].sort());
      assert.equal(await current.findPrincipalByDigest(revoked.bearerDigest), null);
      assert.equal(await current.findPrincipalByDigest(expired.bearerDigest), null);
      assert.deepEqual(await current.findPrincipalByDigest(live.bearerDigest), live);
      assert.deepEqual(
        await current.claimIdempotency({ ...claim, now: t0 + 31 * DAY }),
        { state: "inFlight" },
        "the current namespace's idempotency record stays",
      );
      assert.equal(await old.getPrincipal(oldRecord.principalId), null);
      assert.equal(await old.findPrincipalByDigest(oldRecord.bearerDigest), null);
      assert.deepEqual(await old.listPrincipals(), []);
      assert.equal(await old.getRun(oldRun.runId), null, "the old namespace's run is gone");
      assert.deepEqual((await old.listAudit({ limit: 100 })).entries, [], "and its audit log");
      assert.equal(
        (await old.claimIdempotency({ ...claim, now: t0 + 31 * DAY, leaseMs: 1 })).state,
        "claimed",
        "the old namespace's idempotency record is gone",
      );
      // The retired mark outlives the purge: the old bootstrap still cannot claim the store.
      await assert.rejects(() => old.claimAuthority(t0 + 31 * DAY), SupersededNamespaceError);
      assert.equal((await current.readAuthorityState()).current, true);
    },
  );

  Deno.test({
    name: `${name} store: namespaces never see each other's records`,
    ignore: options.ignore ?? false,
    sanitizeOps: sanitize,
    sanitizeResources: sanitize,
    async fn() {
      const first = await open(randomNamespace());
      const second = await open(randomNamespace());
      try {
        const record = testPrincipal();
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
