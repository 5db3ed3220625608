/**
 * Unit tests of the hand-written parsers and the synchronous chain on the request path. Each parser
 * replaced a regular expression; the expressions are kept here as the reference, and random
 * inputs near the accepted forms must get the same answer from both.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { bearerToken } from "../../server/authenticator.ts";
import { checkRule, compose, type Next } from "../../server/chain.ts";
import { isUuid, isValidCorrelationId, RequestContext } from "../../server/context.ts";
import { InterfaceError } from "../../server/errors.ts";
import { createJsonLogger } from "../../server/log.ts";
import { deadlineRule } from "../../server/rules/deadline.ts";
import { InFlightQuota, quotaRule } from "../../server/rules/quota.ts";
import { parseRfc3339 } from "../../server/time.ts";

// The regular expressions the parsers replaced, with the checks that followed them.
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function referenceRfc3339(text: string): number | null {
  const match = RFC3339.exec(text);
  if (match === null) return null;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number);
  if (month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1]) return null;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  if (month === 2 && day === 29 && !leap) return null;
  if (hour > 23 || minute > 59 || second > 60) return null;
  let offsetMinutes = 0;
  if (match[8] !== undefined) {
    const offsetHour = Number(match[9]);
    const offsetMinute = Number(match[10]);
    if (offsetHour > 23 || offsetMinute > 59) return null;
    offsetMinutes = (offsetHour * 60 + offsetMinute) * (match[8] === "-" ? -1 : 1);
  }
  const fraction = match[7] === undefined ? 0 : Math.floor(Number(match[7]) * 1000);
  return Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59), fraction) -
    offsetMinutes * 60_000;
}

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const BEARER = /^bearer +([\x21-\x7e]{1,4096}) *$/i;

/** Text near `seeds`: a seed with a few characters inserted, removed or replaced. */
function nearby(seeds: string[], alphabet: string[]): fc.Arbitrary<string> {
  const edit = fc.record({
    kind: fc.constantFrom("insert", "remove", "replace"),
    at: fc.nat(),
    char: fc.constantFrom(...alphabet),
  });
  return fc.tuple(fc.constantFrom(...seeds), fc.array(edit, { maxLength: 3 })).map(
    ([seed, edits]) => {
      let text = seed;
      for (const { kind, at, char } of edits) {
        const i = at % (text.length + 1);
        if (kind === "insert") text = text.slice(0, i) + char + text.slice(i);
        else if (kind === "remove") text = text.slice(0, i) + text.slice(i + 1);
        else text = text.slice(0, i) + char + text.slice(i + 1);
      }
      return text;
    },
  );
}

Deno.test("parseRfc3339 keeps the exact answers of the regular expression it replaced", () => {
  const seeds = [
    "2026-07-23T12:00:00Z",
    "2024-02-29T23:59:60.123456789+23:59",
    "0050-01-01t00:00:00.5-00:30",
    "1999-12-31T23:59:59.99z",
    "2023-02-29T00:00:00Z",
    "2026-04-31T00:00:00.1234Z",
    "2100-02-29T00:00:00Z",
    "2000-02-29T00:00:00.000000001-12:00",
  ];
  const alphabet = [..."0123456789-:TtZz+. x", "\u0663", "\uff11"];
  fc.assert(
    fc.property(nearby(seeds, alphabet), (text) => {
      assert.equal(parseRfc3339(text), referenceRfc3339(text), JSON.stringify(text));
    }),
    { numRuns: 20_000 },
  );
  // Every fraction of one to three digits, where the fast path applies.
  for (let digits = 1; digits <= 3; digits++) {
    for (let value = 0; value < 10 ** digits; value++) {
      const text = `2026-07-23T12:00:00.${String(value).padStart(digits, "0")}Z`;
      assert.equal(parseRfc3339(text), referenceRfc3339(text), text);
    }
  }
});

