/**
 * CORS answers for listed origins (and nothing for others), `GET /v1/principals` paging, the
 * retention purge run by the server, and `serve` refusing malformed CORS origins at start.
 */
import assert from "node:assert/strict";
import { deriveBootstrapCredential } from "../../server/bootstrap/credential.ts";
import { parseCorsOrigins } from "../../server/cors.ts";
import type { RuntimeLogger } from "../../server/log.ts";
import { createRuntimeServer, type RuntimeServer } from "../../server/server.ts";
import { openKvStore } from "../../server/store/kv/mod.ts";
import type { Store } from "../../server/store/types.ts";
import { runCli } from "../support/cli.ts";
import { createTestBootstrap, sharedHeaders } from "../support/server.ts";

const DAY = 86_400_000;
const PAGE = "http://app.test:5173";

const silent: RuntimeLogger = {
  request: () => {},
  info: () => {},
  error: () => {},
  flush: () => {},
};

async function harness(
  options: { cors?: string[]; clock?: { now: number }; cleanupIntervalMs?: number } = {},
): Promise<{ server: RuntimeServer; store: Store; token: string; close(): Promise<void> }> {
  const plain = createTestBootstrap();
  const bootstrap = deriveBootstrapCredential({
    ...plain,
    capabilities: ["session:read", "session:write", "authority:admin"],
    source: "environment",
  });
  const store = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
  await store.authority.claim(Date.now());
  const clock = options.clock;
  const server = createRuntimeServer({
    bootstrap,
    store,
    logger: silent,
    now: clock === undefined ? undefined : () => clock.now,
    cors: options.cors === undefined ? undefined : { allowedOrigins: options.cors },
    cleanupIntervalMs: options.cleanupIntervalMs,
  });
  return {
    server,
    store,
    token: plain.token,
    async close() {
      await server.close();
      await store.close();
    },
  };
}

function preflight(origin: string, path = "/v1/principals"): Request {
  return new Request(`http://runtime.test${path}`, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type, idempotency-key",
    },
  });
}

Deno.test("cors: a listed origin's preflight gets exactly the shared rules' headers", async () => {
  const h = await harness({ cors: [PAGE] });
  try {
    const response = await h.server.handler(preflight(PAGE));
    assert.equal(response.status, 204);
    assert.equal(response.headers.get("access-control-allow-origin"), PAGE);
    assert.equal(
      response.headers.get("access-control-allow-headers"),
      "authorization, content-type, x-interface-version, x-correlation-id, x-deadline, idempotency-key",
    );
    assert.equal(response.headers.get("access-control-allow-methods"), "GET, POST, DELETE");
    assert.match(response.headers.get("vary") ?? "", /origin/);
    assert.equal(response.headers.get("access-control-allow-credentials"), null);

    const answer = await h.server.handler(
      new Request("http://runtime.test/v1/runtime", {
        headers: { ...Object.fromEntries(sharedHeaders(h.token)), origin: PAGE },
      }),
    );
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get("access-control-allow-origin"), PAGE);
    assert.match(answer.headers.get("access-control-expose-headers") ?? "", /x-correlation-id/);
    assert.match(answer.headers.get("access-control-expose-headers") ?? "", /retry-after/);
    assert.match(answer.headers.get("vary") ?? "", /origin/);
    // A refusal is readable by the page as well.
    const refused = await h.server.handler(
      new Request("http://runtime.test/v1/runtime", { headers: { origin: PAGE } }),
    );
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get("access-control-allow-origin"), PAGE);
  } finally {
    await h.close();
  }
});

Deno.test("cors: unlisted origins, other paths and the default get no CORS header", async () => {
  const listed = await harness({ cors: [PAGE] });
  const none = await harness();
  try {
    for (const server of [listed.server, none.server]) {
      const other = await server.handler(preflight("http://evil.test"));
      assert.notEqual(other.status, 204);
      assert.equal(other.headers.get("access-control-allow-origin"), null);
      await other.body?.cancel();
      const answer = await server.handler(
        new Request("http://runtime.test/v1/runtime", {
          headers: { ...Object.fromEntries(sharedHeaders(listed.token)), origin: "http://x.test" },
        }),
      );
      assert.equal(answer.headers.get("access-control-allow-origin"), null);
      await answer.body?.cancel();
    }
    const health = await listed.server.handler(preflight(PAGE, "/healthz"));
    assert.equal(health.headers.get("access-control-allow-origin"), null);
    await health.body?.cancel();
    const noCors = await none.server.handler(preflight(PAGE));
    assert.equal(noCors.headers.get("access-control-allow-origin"), null);
    await noCors.body?.cancel();
  } finally {
    await listed.close();
    await none.close();
  }
});

