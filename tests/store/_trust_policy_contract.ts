/**
 * The trust policies part of the store contract: policies are created once by name (with their
 * audit entry), read, paged by name and deleted; an exchange creates its principal with the
 * token's use, the recorded answer and its audit entry in one step, and writes nothing when the
 * token was used, the policy is gone or replaced, the principal's id is taken or the key is used;
 * of concurrent exchanges of one token over two handles (two replicas), exactly one creates.
 * Registered by `runStoreContract` in `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import type {
  AuditEntryInput,
  PrincipalRecord,
  Store,
  TokenUse,
  TrustPolicyRecord,
} from "../../server/store/types.ts";
import {
  auditInput,
  type ContractCase,
  DAY,
  randomHex,
  testPrincipal,
  twinOf,
} from "./_fixtures.ts";

/** A valid trust policy record under a fresh name. */
export function testTrustPolicy(overrides: Partial<TrustPolicyRecord> = {}): TrustPolicyRecord {
  return {
    name: `ci-${crypto.randomUUID().slice(0, 8)}`,
    policyId: crypto.randomUUID(),
    issuer: "https://token.actions.githubusercontent.com",
    audience: "automation-runtime",
    claims: { repository: "octo-org/octo-repo", ref: "refs/heads/*" },
    capabilities: ["session:read", "session:write"],
    agentIds: ["agent_1"],
    maxActiveRuns: 2,
    ttlSeconds: 900,
    creatorId: crypto.randomUUID(),
    createdAt: new Date().toISOString(),
    ...overrides,
  };
}

/** An exchange's arguments under `policy`: a fresh principal, token, key and audit entry. */
function exchangeOf(policy: TrustPolicyRecord, now = Date.now()): {
  principal: PrincipalRecord;
  use: TokenUse;
  recording: {
    scope: string;
    requestDigest: string;
    now: number;
    response: { status: number; body: string };
    expiresAt: number;
  };
  audit: AuditEntryInput;
} {
  const principal = testPrincipal({ issuerId: policy.creatorId });
  return {
    principal,
    use: {
      policyName: policy.name,
      policyId: policy.policyId,
      tokenDigest: randomHex(),
      expiresAt: now + 360_000,
    },
    recording: {
      scope: randomHex(),
      requestDigest: randomHex(),
      now,
      response: { status: 201, body: JSON.stringify({ principalId: principal.principalId }) },
      expiresAt: now + DAY,
    },
    audit: auditInput({
      action: "token.exchanged",
      actorId: principal.principalId,
      subjectId: principal.principalId,
      trustPolicy: policy.name,
      token: {
        issuer: policy.issuer,
        subject: "repo:octo-org/octo-repo:ref:refs/heads/main",
        jwtId: crypto.randomUUID(),
        claims: { repository: "octo-org/octo-repo", ref: "refs/heads/main" },
      },
    }),
  };
}

async function exchangeAudits(store: Store, principalId: string) {
  const page = await store.audit.list({ limit: 100, action: "token.exchanged", principalId });
  return page.entries;
}