Deno.test("parseRfc3339 edge cases: leap seconds, offsets, lengths, two-digit years", () => {
  assert.equal(parseRfc3339("2026-07-23T23:59:60Z"), Date.UTC(2026, 6, 23, 23, 59, 59));
  assert.equal(parseRfc3339("2026-07-23T12:00:00-23:59"), Date.UTC(2026, 6, 23, 35, 59));
  assert.equal(
    parseRfc3339("2026-07-23T12:00:00.999999999Z"),
    Date.UTC(2026, 6, 23, 12, 0, 0, 999),
  );
  // Date.UTC reads years 0 to 99 as 1900 to 1999; the parser keeps that behaviour.
  assert.equal(parseRfc3339("0050-01-01T00:00:00Z"), Date.UTC(50, 0, 1));
  for (
    const text of [
      "2026-07-23T12:00:00.Z",
      "2026-07-23T12:00:00.1234567890Z",
      "2026-07-23T12:00:00+24:00",
      "2026-07-23T12:00:00+01:60",
      "2026-07-23T12:00:00+0100",
      "2026-07-23T12:00:00Z ",
      " 2026-07-23T12:00:00Z",
      "2026-07-23T12:60:00Z",
      "2026-07-23T12:00:61Z",
      "2026-00-23T12:00:00Z",
      "2026-07-00T12:00:00Z",
      "2026-07-2\u0663T12:00:00Z",
      "+2026-07-23T12:00:00Z",
    ]
  ) {
    assert.equal(parseRfc3339(text), null, text);
  }
});

Deno.test("isUuid keeps the answers of the regular expression it replaced", () => {
  const valid = "6f1c3d1e-8a6b-4a0e-9d7e-2f4b5c6d7e8f";
  assert.ok(isUuid(valid));
  assert.ok(isUuid(valid.toUpperCase()));
  assert.ok(isValidCorrelationId("00000000-0000-0000-0000-000000000000"));
  for (
    const text of [
      "",
      valid.slice(1),
      valid + "0",
      valid.replaceAll("-", ""),
      "6f1c3d1e8-a6b-4a0e-9d7e-2f4b5c6d7e8f",
      "6f1c3d1g-8a6b-4a0e-9d7e-2f4b5c6d7e8f",
      "6f1c3d1G-8a6b-4a0e-9d7e-2f4b5c6d7e8f",
      "{6f1c3d1e-8a6b-4a0e-9d7e-2f4b5c6d7e8f}",
      "6f1c3d1e-8a6b-4a0e-9d7e-2f4b5c6d7e8\u0663",
      "6f1c3d1e 8a6b-4a0e-9d7e-2f4b5c6d7e8f",
    ]
  ) {
    assert.equal(isUuid(text), false, text);
    assert.equal(isValidCorrelationId(text), false, text);
  }
  fc.assert(
    fc.property(
      nearby([valid, valid.toUpperCase()], [..."0123456789abcdefgABCDEFG-{} x"]),
      (text) => {
        assert.equal(isUuid(text), UUID.test(text), text);
      },
    ),
    { numRuns: 20_000 },
  );
});

Deno.test("bearerToken keeps the answers of the regular expression it replaced", () => {
  assert.equal(bearerToken("Bearer art_abc"), "art_abc");
  assert.equal(bearerToken("bEaReR    art_abc   "), "art_abc");
  assert.equal(bearerToken("Bearer " + "x".repeat(4096)), "x".repeat(4096));
  for (
    const text of [
      "Bearer",
      "Bearer ",
      "Bearerx abc",
      "Bearer\tabc",
      "Bearer a b",
      "Basic abc",
      " Bearer abc",
      "Bearer abc\t",
      "Bearer " + "x".repeat(4097),
      "Bearer caf\u00e9",
      "\u212aearer abc",
    ]
  ) {
    assert.equal(bearerToken(text), null, JSON.stringify(text));
  }
  const seeds = ["Bearer art_abc", "bearer   x  ", "BEARER y", "Bearer " + "z".repeat(4095)];
  fc.assert(
    fc.property(nearby(seeds, [..."aBRe ~_z\t\x7f", "\u00e9", "\u017f", "\u212a"]), (text) => {
      assert.equal(bearerToken(text), BEARER.exec(text)?.[1] ?? null, JSON.stringify(text));
    }),
    { numRuns: 20_000 },
  );
});

