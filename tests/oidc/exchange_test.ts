/**
 * `POST /v1/token-exchange` through the server's HTTP handler, against a local OIDC issuer on
 * loopback: a valid token under a matching policy yields a working principal with exactly the
 * policy's scope; every hostile token is 401 with its reason and issues nothing; a key rotation
 * is picked up without a restart; a claim mismatch is 403; a token is exchanged once; a deleted
 * policy stops exchanges at once while its principals keep their expiry; the rate limits and the
 * in-flight quota hold the anonymous route; the token appears in no answer, log line or audit
 * entry; a policy's spend limits are its principals'.
 */
import assert from "node:assert/strict";
import { checkAnswer, routeContract } from "../../server/openapi/contract.ts";
import { idempotencyScope } from "../../server/rules/idempotency.ts";
import { loadBodySchemas } from "../../server/schemas/lazy.ts";
import { makeSigningKey, tamper } from "../support/oidc_issuer.ts";
import {
  type Answer,
  assertRefusedExchange,
  assertTokenAbsent,
  type ExchangeSetup,
  startExchange,
} from "./_exchange.ts";

/** Checks every answer so far against the route contracts of the OpenAPI document. */
async function assertContracts(setup: ExchangeSetup, answers: readonly Answer[]): Promise<void> {
  await loadBodySchemas(setup.server.routes);
  const exchange = routeContract(
    setup.server.routes.find((route) => route.path === "/v1/token-exchange")!,
  )!;
  for (const answer of answers) {
    assert.deepEqual(checkAnswer(exchange, answer), [], answer.text);
  }
}

async function exchangedAudits(setup: ExchangeSetup): Promise<Answer> {
  return await setup.call("GET", "/v1/audit?action=token.exchanged", { bearer: setup.admin });
}

Deno.test("a valid token under a matching policy yields a working principal with exactly the policy's scope", async () => {
  const setup = await startExchange();
  const { issuer, time } = setup;
  try {
    assert.equal((await setup.createPolicy()).status, 201);
    const token = await issuer.mint();
    const key = crypto.randomUUID();
    const issued = await setup.exchange(token, "octo-repo", key);
    assert.equal(issued.status, 201, issued.text);
    assert.equal(issued.headers.get("cache-control"), "no-store");
    const { bearer, principalId, ...principal } = issued.body;
    assert.match(bearer, /^art_[A-Za-z0-9_-]{43}$/);
    const name = `repo:octo-org/octo-repo:ref:refs/heads/main @ ${new URL(issuer.issuer).host}`;
    assert.deepEqual(principal, {
      // Where it came from: the token's subject and its issuer.
      name,
      capabilities: ["session:read"],
      // The policy's TTL from now (the token's exp plus the TTL is later).
      expiresAt: new Date(time.now() + 900_000).toISOString(),
      // The policy's principal policy, every field of it (attach only what it names).
      agentIds: ["agent_1"],
      vaultIds: ["vault_ci"],
      memoryStoreIds: [],
      repositories: [],
      fileIds: [],
      maxActiveRuns: 2,
    });

    // The bearer works, with the policy's capabilities and run policy and nothing more.
    const me = await setup.call("GET", "/v1/runtime", { bearer });
    assert.equal(me.status, 200);
    assert.equal(me.body.principalId, principalId);
    assert.deepEqual(me.body.capabilities, ["session:read"]);
    assert.deepEqual(me.body.agentIds, ["agent_1"]);
    assert.deepEqual(me.body.vaultIds, ["vault_ci"]);
    assert.equal(me.body.maxActiveRuns, 2);
    const admin = await setup.call("GET", "/v1/principals", { bearer });
    assert.equal(admin.status, 403);
    assert.equal(admin.body.error.code, "missingCapability");
    const write = await setup.call("POST", "/v1/runs", { bearer, body: { input: "hi" } });
    assert.equal(write.status, 403);
    assert.equal(write.body.error.requiredCapability, "session:write");

    // Listed as issued by the policy's creator.
    const listed = await setup.call("GET", "/v1/principals", { bearer: setup.admin });
    assert.deepEqual(
      listed.body.principals.map((
        entry: { principalId: string; issuerId: string; name: string },
      ) => [
        entry.principalId,
        entry.issuerId,
        entry.name,
      ]),
      [[principalId, setup.adminId, name]],
    );

    // Audited: sub, jti and the matched claims; the new principal acted.
    const audits = await exchangedAudits(setup);
    assert.equal(audits.body.entries.length, 1);
    const [entry] = audits.body.entries;
    assert.equal(entry.actorId, principalId);
    assert.equal(entry.subjectId, principalId);
    assert.equal(entry.subjectName, name);
    assert.equal(entry.trustPolicy, "octo-repo");
    assert.equal(entry.outcome, "ok");
    assert.deepEqual(entry.token, {
      issuer: issuer.issuer,
      subject: "repo:octo-org/octo-repo:ref:refs/heads/main",
      jwtId: JSON.parse(atob(token.split(".")[1].replaceAll("-", "+").replaceAll("_", "/"))).jti,
      claims: { repository: "octo-org/octo-repo", ref: "refs/heads/main" },
    });

    // The same request again: the same principal and bearer, replayed.
    const replay = await setup.exchange(token, "octo-repo", key);
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(replay.body, issued.body);
    // The same token under another key: refused, nothing more issued.
    assertRefusedExchange(await setup.exchange(token, "octo-repo"), "replayed");
    assert.equal(
      (await setup.call("GET", "/v1/principals", { bearer: setup.admin })).body.principals.length,
      1,
    );
    assert.equal((await exchangedAudits(setup)).body.entries.length, 1);
    // Once the token expired, the same request still gets its recorded answer.
    time.advance(400);
    const late = await setup.exchange(token, "octo-repo", key);
    assert.equal(late.status, 201, late.text);
    assert.deepEqual(late.body, issued.body);
    await assertContracts(setup, [issued, replay, late]);
  } finally {
    await setup.close();
  }
});

