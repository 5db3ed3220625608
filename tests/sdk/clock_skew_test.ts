/**
 * The SDK and a service whose clock differs from the client's: the service refuses the deadline
 * (408 when its clock is ahead, 400 when it is behind by more than 300 s minus the deadline),
 * tells its time in `Date`, and the SDK corrects the deadline and sends the call once more; the
 * learned offset serves every later call.
 */
import assert from "node:assert/strict";
import { RuntimeServiceClient, RuntimeServiceError } from "../../sdk/mod.ts";
import { startSkewedService } from "../support/skewed_service.ts";

/** A service `offsetMs` off the wall clock and an SDK client of it. */
async function skewedService(offsetMs: number) {
  const service = await startSkewedService(offsetMs);
  const client = new RuntimeServiceClient({ baseUrl: service.url, token: service.token });
  return { client, seen: service.seen, close: () => service.close() };
}

for (
  const [offsetMs, refusal] of [
    [90_000, 408],
    [-270_000, 400],
  ] as const
) {
  Deno.test(`SDK: a service ${offsetMs / 1000} s off answers ${refusal}; the SDK corrects and retries once`, async () => {
    const service = await skewedService(offsetMs);
    try {
      const me = await service.client.runtime();
      assert.equal(me.capabilities.includes("authority:admin"), true);
      assert.deepEqual(service.seen.map((s) => s.status), [refusal, 200]);
      // Learned to about a second (the Date header's resolution).
      assert.ok(
        Math.abs(service.client.clockOffsetMs - offsetMs) < 1_500,
        `offset ${service.client.clockOffsetMs}`,
      );

      // Every later call, a POST without a key of its own included, goes through at once.
      service.seen.length = 0;
      const issued = await service.client.createPrincipal({
        capabilities: ["session:read"],
        expiresAt: new Date(Date.now() + offsetMs + 3_600_000),
      });
      assert.match(issued.bearer, /^art_/);
      const listed = await service.client.listPrincipals();
      assert.deepEqual(listed.map((p) => p.principalId), [issued.principalId]);
      assert.deepEqual(service.seen.map((s) => s.status), [201, 200]);
      // The deadline sent is about 60 s ahead on the service's clock.
      const ahead = Date.parse(service.seen[0].deadline!) - (Date.now() + offsetMs);
      assert.ok(ahead > 50_000 && ahead <= 60_000 + 1_500, `ahead ${ahead}`);
    } finally {
      await service.close();
    }
  });
}

Deno.test("SDK: a POST refused for its deadline is sent again once and issues exactly one principal", async () => {
  const service = await skewedService(120_000);
  try {
    const issued = await service.client.createPrincipal({
      capabilities: ["session:read"],
      expiresAt: new Date(Date.now() + 120_000 + 3_600_000),
    });
    assert.deepEqual(
      service.seen.map((s) => `${s.status} ${s.method} ${s.path}`),
      ["408 POST /v1/principals", "201 POST /v1/principals"],
    );
    const listed = await service.client.listPrincipals();
    assert.deepEqual(listed.map((p) => p.principalId), [issued.principalId]);
  } finally {
    await service.close();
  }
});

Deno.test("SDK: a service less than the deadline behind needs no correction", async () => {
  const service = await skewedService(-30_000);
  try {
    await service.client.runtime();
    assert.deepEqual(service.seen.map((s) => s.status), [200]);
    assert.equal(service.client.clockOffsetMs, 0);
  } finally {
    await service.close();
  }
});

Deno.test("SDK: a deadline refusal without a Date, or one the clock cannot explain, stands", async () => {
  let calls = 0;
  const refusal = (date: string | null) => () => {
    calls++;
    const headers = new Headers({ "content-type": "application/json" });
    if (date !== null) headers.set("date", date);
    return Promise.resolve(
      new Response(
        JSON.stringify({
          error: {
            code: "deadlineExceeded",
            layer: "interface",
            message: "The request deadline has passed",
            correlationId: crypto.randomUUID(),
            header: "x-deadline",
          },
        }),
        { status: 408, headers },
      ),
    );
  };
  for (const date of [null, new Date().toUTCString()]) {
    calls = 0;
    const client = new RuntimeServiceClient({
      baseUrl: "http://127.0.0.1:7777",
      token: "art_" + "x".repeat(43),
      fetch: refusal(date),
      maxRetries: 0,
    });
    await assert.rejects(
      client.runtime(),
      (error) => error instanceof RuntimeServiceError && error.code === "deadlineExceeded",
    );
    assert.equal(calls, 1, `date ${date}: no second attempt`);
    assert.equal(client.clockOffsetMs, 0);
  }
});
