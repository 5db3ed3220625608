/**
 * The trust policy routes through the server's HTTP handler: created (idempotently, audited),
 * listed by name a page at a time, deleted (audited); never wider than the admin that made
 * them; an issuer must be https unless loopback http is allowed; the body's rules; admins only.
 */
import assert from "node:assert/strict";
import { checkAnswer, routeContract } from "../../server/openapi/contract.ts";
import { loadBodySchemas } from "../../server/schemas/lazy.ts";
import { type Answer, type ExchangeSetup, policyBody, startExchange } from "./_exchange.ts";

async function assertContracts(
  setup: ExchangeSetup,
  answers: readonly [string, Answer][],
): Promise<void> {
  await loadBodySchemas(setup.server.routes);
  for (const [method, answer] of answers) {
    const route = setup.server.routes.find((route) =>
      route.path.startsWith("/v1/trust-policies") && route.method === method
    )!;
    assert.deepEqual(checkAnswer(routeContract(route)!, answer), [], answer.text);
  }
}

Deno.test("trust policies are created, listed by name in pages and deleted, each audited", async () => {
  const setup = await startExchange();
  try {
    const created = await setup.createPolicy({ name: "b-policy", agentIds: undefined });
    assert.equal(created.status, 201, created.text);
    const { agentIds: _agentIds, ...sent } = policyBody(setup.issuer.issuer, { name: "b-policy" });
    // No agentIds: any the creator may use; no resource but those named; no policyId (the store's
    // own).
    assert.deepEqual(created.body, {
      ...sent,
      memoryStoreIds: [],
      repositories: [],
      fileIds: [],
      creatorId: setup.adminId,
      createdAt: new Date(setup.time.now()).toISOString(),
    });
    for (const name of ["a-policy", "c-policy"]) {
      assert.equal((await setup.createPolicy({ name })).status, 201);
    }
    const first = await setup.call("GET", "/v1/trust-policies?limit=2", { bearer: setup.admin });
    assert.equal(first.status, 200);
    assert.deepEqual(
      first.body.trustPolicies.map((policy: { name: string }) => policy.name),
      ["a-policy", "b-policy"],
    );
    assert.deepEqual(first.body.trustPolicies[1], created.body);
    const second = await setup.call(
      "GET",
      `/v1/trust-policies?limit=2&cursor=${first.body.nextCursor}`,
      { bearer: setup.admin },
    );
    assert.deepEqual(
      second.body.trustPolicies.map((policy: { name: string }) => policy.name),
      ["c-policy"],
    );
    assert.equal(second.body.nextCursor, null);
    const forged = await setup.call("GET", "/v1/trust-policies?cursor=W10", {
      bearer: setup.admin,
    });
    assert.equal(forged.status, 422);

    const deleted = await setup.call("DELETE", "/v1/trust-policies/b-policy", {
      bearer: setup.admin,
    });
    assert.equal(deleted.status, 204);
    for (const name of ["b-policy", "no%2Fsuch"]) {
      const again = await setup.call("DELETE", `/v1/trust-policies/${name}`, {
        bearer: setup.admin,
      });
      assert.equal(again.status, 404);
      assert.equal(again.body.error.code, "notFound");
    }
    const audit = await setup.call("GET", "/v1/audit", { bearer: setup.admin });
    assert.deepEqual(
      audit.body.entries.map((entry: { action: string; trustPolicy: string; actorId: string }) => [
        entry.action,
        entry.trustPolicy,
        entry.actorId,
      ]),
      [
        ["trustPolicy.deleted", "b-policy", setup.adminId],
        ["trustPolicy.created", "c-policy", setup.adminId],
        ["trustPolicy.created", "a-policy", setup.adminId],
        ["trustPolicy.created", "b-policy", setup.adminId],
      ],
    );
    await assertContracts(setup, [
      ["POST", created],
      ["GET", first],
      ["GET", second],
      ["GET", forged],
      ["DELETE", deleted],
    ]);
  } finally {
    await setup.close();
  }
});