/** Registers the trust policy cases. */
export function runTrustPolicyContract(test: ContractCase): void {
  test("trust policies: created once by name with its audit entry, read back intact, deleted once", async (store) => {
    const policy = testTrustPolicy();
    const created = auditInput({ action: "trustPolicy.created", trustPolicy: policy.name });
    assert.equal(await store.trustPolicies.create(policy, created), "created");
    assert.deepEqual(await store.trustPolicies.get(policy.name), policy);
    const again = testTrustPolicy({ name: policy.name });
    assert.equal(
      await store.trustPolicies.create(again, auditInput({ action: "trustPolicy.created" })),
      "exists",
    );
    assert.deepEqual(await store.trustPolicies.get(policy.name), policy);
    const audits = await store.audit.list({ limit: 10, action: "trustPolicy.created" });
    assert.equal(audits.entries.length, 1, "the refused creation appended nothing");
    assert.equal(audits.entries[0].trustPolicy, policy.name);
    assert.equal(await store.trustPolicies.get("absent"), null);

    const deleted = auditInput({ action: "trustPolicy.deleted", trustPolicy: policy.name });
    assert.equal(await store.trustPolicies.delete(policy.name, deleted), "deleted");
    assert.equal(await store.trustPolicies.get(policy.name), null);
    assert.equal(
      await store.trustPolicies.delete(policy.name, auditInput({ action: "trustPolicy.deleted" })),
      "notFound",
    );
    const deletions = await store.audit.list({ limit: 10, action: "trustPolicy.deleted" });
    assert.equal(deletions.entries.length, 1);
  });

  test("trust policies: pages list every policy by name", async (store) => {
    const names = ["b-2", "a-1", "c.3", "A_0", "b-10"];
    for (const name of names) {
      assert.equal(await store.trustPolicies.create(testTrustPolicy({ name })), "created");
    }
    const seen: string[] = [];
    let after: string | undefined;
    do {
      const page = await store.trustPolicies.page({ limit: 2, after });
      assert.ok(page.records.length <= 2);
      seen.push(...page.records.map((record) => record.name));
      after = page.next ?? undefined;
    } while (after !== undefined);
    assert.deepEqual(seen, [...names].sort());
    const all = await store.trustPolicies.page({ limit: 10 });
    assert.equal(all.next, null);
    assert.equal(all.records.length, 5);
  });

  test("trust policies: an exchange creates the principal, the token's use, the answer and the audit entry", async (store) => {
    const policy = testTrustPolicy();
    await store.trustPolicies.create(policy);
    const { principal, use, recording, audit } = exchangeOf(policy);
    assert.equal(await store.trustPolicies.isTokenUsed(use.tokenDigest), false);
    assert.equal(await store.trustPolicies.exchange(principal, use, recording, audit), "created");
    assert.deepEqual(await store.principals.get(principal.principalId), principal);
    assert.equal(await store.trustPolicies.isTokenUsed(use.tokenDigest), true);
    const [entry] = await exchangeAudits(store, principal.principalId);
    assert.deepEqual(entry.token, audit.token);
    assert.equal(entry.trustPolicy, policy.name);
    // The same request again (same key, same body): its recorded answer, nothing written.
    const twin = testPrincipal();
    assert.deepEqual(await store.trustPolicies.exchange(twin, use, recording, audit), {
      state: "completed",
      response: recording.response,
    });
    assert.equal(await store.principals.get(twin.principalId), null);
    assert.equal((await exchangeAudits(store, principal.principalId)).length, 1);
  });

  test("trust policies: a used token, a gone or replaced policy, a taken id: nothing is written", async (store) => {
    const policy = testTrustPolicy();
    await store.trustPolicies.create(policy);
    const first = exchangeOf(policy);
    assert.equal(
      await store.trustPolicies.exchange(first.principal, first.use, first.recording, first.audit),
      "created",
    );

    // The same token under another key: replayed.
    const replay = exchangeOf(policy);
    assert.equal(
      await store.trustPolicies.exchange(
        replay.principal,
        first.use,
        replay.recording,
        replay.audit,
      ),
      "replayed",
    );
    // A taken principal id, with a fresh token.
    const taken = exchangeOf(policy);
    assert.equal(
      await store.trustPolicies.exchange(
        { ...taken.principal, principalId: first.principal.principalId },
        taken.use,
        taken.recording,
        taken.audit,
      ),
      "exists",
    );
    // A policy replaced under its name (another id), then deleted.
    const stale = exchangeOf(policy);
    await store.trustPolicies.delete(policy.name);
    await store.trustPolicies.create(testTrustPolicy({ name: policy.name }));
    assert.equal(
      await store.trustPolicies.exchange(stale.principal, stale.use, stale.recording, stale.audit),
      "policyGone",
    );
    await store.trustPolicies.delete(policy.name);
    assert.equal(
      await store.trustPolicies.exchange(stale.principal, stale.use, stale.recording, stale.audit),
      "policyGone",
    );

    for (const refused of [replay, taken, stale]) {
      assert.equal(await store.principals.get(refused.principal.principalId), null);
      assert.equal(
        await store.idempotency.lookup(
          refused.recording.scope,
          refused.recording.requestDigest,
          refused.recording.now,
        ),
        null,
        "no answer was recorded",
      );
      assert.equal((await exchangeAudits(store, refused.principal.principalId)).length, 0);
    }
    assert.equal(await store.trustPolicies.isTokenUsed(taken.use.tokenDigest), false);
    assert.equal(await store.trustPolicies.isTokenUsed(stale.use.tokenDigest), false);
  });

  test(
    "trust policies: 20 concurrent exchanges of one token over two handles: exactly one creates",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const policy = testTrustPolicy();
        await store.trustPolicies.create(policy);
        const token = exchangeOf(policy).use;
        const attempts = Array.from({ length: 20 }, () => exchangeOf(policy));
        const results = await Promise.all(
          attempts.map((attempt, index) =>
            (index % 2 === 0 ? store : twin).trustPolicies.exchange(
              attempt.principal,
              token,
              attempt.recording,
              attempt.audit,
            )
          ),
        );
        assert.equal(results.filter((result) => result === "created").length, 1);
        assert.equal(results.filter((result) => result === "replayed").length, 19);
        const created = attempts.filter((_, index) => results[index] === "created");
        const principals = await store.principals.list();
        assert.deepEqual(principals.map((record) => record.principalId), [
          created[0].principal.principalId,
        ]);
      } finally {
        await twin.close();
      }
    },
  );

  test("trust policies: token uses are purged once expired", async (store) => {
    const policy = testTrustPolicy();
    await store.trustPolicies.create(policy);
    const now = Date.now();
    const early = exchangeOf(policy, now);
    const late = exchangeOf(policy, now);
    late.use.expiresAt = now + 10 * 60_000;
    for (const { principal, use, recording, audit } of [early, late]) {
      assert.equal(await store.trustPolicies.exchange(principal, use, recording, audit), "created");
    }
    assert.equal(await store.trustPolicies.purgeTokenUses(now + 6 * 60_000), 1);
    assert.equal(await store.trustPolicies.isTokenUsed(early.use.tokenDigest), false);
    assert.equal(await store.trustPolicies.isTokenUsed(late.use.tokenDigest), true);
  });
}