Deno.test("compose answers without a promise until a rule awaits, and keeps rule order", async () => {
  const seen: string[] = [];
  const note = (name: string) => (context: { wait: boolean }, next: Next) => {
    seen.push(name);
    if (context.wait) {
      return Promise.resolve().then(() => {
        seen.push(`${name} waited`);
        return next();
      });
    }
    return next();
  };
  const chain = compose<{ wait: boolean }>([
    note("a"),
    (_context, next) => {
      seen.push("around in");
      const answer = next();
      seen.push("around out");
      return answer;
    },
    note("b"),
    () => new Response("end"),
  ]);
  const sync = chain({ wait: false });
  assert.ok(sync instanceof Response);
  assert.deepEqual(seen, ["a", "around in", "b", "around out"]);
  seen.length = 0;
  const later = chain({ wait: true });
  assert.ok(later instanceof Promise);
  assert.equal(await (await later).text(), "end");
  assert.deepEqual(seen, ["a", "a waited", "around in", "b", "around out", "b waited"]);
  // A refusal reaches the caller, or the error handler's response when there is one.
  const refuse = () => {
    throw new InterfaceError("notFound", "No route for this path");
  };
  const refused = compose<{ wait: boolean }>([refuse, () => new Response("unreachable")]);
  await assert.rejects(async () => await refused({ wait: false }), /No route/);
  const handled = compose<{ wait: boolean }>([refuse, () => new Response("unreachable")], {
    onError: (error) => new Response(null, { status: (error as InterfaceError).status }),
  });
  const answer = handled({ wait: false });
  assert.ok(answer instanceof Response, "a synchronous refusal answers without a promise");
  assert.equal(answer.status, 404);
});

Deno.test("compose refuses next() twice, and a chain that ends without an answer", async () => {
  const twice = compose<unknown>([(_context, next) => {
    next();
    return next();
  }, () => new Response("x")]);
  assert.throws(() => twice({}), /twice/);
  const twiceLater = compose<unknown>([async (_context, next) => {
    await next();
    return await next();
  }, () => new Response("x")]);
  await assert.rejects(async () => await twiceLater({}), /twice/);
  assert.throws(() => compose<unknown>([(_c, next) => next()])({}), /without a response/);
  assert.throws(
    () => compose<unknown>([(_c, next) => next(), (_c, next) => next()])({}),
    /without a response/,
  );
});

Deno.test("checks run in their place in the chain, refuse through onError, and work as rules", async () => {
  const seen: string[] = [];
  const check = (name: string, refuse = false) =>
    checkRule<{ refuse: string | null }>((context) => {
      seen.push(name);
      if (context.refuse === name || refuse) {
        throw new InterfaceError("invalidHeader", `refused by ${name}`);
      }
    });
  const onError = (error: unknown) => new Response((error as Error).message, { status: 400 });
  const chain = compose<{ refuse: string | null }>([
    check("a"),
    check("b"),
    (_context, next) => {
      seen.push("around");
      return next();
    },
    check("c"),
    () => new Response("end"),
  ], { onError });
  const answer = chain({ refuse: null });
  assert.ok(answer instanceof Response, "checks keep the answer synchronous");
  assert.equal(await answer.text(), "end");
  assert.deepEqual(seen, ["a", "b", "around", "c"]);
  // The first failing check answers, and nothing after it runs.
  for (
    const [refuse, expected] of [["a", ["a"]], ["b", ["a", "b"]], ["c", ["a", "b", "around", "c"]]]
  ) {
    seen.length = 0;
    const refused = chain({ refuse: refuse as string });
    assert.ok(refused instanceof Response);
    assert.equal(refused.status, 400);
    assert.equal(await refused.text(), `refused by ${refuse}`);
    assert.deepEqual(seen, expected);
  }
  // Without onError the refusal reaches the caller; a chain of checks alone has no answer.
  assert.throws(() => compose([check("x", true), () => new Response()])({ refuse: null }), /by x/);
  assert.throws(() => compose([check("y")])({ refuse: null }), /without a response/);
  // Called as an ordinary rule (as another composer would), a check passes to next.
  seen.length = 0;
  const direct = check("d")({ refuse: null }, () => new Response("next"));
  assert.equal(await (direct as Response).text(), "next");
  assert.deepEqual(seen, ["d"]);
});

