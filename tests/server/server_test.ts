/**
 * In-process tests of `createRuntimeServer` for what a black-box test cannot provoke: store
 * failures (500 / 503), a request held inside its handler (409 in flight), the clock passing an
 * expiry, the principal cache, and the log lines.
 */
import assert from "node:assert/strict";
import { deriveBootstrapCredential } from "../../server/bootstrap/credential.ts";
import type { RequestLogRecord, RuntimeLogger } from "../../server/log.ts";
import { createRuntimeServer, type RuntimeServer } from "../../server/server.ts";
import { openKvStore, wrapStore } from "../../server/store/mod.ts";
import { type Store, type StorePartName, StoreUnavailableError } from "../../server/store/types.ts";
import { sharedHeaders } from "../support/server.ts";
import { principalBody } from "./_http.ts";

const DAY = 86_400_000;

// deno-lint-ignore no-explicit-any
type Json = any;

interface Harness {
  server: RuntimeServer;
  store: Store;
  token: string;
  principalId: string;
  lines: RequestLogRecord[];
  events: string[];
  clock: { now: number };
  request(
    method: string,
    path: string,
    options?: { bearer?: string | null; headers?: Record<string, string | null>; body?: unknown },
  ): Promise<{ status: number; headers: Headers; text: string; json: Json }>;
  close(): Promise<void>;
}

async function harness(
  options: {
    wrap?: (store: Store) => Store;
    principalCache?: boolean;
    bootstrapTtlMs?: number;
    inFlightQuota?: number;
  } = {},
): Promise<Harness> {
  const clock = { now: Date.now() };
  const token = `art_${crypto.randomUUID().replaceAll("-", "")}${"A".repeat(11)}`;
  const principalId = crypto.randomUUID();
  const bootstrap = deriveBootstrapCredential({
    token,
    principalId,
    capabilities: ["session:read", "session:write", "authority:admin"],
    expiresAt: new Date(clock.now + (options.bootstrapTtlMs ?? 30 * DAY)).toISOString(),
    source: "environment",
  });
  const raw = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
  const store = options.wrap ? options.wrap(raw) : raw;
  const lines: RequestLogRecord[] = [];
  const events: string[] = [];
  const logger: RuntimeLogger = {
    request: (record) => lines.push(record),
    info: (message, fields) => events.push(JSON.stringify({ message, ...fields })),
    error: (message, fields) => events.push(JSON.stringify({ message, ...fields })),
    flush: () => {},
  };
  const server = createRuntimeServer({
    bootstrap,
    store,
    logger,
    now: () => clock.now,
    principalCache: options.principalCache,
    inFlightQuota: options.inFlightQuota,
  });
  return {
    server,
    store,
    token,
    principalId,
    lines,
    events,
    clock,
    async request(method, path, requestOptions = {}) {
      const headers = sharedHeaders(
        requestOptions.bearer === undefined ? token : requestOptions.bearer,
        requestOptions.headers,
      );
      headers.set("x-deadline", new Date(clock.now + 60_000).toISOString());
      for (const [name, value] of Object.entries(requestOptions.headers ?? {})) {
        if (value !== null) headers.set(name, value);
      }
      let body: string | undefined;
      if (requestOptions.body !== undefined) {
        body = JSON.stringify(requestOptions.body);
        if (!headers.has("content-type")) headers.set("content-type", "application/json");
      }
      const response = await server.handler(
        new Request(`http://runtime.test${path}`, { method, headers, body }),
      );
      const text = await response.text();
      let json;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: response.status, headers: response.headers, text, json };
    },
    async close() {
      await server.close();
      await raw.close();
    },
  };
}

function failing(
  store: Store,
  part: StorePartName,
  method: string,
  error: () => Error,
  times = 1,
): Store {
  let left = times;
  return wrapStore(store, (name, called, call) => {
    if (name !== part || called !== method) return call;
    return (...args) => {
      if (left > 0) {
        left--;
        return Promise.reject(error());
      }
      return call(...args);
    };
  });
}