Deno.test("the principal expires no later than the token's exp plus the policy's TTL, nor after its creator", async () => {
  const setup = await startExchange({ bootstrapTtlMs: 3_000_000 });
  const { issuer, time } = setup;
  try {
    assert.equal((await setup.createPolicy({ ttlSeconds: 600 })).status, 201);
    // A token that expired 30 s ago (within the skew): its exp plus the TTL binds.
    const now = Math.floor(time.now() / 1000);
    const stale = await issuer.mint({ iat: now - 300, nbf: now - 300, exp: now - 30 });
    const early = await setup.exchange(stale, "octo-repo");
    assert.equal(early.status, 201, early.text);
    assert.equal(early.body.expiresAt, new Date((now - 30 + 600) * 1000).toISOString());
    // An hour's TTL, but the bootstrap (the creator) expires in 50 minutes: its expiry binds.
    assert.equal((await setup.createPolicy({ name: "long", ttlSeconds: 3_600 })).status, 201);
    const fresh = await setup.exchange(await issuer.mint(), "long");
    assert.equal(fresh.status, 201, fresh.text);
    assert.equal(fresh.body.expiresAt, new Date(time.now() + 3_000_000).toISOString());
  } finally {
    await setup.close();
  }
});

Deno.test("a policy's spend limits are its principals': budget, maxRunCost and maxRunSeconds", async () => {
  const setup = await startExchange();
  const { issuer } = setup;
  try {
    const limits = {
      budget: { amount: "5000", currency: "USD", period: "month" },
      maxRunCost: { amount: "500", currency: "USD" },
      maxRunSeconds: 900,
    };
    const created = await setup.createPolicy(limits);
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(
      [created.body.budget, created.body.maxRunCost, created.body.maxRunSeconds],
      [limits.budget, limits.maxRunCost, 900],
    );
    const issued = await setup.exchange(await issuer.mint(), "octo-repo");
    assert.equal(issued.status, 201, issued.text);
    const me = await setup.call("GET", "/v1/runtime", { bearer: issued.body.bearer });
    assert.equal(me.status, 200);
    assert.deepEqual(
      [me.body.budget, me.body.maxRunCost, me.body.maxRunSeconds],
      [limits.budget, limits.maxRunCost, 900],
    );
    assert.deepEqual(me.body.spend.left, { amount: "5000", currency: "USD" });
  } finally {
    await setup.close();
  }
});