Deno.test("quotaRule gives the slot back after a synchronous answer, a refusal and a promise", async () => {
  const quota = new InFlightQuota(1);
  const rule = quotaRule(quota);
  const context = new RequestContext(new Request("http://localhost/v1/runtime"), Date.now());
  assert.ok(rule(context, () => new Response("now")) instanceof Response);
  assert.throws(() =>
    rule(context, () => {
      throw new Error("refused");
    }), /refused/);
  const gate = Promise.withResolvers<Response>();
  const pending = rule(context, () => gate.promise);
  // The slot is held while the answer is pending.
  assert.throws(() => rule(context, () => new Response("second")), /Too many requests/);
  gate.resolve(new Response("later"));
  assert.equal(await (await pending).text(), "later");
  assert.ok(quota.acquire(""), "the slot is free again");
});

Deno.test("the deadline rule checks each request against its own clock, repeated text included", () => {
  const rule = deadlineRule();
  const at = Date.UTC(2026, 6, 23, 12);
  const request = () =>
    new Request("http://localhost/v1/runtime", {
      headers: { "x-deadline": "2026-07-23T12:00:00Z" },
    });
  const early = new RequestContext(request(), at - 60_000);
  rule(early, () => new Response());
  assert.equal(early.deadline, at);
  const late = new RequestContext(request(), at);
  assert.throws(() => rule(late, () => new Response()), (error: InterfaceError) => {
    return error.code === "deadlineExceeded";
  });
  const tooEarly = new RequestContext(request(), at - 400_000);
  assert.throws(() => rule(tooEarly, () => new Response()), /at most 300 seconds/);
});

Deno.test("request log lines are valid JSON, batched per turn and written by flush()", () => {
  const writes: string[] = [];
  let clock = Date.UTC(2026, 6, 23, 12);
  const logger = createJsonLogger({ write: (text) => writes.push(text), now: () => clock });
  const record = {
    method: "GET",
    path: '/v1/"odd"\\path\u00e9\n',
    status: 200,
    durationMs: 0.1234,
    correlationId: "6f1c3d1e-8a6b-4a0e-9d7e-2f4b5c6d7e8f",
    principalId: null,
  };
  // Lines of one turn of the event loop wait for one write.
  for (let i = 0; i < 5; i++) logger.request(record);
  assert.equal(writes.length, 0);
  logger.flush();
  assert.equal(writes.length, 1);
  const lines = writes[0].trimEnd().split("\n").map((line) => JSON.parse(line));
  assert.equal(lines.length, 5);
  assert.deepEqual(lines[0], {
    time: "2026-07-23T12:00:00.000Z",
    level: "info",
    msg: "request",
    method: "GET",
    path: record.path,
    status: 200,
    durationMs: 0.123,
    correlationId: record.correlationId,
    principalId: null,
  });
  // A lifecycle line is written at once, after the request lines before it.
  clock += 1;
  logger.request(record);
  logger.info("stopped");
  assert.equal(writes.length, 2);
  assert.deepEqual(writes[1].trimEnd().split("\n").map((line) => JSON.parse(line).msg), [
    "request",
    "stopped",
  ]);
  logger.flush();
});

