/**
 * Unit tests of the small pieces the request path relies on: the hot-path SHA-256, strict
 * RFC 3339 parsing, the rule composition and the router.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { sha256Ascii } from "../../server/digest.ts";
import { compose } from "../../server/chain.ts";
import { Router } from "../../server/router.ts";
import { parseRfc3339 } from "../../server/time.ts";

Deno.test("sha256Ascii matches node:crypto for every length across block boundaries", () => {
  const out = new Uint8Array(32);
  for (let length = 0; length <= 300; length++) {
    let text = "";
    for (let i = 0; i < length; i++) text += String.fromCharCode(0x21 + ((i * 37 + length) % 94));
    const expected = createHash("sha256").update(text).digest("hex");
    const actual = Array.from(sha256Ascii(text, out), (byte) => byte.toString(16).padStart(2, "0"))
      .join("");
    assert.equal(actual, expected, `length ${length}`);
  }
});

Deno.test("parseRfc3339 accepts offsets and fractions and refuses impossible dates", () => {
  assert.equal(parseRfc3339("2026-07-23T12:00:00Z"), Date.UTC(2026, 6, 23, 12));
  assert.equal(parseRfc3339("2026-07-23T14:00:00.250+02:00"), Date.UTC(2026, 6, 23, 12, 0, 0, 250));
  assert.equal(parseRfc3339("2026-07-23t12:00:00z"), Date.UTC(2026, 6, 23, 12));
  assert.equal(parseRfc3339("2028-02-29T00:00:00Z"), Date.UTC(2028, 1, 29));
  for (
    const text of [
      "2026-02-29T00:00:00Z",
      "2026-04-31T00:00:00Z",
      "2026-13-01T00:00:00Z",
      "2026-07-23T24:00:00Z",
      "2026-07-23 12:00:00Z",
      "2026-07-23T12:00:00",
      "1784808000",
      "",
    ]
  ) {
    assert.equal(parseRfc3339(text), null, text);
  }
});

Deno.test("compose runs rules in order, lets a rule answer early and refuses next() twice", async () => {
  const seen: string[] = [];
  const chain = compose<{ stop: boolean }>([
    async (_context, next) => {
      seen.push("outer in");
      const response = await next();
      seen.push("outer out");
      return response;
    },
    (context, next) => context.stop ? new Response("early", { status: 418 }) : next(),
    () => new Response("end"),
  ]);
  assert.equal(await (await chain({ stop: false })).text(), "end");
  assert.equal((await chain({ stop: true })).status, 418);
  assert.deepEqual(seen, ["outer in", "outer out", "outer in", "outer out"]);
  const twice = compose<unknown>([async (_context, next) => {
    await next();
    return await next();
  }, () => new Response("x")]);
  await assert.rejects(async () => await twice({}), /twice/);
  await assert.rejects(
    async () => await compose<unknown>([(_c, next) => next()])({}),
    /without a response/,
  );
});

Deno.test("compose turns an error into a response where it is thrown, so outer rules see it", async () => {
  const seen: number[] = [];
  const chain = compose<unknown>([
    async (_context, next) => {
      const response = await next();
      seen.push(response.status);
      return response;
    },
    async () => {
      await Promise.resolve();
      throw new RangeError("late");
    },
  ], { onError: (error) => new Response(String(error), { status: 500 }) });
  const response = await chain({});
  assert.equal(response.status, 500);
  assert.equal(await response.text(), "RangeError: late");
  assert.deepEqual(seen, [500], "the outer rule received the error's response");
});

Deno.test("Router matches literal and parameter paths and lists allowed methods", () => {
  const router = new Router<string>();
  router.add("GET", "/v1/principals", "list");
  router.add("POST", "/v1/principals", "create");
  router.add("DELETE", "/v1/principals/:principalId", "revoke");
  assert.deepEqual(router.match("GET", "/v1/principals"), {
    value: "list",
    params: {},
    pattern: "/v1/principals",
  });
  assert.deepEqual(router.match("DELETE", "/v1/principals/a%20b"), {
    value: "revoke",
    params: { principalId: "a b" },
    pattern: "/v1/principals/:principalId",
  });
  assert.deepEqual(router.match("PUT", "/v1/principals"), { allow: ["GET", "POST"] });
  assert.deepEqual(router.match("GET", "/v1/principals/x"), { allow: ["DELETE"] });
  assert.equal(router.match("GET", "/v1/principals/x/y"), null);
  assert.equal(router.match("DELETE", "/v1/principals/%E0%A4%A"), null);
});
