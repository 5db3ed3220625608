import assert from "node:assert/strict";
import { RuntimeServiceClient, RuntimeServiceError } from "../../sdk/mod.ts";

const TOKEN = "art_" + "t".repeat(43);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface Recorded {
  url: string;
  method: string;
  headers: Headers;
  body: string | null;
}

type Reply = Response | Error | ((signal: AbortSignal) => Promise<Response>);

/** A fetch that records each request and answers from a script, in order. */
function scriptedFetch(replies: Reply[]) {
  const requests: Recorded[] = [];
  const fetchFn: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    requests.push({
      url: request.url,
      method: request.method,
      headers: request.headers,
      body: init?.body === undefined ? null : String(init.body),
    });
    const reply = replies.shift();
    if (reply === undefined) throw new Error("unexpected extra request");
    if (reply instanceof Error) throw reply;
    if (typeof reply === "function") return await reply(init!.signal!);
    return reply;
  };
  return { fetch: fetchFn, requests };
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

function errorReply(
  status: number,
  code: string,
  extra: Record<string, unknown> = {},
  headers = {},
) {
  return json(status, {
    error: {
      code,
      layer: "interface",
      message: `refused: ${code}`,
      correlationId: "c-1",
      ...extra,
    },
  }, headers);
}

const ISSUED = {
  principalId: "0b7a2f6e-2c56-4d1c-9a41-6a4b8b9fb0c1",
  capabilities: ["session:read"],
  expiresAt: "2030-01-01T00:00:00.000Z",
  bearer: "art_" + "b".repeat(43),
};

function client(fetchFn: typeof fetch, extra: { deadlineMs?: number; maxRetries?: number } = {}) {
  return new RuntimeServiceClient({
    baseUrl: "http://runtime.test",
    token: TOKEN,
    fetch: fetchFn,
    ...extra,
  });
}

Deno.test("every call carries the shared headers; mutating calls an idempotency key", async () => {
  const { fetch, requests } = scriptedFetch([
    json(200, { ok: true }),
    json(200, { interfaceVersion: "2026-07-23", principalId: ISSUED.principalId }),
    json(201, ISSUED),
    new Response(null, { status: 204 }),
    json(200, { principals: [] }),
  ]);
  const sdk = client(fetch);
  const before = Date.now();
  assert.deepEqual(await sdk.health(), { ok: true });
  await sdk.runtime();
  const issued = await sdk.createPrincipal({
    capabilities: ["session:read"],
    expiresAt: new Date("2030-01-01T00:00:00Z"),
  });
  assert.deepEqual(issued, ISSUED);
  await sdk.revokePrincipal(ISSUED.principalId, { idempotencyKey: "revoke-1" });
  assert.deepEqual(await sdk.listPrincipals(), []);

  const [health, runtime, create, revoke, list] = requests;
  assert.equal(health.url, "http://runtime.test/healthz");
  assert.equal(health.headers.get("authorization"), null, "no bearer on the unauthenticated probe");
  for (const request of [runtime, create, revoke, list]) {
    assert.equal(request.headers.get("authorization"), `Bearer ${TOKEN}`);
    assert.equal(request.headers.get("x-interface-version"), "2026-07-23");
    assert.match(request.headers.get("x-correlation-id")!, UUID);
    const deadline = Date.parse(request.headers.get("x-deadline")!);
    assert.ok(deadline >= before + 59_000 && deadline <= Date.now() + 60_000);
  }
  const ids = new Set(requests.map((request) => request.headers.get("x-correlation-id")));
  assert.equal(ids.size, requests.length, "a fresh correlation id per call");
  assert.equal(runtime.headers.get("idempotency-key"), null);
  assert.equal(list.headers.get("idempotency-key"), null);
  assert.match(create.headers.get("idempotency-key")!, UUID);
  assert.equal(revoke.headers.get("idempotency-key"), "revoke-1");
  assert.equal(create.method, "POST");
  assert.equal(create.url, "http://runtime.test/v1/principals");
  assert.equal(create.headers.get("content-type"), "application/json");
  const body = JSON.parse(create.body!);
  assert.match(body.principalId, UUID);
  assert.deepEqual(body.capabilities, ["session:read"]);
  assert.equal(body.expiresAt, "2030-01-01T00:00:00.000Z");
  assert.equal(revoke.method, "DELETE");
  assert.equal(revoke.url, `http://runtime.test/v1/principals/${ISSUED.principalId}`);
});