Deno.test("an unexpected failure answers 500 internal without internals, and is not recorded", async () => {
  const h = await harness({
    wrap: (store) =>
      failing(
        store,
        "principals",
        "create",
        () => new Error("boom at /secret/path password=hunter2"),
      ),
  });
  try {
    const key = crypto.randomUUID();
    const body = principalBody();
    const failed = await h.request("POST", "/v1/principals", {
      headers: { "idempotency-key": key },
      body,
    });
    assert.equal(failed.status, 500);
    assert.equal(failed.json.error.code, "internal");
    assert.equal(failed.json.error.layer, "internal");
    assert.equal(failed.json.error.message, "Internal error");
    assert.ok(!failed.text.includes("hunter2") && !failed.text.includes("boom"));
    assert.ok(!h.events.join("\n").includes("hunter2"));
    const retried = await h.request("POST", "/v1/principals", {
      headers: { "idempotency-key": key },
      body,
    });
    assert.equal(retried.status, 201, retried.text);
    assert.equal(retried.headers.get("idempotent-replayed"), null);
  } finally {
    await h.close();
  }
});

Deno.test("a store outage answers 503 storeUnavailable with a JSON body", async () => {
  const h = await harness({
    wrap: (store) =>
      failing(
        store,
        "principals",
        "findByDigest",
        () => new StoreUnavailableError("database down"),
      ),
  });
  try {
    const issued = await h.request("POST", "/v1/principals", {
      headers: { "idempotency-key": crypto.randomUUID() },
      body: principalBody(),
    });
    assert.equal(issued.status, 201);
    const result = await h.request("GET", "/v1/runtime", { bearer: issued.json.bearer });
    assert.equal(result.status, 503);
    assert.equal(result.headers.get("content-type"), "application/json");
    assert.equal(result.json.error.code, "storeUnavailable");
    assert.equal(result.json.error.layer, "internal");
    const again = await h.request("GET", "/v1/runtime", { bearer: issued.json.bearer });
    assert.equal(again.status, 200, "the outage is over");
  } finally {
    await h.close();
  }
});

Deno.test("a key whose first request is still in its handler answers 409 idempotencyInFlight", async () => {
  const gate = Promise.withResolvers<void>();
  const entered = Promise.withResolvers<void>();
  const h = await harness({
    wrap: (store) =>
      wrapStore(store, (part, method, call) => {
        if (part !== "principals" || method !== "create") return call;
        return async (...args) => {
          entered.resolve();
          await gate.promise;
          return await call(...args);
        };
      }),
  });
  try {
    const key = crypto.randomUUID();
    const body = principalBody();
    const first = h.request("POST", "/v1/principals", {
      headers: { "idempotency-key": key },
      body,
    });
    await entered.promise;
    const second = await h.request("POST", "/v1/principals", {
      headers: { "idempotency-key": key },
      body,
    });
    assert.equal(second.status, 409);
    assert.equal(second.json.error.code, "idempotencyInFlight");
    assert.equal(second.json.error.layer, "idempotency");
    assert.equal(second.headers.get("retry-after"), "1");
    gate.resolve();
    const done = await first;
    assert.equal(done.status, 201);
    const replay = await h.request("POST", "/v1/principals", {
      headers: { "idempotency-key": key },
      body,
    });
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.equal(replay.text, done.text);
  } finally {
    gate.resolve();
    await h.close();
  }
});

