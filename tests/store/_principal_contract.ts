/**
 * The principals part of the store contract: a principal reads back intact by id and by digest,
 * an id or digest is created once (also by fifty callers at once), a revocation is recorded once,
 * lists and pages are oldest first, and a creation carries its idempotency record (a completion
 * or a recording, under every state the key may be in) and its audit entry in its own atomic
 * step. Registered by `runStoreContract` in `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  IdempotencyLeaseLostError,
  type PrincipalRecord,
  type Store,
} from "../../server/store/types.ts";
import {
  auditInput,
  type ContractCase,
  DAY,
  freshClaim,
  randomHex,
  testPrincipal,
} from "./_fixtures.ts";

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

/** Registers the principal cases. */
export function runPrincipalContract(test: ContractCase): void {
  test("principals: a created principal is found by id and by bearer digest, every field intact", async (store) => {
    const record = testPrincipal({ capabilities: ["session:read", "session:write"] });
    assert.equal(await store.principals.create(record), "created");
    assert.deepEqual(await store.principals.get(record.principalId), record);
    assert.deepEqual(await store.principals.findByDigest(record.bearerDigest), record);
    assert.equal(await store.principals.get(crypto.randomUUID()), null);
    assert.equal(await store.principals.findByDigest(randomHex()), null);
  });

  test("principals: a principal's run policy (agentIds, maxActiveRuns, allowAgentOverrides) reads back intact", async (store) => {
    const record = testPrincipal({ agentIds: ["agent_a", "agent_b"], maxActiveRuns: 3 });
    assert.equal(await store.principals.create(record), "created");
    assert.deepEqual(await store.principals.get(record.principalId), record);
    assert.deepEqual(await store.principals.findByDigest(record.bearerDigest), record);
    const overriding = testPrincipal({ allowAgentOverrides: true });
    assert.equal(await store.principals.create(overriding), "created");
    assert.deepEqual(await store.principals.get(overriding.principalId), overriding);
  });

  test("principals: a name and metadata read back intact, in get, findByDigest, list and page", async (store) => {
    const record = testPrincipal({
      name: "ci nightly – build ☂",
      metadata: { job: "nightly", "repo/path": "a,b=c", empty: "" },
    });
    const plain = testPrincipal();
    assert.equal(await store.principals.create(record), "created");
    assert.equal(await store.principals.create(plain), "created");
    assert.deepEqual(await store.principals.get(record.principalId), record);
    assert.deepEqual(await store.principals.findByDigest(record.bearerDigest), record);
    const listed = await store.principals.list();
    assert.deepEqual(listed.find((p) => p.principalId === record.principalId), record);
    const unlabelled = listed.find((p) => p.principalId === plain.principalId)!;
    assert.equal("name" in unlabelled, false);
    assert.equal("metadata" in unlabelled, false);
    const page = await store.principals.page({ limit: 10 });
    assert.deepEqual(page.records.find((p) => p.principalId === record.principalId), record);
  });

  test("principals: the audit entries of an issuance and a revocation keep the subject's name", async (store) => {
    const record = testPrincipal({ name: "deploy bot" });
    const issued = auditInput({
      action: "principal.issued",
      subjectId: record.principalId,
      subjectName: "deploy bot",
    });
    assert.equal(await store.principals.create(record, undefined, issued), "created");
    const revoked = auditInput({
      action: "principal.revoked",
      subjectId: record.principalId,
      subjectName: "deploy bot",
    });
    assert.equal(await store.principals.revoke(record.principalId, issued.at, revoked), "revoked");
    const entries = (await store.audit.list({ limit: 10, principalId: record.principalId }))
      .entries;
    assert.deepEqual(
      entries.map((entry) => [entry.action, entry.subjectName]),
      [["principal.revoked", "deploy bot"], ["principal.issued", "deploy bot"]],
    );
    const other = await store.audit.append(auditInput({ action: "run.started" }));
    assert.equal("subjectName" in other, false);
    const listed = (await store.audit.list({ limit: 10, action: "run.started" })).entries;
    assert.equal(listed.some((entry) => "subjectName" in entry), false);
  });

  test("principals: a principal's resource policy lists read back intact, empty ones too", async (store) => {
    const record = testPrincipal({
      agentIds: ["agent_a"],
      environmentIds: ["env_a", "env_b"],
      vaultIds: [],
      memoryStoreIds: ["memstore_1"],
      repositories: ["acme/tools"],
      fileIds: ["file_1", "file_2"],
      maxActiveRuns: 2,
    });
    assert.equal(await store.principals.create(record), "created");
    assert.deepEqual(await store.principals.get(record.principalId), record);
    assert.deepEqual(await store.principals.findByDigest(record.bearerDigest), record);
    const [listed] = (await store.principals.page({ limit: 10 })).records;
    assert.deepEqual(listed, record);
    // A record without any list (written before the resource policy) reads back without one.
    const plain = testPrincipal();
    assert.equal(await store.principals.create(plain), "created");
    const read = await store.principals.get(plain.principalId);
    assert.equal(read !== null && "vaultIds" in read, false);
  });

  test("principals: creating an existing id or digest answers exists and changes nothing", async (store) => {
    const record = testPrincipal();
    assert.equal(await store.principals.create(record), "created");
    const sameId = testPrincipal({ principalId: record.principalId });
    assert.equal(await store.principals.create(sameId), "exists");
    const sameDigest = testPrincipal({ bearerDigest: record.bearerDigest });
    assert.equal(await store.principals.create(sameDigest), "exists");
    assert.deepEqual(await store.principals.get(record.principalId), record);
    assert.equal(await store.principals.findByDigest(sameId.bearerDigest), null);
    assert.equal(await store.principals.get(sameDigest.principalId), null);
  });

  test("principals: 50 concurrent creations of one id: exactly one succeeds", async (store) => {
    const principalId = crypto.randomUUID();
    const records = Array.from({ length: 50 }, () => testPrincipal({ principalId }));
    const results = await Promise.all(records.map((record) => store.principals.create(record)));
    assert.equal(results.filter((result) => result === "created").length, 1);
    assert.equal(results.filter((result) => result === "exists").length, 49);
    const winner = records[results.indexOf("created")];
    assert.deepEqual(await store.principals.get(principalId), winner);
    assert.equal((await store.principals.list()).length, 1);
    for (const record of records) {
      const found = await store.principals.findByDigest(record.bearerDigest);
      assert.deepEqual(found, record === winner ? winner : null);
    }
  });

  test("principals: revocation is recorded once and is idempotent; unknown ids are notFound", async (store) => {
    const record = testPrincipal();
    await store.principals.create(record);
    const first = "2026-01-02T03:04:05.000Z";
    // The audit entry goes with the revocation that happens, and with no other answer.
    const entry = (subjectId: string) =>
      auditInput({ at: first, action: "principal.revoked", subjectId });
    const revocations = async () =>
      (await store.audit.list({ limit: 100, action: "principal.revoked" })).entries;
    const audited = entry(record.principalId);
    assert.equal(await store.principals.revoke(record.principalId, first, audited), "revoked");
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
      await store.principals.revoke(
        record.principalId,
        "2026-02-02T00:00:00.000Z",
        entry(record.principalId),
      ),
      "alreadyRevoked",
    );
    const unknown = crypto.randomUUID();
    assert.equal(await store.principals.revoke(unknown, first, entry(unknown)), "notFound");
    assert.equal((await revocations()).length, 1);
    assert.equal((await store.principals.get(record.principalId))?.revokedAt, first);
    assert.equal((await store.principals.findByDigest(record.bearerDigest))?.revokedAt, first);
    assert.equal(await store.principals.revoke(crypto.randomUUID(), first), "notFound");
  });

  test("principals: list returns every principal oldest first, revoked ones included", async (store) => {
    const base = Date.now();
    const middle = testPrincipal({ createdAt: new Date(base + 1_000).toISOString() });
    const oldest = testPrincipal({ createdAt: new Date(base).toISOString() });
    const newest = testPrincipal({ createdAt: new Date(base + 2_000).toISOString() });
    for (const record of [middle, newest, oldest]) await store.principals.create(record);
    await store.principals.revoke(middle.principalId, new Date(base + 3_000).toISOString());
    const listed = await store.principals.list();
    assert.deepEqual(listed.map((record) => record.principalId), [
      oldest.principalId,
      middle.principalId,
      newest.principalId,
    ]);
    assert.equal(listed[1].revokedAt, new Date(base + 3_000).toISOString());
  });

  test("principals: create appends its audit entry in the same step, and none when nothing is created", async (store) => {
    const now = Date.now();
    const entry = (subjectId: string) =>
      auditInput({ at: new Date(now).toISOString(), action: "principal.issued", subjectId });
    const issued = async () =>
      (await store.audit.list({ limit: 100, action: "principal.issued" })).entries;
    // Without an idempotency key.
    const plain = testPrincipal();
    assert.equal(
      await store.principals.create(plain, undefined, entry(plain.principalId)),
      "created",
    );
    assert.equal(
      await store.principals.create(
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
      () => store.audit.append({ ...entry(crypto.randomUUID()), action: "run.started" }),
    );
    const results = await Promise.all(
      many.map((record) => store.principals.create(record, recording(), entry(record.principalId))),
    );
    assert.deepEqual(results, many.map(() => "created"));
    await Promise.all(others);
    const used = recording();
    const first = testPrincipal();
    assert.equal(await store.principals.create(first, used, entry(first.principalId)), "created");
    const repeat = await store.principals.create(testPrincipal(), used, entry("repeat"));
    assert.notEqual(repeat, "created");
    // Completing a claim.
    const scope = randomHex();
    const claim = await store.idempotency.claim({
      scope,
      requestDigest: randomHex(),
      now,
      leaseMs: 60_000,
      expiresAt: now + DAY,
    });
    assert.ok(claim.state === "claimed");
    const claimed = testPrincipal();
    assert.equal(
      await store.principals.create(claimed, {
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
    const all = (await store.audit.list({ limit: 100 })).entries;
    assert.equal(all.length, entries.length + 8);
    assert.equal(new Set(all.map((item) => item.seq)).size, all.length, "no two share a seq");
  });

  test("principals: create completes the idempotency claim in the same step", async (store) => {
    const now = Date.now();
    const params = freshClaim(now);
    const claim = await store.idempotency.claim(params);
    assert.ok(claim.state === "claimed");
    const record = testPrincipal();
    const response = { status: 201, body: JSON.stringify({ principalId: record.principalId }) };
    const result = await store.principals.create(record, {
      scope: params.scope,
      token: claim.token,
      response,
      expiresAt: params.expiresAt,
    });
    assert.equal(result, "created");
    assert.deepEqual(await store.principals.get(record.principalId), record);
    assert.deepEqual(await store.idempotency.claim(params), { state: "completed", response });
  });

  test("principals: create that finds the id taken leaves the claim unfinished", async (store) => {
    const now = Date.now();
    const existing = testPrincipal();
    await store.principals.create(existing);
    const params = freshClaim(now);
    const claim = await store.idempotency.claim(params);
    assert.ok(claim.state === "claimed");
    const result = await store.principals.create(
      testPrincipal({ principalId: existing.principalId }),
      {
        scope: params.scope,
        token: claim.token,
        response: { status: 201, body: "{}" },
        expiresAt: params.expiresAt,
      },
    );
    assert.equal(result, "exists");
    assert.deepEqual(await store.idempotency.claim(params), { state: "inFlight" });
    const conflict = { status: 409, body: '{"error":{"code":"principalExists"}}' };
    await store.idempotency.complete({
      scope: params.scope,
      token: claim.token,
      response: conflict,
      expiresAt: params.expiresAt,
    });
    assert.deepEqual(await store.idempotency.claim(params), {
      state: "completed",
      response: conflict,
    });
  });

  test("principals: create with a claim taken over writes nothing and throws IdempotencyLeaseLostError", async (store) => {
    const now = Date.now();
    const params = freshClaim(now, 1_000);
    const first = await store.idempotency.claim(params);
    assert.ok(first.state === "claimed");
    const second = await store.idempotency.claim({ ...params, now: now + 1_500 });
    assert.ok(second.state === "claimed");
    const record = testPrincipal();
    await assert.rejects(
      () =>
        store.principals.create(record, {
          scope: params.scope,
          token: first.token,
          response: { status: 201, body: "{}" },
          expiresAt: params.expiresAt,
        }),
      IdempotencyLeaseLostError,
    );
    assert.equal(await store.principals.get(record.principalId), null);
    assert.equal(await store.principals.findByDigest(record.bearerDigest), null);
    assert.deepEqual(await store.idempotency.claim({ ...params, now: now + 1_600 }), {
      state: "inFlight",
    });
  });

  test("principals: create with a recording creates and records the answer in one step", async (store) => {
    const record = testPrincipal();
    const params = recording(record);
    assert.equal(await store.principals.create(record, params), "created");
    assert.deepEqual(await store.principals.get(record.principalId), record);
    assert.deepEqual(await store.principals.findByDigest(record.bearerDigest), record);
    const claim = { ...params, now: params.now + 1, leaseMs: 60_000 };
    assert.deepEqual(await store.idempotency.claim(claim), {
      state: "completed",
      response: params.response,
    });
    assert.deepEqual(
      await store.idempotency.claim({ ...claim, requestDigest: randomHex() }),
      { state: "conflict" },
    );
  });

  test("principals: a recording on a used key writes nothing and reports what the key holds", async (store) => {
    const first = testPrincipal();
    const params = recording(first);
    assert.equal(await store.principals.create(first, params), "created");
    const again = testPrincipal();
    assert.deepEqual(
      await store.principals.create(again, { ...params, now: params.now + 1 }),
      { state: "completed", response: params.response },
    );
    assert.deepEqual(
      await store.principals.create(again, { ...params, requestDigest: randomHex() }),
      { state: "conflict" },
    );

    const held = recording(again);
    const claim = await store.idempotency.claim({ ...held, leaseMs: 60_000 });
    assert.ok(claim.state === "claimed");
    assert.deepEqual(await store.principals.create(again, { ...held, now: held.now + 1 }), {
      state: "inFlight",
    });
    assert.deepEqual(
      await store.principals.create(again, { ...held, requestDigest: randomHex() }),
      {
        state: "conflict",
      },
    );
    assert.equal(await store.principals.get(again.principalId), null);
    assert.equal(await store.principals.findByDigest(again.bearerDigest), null);
    assert.equal((await store.principals.list()).length, 1);
  });

  test("principals: a recording whose id or digest is taken answers exists and leaves the key unused", async (store) => {
    const existing = testPrincipal();
    assert.equal(await store.principals.create(existing), "created");
    const sameId = testPrincipal({ principalId: existing.principalId });
    const byId = recording(sameId);
    assert.equal(await store.principals.create(sameId, byId), "exists");
    const sameDigest = testPrincipal({ bearerDigest: existing.bearerDigest });
    const byDigest = recording(sameDigest);
    assert.equal(await store.principals.create(sameDigest, byDigest), "exists");
    assert.deepEqual(await store.principals.get(existing.principalId), existing);
    assert.equal(await store.principals.get(sameDigest.principalId), null);
    for (const params of [byId, byDigest]) {
      assert.equal(
        (await store.idempotency.claim({ ...params, leaseMs: 60_000 })).state,
        "claimed",
      );
    }
  });

  test("principals: a recording takes over an expired record, or a lapsed claim of the same body", async (store) => {
    const now = Date.now();
    const lapsed = testPrincipal();
    const stale = recording(lapsed, now);
    const claim = await store.idempotency.claim({ ...stale, leaseMs: 1_000 });
    assert.ok(claim.state === "claimed");
    assert.deepEqual(
      await store.principals.create(lapsed, {
        ...stale,
        requestDigest: randomHex(),
        now: now + 1_500,
      }),
      { state: "conflict" },
      "a lapsed claim of another body still holds the key",
    );
    assert.equal(await store.principals.create(lapsed, { ...stale, now: now + 1_500 }), "created");
    await store.idempotency.complete({
      scope: stale.scope,
      token: claim.token,
      response: { status: 200, body: '{"who":"crashed"}' },
      expiresAt: stale.expiresAt,
    });
    assert.deepEqual(await store.idempotency.claim({ ...stale, now: now + 2_000, leaseMs: 1 }), {
      state: "completed",
      response: stale.response,
    });

    const old = recording(testPrincipal(), now);
    const oldClaim = await store.idempotency.claim({
      ...old,
      leaseMs: 100,
      expiresAt: now + 1_000,
    });
    assert.ok(oldClaim.state === "claimed");
    await store.idempotency.complete({
      scope: old.scope,
      token: oldClaim.token,
      response: { status: 422, body: "{}" },
      expiresAt: now + 1_000,
    });
    const fresh = testPrincipal();
    const renewed = { ...old, requestDigest: randomHex(), now: now + 2_000 };
    assert.equal(await store.principals.create(fresh, renewed), "created");
    assert.deepEqual(await store.idempotency.claim({ ...renewed, now: now + 2_001, leaseMs: 1 }), {
      state: "completed",
      response: old.response,
    });
    // The purge keeps the renewed record: it expires a day after the takeover.
    assert.equal(await store.idempotency.purgeExpired(now + 3_000), 0);
  });

  test("principals: 50 concurrent recordings on one key: exactly one creates, the others get its answer", async (store) => {
    const now = Date.now();
    const params = recording(testPrincipal(), now);
    const records = Array.from({ length: 50 }, () => testPrincipal());
    const results = await Promise.all(
      records.map((record) => store.principals.create(record, params)),
    );
    assert.equal(results.filter((result) => result === "created").length, 1);
    for (const result of results.filter((result) => result !== "created")) {
      assert.deepEqual(result, { state: "completed", response: params.response });
    }
    const winner = records[results.indexOf("created")];
    assert.deepEqual(
      (await store.principals.list()).map((record) => record.principalId),
      [winner.principalId],
    );
  });

  test("principals: 50 concurrent recordings of one id under 50 keys: one creates, the others exist", async (store) => {
    const principalId = crypto.randomUUID();
    const records = Array.from({ length: 50 }, () => testPrincipal({ principalId }));
    const params = records.map((record) => recording(record));
    const results = await Promise.all(
      records.map((record, index) => store.principals.create(record, params[index])),
    );
    assert.equal(results.filter((result) => result === "created").length, 1);
    assert.equal(results.filter((result) => result === "exists").length, 49);
    const winner = results.indexOf("created");
    assert.deepEqual(await store.principals.get(principalId), records[winner]);
    for (const [index, key] of params.entries()) {
      const claim = await store.idempotency.claim({ ...key, now: key.now + 1, leaseMs: 60_000 });
      assert.equal(claim.state, index === winner ? "completed" : "claimed");
    }
  });

  test("principals: concurrent recordings of many principals, some sharing a key or an id, each decide alone", async (store) => {
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
      calls.map(({ record, params }) => store.principals.create(record, params)),
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
    const listed = await store.principals.list();
    assert.equal(listed.length, 30);
    assert.deepEqual(
      await store.principals.get(records[1].principalId),
      calls[idWinners[0]].record,
    );
    for (let index = 2; index < 30; index++) {
      assert.deepEqual(
        await store.principals.findByDigest(records[index].bearerDigest),
        records[index],
      );
    }
  });

  test("principals: page pages oldest first with no gap or repeat", async (store) => {
    const base = Date.now() - DAY;
    const records: PrincipalRecord[] = [];
    for (let i = 0; i < 7; i++) {
      // Two share each creation time: the id breaks the tie.
      const record = testPrincipal({ createdAt: new Date(base + Math.floor(i / 2)).toISOString() });
      records.push(record);
      assert.equal(await store.principals.create(record), "created");
    }
    const all = await store.principals.list();
    const seen: PrincipalRecord[] = [];
    const sizes: number[] = [];
    let after = undefined;
    do {
      const page: Awaited<ReturnType<Store["principals"]["page"]>> = await store.principals.page(
        after === undefined ? { limit: 3 } : { limit: 3, after },
      );
      sizes.push(page.records.length);
      seen.push(...page.records);
      after = page.next ?? undefined;
    } while (after !== undefined);
    assert.deepEqual(sizes, [3, 3, 1]);
    assert.deepEqual(seen, all);
    assert.equal(seen.length, 7);
    const exact = await store.principals.page({ limit: 7 });
    assert.equal(exact.records.length, 7);
    assert.equal(exact.next, null);
  });
}
