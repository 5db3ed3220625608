/**
 * Black-box tests of issuing, revoking and listing principals (docs/http-api.md "Principals").
 */
import assert from "node:assert/strict";
import { startServer } from "../support/server.ts";
import { assertEchoes, assertError, call, issuePrincipal, principalBody } from "./_http.ts";

const DAY = 86_400_000;
const BEARER = /^art_[A-Za-z0-9_-]{43}$/;

Deno.test("principals: issue, grant rules, revoke and list through the real serve", async (t) => {
  // The bootstrap lacks session:write and expires in 60 days, so the subset and the
  // caller-expiry rules can both be hit.
  const bootstrapExpiry = new Date(Date.now() + 60 * DAY).toISOString();
  const server = await startServer({
    bootstrap: { capabilities: ["session:read", "authority:admin"], expiresAt: bootstrapExpiry },
  });
  const { url, bearer } = server;

  async function post(body: unknown, key: string = crypto.randomUUID()) {
    return await call(url, "POST", "/v1/principals", {
      bearer,
      headers: { "idempotency-key": key },
      body,
    });
  }

  try {
    await t.step(
      "POST answers 201 with a one-time art_ bearer and cache-control no-store",
      async () => {
        const body = principalBody();
        const result = await post(body);
        assert.equal(result.status, 201, result.text);
        assertEchoes(result.headers, result.sent);
        assert.equal(result.headers.get("cache-control"), "no-store");
        // The resource lists an issued principal was given none of are answered empty.
        assert.deepEqual(Object.keys(result.json), [
          "principalId",
          "capabilities",
          "expiresAt",
          "vaultIds",
          "memoryStoreIds",
          "repositories",
          "fileIds",
          "maxActiveRuns",
          "bearer",
        ]);
        assert.equal(result.json.maxActiveRuns, 8);
        assert.equal(result.json.principalId, body.principalId);
        assert.deepEqual(result.json.capabilities, body.capabilities);
        assert.equal(result.json.expiresAt, body.expiresAt);
        assert.match(result.json.bearer, BEARER);

        const runtime = await call(url, "GET", "/v1/runtime", { bearer: result.json.bearer });
        assert.equal(runtime.status, 200, runtime.text);
        assert.deepEqual(runtime.json, {
          interfaceVersion: "2026-07-23",
          principalId: body.principalId,
          capabilities: body.capabilities,
          expiresAt: body.expiresAt,
          runs: false,
          vaultIds: [],
          memoryStoreIds: [],
          repositories: [],
          fileIds: [],
          maxActiveRuns: 8,
        });
      },
    );

    await t.step("expiresAt with an offset is answered in UTC", async () => {
      const at = new Date(Date.now() + 2 * DAY);
      at.setUTCMilliseconds(0);
      const local = at.toISOString().replace(/\.000Z$/, "+00:00");
      const result = await post(principalBody({ expiresAt: local }));
      assert.equal(result.status, 201, result.text);
      assert.equal(result.json.expiresAt, at.toISOString());
    });

    await t.step(
      "capabilities must be a subset of the caller's and never authority:admin",
      async () => {
        const cases: [string[], string][] = [
          [["session:write"], "capabilities"],
          [["session:read", "authority:admin"], "capabilities"],
        ];
        for (const [capabilities, path] of cases) {
          const result = await post(principalBody({ capabilities }));
          assertError(result, { status: 422, code: "invalidRequest", layer: "authority" });
          assert.ok(
            result.json.error.details.some((detail: { path: string }) => detail.path === path),
            result.text,
          );
        }
      },
    );

    await t.step("capabilities must be non-empty, unique and known", async () => {
      for (const capabilities of [[], ["session:read", "session:read"], ["session:delete"]]) {
        const result = await post(principalBody({ capabilities }));
        assertError(result, { status: 422, code: "invalidRequest", layer: "interface" });
        assert.equal(result.json.error.details[0].path.split(".")[0], "capabilities");
      }
    });

    await t.step("principalId must be a canonical lower-case UUID", async () => {
      for (const principalId of [crypto.randomUUID().toUpperCase(), "user-1", ""]) {
        const result = await post(principalBody({ principalId }));
        assertError(result, { status: 422, code: "invalidRequest", layer: "interface" });
        assert.equal(result.json.error.details[0].path, "principalId");
      }
    });

    await t.step(
      "expiresAt must be RFC 3339, future, at most 90 days, not after the caller",
      async () => {
        const syntax = await post(principalBody({ expiresAt: "next week" }));
        assertError(syntax, { status: 422, code: "invalidRequest", layer: "interface" });
        const cases = [
          new Date(Date.now() - 1_000).toISOString(),
          new Date(Date.now() + 91 * DAY).toISOString(),
          new Date(Date.parse(bootstrapExpiry) + 1_000).toISOString(),
        ];
        for (const expiresAt of cases) {
          const result = await post(principalBody({ expiresAt }));
          assertError(result, { status: 422, code: "invalidRequest", layer: "authority" });
          assert.equal(result.json.error.details[0].path, "expiresAt", result.text);
        }
        const ninety = await post(
          principalBody({ expiresAt: new Date(Date.now() + 59 * DAY).toISOString() }),
        );
        assert.equal(ninety.status, 201, ninety.text);
      },
    );

    await t.step(
      "an existing principalId under another key answers 409 principalExists",
      async () => {
        const body = principalBody();
        assert.equal((await post(body)).status, 201);
        const again = await post(principalBody({ principalId: body.principalId }));
        assertError(again, { status: 409, code: "principalExists", layer: "authority" });
        const bootstrapId = await post(
          principalBody({ principalId: server.bootstrap.principalId }),
        );
        assertError(bootstrapId, { status: 409, code: "principalExists", layer: "authority" });
      },
    );

    await t.step("a principal without authority:admin cannot issue or revoke", async () => {
      const reader = await issuePrincipal(url, bearer, { capabilities: ["session:read"] });
      const issue = await call(url, "POST", "/v1/principals", {
        bearer: reader.bearer,
        headers: { "idempotency-key": crypto.randomUUID() },
        body: principalBody(),
      });
      assertError(issue, {
        status: 403,
        code: "missingCapability",
        layer: "auth",
        fields: { requiredCapability: "authority:admin" },
      });
      const revoke = await call(url, "DELETE", `/v1/principals/${reader.principalId}`, {
        bearer: reader.bearer,
      });
      assertError(revoke, { status: 403, code: "missingCapability", layer: "auth" });
    });

    await t.step(
      "DELETE answers 204 without a body, again 204, and the bearer is refused at once",
      async () => {
        const issued = await issuePrincipal(url, bearer);
        const first = await call(url, "DELETE", `/v1/principals/${issued.principalId}`, { bearer });
        assert.equal(first.status, 204);
        assert.equal(first.text, "");
        assertEchoes(first.headers, first.sent);
        const second = await call(url, "DELETE", `/v1/principals/${issued.principalId}`, {
          bearer,
        });
        assert.equal(second.status, 204);
        assert.equal(second.text, "");
        const refused = await call(url, "GET", "/v1/runtime", { bearer: issued.bearer });
        assertError(refused, { status: 401, code: "authenticationFailed", layer: "auth" });
      },
    );

    await t.step("DELETE of an unknown id answers 404 notFound", async () => {
      for (const id of [crypto.randomUUID(), "not-a-uuid"]) {
        const result = await call(url, "DELETE", `/v1/principals/${id}`, { bearer });
        assertError(result, { status: 404, code: "notFound", layer: "authority" });
      }
    });

    await t.step("the bootstrap principal cannot be revoked: 422 invalidRequest", async () => {
      const result = await call(
        url,
        "DELETE",
        `/v1/principals/${server.bootstrap.principalId}`,
        { bearer },
      );
      assertError(result, { status: 422, code: "invalidRequest", layer: "authority" });
      assert.equal((await call(url, "GET", "/v1/runtime", { bearer })).status, 200);
    });

    await t.step(
      "GET lists principals without bearers or digests, revokedAt where revoked",
      async () => {
        const kept = await issuePrincipal(url, bearer);
        const revoked = await issuePrincipal(url, bearer);
        await call(url, "DELETE", `/v1/principals/${revoked.principalId}`, { bearer });
        const result = await call(url, "GET", "/v1/principals", { bearer });
        assert.equal(result.status, 200, result.text);
        assertEchoes(result.headers, result.sent);
        const byId = new Map(
          result.json.principals.map((
            entry: { principalId: string },
          ) => [entry.principalId, entry]),
        );
        const keptEntry = byId.get(kept.principalId) as Record<string, unknown>;
        const revokedEntry = byId.get(revoked.principalId) as Record<string, unknown>;
        assert.equal(keptEntry.revokedAt, undefined);
        assert.equal(typeof revokedEntry.revokedAt, "string");
        assert.equal(keptEntry.issuerId, server.bootstrap.principalId);
        for (const entry of result.json.principals) {
          assert.deepEqual(
            Object.keys(entry).filter((key) => !["revokedAt"].includes(key)).sort(),
            [
              "capabilities",
              "createdAt",
              "expiresAt",
              "fileIds",
              "issuerId",
              "maxActiveRuns",
              "memoryStoreIds",
              "principalId",
              "repositories",
              "vaultIds",
            ],
          );
        }
        assert.ok(!result.text.includes(kept.bearer));
        assert.ok(!result.text.includes("art_"));
      },
    );
  } finally {
    await server.stop();
  }
});
