/**
 * Black-box tests of idempotent POSTs (docs/http-api.md "Idempotency"), concurrency included.
 */
import assert from "node:assert/strict";
import { startServer } from "../support/server.ts";
import { assertEchoes, assertError, call, principalBody } from "./_http.ts";

const DAY = 86_400_000;

Deno.test("idempotency of POST /v1/principals through the real serve", async (t) => {
  const server = await startServer({
    bootstrap: { expiresAt: new Date(Date.now() + 365 * DAY).toISOString() },
  });
  const { url, bearer } = server;

  async function post(body: unknown, key: string, headers: Record<string, string> = {}) {
    return await call(url, "POST", "/v1/principals", {
      bearer,
      headers: { "idempotency-key": key, ...headers },
      body,
    });
  }

  async function listIds(): Promise<string[]> {
    const result = await call(url, "GET", "/v1/principals", { bearer });
    assert.equal(result.status, 200, result.text);
    return result.json.principals.map((entry: { principalId: string }) => entry.principalId);
  }

  try {
    await t.step("a repeated key with the same body replays the 201, bearer included", async () => {
      const key = crypto.randomUUID();
      const body = principalBody({
        expiresAt: new Date(Date.now() + 90 * DAY - 60_000).toISOString(),
      });
      const first = await post(body, key);
      assert.equal(first.status, 201, first.text);
      assert.equal(first.headers.get("idempotent-replayed"), null);
      const second = await post(body, key);
      assert.equal(second.status, 201, second.text);
      assert.equal(second.headers.get("idempotent-replayed"), "true");
      assert.equal(second.headers.get("cache-control"), "no-store");
      assertEchoes(second.headers, second.sent);
      assert.equal(second.text, first.text);
      const works = await call(url, "GET", "/v1/runtime", { bearer: second.json.bearer });
      assert.equal(works.status, 200);
      assert.equal((await listIds()).filter((id) => id === body.principalId).length, 1);
    });

    await t.step("the same key with a different body answers 422 idempotencyConflict", async () => {
      const key = crypto.randomUUID();
      const body = principalBody();
      assert.equal((await post(body, key)).status, 201);
      const reordered = `{"capabilities":${
        JSON.stringify(body.capabilities)
      },"principalId":"${body.principalId}","expiresAt":"${body.expiresAt}"}`;
      for (const other of [principalBody(), reordered]) {
        const result = await call(url, "POST", "/v1/principals", {
          bearer,
          headers: { "idempotency-key": key, "content-type": "application/json" },
          body: typeof other === "string" ? other : JSON.stringify(other),
        });
        assertError(result, { status: 422, code: "idempotencyConflict", layer: "idempotency" });
      }
    });

    await t.step("a 4xx from the handler is recorded and replayed", async () => {
      const existing = principalBody();
      assert.equal((await post(existing, crypto.randomUUID())).status, 201);
      const key = crypto.randomUUID();
      const clash = principalBody({ principalId: existing.principalId });
      const first = await post(clash, key);
      assertError(first, { status: 409, code: "principalExists", layer: "authority" });
      const second = await post(clash, key);
      assert.equal(second.status, 409);
      assert.equal(second.headers.get("idempotent-replayed"), "true");
      assert.equal(second.text, first.text);

      const badGrantKey = crypto.randomUUID();
      const badGrant = principalBody({ capabilities: ["authority:admin"] });
      const refused = await post(badGrant, badGrantKey);
      assertError(refused, { status: 422, code: "invalidRequest", layer: "authority" });
      const replayed = await post(badGrant, badGrantKey);
      assert.equal(replayed.headers.get("idempotent-replayed"), "true");
      assert.equal(replayed.text, refused.text);
    });

    await t.step(
      "failures of the shared checks are not recorded, so the key can be retried",
      async () => {
        const key = crypto.randomUUID();
        const body = principalBody();
        const broken = await call(url, "POST", "/v1/principals", {
          bearer,
          headers: { "idempotency-key": key, "content-type": "application/json" },
          body: "{",
        });
        assertError(broken, { status: 400, code: "invalidJson", layer: "interface" });
        const schema = await post({ ...body, principalId: 1 }, key);
        assertError(schema, { status: 422, code: "invalidRequest", layer: "interface" });
        const wrongType = await post(body, key, { "content-type": "text/plain" });
        assertError(wrongType, { status: 415, code: "unsupportedMediaType", layer: "interface" });
        const late = await post(body, key, {
          "x-deadline": new Date(Date.now() - 1).toISOString(),
        });
        assertError(late, { status: 408, code: "deadlineExceeded", layer: "interface" });
        const ok = await post(body, key);
        assert.equal(ok.status, 201, ok.text);
        assert.equal(ok.headers.get("idempotent-replayed"), null);
      },
    );

    await t.step("a replay still requires the caller to be authorized now", async () => {
      const key = crypto.randomUUID();
      const body = principalBody();
      assert.equal((await post(body, key)).status, 201);
      const anonymous = await call(url, "POST", "/v1/principals", {
        bearer: `art_${"x".repeat(43)}`,
        headers: { "idempotency-key": key },
        body,
      });
      assertError(anonymous, { status: 401, code: "authenticationFailed", layer: "auth" });
      assert.ok(!anonymous.text.includes('bearer"'));
    });

    await t.step(
      "50 parallel identical POSTs with one key create exactly one principal",
      async () => {
        const key = crypto.randomUUID();
        const body = principalBody();
        const results = await Promise.all(Array.from({ length: 50 }, () => post(body, key)));
        const created = results.filter((result) =>
          result.status === 201 && result.headers.get("idempotent-replayed") === null
        );
        assert.equal(created.length, 1);
        for (const result of results) {
          if (result.status === 201) {
            assert.equal(result.text, created[0].text, "every replay carries the identical body");
          } else {
            assertError(result, { status: 409, code: "idempotencyInFlight", layer: "idempotency" });
            assert.equal(result.headers.get("retry-after"), "1");
          }
        }
        assert.equal((await listIds()).filter((id) => id === body.principalId).length, 1);
      },
    );

    await t.step(
      "50 parallel POSTs with different keys and one principalId create one",
      async () => {
        const body = principalBody();
        const results = await Promise.all(
          Array.from({ length: 50 }, () => post(body, crypto.randomUUID())),
        );
        assert.equal(results.filter((result) => result.status === 201).length, 1);
        for (const result of results.filter((result) => result.status !== 201)) {
          assertError(result, { status: 409, code: "principalExists", layer: "authority" });
        }
        assert.equal((await listIds()).filter((id) => id === body.principalId).length, 1);
      },
    );
  } finally {
    await server.stop();
  }
});
