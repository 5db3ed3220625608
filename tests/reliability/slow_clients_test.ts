/**
 * Slow clients: a client trickling a body one byte a second, or 500 idle connections, do not
 * delay other callers; a body still arriving when its `x-deadline` passes is cut with 408.
 */
import assert from "node:assert/strict";
import { sharedHeaders } from "../support/server.ts";
import { bodyText, headerOf, RawConnection } from "./_raw_http.ts";
import { issuePrincipal, launch, type Launched } from "./_serve.ts";

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function rfc3339(ms: number): string {
  return new Date(ms).toISOString();
}

/** The head of an issuance whose body has `length` bytes, deadline `deadlineMs` from now. */
function issuanceHead(server: Launched, length: number, deadlineMs: number): string {
  return [
    "POST /v1/principals HTTP/1.1",
    "host: 127.0.0.1",
    `authorization: Bearer ${server.bearer}`,
    "x-interface-version: 2026-07-23",
    `x-correlation-id: ${crypto.randomUUID()}`,
    `x-deadline: ${rfc3339(Date.now() + deadlineMs)}`,
    `idempotency-key: ${crypto.randomUUID()}`,
    "content-type: application/json",
    `content-length: ${length}`,
    "",
    "",
  ].join("\r\n");
}

/**
 * Runs `count` authenticated reads one after another as another principal than the slow client
 * (whose stuck requests count against its own in-flight quota); returns each latency in ms.
 */
async function timedReads(server: Launched, bearer: string, count: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const response = await fetch(`${server.url}/v1/runtime`, { headers: sharedHeaders(bearer) });
    await response.body?.cancel();
    assert.equal(response.status, 200);
    latencies.push(performance.now() - started);
  }
  return latencies;
}

Deno.test("slow clients: a body trickling one byte a second does not delay other callers", async () => {
  const server = await launch();
  const slow = await RawConnection.open(server.port);
  let trickling = true;
  try {
    const reader = await issuePrincipal(server);
    const body = JSON.stringify({
      principalId: crypto.randomUUID(),
      capabilities: ["session:read"],
      expiresAt: rfc3339(Date.now() + 86_400_000),
    });
    assert.ok(await slow.write(issuanceHead(server, body.length, 120_000)));
    const trickle = (async () => {
      for (let i = 0; i < 6 && trickling; i++) {
        await slow.write(body[i]);
        await delay(1000);
      }
    })();
    await delay(1200); // The server is now waiting on that body.
    const started = performance.now();
    const latencies = await timedReads(server, reader.bearer, 100);
    const elapsed = performance.now() - started;
    await trickle;
    assert.ok(elapsed < 4000, `100 reads took ${Math.round(elapsed)} ms beside the trickle`);
    assert.ok(
      Math.max(...latencies) < 1000,
      `slowest read ${Math.round(Math.max(...latencies))} ms`,
    );
  } finally {
    trickling = false;
    slow.close();
    await server.stop();
  }
});

Deno.test("slow clients: 500 idle connections do not delay other callers", async () => {
  const server = await launch();
  const idle: RawConnection[] = [];
  try {
    const reader = await issuePrincipal(server);
    for (let i = 0; i < 500; i++) {
      const connection = await RawConnection.open(server.port);
      idle.push(connection);
      // A third say nothing, a third stop inside the head, a third inside a declared body.
      if (i % 3 === 1) await connection.write("GET /v1/runtime HTTP/1.1\r\nhost: 127.0.0.1\r\nx-a");
      if (i % 3 === 2) await connection.write(issuanceHead(server, 100, 120_000) + "{");
    }
    const started = performance.now();
    const latencies = await timedReads(server, reader.bearer, 100);
    const elapsed = performance.now() - started;
    assert.ok(
      elapsed < 4000,
      `100 reads took ${Math.round(elapsed)} ms beside 500 idle connections`,
    );
    assert.ok(
      Math.max(...latencies) < 1000,
      `slowest read ${Math.round(Math.max(...latencies))} ms`,
    );
    const health = await fetch(`${server.url}/healthz`);
    assert.equal(health.status, 200);
    await health.body?.cancel();
  } finally {
    for (const connection of idle) connection.close();
    await server.stop();
  }
});

for (const framing of ["content-length", "chunked"] as const) {
  Deno.test(`slow clients: a ${framing} body still arriving at its x-deadline is cut with 408`, async () => {
    const server = await launch();
    const slow = await RawConnection.open(server.port);
    let trickling = true;
    try {
      const deadlineMs = 2000;
      const head = issuanceHead(server, 100, deadlineMs);
      const started = performance.now();
      await slow.write(
        framing === "chunked"
          ? head.replace("content-length: 100", "transfer-encoding: chunked")
          : head,
      );
      const trickle = (async () => {
        for (let i = 0; i < 100 && trickling; i++) {
          if (!(await slow.write(framing === "chunked" ? "1\r\n \r\n" : " "))) break;
          await delay(200);
        }
      })();
      const response = await slow.readResponse();
      const elapsed = performance.now() - started;
      trickling = false;
      await trickle;
      assert.equal(response.status, 408, bodyText(response));
      assert.match(headerOf(response, "content-type") ?? "", /^application\/json/);
      assert.equal(JSON.parse(bodyText(response)).error.code, "deadlineExceeded");
      assert.ok(
        elapsed >= deadlineMs - 1100,
        `cut after ${Math.round(elapsed)} ms, before the deadline`,
      );
      assert.ok(
        elapsed < deadlineMs + 1500,
        `cut after ${Math.round(elapsed)} ms, long after the deadline`,
      );
    } finally {
      trickling = false;
      slow.close();
      await server.stop();
    }
  });
}
