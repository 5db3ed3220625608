/**
 * The SDK's side of CI with no stored secret: `exchangeToken` against a server (in process, on
 * the wall clock) and a local OIDC issuer yields a working principal, a refusal is a typed error
 * without the token in it, a lost answer is retried and replayed (the same principal, never a
 * second); `client.trustPolicies` creates, lists and deletes; `requestGitHubActionsIdToken`
 * fetches a job's token from a local server playing GitHub's endpoint, and fails with a typed
 * error that never holds the request bearer.
 */
import assert from "node:assert/strict";
import {
  exchangeToken,
  requestGitHubActionsIdToken,
  RuntimeServiceClient,
  RuntimeServiceError,
} from "../../sdk/mod.ts";
import { policyBody, startExchange } from "../oidc/_exchange.ts";

Deno.test("exchangeToken yields a working principal; a refused token is a typed error without the token", async () => {
  const setup = await startExchange({ wallClock: true });
  try {
    const admin = new RuntimeServiceClient({
      baseUrl: "http://runtime.test",
      token: setup.admin,
      fetch: setup.fetch,
    });
    const created = await admin.trustPolicies.create(
      policyBody(setup.issuer.issuer, { capabilities: ["session:read", "session:write"] }) as never,
    );
    assert.equal(created.name, "octo-repo");
    assert.deepEqual((await admin.trustPolicies.list()).map((policy) => policy.name), [
      "octo-repo",
    ]);

    const principal = await exchangeToken({
      baseUrl: "http://runtime.test",
      idToken: await setup.issuer.mint(),
      policy: "octo-repo",
      fetch: setup.fetch,
    });
    assert.deepEqual(principal.capabilities, ["session:read", "session:write"]);
    const job = new RuntimeServiceClient({
      baseUrl: "http://runtime.test",
      token: principal.bearer,
      fetch: setup.fetch,
    });
    assert.equal((await job.runtime()).principalId, principal.principalId);

    const hostile = await setup.issuer.mint({ aud: "elsewhere" });
    let sent = 0;
    const error = await exchangeToken({
      baseUrl: "http://runtime.test",
      idToken: hostile,
      policy: "octo-repo",
      fetch: (input, init) => {
        sent++;
        return setup.fetch(input, init);
      },
    }).then(() => null, (error) => error);
    assert.ok(error instanceof RuntimeServiceError);
    assert.equal(error.status, 401);
    assert.equal(error.code, "authenticationFailed");
    assert.deepEqual(error.details.details, { reason: "audienceMismatch" });
    assert.equal(sent, 1, "a refusal is not retried");
    for (const part of hostile.split(".")) {
      assert.ok(!`${error.message} ${JSON.stringify(error.details)}`.includes(part));
    }
    await assert.rejects(
      () => exchangeToken({ baseUrl: "http://runtime.test", idToken: "not a jwt", policy: "x" }),
      TypeError,
    );

    await admin.trustPolicies.delete("octo-repo");
    assert.deepEqual(await admin.trustPolicies.list(), []);
  } finally {
    await setup.close();
  }
});

Deno.test("exchangeToken retries a lost answer with its key: the same principal, never a second", async () => {
  const setup = await startExchange({ wallClock: true });
  try {
    assert.equal((await setup.createPolicy()).status, 201);
    let attempts = 0;
    const principal = await exchangeToken({
      baseUrl: "http://runtime.test",
      idToken: await setup.issuer.mint(),
      policy: "octo-repo",
      fetch: async (input, init) => {
        const response = await setup.fetch(input, init);
        if (++attempts === 1) {
          await response.body?.cancel();
          throw new TypeError("connection reset");
        }
        return response;
      },
    });
    assert.equal(attempts, 2);
    const listed = await setup.call("GET", "/v1/principals", { bearer: setup.admin });
    assert.deepEqual(
      listed.body.principals.map((entry: { principalId: string }) => entry.principalId),
      [principal.principalId],
    );
    const job = await setup.call("GET", "/v1/runtime", { bearer: principal.bearer });
    assert.equal(job.status, 200);
  } finally {
    await setup.close();
  }
});

Deno.test("requestGitHubActionsIdToken asks GitHub's endpoint for the audience, with its bearer", async () => {
  const requestToken = `ghs_${crypto.randomUUID()}`;
  const seen: { audience: string | null; authorization: string | null }[] = [];
  let status = 200;
  const github = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const url = new URL(request.url);
    seen.push({
      audience: url.searchParams.get("audience"),
      authorization: request.headers.get("authorization"),
    });
    if (status !== 200) return new Response("nope", { status });
    return Response.json({ value: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln" });
  });
  const requestUrl = `http://127.0.0.1:${github.addr.port}/token?api-version=2.0`;
  try {
    const token = await requestGitHubActionsIdToken({
      audience: "automation-runtime",
      requestUrl,
      requestToken,
    });
    assert.equal(token, "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln");
    assert.deepEqual(seen, [{
      audience: "automation-runtime",
      authorization: `Bearer ${requestToken}`,
    }]);

    status = 403;
    const refused = await requestGitHubActionsIdToken({
      audience: "automation-runtime",
      requestUrl,
      requestToken,
    }).then(() => null, (error) => error);
    assert.ok(refused instanceof RuntimeServiceError);
    assert.equal(refused.code, "idTokenUnavailable");
    assert.equal(refused.status, 403);
    assert.ok(!refused.message.includes(requestToken) && !refused.message.includes("127.0.0.1"));

    const unset = await requestGitHubActionsIdToken({
      audience: "automation-runtime",
      requestUrl: undefined,
      requestToken: undefined,
    }).then(() => null, (error) => error);
    // The test process has no ACTIONS_ID_TOKEN_REQUEST_URL (unless it runs in GitHub Actions).
    if (Deno.env.get("ACTIONS_ID_TOKEN_REQUEST_URL") === undefined) {
      assert.ok(unset instanceof RuntimeServiceError);
      assert.match(unset.message, /id-token: write/);
    }
  } finally {
    await github.shutdown();
  }
});