Deno.test("a batch larger than the log buffer is written whole, multi-byte text intact", () => {
  const writes: string[] = [];
  const logger = createJsonLogger({ write: (text) => writes.push(text), now: () => 0 });
  const paths = Array.from(
    { length: 2_000 },
    (_, i) => `/v1/\u00e9\u65e5${i}/${"x".repeat(i % 90)}`,
  );
  for (const path of paths) {
    logger.request({
      method: "GET",
      path,
      status: 404,
      durationMs: 0,
      correlationId: null,
      principalId: null,
    });
  }
  logger.flush();
  assert.equal(writes.length, 1);
  assert.ok(writes[0].length > 64 * 1024, "the batch outgrew the initial buffer");
  const lines = writes[0].trimEnd().split("\n").map((line) => JSON.parse(line));
  assert.deepEqual(lines.map((line) => line.path), paths);
  // The buffer is reused after a write.
  logger.info("after");
  assert.equal(JSON.parse(writes[1]).msg, "after");
});

Deno.test("under load, request lines of several turns share one write, on a timer", async () => {
  const writes: string[] = [];
  const clock = Date.UTC(2026, 6, 23, 12);
  const logger = createJsonLogger({ write: (text) => writes.push(text), now: () => clock });
  const record = {
    method: "GET",
    path: "/v1/runtime",
    status: 200,
    durationMs: 1,
    correlationId: null,
    principalId: null,
  };
  logger.request(record);
  await Promise.resolve();
  // The first turn is written when it ends: no timer before the load begins.
  assert.equal(writes.length, 1);
  // A second turn within the same millisecond: the load has begun.
  logger.request(record);
  await Promise.resolve();
  logger.request(record);
  await Promise.resolve();
  assert.equal(writes.length, 1, "the lines wait for the timer");
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.equal(writes.length, 2);
  assert.equal(writes[1].trimEnd().split("\n").length, 2);
  // flush() writes at once and cancels the timer.
  logger.request(record);
  logger.flush();
  assert.equal(writes.length, 3);
});

Deno.test("request lines write status and duration as String does, and the record's time", () => {
  let text = "";
  const logger = createJsonLogger({
    write: (written) => text += written,
    batchMs: 0,
    now: () => 0,
  });
  const line = (status: number, durationMs: number, time?: number) => {
    text = "";
    logger.request({
      method: "GET",
      path: "/v1/runtime",
      status,
      durationMs,
      correlationId: null,
      principalId: null,
      ...(time === undefined ? {} : { time }),
    });
    return text;
  };
  fc.assert(
    fc.property(
      fc.oneof(fc.integer({ min: 0, max: 3_000_000_000 }).map((n) => n / 1000), fc.double()),
      (value) => {
        const written = /"status":(.*),"durationMs":(.*),"correlationId"/.exec(line(value, value))!;
        assert.equal(written[1], String(value));
        assert.equal(written[2], String(Math.round(value * 1000) / 1000));
      },
    ),
    { numRuns: 2_000 },
  );
  for (const value of [0, 0.5, 0.579, 1.005, 10, 200, 2_147_483.647, 2_147_483.648, 1e21]) {
    assert.equal(JSON.parse(line(value, value)).durationMs, Math.round(value * 1000) / 1000);
  }
  // The line's time is the record's, to the millisecond, else the logger's clock.
  const at = Date.UTC(2026, 6, 23, 12, 0, 0, 5);
  assert.equal(JSON.parse(line(200, 1, at + 0.9)).time, "2026-07-23T12:00:00.005Z");
  assert.equal(JSON.parse(line(200, 1, at + 1)).time, "2026-07-23T12:00:00.006Z");
  assert.equal(JSON.parse(line(200, 1)).time, "1970-01-01T00:00:00.000Z");
});