Deno.test("a base URL with a path prefix keeps the prefix", async () => {
  const { fetch, requests } = scriptedFetch([json(200, { principals: [] })]);
  const sdk = new RuntimeServiceClient({ baseUrl: "http://gw.test/runtime/", token: TOKEN, fetch });
  await sdk.listPrincipals();
  assert.equal(requests[0].url, "http://gw.test/runtime/v1/principals");
});

Deno.test("retries keep the idempotency key, correlation id and body identical", async () => {
  const { fetch, requests } = scriptedFetch([
    new TypeError("connection reset"),
    errorReply(503, "storeUnavailable", {}, { "retry-after": "0" }),
    json(201, ISSUED),
  ]);
  const issued = await client(fetch).createPrincipal({
    capabilities: ["session:read"],
    expiresAt: "2030-01-01T00:00:00Z",
  }, { idempotencyKey: "issue-7" });
  assert.equal(issued.bearer, ISSUED.bearer);
  assert.equal(requests.length, 3);
  for (const request of requests) {
    assert.equal(request.headers.get("idempotency-key"), "issue-7");
    assert.equal(request.body, requests[0].body);
    assert.equal(
      request.headers.get("x-correlation-id"),
      requests[0].headers.get("x-correlation-id"),
    );
  }
});

Deno.test("408, 409 idempotencyInFlight and 429 are retried; Retry-After is honoured", async () => {
  const { fetch, requests } = scriptedFetch([
    errorReply(409, "idempotencyInFlight", {}, { "retry-after": "1" }),
    errorReply(429, "resourceExhausted", {}, { "retry-after": "0" }),
    errorReply(408, "deadlineExceeded", {}, { "retry-after": "0" }),
    json(200, { principals: [] }),
  ]);
  const started = Date.now();
  await client(fetch, { maxRetries: 3 }).listPrincipals();
  assert.equal(requests.length, 4);
  assert.ok(Date.now() - started >= 950, "waited the 1 s Retry-After");
});

Deno.test("answers a retry cannot cure are not retried and reject with a typed error", async () => {
  const cases: [number, string, Record<string, unknown>][] = [
    [400, "invalidJson", {}],
    [401, "authenticationFailed", {}],
    [403, "missingCapability", { requiredCapability: "authority:admin" }],
    [404, "notFound", {}],
    [409, "principalExists", {}],
    [422, "idempotencyConflict", {}],
    [500, "internal", {}],
  ];
  for (const [status, code, extra] of cases) {
    const { fetch, requests } = scriptedFetch([errorReply(status, code, extra)]);
    await assert.rejects(
      client(fetch).createPrincipal({
        capabilities: ["session:read"],
        expiresAt: "2030-01-01T00:00:00Z",
      }),
      (error: unknown) => {
        assert.ok(error instanceof RuntimeServiceError);
        assert.equal(error.status, status);
        assert.equal(error.code, code);
        assert.equal(error.layer, "interface");
        assert.equal(error.message, `refused: ${code}`);
        assert.equal(error.correlationId, "c-1");
        assert.deepEqual(error.details, extra);
        return true;
      },
    );
    assert.equal(requests.length, 1, `${code} is not retried`);
  }
});

Deno.test("connection errors are retried maxRetries times, then reject as connectionFailed", async () => {
  const { fetch, requests } = scriptedFetch([
    new TypeError("refused"),
    new TypeError("refused"),
  ]);
  await assert.rejects(client(fetch, { maxRetries: 1 }).listPrincipals(), (error: unknown) => {
    assert.ok(error instanceof RuntimeServiceError);
    assert.equal(error.status, 0);
    assert.equal(error.code, "connectionFailed");
    assert.equal(error.layer, "transport");
    assert.match(error.correlationId, UUID);
    assert.ok(!error.message.includes(TOKEN));
    return true;
  });
  assert.equal(requests.length, 2);
});

Deno.test("a Retry-After beyond the deadline ends the call with the last answer", async () => {
  const { fetch, requests } = scriptedFetch([
    errorReply(503, "storeUnavailable", {}, { "retry-after": "120" }),
  ]);
  const started = Date.now();
  await assert.rejects(
    client(fetch, { deadlineMs: 5_000 }).listPrincipals(),
    (error: unknown) => error instanceof RuntimeServiceError && error.status === 503,
  );
  assert.equal(requests.length, 1);
  assert.ok(Date.now() - started < 2_000, "did not sleep past the deadline");
});