Deno.test("the eight hostile tokens are each refused with 401 and their reason, and nothing is issued", async () => {
  const setup = await startExchange();
  const { issuer, time } = setup;
  try {
    assert.equal((await setup.createPolicy()).status, 201);
    const now = Math.floor(time.now() / 1000);
    const valid = await issuer.mint();
    const hostile: [string, string][] = [
      [await issuer.mint({ aud: "another-service" }), "audienceMismatch"],
      [await issuer.mint({ iss: "https://token.actions.githubusercontent.com" }), "issuerMismatch"],
      [await issuer.mint({ iat: now - 900, nbf: now - 900, exp: now - 120 }), "expired"],
      [await issuer.mint({ nbf: now + 600, exp: now + 900 }), "notYetValid"],
      [issuer.unsigned(), "unsupportedAlgorithm"],
      [await issuer.hmacWithPublicKey(), "unsupportedAlgorithm"],
      [tamper(valid, { repository: "octo-org/octo-repo", ref: "refs/heads/evil" }), "badSignature"],
    ];
    const answers: Answer[] = [];
    for (const [token, reason] of hostile) {
      const answer = await setup.exchange(token, "octo-repo");
      assertRefusedExchange(answer, reason);
      assertTokenAbsent(token, [answer.text], "the refusal");
      answers.push(answer);
    }
    // An unknown kid: one refetch of the JWKS (the last load is over a minute old), then 401.
    time.advance(61);
    const fetched = issuer.jwksFetches;
    const unpublished = await makeSigningKey("RS256");
    const unknown = await issuer.mint({}, { key: unpublished });
    const refused = await setup.exchange(unknown, "octo-repo");
    assertRefusedExchange(refused, "unknownKey");
    assert.equal(issuer.jwksFetches, fetched + 1, "exactly one refetch");
    // At once again: no second refetch within the minute.
    assertRefusedExchange(
      await setup.exchange(await issuer.mint({}, { key: unpublished }), "octo-repo"),
      "unknownKey",
    );
    assert.equal(issuer.jwksFetches, fetched + 1);
    answers.push(refused);

    const principals = await setup.call("GET", "/v1/principals", { bearer: setup.admin });
    assert.deepEqual(principals.body.principals, []);
    assert.deepEqual((await exchangedAudits(setup)).body.entries, []);
    // Nothing refused burned a token: the valid one still exchanges.
    assert.equal((await setup.exchange(valid, "octo-repo")).status, 201);
    await assertContracts(setup, answers);
  } finally {
    await setup.close();
  }
});

Deno.test("a key rotation at the issuer is picked up without a restart", async () => {
  const setup = await startExchange();
  const { issuer, time } = setup;
  try {
    assert.equal((await setup.createPolicy()).status, 201);
    assert.equal((await setup.exchange(await issuer.mint(), "octo-repo")).status, 201);
    assert.equal(issuer.jwksFetches, 1);
    const old = issuer.current;
    await issuer.rotate({ keepOld: false });
    time.advance(61);
    const rotated = await setup.exchange(await issuer.mint(), "octo-repo");
    assert.equal(rotated.status, 201, rotated.text);
    assert.equal(issuer.jwksFetches, 2);
    // The withdrawn key verifies nothing any more.
    assertRefusedExchange(
      await setup.exchange(await issuer.mint({}, { key: old }), "octo-repo"),
      "unknownKey",
    );
  } finally {
    await setup.close();
  }
});

Deno.test("a claim mismatch (another branch, another repository) is 403 policyMismatch and burns nothing", async () => {
  const setup = await startExchange();
  const { issuer } = setup;
  try {
    const created = await setup.createPolicy({
      name: "main-only",
      claims: { repository: "octo-org/octo-repo", ref: "refs/heads/main" },
    });
    assert.equal(created.status, 201);
    const branch = await issuer.mint({ ref: "refs/heads/feature" });
    const other = await issuer.mint({ repository: "octo-org/other-repo" });
    for (const [token, claim] of [[branch, "ref"], [other, "repository"]]) {
      const answer = await setup.exchange(token, "main-only");
      assert.equal(answer.status, 403, answer.text);
      assert.equal(answer.body.error.code, "policyMismatch");
      assert.deepEqual(answer.body.error.details, { claim });
      assert.ok(!answer.text.includes("feature") && !answer.text.includes("other-repo"));
    }
    const principals = await setup.call("GET", "/v1/principals", { bearer: setup.admin });
    assert.deepEqual(principals.body.principals, []);
    assertRefusedExchange(await setup.exchange(branch, "unknown-policy"), "unknownPolicy");
  } finally {
    await setup.close();
  }
});

