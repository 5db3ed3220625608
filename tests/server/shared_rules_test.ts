/**
 * Black-box tests of every row of the shared request rules (docs/http-api.md), through the real
 * `serve`: status, `code`, `layer`, `correlationId`, echoed headers.
 */
import assert from "node:assert/strict";
import { sharedHeaders, startServer, TEST_INTERFACE_VERSION } from "../support/server.ts";
import {
  assertEchoes,
  assertError,
  call,
  issuePrincipal,
  principalBody,
  rawRequest,
} from "./_http.ts";

const MiB = 1_048_576;

Deno.test("shared request rules, row by row, through the real serve", async (t) => {
  const server = await startServer();
  const { url, bearer } = server;
  try {
    await t.step("a valid request passes every rule and echoes the shared headers", async () => {
      const result = await call(url, "GET", "/v1/runtime", { bearer });
      assert.equal(result.status, 200, result.text);
      assertEchoes(result.headers, result.sent);
      assert.deepEqual(result.json, {
        interfaceVersion: TEST_INTERFACE_VERSION,
        principalId: server.bootstrap.principalId,
        capabilities: server.bootstrap.capabilities,
        expiresAt: server.bootstrap.expiresAt,
        // No provider credential: runs are off; the bootstrap may hold up to 100 active runs.
        runs: false,
        maxActiveRuns: 100,
        // The bootstrap may override agents (through the provider's API).
        allowAgentOverrides: true,
      });
    });

    await t.step("row 1: unknown path answers 404 notFound", async () => {
      for (const path of ["/v1/nothing", "/", "/v1/runtime/", "/v1/principals/a/b"]) {
        const result = await call(url, "GET", path, { bearer });
        assertError(result, { status: 404, code: "notFound", layer: "interface" });
      }
    });

    await t.step("row 1: wrong method answers 405 methodNotAllowed with Allow", async () => {
      const result = await call(url, "PUT", "/v1/runtime", { bearer, body: "{}" });
      assertError(result, { status: 405, code: "methodNotAllowed", layer: "interface" });
      assert.equal(result.headers.get("allow"), "GET");
      const principals = await call(url, "DELETE", "/v1/principals", { bearer });
      assertError(principals, { status: 405, code: "methodNotAllowed", layer: "interface" });
      assert.deepEqual(
        principals.headers.get("allow")?.split(", ").sort(),
        ["GET", "POST"],
      );
    });

    await t.step("row 1 comes first: an unknown path wins over a missing bearer", async () => {
      const result = await call(url, "GET", "/v1/nothing", { bearer: null });
      assertError(result, { status: 404, code: "notFound", layer: "interface" });
    });

    await t.step(
      "row 2: each security-sensitive header sent twice answers 400 duplicateHeader",
      async () => {
        const names = [
          "authorization",
          "x-interface-version",
          "x-correlation-id",
          "x-deadline",
          "idempotency-key",
        ];
        for (const name of names) {
          const sent = sharedHeaders(bearer, { "idempotency-key": crypto.randomUUID() });
          const lines = [...sent].filter(([key]) => key !== name);
          const value = sent.get(name)!;
          const result = await rawRequest(url, "POST /v1/principals HTTP/1.1", [
            ...lines,
            [name, value],
            [name, value],
            ["content-type", "application/json"],
          ], JSON.stringify(principalBody()));
          const joined = new Headers(sent);
          joined.set(name, `${value}, ${value}`);
          assertError(result, {
            status: 400,
            code: "duplicateHeader",
            layer: "interface",
            fields: { header: name },
          }, joined);
        }
      },
    );

    await t.step(
      "row 2 comes before authentication: duplicate header without a bearer",
      async () => {
        const sent = sharedHeaders(null);
        const deadline = sent.get("x-deadline")!;
        const result = await rawRequest(url, "GET /v1/runtime HTTP/1.1", [
          ...[...sent].filter(([key]) => key !== "x-deadline"),
          ["x-deadline", deadline],
          ["x-deadline", deadline],
        ]);
        const joined = new Headers(sent);
        joined.set("x-deadline", `${deadline}, ${deadline}`);
        assertError(result, { status: 400, code: "duplicateHeader", layer: "interface" }, joined);
      },
    );

    await t.step(
      "row 2: a bearer also offered in the query or a cookie answers 400 duplicateHeader",
      async () => {
        const query = await call(url, "GET", `/v1/runtime?access_token=${bearer}`, { bearer });
        assertError(query, { status: 400, code: "duplicateHeader", layer: "interface" });
        const cookie = await call(url, "GET", "/v1/runtime", {
          bearer,
          headers: { cookie: `theme=dark; access_token=${bearer}` },
        });
        assertError(cookie, { status: 400, code: "duplicateHeader", layer: "interface" });
        const harmless = await call(url, "GET", "/v1/runtime?verbose=1", {
          bearer,
          headers: { cookie: "theme=dark" },
        });
        assert.equal(harmless.status, 200, harmless.text);
      },
    );

    await t.step(
      "row 3: missing, malformed or unknown bearer answers 401 authenticationFailed",
      async () => {
        const cases: (string | null)[] = [
          null,
          `Basic ${btoa("user:password")}`,
          "Bearer",
          "Bearer ",
          `Token ${bearer}`,
          `Bearer ${bearer}x`,
          `Bearer art_${"A".repeat(43)}`,
        ];
        for (const authorization of cases) {
          const result = await call(url, "GET", "/v1/runtime", {
            bearer: null,
            headers: authorization === null ? {} : { authorization },
          });
          assertError(result, { status: 401, code: "authenticationFailed", layer: "auth" });
          assert.match(result.headers.get("www-authenticate") ?? "", /^Bearer/);
        }
      },
    );

    await t.step("row 3: the Bearer scheme is case-insensitive", async () => {
      const result = await call(url, "GET", "/v1/runtime", {
        bearer: null,
        headers: { authorization: `bearer ${bearer}` },
      });
      assert.equal(result.status, 200, result.text);
    });

    await t.step("row 3: a revoked bearer answers 401 on the very next request", async () => {
      const issued = await issuePrincipal(url, bearer);
      assert.equal((await call(url, "GET", "/v1/runtime", { bearer: issued.bearer })).status, 200);
      const revoke = await call(url, "DELETE", `/v1/principals/${issued.principalId}`, { bearer });
      assert.equal(revoke.status, 204);
      const result = await call(url, "GET", "/v1/runtime", { bearer: issued.bearer });
      assertError(result, { status: 401, code: "authenticationFailed", layer: "auth" });
      assert.equal(result.headers.get("www-authenticate"), "Bearer");
    });

    await t.step("row 3 comes before the header rules: no bearer and no other header", async () => {
      const response = await fetch(`${url}/v1/runtime`);
      const json = await response.json();
      assert.equal(response.status, 401);
      assert.equal(json.error.code, "authenticationFailed");
      assert.equal(response.headers.get("x-interface-version"), null);
      assert.equal(response.headers.get("x-correlation-id"), null);
    });

    await t.step(
      "row 5: x-interface-version missing answers 400, other values 422 with supportedVersions",
      async () => {
        const missing = await call(url, "GET", "/v1/runtime", {
          bearer,
          headers: { "x-interface-version": null },
        });
        assertError(missing, {
          status: 400,
          code: "missingHeader",
          layer: "interface",
          fields: { header: "x-interface-version" },
        });
        for (const version of ["2025-01-01", "2026-07-24", "latest"]) {
          const wrong = await call(url, "GET", "/v1/runtime", {
            bearer,
            headers: { "x-interface-version": version },
          });
          assertError(wrong, {
            status: 422,
            code: "unsupportedInterfaceVersion",
            layer: "interface",
            fields: { supportedVersions: [TEST_INTERFACE_VERSION] },
          });
        }
      },
    );

    await t.step(
      "row 6: x-correlation-id missing, not a UUID or over 64 bytes answers 400",
      async () => {
        const missing = await call(url, "GET", "/v1/runtime", {
          bearer,
          headers: { "x-correlation-id": null },
        });
        assertError(missing, {
          status: 400,
          code: "missingHeader",
          layer: "interface",
          fields: { header: "x-correlation-id" },
        });
        for (const value of ["not-a-uuid", "x".repeat(65), `${crypto.randomUUID()}0`]) {
          const invalid = await call(url, "GET", "/v1/runtime", {
            bearer,
            headers: { "x-correlation-id": value },
          });
          assertError(invalid, {
            status: 400,
            code: "invalidHeader",
            layer: "interface",
            fields: { header: "x-correlation-id" },
          });
        }
      },
    );

    await t.step(
      "row 7: x-deadline missing or unparseable answers 400, too far ahead 400, past 408",
      async () => {
        const missing = await call(url, "GET", "/v1/runtime", {
          bearer,
          headers: { "x-deadline": null },
        });
        assertError(missing, {
          status: 400,
          code: "missingHeader",
          layer: "interface",
          fields: { header: "x-deadline" },
        });
        for (const value of ["soon", "2026-13-01T00:00:00Z", String(Date.now() + 10_000)]) {
          const invalid = await call(url, "GET", "/v1/runtime", {
            bearer,
            headers: { "x-deadline": value },
          });
          assertError(invalid, {
            status: 400,
            code: "invalidHeader",
            layer: "interface",
            fields: { header: "x-deadline" },
          });
        }
        const far = await call(url, "GET", "/v1/runtime", {
          bearer,
          headers: { "x-deadline": new Date(Date.now() + 301_000).toISOString() },
        });
        assertError(far, { status: 400, code: "invalidHeader", layer: "interface" });
        const past = await call(url, "GET", "/v1/runtime", {
          bearer,
          headers: { "x-deadline": new Date(Date.now() - 1_000).toISOString() },
        });
        assertError(past, { status: 408, code: "deadlineExceeded", layer: "interface" });
        const offset = await call(url, "GET", "/v1/runtime", {
          bearer,
          headers: {
            "x-deadline": new Date(Date.now() + 120_000).toISOString().replace("Z", "+00:00"),
          },
        });
        assert.equal(offset.status, 200, offset.text);
      },
    );

    await t.step(
      "row 8: a caller without the capability answers 403 with requiredCapability",
      async () => {
        const reader = await issuePrincipal(url, bearer, { capabilities: ["session:read"] });
        const list = await call(url, "GET", "/v1/principals", { bearer: reader.bearer });
        assertError(list, {
          status: 403,
          code: "missingCapability",
          layer: "auth",
          fields: { requiredCapability: "authority:admin" },
        });
        const writer = await issuePrincipal(url, bearer, { capabilities: ["session:write"] });
        const runtime = await call(url, "GET", "/v1/runtime", { bearer: writer.bearer });
        assertError(runtime, {
          status: 403,
          code: "missingCapability",
          layer: "auth",
          fields: { requiredCapability: "session:read" },
        });
      },
    );

    await t.step("row 9: a mutating POST without a valid idempotency-key answers 400", async () => {
      const missing = await call(url, "POST", "/v1/principals", { bearer, body: principalBody() });
      assertError(missing, {
        status: 400,
        code: "missingHeader",
        layer: "interface",
        fields: { header: "idempotency-key" },
      });
      for (const key of ["", "k".repeat(129), "caf\u00e9"]) {
        const invalid = await call(url, "POST", "/v1/principals", {
          bearer,
          headers: { "idempotency-key": key },
          body: principalBody(),
        });
        assertError(invalid, {
          status: 400,
          code: "invalidHeader",
          layer: "interface",
          fields: { header: "idempotency-key" },
        });
      }
      const longest = await call(url, "POST", "/v1/principals", {
        bearer,
        headers: { "idempotency-key": "~".repeat(128) },
        body: principalBody(),
      });
      assert.equal(longest.status, 201, longest.text);
    });

    await t.step(
      "row 10: a JSON endpoint without content-type application/json answers 415",
      async () => {
        for (const type of [null, "text/plain", "application/x-www-form-urlencoded"]) {
          const result = await call(url, "POST", "/v1/principals", {
            bearer,
            headers: { "idempotency-key": crypto.randomUUID(), "content-type": type },
            body: JSON.stringify(principalBody()),
          });
          assertError(result, { status: 415, code: "unsupportedMediaType", layer: "interface" });
        }
        const charset = await call(url, "POST", "/v1/principals", {
          bearer,
          headers: {
            "idempotency-key": crypto.randomUUID(),
            "content-type": "application/json; charset=utf-8",
          },
          body: JSON.stringify(principalBody()),
        });
        assert.equal(charset.status, 201, charset.text);
      },
    );

    await t.step(
      "row 11: a body over 1 MiB answers 413, declared or streamed in chunks",
      async () => {
        const padded = JSON.stringify({ ...principalBody(), pad: "x".repeat(MiB) });
        const declared = await call(url, "POST", "/v1/principals", {
          bearer,
          headers: { "idempotency-key": crypto.randomUUID(), "content-type": "application/json" },
          body: padded,
        });
        assertError(declared, { status: 413, code: "payloadTooLarge", layer: "interface" });

        let sent = 0;
        const chunk = new Uint8Array(64 * 1024).fill(0x20);
        const stream = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent > 2 * MiB) {
              controller.close();
              return;
            }
            sent += chunk.length;
            controller.enqueue(chunk);
          },
        });
        const chunked = await call(url, "POST", "/v1/principals", {
          bearer,
          headers: { "idempotency-key": crypto.randomUUID(), "content-type": "application/json" },
          body: stream,
        });
        assertError(chunked, { status: 413, code: "payloadTooLarge", layer: "interface" });

        const atLimit = JSON.stringify(principalBody());
        const fits = await call(url, "POST", "/v1/principals", {
          bearer,
          headers: { "idempotency-key": crypto.randomUUID(), "content-type": "application/json" },
          body: atLimit + " ".repeat(MiB - atLimit.length),
        });
        assert.equal(fits.status, 201, fits.text);
      },
    );

    await t.step("no body byte is read before authentication", async () => {
      const gate = Promise.withResolvers<void>();
      let pulls = 0;
      const stalled = new ReadableStream<Uint8Array>({
        async pull(controller) {
          pulls++;
          if (pulls === 1) {
            controller.enqueue(new TextEncoder().encode("{"));
            return;
          }
          // The rest arrives only after the answer: a server reading the body first would hang.
          await gate.promise;
          controller.enqueue(new TextEncoder().encode("}"));
          controller.close();
        },
      });
      const timer = setTimeout(() => gate.resolve(), 10_000);
      try {
        const response = await fetch(`${url}/v1/principals`, {
          method: "POST",
          headers: sharedHeaders(`art_${"0".repeat(43)}`, {
            "idempotency-key": crypto.randomUUID(),
            "content-type": "application/json",
          }),
          body: stalled,
        });
        assert.equal(response.status, 401);
        assert.equal((await response.json()).error.code, "authenticationFailed");
      } finally {
        clearTimeout(timer);
        gate.resolve();
      }
    });

    await t.step("row 12: a body that is not JSON answers 400 invalidJson", async () => {
      for (const body of ["{", "", "not json", new Uint8Array([0x7b, 0xff, 0x7d])]) {
        const result = await call(url, "POST", "/v1/principals", {
          bearer,
          headers: { "idempotency-key": crypto.randomUUID(), "content-type": "application/json" },
          body,
        });
        assertError(result, { status: 400, code: "invalidJson", layer: "interface" });
      }
    });

    await t.step(
      "row 12: JSON that breaks the schema answers 422 invalidRequest with details",
      async () => {
        const bodies: unknown[] = [
          [],
          { ...principalBody(), principalId: 7 },
          { ...principalBody(), extra: true },
          { capabilities: ["session:read"], expiresAt: principalBody().expiresAt },
        ];
        for (const body of bodies) {
          const result = await call(url, "POST", "/v1/principals", {
            bearer,
            headers: { "idempotency-key": crypto.randomUUID() },
            body,
          });
          assertError(result, { status: 422, code: "invalidRequest", layer: "interface" });
          assert.ok(Array.isArray(result.json.error.details));
          assert.ok(result.json.error.details.length > 0);
          for (const detail of result.json.error.details) {
            assert.equal(typeof detail.path, "string");
            assert.equal(typeof detail.message, "string");
          }
        }
      },
    );

    await t.step(
      "quota: the 65th request in flight for one principal answers 429 with Retry-After",
      async () => {
        const other = await issuePrincipal(url, bearer, { capabilities: ["session:read"] });
        const holders: { release: () => void; done: Promise<number> }[] = [];
        try {
          for (let i = 0; i < 64; i++) {
            const gate = Promise.withResolvers<void>();
            const body = new ReadableStream<Uint8Array>({
              async pull(controller) {
                await gate.promise;
                controller.enqueue(new TextEncoder().encode(JSON.stringify(principalBody())));
                controller.close();
              },
            });
            const done = fetch(`${url}/v1/principals`, {
              method: "POST",
              headers: sharedHeaders(bearer, {
                "idempotency-key": crypto.randomUUID(),
                "content-type": "application/json",
              }),
              body,
            }).then(async (response) => {
              await response.body?.cancel();
              return response.status;
            });
            holders.push({ release: () => gate.resolve(), done });
          }
          // Wait until all 64 are held by the server: a 65th then gets 429.
          let result = await call(url, "GET", "/v1/runtime", { bearer });
          for (let attempt = 0; attempt < 100 && result.status === 200; attempt++) {
            await new Promise((resolve) => setTimeout(resolve, 50));
            result = await call(url, "GET", "/v1/runtime", { bearer });
          }
          assertError(result, { status: 429, code: "resourceExhausted", layer: "interface" });
          assert.equal(result.headers.get("retry-after"), "1");
          const unaffected = await call(url, "GET", "/v1/runtime", { bearer: other.bearer });
          assert.equal(unaffected.status, 200, "the quota is per principal");
        } finally {
          for (const holder of holders) holder.release();
          const statuses = await Promise.all(holders.map((holder) => holder.done));
          assert.deepEqual(new Set(statuses), new Set([201]));
        }
        const after = await call(url, "GET", "/v1/runtime", { bearer });
        assert.equal(after.status, 200, after.text);
      },
    );
  } finally {
    await server.stop();
  }
});