Deno.test("the call's deadline aborts a hanging request with deadlineExceeded", async () => {
  let seen: AbortSignal | undefined;
  const hang = (signal: AbortSignal) => {
    seen = signal;
    return new Promise<Response>((_, reject) => {
      signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
    });
  };
  const { fetch } = scriptedFetch([hang]);
  await assert.rejects(client(fetch).runtime({ deadlineMs: 50 }), (error: unknown) => {
    assert.ok(error instanceof RuntimeServiceError);
    assert.equal(error.code, "deadlineExceeded");
    assert.equal(error.layer, "client");
    assert.equal(error.status, 0);
    return true;
  });
  assert.equal(seen?.aborted, true);
});

Deno.test("options.signal cancels the call with its reason, also during a retry wait", async () => {
  const reason = new Error("caller gave up");
  const already = new AbortController();
  already.abort(reason);
  const idle = scriptedFetch([]);
  await assert.rejects(client(idle.fetch).listPrincipals({ signal: already.signal }), reason);
  assert.equal(idle.requests.length, 0);

  const during = new AbortController();
  let seen: AbortSignal | undefined;
  const { fetch } = scriptedFetch([(signal) => {
    seen = signal;
    setTimeout(() => during.abort(reason), 10);
    return new Promise<Response>((_, reject) => {
      signal.addEventListener("abort", () => reject(signal.reason));
    });
  }]);
  await assert.rejects(client(fetch).listPrincipals({ signal: during.signal }), reason);
  assert.equal(seen?.aborted, true);

  const waiting = new AbortController();
  const slow = scriptedFetch([errorReply(503, "storeUnavailable", {}, { "retry-after": "30" })]);
  setTimeout(() => waiting.abort(reason), 50);
  await assert.rejects(client(slow.fetch).listPrincipals({ signal: waiting.signal }), reason);
  assert.equal(slow.requests.length, 1);
});

Deno.test("answers that are not the documented JSON reject as invalidResponse", async () => {
  const { fetch } = scriptedFetch([
    new Response("<html>bad gateway</html>", { status: 502 }),
    new Response("not json", { status: 200 }),
    json(200, { items: [] }),
  ]);
  const sdk = client(fetch);
  for (let i = 0; i < 3; i++) {
    await assert.rejects(
      sdk.listPrincipals(),
      (error: unknown) => error instanceof RuntimeServiceError && error.code === "invalidResponse",
    );
  }
});

Deno.test("the constructor and calls refuse bad options without echoing the token", () => {
  const spaced = "art_secret value with spaces";
  assert.throws(() => new RuntimeServiceClient({ baseUrl: "", token: TOKEN }), TypeError);
  assert.throws(() => new RuntimeServiceClient({ baseUrl: "http://x.test", token: "" }), TypeError);
  assert.throws(
    () => new RuntimeServiceClient({ baseUrl: "http://x.test", token: spaced }),
    (error: unknown) => error instanceof TypeError && !error.message.includes("secret"),
  );
  assert.throws(
    () => new RuntimeServiceClient({ baseUrl: "http://user:pw@x.test", token: TOKEN }),
    TypeError,
  );
  assert.throws(
    () => new RuntimeServiceClient({ baseUrl: "http://x.test?access_token=a", token: TOKEN }),
    TypeError,
  );
  assert.throws(
    () => new RuntimeServiceClient({ baseUrl: "ftp://x.test", token: TOKEN }),
    TypeError,
  );
  assert.throws(
    () => new RuntimeServiceClient({ baseUrl: "http://x.test", token: TOKEN, deadlineMs: 300_001 }),
    RangeError,
  );
  assert.throws(
    () => new RuntimeServiceClient({ baseUrl: "http://x.test", token: TOKEN, maxRetries: -1 }),
    RangeError,
  );
});

Deno.test("an invalid idempotency key is refused before any request", async () => {
  const { fetch, requests } = scriptedFetch([]);
  await assert.rejects(
    client(fetch).createPrincipal(
      { capabilities: ["session:read"], expiresAt: "2030-01-01T00:00:00Z" },
      { idempotencyKey: "x".repeat(129) },
    ),
    TypeError,
  );
  await assert.rejects(
    client(fetch).revokePrincipal("id", { idempotencyKey: "tab\there" }),
    TypeError,
  );
  assert.equal(requests.length, 0);
});

