/**
 * Load held: 1,000 concurrent keep-alive connections issue and use principals against the real
 * `serve` for 60 s. 900 connections read `GET /v1/runtime` as one of 40 readers; 100 connections
 * issue a principal as the bootstrap principal, use its bearer, revoke it and see the bearer
 * refused. Every answer is the expected success, except 429 `resourceExhausted` from the
 * per-principal in-flight quota (the 100 issuers share one principal, whose quota is 64); no
 * connection fails, none starves, and the server logs no 5xx.
 */
import assert from "node:assert/strict";
import { bodyText, headerOf, RawConnection, type RawResponse } from "./_raw_http.ts";
import { issuePrincipal, launch, type Launched } from "./_serve.ts";

const SECONDS = Number(Deno.env.get("AUTOMATION_RUNTIME_LOAD_SECONDS") ?? 60);
const CONNECTIONS = 1000;
const ISSUERS = 100;
const READERS = 40;
const REQUEST_TIMEOUT_MS = 30_000;

function request(
  method: string,
  path: string,
  bearer: string,
  extra: { idempotencyKey?: string; body?: string } = {},
): string {
  const lines = [
    `${method} ${path} HTTP/1.1`,
    "host: 127.0.0.1",
    `authorization: Bearer ${bearer}`,
    "x-interface-version: 2026-07-23",
    `x-correlation-id: ${crypto.randomUUID()}`,
    `x-deadline: ${new Date(Date.now() + 60_000).toISOString()}`,
  ];
  if (extra.idempotencyKey) lines.push(`idempotency-key: ${extra.idempotencyKey}`);
  if (extra.body !== undefined) {
    lines.push(
      "content-type: application/json",
      `content-length: ${new TextEncoder().encode(extra.body).length}`,
    );
  }
  return `${lines.join("\r\n")}\r\n\r\n${extra.body ?? ""}`;
}

class Tally {
  counts = new Map<string, number>();
  errors: string[] = [];
  add(key: string): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }
  error(message: string): void {
    if (this.errors.length < 20) this.errors.push(message);
    this.add("error");
  }
}

/** One connection's loop; returns how many answers were a success or a 429. */
async function connectionLoop(
  server: Launched,
  role: { reader: string } | { issuer: true },
  until: number,
  tally: Tally,
): Promise<number> {
  let connection = await RawConnection.open(server.port);
  let good = 0;
  const send = async (text: string): Promise<RawResponse | null> => {
    if (connection.closed) connection = await RawConnection.open(server.port);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await Promise.race([
        connection.request(text),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error("no answer within 30 s")), REQUEST_TIMEOUT_MS);
        }),
      ]);
    } catch (error) {
      tally.error(`connection failed: ${(error as Error).message}`);
      connection.close();
      return null;
    } finally {
      clearTimeout(timer);
    }
  };
  const expect = (response: RawResponse | null, status: number, what: string): boolean => {
    if (response === null) return false;
    if (response.status === status) {
      tally.add(what);
      good++;
      return true;
    }
    if (response.status === 429) {
      const code = JSON.parse(bodyText(response)).error?.code;
      if (code === "resourceExhausted" && headerOf(response, "retry-after") !== null) {
        tally.add("429");
        good++;
        return false;
      }
    }
    tally.error(
      `${what}: expected ${status}, got ${response.status} ${bodyText(response).slice(0, 200)}`,
    );
    return false;
  };
  try {
    while (Date.now() < until) {
      if ("reader" in role) {
        expect(await send(request("GET", "/v1/runtime", role.reader)), 200, "read");
        continue;
      }
      const principalId = crypto.randomUUID();
      const body = JSON.stringify({
        principalId,
        capabilities: ["session:read"],
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      });
      const issued = await send(
        request("POST", "/v1/principals", server.bearer, {
          idempotencyKey: crypto.randomUUID(),
          body,
        }),
      );
      if (!expect(issued, 201, "issue")) continue;
      const bearer = JSON.parse(bodyText(issued!)).bearer as string;
      expect(await send(request("GET", "/v1/runtime", bearer)), 200, "use");
      let revoked = false;
      while (!revoked && Date.now() < until) {
        const response = await send(
          request("DELETE", `/v1/principals/${principalId}`, server.bearer),
        );
        if (response === null) break;
        revoked = expect(response, 204, "revoke");
      }
      if (revoked) {
        expect(await send(request("GET", "/v1/runtime", bearer)), 401, "refused after revocation");
      }
    }
  } finally {
    connection.close();
  }
  return good;
}

Deno.test(`load held: ${CONNECTIONS} connections issue and use principals for ${SECONDS} s`, async () => {
  const server = await launch();
  const tally = new Tally();
  try {
    const readers = await Promise.all(
      Array.from({ length: READERS }, () => issuePrincipal(server, ["session:read"])),
    );
    const until = Date.now() + SECONDS * 1000;
    const started = performance.now();
    const goods = await Promise.all(
      Array.from({ length: CONNECTIONS }, (_, i) =>
        connectionLoop(
          server,
          i < ISSUERS ? { issuer: true } : { reader: readers[i % READERS].bearer },
          until,
          tally,
        )),
    );
    const elapsed = (performance.now() - started) / 1000;
    const counts = Object.fromEntries(tally.counts);
    const total = [...tally.counts.values()].reduce((sum, n) => sum + n, 0);
    console.log(
      `${total} answers in ${elapsed.toFixed(1)} s (${Math.round(total / elapsed)}/s): ${
        JSON.stringify(counts)
      }`,
    );
    assert.deepEqual(tally.errors, [], "every answer is a success or a 429 from the quota");
    assert.equal(goods.filter((good) => good === 0).length, 0, "no connection starves");
    assert.ok(
      (counts.issue ?? 0) > 0 && (counts.read ?? 0) > 0,
      "issuances and reads went through",
    );
    assert.equal(server.serverErrors(), 0, "no 5xx in the server's log");
    const health = await fetch(`${server.url}/healthz`);
    assert.equal(health.status, 200);
    await health.body?.cancel();
  } finally {
    await server.stop();
  }
});
