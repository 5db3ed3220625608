/**
 * The token exchange on two real `serve` replicas sharing one PostgreSQL database, with a local
 * OIDC issuer on loopback: the same ID token sent to both at once yields one principal (its
 * `jti` is used once across replicas); a trust policy deleted on A stops exchanges on B at once,
 * while the principal B issued under it keeps working until its own short expiry. No log line of
 * either replica holds the token or the bearer.
 */
import assert from "node:assert/strict";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import { LocalOidcIssuer } from "../support/oidc_issuer.ts";
import { sharedHeaders } from "../support/server.ts";
import { policyBody } from "../oidc/_exchange.ts";
import {
  type Answer,
  assertNotLogged,
  listAll,
  type Replica,
  startReplicas,
  use,
} from "./_replicas.ts";

async function call(
  replica: Replica,
  method: string,
  path: string,
  options: { bearer?: string; body?: unknown } = {},
): Promise<Answer> {
  const headers = sharedHeaders(options.bearer ?? null);
  if (method === "POST") headers.set("idempotency-key", crypto.randomUUID());
  if (options.body !== undefined) headers.set("content-type", "application/json");
  const response = await fetch(`${replica.url}${path}`, {
    client: replica.client,
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text ? JSON.parse(text) : null,
  };
}

function exchange(replica: Replica, token: string, policy: string): Promise<Answer> {
  return call(replica, "POST", "/v1/token-exchange", {
    body: {
      grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
      subject_token: token,
      subject_token_type: "urn:ietf:params:oauth:token-type:id_token",
      policy,
    },
  });
}

Deno.test({
  name:
    `replicas: one ID token sent to A and B at once yields one principal; a policy deleted on A stops B at once${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const issuer = await LocalOidcIssuer.start();
    try {
      await using replicas = await startReplicas(db.url, {
        env: () => ({ AUTOMATION_RUNTIME_OIDC_ALLOW_LOOPBACK_HTTP: "true" }),
      });
      const [a, b] = replicas.servers;
      const created = await call(a, "POST", "/v1/trust-policies", {
        bearer: replicas.admin,
        body: policyBody(issuer.issuer, { ttlSeconds: 60 }),
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));

      const tokens: string[] = [];
      for (let round = 0; round < 3; round++) {
        const token = await issuer.mint();
        tokens.push(token);
        const answers = await Promise.all([
          exchange(a, token, "octo-repo"),
          exchange(b, token, "octo-repo"),
        ]);
        const statuses = answers.map((answer) => answer.status).sort();
        assert.deepEqual(
          statuses,
          [201, 401],
          JSON.stringify(answers.map((x) => x.body?.error ?? x.body?.principalId)),
        );
        const refused = answers.find((answer) => answer.status === 401)!;
        assert.equal(refused.body.error.details.reason, "replayed");
      }
      const principals = await listAll(b, replicas.admin);
      assert.equal(principals.length, 3, "one principal per token");

      // Issued on B, then the policy deleted on A: B refuses the next exchange at once.
      const issued = await exchange(b, await issuer.mint(), "octo-repo");
      assert.equal(issued.status, 201);
      const deleted = await call(a, "DELETE", "/v1/trust-policies/octo-repo", {
        bearer: replicas.admin,
      });
      assert.equal(deleted.status, 204);
      for (const replica of [b, a]) {
        const after = await exchange(replica, await issuer.mint(), "octo-repo");
        assert.equal(after.status, 401);
        assert.equal(after.body.error.details.reason, "unknownPolicy");
      }
      // The principal issued before keeps working on both, until its own 60 s expiry.
      const bearer: string = issued.body.bearer;
      assert.equal((await use(a, bearer)).status, 200);
      assert.equal((await use(b, bearer)).status, 200);
      const expiresIn = Date.parse(issued.body.expiresAt) - Date.now();
      assert.ok(expiresIn > 0 && expiresIn <= 60_000, `expires in ${expiresIn} ms`);

      for (const token of tokens) {
        assertNotLogged(replicas.servers, token.split(".")[2]);
        assertNotLogged(replicas.servers, token.split(".")[1]);
      }
      assertNotLogged(replicas.servers, bearer);
    } finally {
      await issuer.close();
    }
  },
});