Deno.test("listPrincipals walks every page by nextCursor; listPrincipalPage sends limit and cursor", async () => {
  const summary = (id: string) => ({
    principalId: id,
    capabilities: ["session:read"],
    expiresAt: "2030-01-01T00:00:00.000Z",
    issuerId: id,
    createdAt: "2026-01-01T00:00:00.000Z",
  });
  const { fetch, requests } = scriptedFetch([
    json(200, { principals: [summary("a")], nextCursor: "c1" }),
    json(200, { principals: [summary("b")], nextCursor: null }),
    json(200, { principals: [summary("c")], nextCursor: "c2" }),
  ]);
  const sdk = new RuntimeServiceClient({ baseUrl: "http://runtime.test", token: TOKEN, fetch });
  const all = await sdk.listPrincipals();
  assert.deepEqual(all.map((p) => p.principalId), ["a", "b"]);
  assert.equal(requests[0].url, "http://runtime.test/v1/principals");
  assert.equal(requests[1].url, "http://runtime.test/v1/principals?cursor=c1");
  const page = await sdk.listPrincipalPage({ limit: 1, cursor: "c1" });
  assert.equal(requests[2].url, "http://runtime.test/v1/principals?limit=1&cursor=c1");
  assert.equal(page.nextCursor, "c2");
  await assert.rejects(() => sdk.listPrincipalPage({ limit: 0 }), RangeError);
  await assert.rejects(() => sdk.listPrincipalPage({ limit: 501 }), RangeError);
});

Deno.test("the client reads AUTOMATION_RUNTIME_TOKEN and AUTOMATION_RUNTIME_URL when options leave them out", async () => {
  const saved = {
    token: Deno.env.get("AUTOMATION_RUNTIME_TOKEN"),
    url: Deno.env.get("AUTOMATION_RUNTIME_URL"),
  };
  const restore = (name: string, value: string | undefined) =>
    value === undefined ? Deno.env.delete(name) : Deno.env.set(name, value);
  try {
    Deno.env.delete("AUTOMATION_RUNTIME_TOKEN");
    Deno.env.delete("AUTOMATION_RUNTIME_URL");
    assert.throws(
      () => new RuntimeServiceClient({ baseUrl: "http://runtime.test" }),
      (error: Error) =>
        error instanceof TypeError && /AUTOMATION_RUNTIME_TOKEN/.test(error.message),
    );
    assert.throws(() => new RuntimeServiceClient({ token: TOKEN }), /AUTOMATION_RUNTIME_URL/);
    Deno.env.set("AUTOMATION_RUNTIME_TOKEN", TOKEN);
    Deno.env.set("AUTOMATION_RUNTIME_URL", "http://env.test/base");
    const { fetch, requests } = scriptedFetch([
      json(200, { interfaceVersion: "2026-07-23" }),
      json(200, { interfaceVersion: "2026-07-23" }),
    ]);
    await new RuntimeServiceClient({ fetch }).runtime();
    assert.equal(requests[0].url, "http://env.test/base/v1/runtime");
    assert.equal(requests[0].headers.get("authorization"), `Bearer ${TOKEN}`);
    // Options win over the environment.
    const other = "art_" + "o".repeat(43);
    await new RuntimeServiceClient({ fetch, token: other, baseUrl: "http://opt.test" }).runtime();
    assert.equal(requests[1].url, "http://opt.test/v1/runtime");
    assert.equal(requests[1].headers.get("authorization"), `Bearer ${other}`);
  } finally {
    restore("AUTOMATION_RUNTIME_TOKEN", saved.token);
    restore("AUTOMATION_RUNTIME_URL", saved.url);
  }
});

Deno.test("createPrincipal sends the run and resource policy lists it is given, and no others", async () => {
  const { fetch, requests } = scriptedFetch([json(201, ISSUED), json(201, ISSUED)]);
  await client(fetch).createPrincipal({
    capabilities: ["session:read", "session:write"],
    expiresAt: "2030-01-01T00:00:00Z",
    agentIds: ["agent_a"],
    environmentIds: ["env_a"],
    vaultIds: [],
    memoryStoreIds: ["memstore_a"],
    repositories: ["acme/tools"],
    fileIds: ["file_a"],
    maxActiveRuns: 2,
  });
  const body = JSON.parse(requests[0].body!);
  assert.deepEqual(
    [body.agentIds, body.environmentIds, body.vaultIds, body.memoryStoreIds],
    [["agent_a"], ["env_a"], [], ["memstore_a"]],
  );
  assert.deepEqual([body.repositories, body.fileIds, body.maxActiveRuns], [
    ["acme/tools"],
    ["file_a"],
    2,
  ]);
  await client(fetch).createPrincipal({
    capabilities: ["session:read"],
    expiresAt: "2030-01-01T00:00:00Z",
  });
  const plain = JSON.parse(requests[1].body!);
  assert.equal("vaultIds" in plain || "environmentIds" in plain, false);
});