Deno.test("a deleted policy stops exchanges at once; principals it issued keep their expiry", async () => {
  const setup = await startExchange();
  const { issuer, time } = setup;
  try {
    assert.equal((await setup.createPolicy({ ttlSeconds: 600 })).status, 201);
    const issued = await setup.exchange(await issuer.mint(), "octo-repo");
    assert.equal(issued.status, 201);
    const deleted = await setup.call("DELETE", "/v1/trust-policies/octo-repo", {
      bearer: setup.admin,
    });
    assert.equal(deleted.status, 204);
    assertRefusedExchange(await setup.exchange(await issuer.mint(), "octo-repo"), "unknownPolicy");
    // The principal works until its own expiry, and not after.
    assert.equal(
      (await setup.call("GET", "/v1/runtime", { bearer: issued.body.bearer })).status,
      200,
    );
    time.advance(601);
    const expired = await setup.call("GET", "/v1/runtime", { bearer: issued.body.bearer });
    assert.equal(expired.status, 401);
    assert.equal(expired.body.error.code, "tokenExpired");
    // A policy created again under the name is another policy: it exchanges afresh.
    assert.equal((await setup.createPolicy()).status, 201);
    assert.equal((await setup.exchange(await issuer.mint(), "octo-repo")).status, 201);
  } finally {
    await setup.close();
  }
});

Deno.test("the rate limits hold the anonymous route, and an anonymous refusal writes nothing", async () => {
  const setup = await startExchange({
    tokenExchange: { perPolicyPerMinute: 2, totalPerMinute: 4 },
  });
  const { issuer, time } = setup;
  try {
    assert.equal((await setup.createPolicy()).status, 201);
    assert.equal((await setup.exchange(await issuer.mint(), "octo-repo")).status, 201);
    assert.equal((await setup.exchange(await issuer.mint(), "octo-repo")).status, 201);
    const key = crypto.randomUUID();
    const limited = await setup.exchange(await issuer.mint(), "octo-repo", key);
    assert.equal(limited.status, 429, limited.text);
    assert.equal(limited.body.error.code, "resourceExhausted");
    assert.equal(limited.headers.get("retry-after"), "30");
    // Unknown names count against the total (every attempt does): the fourth fills it.
    const unknownKey = crypto.randomUUID();
    assertRefusedExchange(await setup.exchange("x.y.z", "nobody", unknownKey), "unknownPolicy");
    const total = await setup.exchange("x.y.z", "nobody-else");
    assert.equal(total.status, 429);
    // The refusals recorded nothing under their keys (any body would meet a record there).
    for (const used of [key, unknownKey]) {
      const scope = idempotencyScope("", "POST", "/v1/token-exchange", used);
      assert.equal(await setup.store.idempotency.lookup(scope, "any", time.now()), null);
    }
    time.advance(30);
    const again = await setup.exchange(await issuer.mint(), "octo-repo", key);
    assert.equal(again.status, 201, again.text);
  } finally {
    await setup.close();
  }
});

Deno.test("the in-flight quota counts every anonymous exchange together", async () => {
  const setup = await startExchange({ inFlightQuota: 1 });
  const { issuer } = setup;
  try {
    assert.equal((await setup.createPolicy()).status, 201);
    const release = Promise.withResolvers<void>();
    // The issuer's documents arrive only once released.
    issuer.intercept = async (_request, path) => {
      await release.promise;
      return Response.json(
        path.endsWith("/jwks") ? issuer.jwksDocument() : issuer.discoveryDocument(),
      );
    };
    const slow = setup.exchange(await issuer.mint(), "octo-repo");
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await setup.exchange(await issuer.mint(), "octo-repo");
    assert.equal(second.status, 429);
    assert.equal(second.body.error.code, "resourceExhausted");
    release.resolve();
    assert.equal((await slow).status, 201);
  } finally {
    await setup.close();
  }
});

Deno.test("a body that trickles in is cut at the exchange's body time, and gives its slot back", async () => {
  const setup = await startExchange({
    wallClock: true,
    inFlightQuota: 1,
    tokenExchange: { bodyTimeoutMs: 300 },
  });
  const { issuer, time } = setup;
  try {
    assert.equal((await setup.createPolicy()).status, 201);
    // One byte, then nothing: the client holds the request open until its 300 s deadline.
    let stalled: ReadableStreamDefaultController<Uint8Array> | undefined;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        stalled = controller;
        controller.enqueue(new TextEncoder().encode("{"));
      },
    });
    const started = Date.now();
    const slow = await setup.server.handler(
      new Request("http://127.0.0.1/v1/token-exchange", {
        method: "POST",
        headers: {
          "x-interface-version": "2026-07-23",
          "x-correlation-id": crypto.randomUUID(),
          "x-deadline": new Date(time.now() + 299_000).toISOString(),
          "idempotency-key": crypto.randomUUID(),
          "content-type": "application/json",
        },
        body,
        duplex: "half",
      } as RequestInit),
    );
    const elapsed = Date.now() - started;
    assert.equal(slow.status, 408, await slow.text());
    assert.ok(elapsed < 5_000, `cut after ${elapsed} ms, not at the deadline`);
    try {
      stalled?.close();
    } catch {
      // The server cancelled the body already.
    }
    // The one anonymous slot is free again: a job's exchange goes through.
    const exchanged = await setup.exchange(await issuer.mint(), "octo-repo");
    assert.equal(exchanged.status, 201, exchanged.text);
  } finally {
    await setup.close();
  }
});