Deno.test("a trust policy is never wider than the admin that made it", async () => {
  const setup = await startExchange();
  try {
    for (const capabilities of [["authority:admin"], ["session:read", "session:approve"]]) {
      const refused = await setup.createPolicy({ capabilities });
      assert.equal(refused.status, 422, refused.text);
      assert.equal(refused.body.error.layer, "authority");
      assert.equal(refused.body.error.details[0].path, "capabilities");
    }
    const listed = await setup.call("GET", "/v1/trust-policies", { bearer: setup.admin });
    assert.deepEqual(listed.body.trustPolicies, []);
    // A principal without authority:admin may not make one at all.
    const policy = await setup.createPolicy();
    assert.equal(policy.status, 201);
    const reader = await setup.exchange(await setup.issuer.mint(), "octo-repo");
    const byReader = await setup.call("POST", "/v1/trust-policies", {
      bearer: reader.body.bearer,
      body: policyBody(setup.issuer.issuer, { name: "mine" }),
    });
    assert.equal(byReader.status, 403);
    assert.equal(byReader.body.error.code, "missingCapability");
  } finally {
    await setup.close();
  }
});

Deno.test("a trust policy's issuer is https, loopback http only when the server allows it", async () => {
  const strict = await startExchange({ tokenExchange: { allowLoopbackHttp: false } });
  try {
    const loopback = await strict.createPolicy();
    assert.equal(loopback.status, 422, loopback.text);
    assert.equal(loopback.body.error.details[0].path, "issuer");
    assert.equal(
      (await strict.createPolicy({ issuer: "https://token.actions.githubusercontent.com" }))
        .status,
      201,
    );
  } finally {
    await strict.close();
  }
  const local = await startExchange();
  try {
    for (const issuer of ["http://ci.example", "https://CI.example", "https://ci.example?x=1"]) {
      const refused = await local.createPolicy({ issuer });
      assert.equal(refused.status, 422, issuer);
      assert.equal(refused.body.error.details[0].path, "issuer");
    }
    assert.equal((await local.createPolicy()).status, 201);
  } finally {
    await local.close();
  }
});

Deno.test("a trust policy's body: its name, TTL, claims and fields are checked; a name is taken once", async () => {
  const setup = await startExchange();
  try {
    const cases: [Record<string, unknown>, string][] = [
      [{ ttlSeconds: 3_601 }, "ttlSeconds"],
      [{ ttlSeconds: 59 }, "ttlSeconds"],
      [{ claims: {} }, "claims"],
      [{ claims: { jti: "*" } }, "claims"],
      [{ name: "-leading" }, "name"],
      [{ name: "a/b" }, "name"],
      [{ audience: "two words" }, "audience"],
      [{ capabilities: [] }, "capabilities"],
      [{ extra: true }, ""],
    ];
    for (const [overrides, path] of cases) {
      const refused = await setup.createPolicy(overrides);
      assert.equal(refused.status, 422, JSON.stringify(overrides));
      assert.equal(refused.body.error.details[0].path, path, refused.text);
    }
    const key = crypto.randomUUID();
    const body = policyBody(setup.issuer.issuer);
    const first = await setup.call("POST", "/v1/trust-policies", {
      bearer: setup.admin,
      body,
      key,
    });
    assert.equal(first.status, 201);
    const replay = await setup.call("POST", "/v1/trust-policies", {
      bearer: setup.admin,
      body,
      key,
    });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(replay.body, first.body);
    const taken = await setup.createPolicy();
    assert.equal(taken.status, 409);
    assert.equal(taken.body.error.code, "trustPolicyExists");
  } finally {
    await setup.close();
  }
});

Deno.test("a trust policy may grant agent overrides (its creator, an admin, may), and its principals carry them", async () => {
  const setup = await startExchange();
  try {
    // Only admins make trust policies, and an issued principal is never one: the grant rule
    // (an issuer grants overrides only when it has them) is `grantRunPolicy`'s, tested with the
    // provider interface.
    const policy = await setup.createPolicy({ allowAgentOverrides: true });
    assert.equal(policy.status, 201, policy.text);
    assert.equal(policy.body.allowAgentOverrides, true);
    const exchanged = await setup.exchange(await setup.issuer.mint(), "octo-repo");
    assert.equal(exchanged.status, 201, exchanged.text);
    assert.equal(exchanged.body.allowAgentOverrides, true);
    const me = await setup.call("GET", "/v1/runtime", { bearer: exchanged.body.bearer });
    assert.equal(me.body.allowAgentOverrides, true);
    // Without it, a policy's principals have none.
    await setup.call("DELETE", "/v1/trust-policies/octo-repo", { bearer: setup.admin });
    assert.equal((await setup.createPolicy()).status, 201);
    const plain = await setup.exchange(await setup.issuer.mint(), "octo-repo");
    assert.equal(plain.status, 201, plain.text);
    assert.equal("allowAgentOverrides" in plain.body, false);
  } finally {
    await setup.close();
  }
});