Deno.test("cors: origins must be exact http(s) origins", () => {
  assert.deepEqual(parseCorsOrigins(" https://a.test , http://b.test:8080,https://a.test"), [
    "https://a.test",
    "http://b.test:8080",
  ]);
  for (const bad of ["*", "https://a.test/", "ftp://a.test", "https://A.test", "a.test", "null"]) {
    assert.throws(() => parseCorsOrigins(bad), TypeError, bad);
  }
});

Deno.test("serve refuses a malformed --cors-origins or AUTOMATION_RUNTIME_CORS_ORIGINS in one line", async () => {
  const env = {
    PATH: Deno.env.get("PATH") ?? "",
    HOME: "/nonexistent",
    NO_COLOR: "1",
    DENO_DIR: Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME") ?? "/root"}/.cache/deno`,
  };
  const flag = await runCli(["serve", "--cors-origins", "https://a.test/path"], { env });
  assert.equal(flag.code, 2);
  assert.equal(flag.stderr.trim().split("\n").length, 1, flag.stderr);
  assert.match(flag.stderr, /--cors-origins: "https:\/\/a\.test\/path" is not an origin/);
  const variable = await runCli(["serve"], {
    env: { ...env, AUTOMATION_RUNTIME_CORS_ORIGINS: "*" },
  });
  assert.equal(variable.code, 1);
  assert.equal(variable.stderr.trim().split("\n").length, 1, variable.stderr);
  assert.match(variable.stderr, /AUTOMATION_RUNTIME_CORS_ORIGINS: "\*" is not an origin/);
});

async function issue(h: { server: RuntimeServer; token: string }, expiresAt: number) {
  const response = await h.server.handler(
    new Request("http://runtime.test/v1/principals", {
      method: "POST",
      headers: sharedHeaders(h.token, {
        "content-type": "application/json",
        "idempotency-key": crypto.randomUUID(),
      }),
      body: JSON.stringify({
        principalId: crypto.randomUUID(),
        capabilities: ["session:read"],
        expiresAt: new Date(expiresAt).toISOString(),
      }),
    }),
  );
  assert.equal(response.status, 201);
  return await response.json();
}

async function list(h: { server: RuntimeServer; token: string }, query: string) {
  const response = await h.server.handler(
    new Request(`http://runtime.test/v1/principals${query}`, { headers: sharedHeaders(h.token) }),
  );
  return { status: response.status, body: await response.json() };
}

Deno.test("GET /v1/principals pages with limit and an opaque cursor; bad values are 422", async () => {
  const h = await harness();
  try {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await issue(h, Date.now() + DAY)).principalId);
    const whole = await list(h, "");
    assert.equal(whole.status, 200);
    assert.equal(whole.body.nextCursor, null);
    assert.equal(whole.body.principals.length, 5);
    const seen: string[] = [];
    let query = "?limit=2";
    const sizes: number[] = [];
    while (true) {
      const page = await list(h, query);
      assert.equal(page.status, 200);
      sizes.push(page.body.principals.length);
      seen.push(...page.body.principals.map((p: { principalId: string }) => p.principalId));
      if (page.body.nextCursor === null) break;
      assert.match(page.body.nextCursor, /^[A-Za-z0-9_-]+$/);
      query = `?limit=2&cursor=${page.body.nextCursor}`;
    }
    assert.deepEqual(sizes, [2, 2, 1]);
    assert.deepEqual(
      seen,
      whole.body.principals.map((p: { principalId: string }) => p.principalId),
    );
    assert.deepEqual([...seen].sort(), [...ids].sort());
    for (
      const bad of [
        "?limit=0",
        "?limit=501",
        "?limit=abc",
        "?limit=1&limit=2",
        "?cursor=not-a-cursor!",
        `?cursor=${btoa('["x","y"]')}`,
        "?offset=3",
      ]
    ) {
      const refused = await list(h, bad);
      assert.equal(refused.status, 422, bad);
      assert.equal(refused.body.error.code, "invalidRequest", bad);
    }
  } finally {
    await h.close();
  }
});

Deno.test("the server purges principals revoked longer ago than the retention, on its cleanup pass", async () => {
  const clock = { now: Date.now() };
  const h = await harness({ clock, cleanupIntervalMs: 60_000 });
  try {
    const kept = await issue(h, clock.now + 25 * DAY);
    const gone = await issue(h, clock.now + 25 * DAY);
    const revoke = await h.server.handler(
      new Request(`http://runtime.test/v1/principals/${gone.principalId}`, {
        method: "DELETE",
        headers: sharedHeaders(h.token),
      }),
    );
    assert.equal(revoke.status, 204);
    clock.now += 31 * DAY;
    // The first request after the interval starts the cleanup; close() waits for it.
    await (await h.server.handler(new Request("http://runtime.test/healthz"))).body?.cancel();
    await h.server.close();
    assert.equal(await h.store.principals.get(gone.principalId), null);
    assert.notEqual(await h.store.principals.get(kept.principalId), null);
  } finally {
    await h.store.close();
  }
});