Deno.test("the exchange's body is checked without echoing it, and limited to 32 KiB", async () => {
  const setup = await startExchange();
  try {
    const token = await setup.issuer.mint();
    const wrongType = await setup.call("POST", "/v1/token-exchange", {
      body: {
        grant_type: "client_credentials",
        subject_token: token,
        subject_token_type: "urn:ietf:params:oauth:token-type:access_token",
        policy: "octo-repo",
      },
    });
    assert.equal(wrongType.status, 422);
    assert.deepEqual(
      wrongType.body.error.details.map((detail: { path: string }) => detail.path).sort(),
      ["grant_type", "subject_token_type"],
    );
    assertTokenAbsent(token, [wrongType.text], "the 422");
    const large = await setup.call("POST", "/v1/token-exchange", {
      body: { subject_token: "x".repeat(40_000) },
    });
    assert.equal(large.status, 413);
  } finally {
    await setup.close();
  }
});

Deno.test("the ID token appears in no answer, log line or audit entry", async () => {
  const setup = await startExchange();
  const { issuer } = setup;
  try {
    assert.equal((await setup.createPolicy()).status, 201);
    const tokens = [await issuer.mint(), await issuer.mint({ aud: "elsewhere" })];
    const key = crypto.randomUUID();
    assert.equal((await setup.exchange(tokens[0], "octo-repo", key)).status, 201);
    assert.equal((await setup.exchange(tokens[0], "octo-repo", key)).status, 201);
    assertRefusedExchange(await setup.exchange(tokens[0], "octo-repo"), "replayed");
    assertRefusedExchange(await setup.exchange(tokens[1], "octo-repo"), "audienceMismatch");
    assert.equal((await setup.exchange(tokens[1], "no-such")).status, 401);
    const audit = await setup.call("GET", "/v1/audit", { bearer: setup.admin });
    assert.ok(audit.body.entries.length >= 2);
    const logs = setup.logs();
    assert.ok(logs.some((line) => line.includes('"/v1/token-exchange"')), "requests were logged");
    for (const token of tokens) {
      assertTokenAbsent(token, setup.answers.map((answer) => answer.text), "an answer");
      assertTokenAbsent(token, logs, "a log line");
      assertTokenAbsent(token, [audit.text], "the audit log");
    }
  } finally {
    await setup.close();
  }
});

Deno.test("a policy whose creator is revoked exchanges nothing (policyInactive)", async () => {
  const setup = await startExchange();
  try {
    // Only the bootstrap holds authority:admin over HTTP, so the policy is written to the store
    // as an admin principal of an earlier grant would have made it.
    const creator = await setup.call("POST", "/v1/principals", {
      bearer: setup.admin,
      body: {
        principalId: crypto.randomUUID(),
        capabilities: ["session:read"],
        expiresAt: new Date(setup.time.now() + 86_400_000).toISOString(),
      },
    });
    assert.equal(creator.status, 201);
    const created = await setup.createPolicy();
    const record = (await setup.store.trustPolicies.get("octo-repo"))!;
    await setup.store.trustPolicies.delete("octo-repo");
    await setup.store.trustPolicies.create({ ...record, creatorId: creator.body.principalId });
    assert.equal(created.status, 201);
    assert.equal((await setup.exchange(await setup.issuer.mint(), "octo-repo")).status, 201);
    const revoked = await setup.call("DELETE", `/v1/principals/${creator.body.principalId}`, {
      bearer: setup.admin,
    });
    assert.equal(revoked.status, 204);
    assertRefusedExchange(
      await setup.exchange(await setup.issuer.mint(), "octo-repo"),
      "policyInactive",
    );
  } finally {
    await setup.close();
  }
});