Deno.test("expiry: a principal and the bootstrap answer 401 tokenExpired once the clock passes", async () => {
  const h = await harness({ bootstrapTtlMs: 2 * DAY });
  try {
    const issued = await h.request("POST", "/v1/principals", {
      headers: { "idempotency-key": crypto.randomUUID() },
      body: principalBody({ expiresAt: new Date(h.clock.now + DAY).toISOString() }),
    });
    assert.equal(issued.status, 201);
    assert.equal(
      (await h.request("GET", "/v1/runtime", { bearer: issued.json.bearer })).status,
      200,
    );

    h.clock.now += DAY;
    const principal = await h.request("GET", "/v1/runtime", { bearer: issued.json.bearer });
    assert.equal(principal.status, 401);
    assert.equal(principal.json.error.code, "tokenExpired");
    assert.equal(principal.json.error.layer, "auth");
    assert.equal((await h.request("GET", "/v1/runtime")).status, 200, "bootstrap still valid");

    h.clock.now += DAY;
    const bootstrap = await h.request("GET", "/v1/runtime");
    assert.equal(bootstrap.status, 401);
    assert.equal(bootstrap.json.error.code, "tokenExpired");
  } finally {
    await h.close();
  }
});

Deno.test("the principal cache saves store lookups and still sees a revocation at once", async () => {
  for (const principalCache of [true, false]) {
    let lookups = 0;
    const h = await harness({
      principalCache,
      wrap: (store) =>
        wrapStore(store, (part, method, call) => {
          if (part !== "principals" || method !== "findByDigest") return call;
          return (...args) => {
            lookups++;
            return call(...args);
          };
        }),
    });
    try {
      const issued = await h.request("POST", "/v1/principals", {
        headers: { "idempotency-key": crypto.randomUUID() },
        body: principalBody(),
      });
      for (let i = 0; i < 5; i++) {
        assert.equal(
          (await h.request("GET", "/v1/runtime", { bearer: issued.json.bearer })).status,
          200,
        );
      }
      assert.equal(lookups, principalCache ? 1 : 5);
      const revoked = await h.request("DELETE", `/v1/principals/${issued.json.principalId}`);
      assert.equal(revoked.status, 204);
      const refused = await h.request("GET", "/v1/runtime", { bearer: issued.json.bearer });
      assert.equal(refused.status, 401);
      assert.equal(refused.json.error.code, "authenticationFailed");
    } finally {
      await h.close();
    }
  }
});

Deno.test("request log records carry method, path without query, status, ids; never a bearer", async () => {
  const h = await harness();
  try {
    const issued = await h.request("POST", "/v1/principals?note=x", {
      headers: { "idempotency-key": crypto.randomUUID() },
      body: principalBody(),
    });
    const ok = await h.request("GET", "/v1/runtime?verbose=1");
    await h.request("GET", "/v1/runtime", {
      bearer: "wrong-bearer-value-that-is-long-enough-to-see",
    });
    assert.equal(ok.status, 200);
    assert.equal(h.lines.length, 3);
    const [created, runtime, refused] = h.lines;
    assert.deepEqual(
      { ...created, durationMs: 0, time: 0 },
      {
        method: "POST",
        path: "/v1/principals",
        status: 201,
        durationMs: 0,
        correlationId: created.correlationId,
        principalId: h.principalId,
        time: 0,
      },
    );
    // The answer's time: the server's clock at arrival plus the duration.
    assert.equal(created.time, h.clock.now + created.durationMs);
    assert.equal(runtime.path, "/v1/runtime");
    assert.equal(refused.status, 401);
    assert.equal(refused.principalId, null);
    assert.ok(created.durationMs >= 0);
    const all = JSON.stringify(h.lines) + h.events.join("\n");
    for (const secret of [h.token, issued.json.bearer, "wrong-bearer-value"]) {
      assert.ok(!all.includes(secret));
    }
  } finally {
    await h.close();
  }
});

Deno.test("responses to refused requests still echo the headers and set nosniff", async () => {
  const h = await harness();
  try {
    const correlation = crypto.randomUUID();
    const result = await h.request("GET", "/v1/runtime", {
      headers: { "x-interface-version": "1999-01-01", "x-correlation-id": correlation },
    });
    assert.equal(result.status, 422);
    assert.equal(result.headers.get("x-interface-version"), "1999-01-01");
    assert.equal(result.headers.get("x-correlation-id"), correlation);
    assert.equal(result.headers.get("x-content-type-options"), "nosniff");
    assert.equal(result.json.error.correlationId, correlation);
  } finally {
    await h.close();
  }
});
