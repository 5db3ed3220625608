/**
 * The shared request layer (`client/http.ts`): headers, query encoding, retries with backoff and
 * `retry-after` / `x-should-retry`, typed errors, timeouts, aborts and traces.
 */
import assert from "node:assert/strict";
import {
  backoffMs,
  DEFAULT_PROVIDER_VERSION,
  encodeQuery,
  type FetchLike,
  HttpTransport,
  type HttpTransportOptions,
  type ProviderTrace,
  retryAfterMs,
} from "../../client/http.ts";
import {
  ProviderAbortError,
  ProviderApiError,
  ProviderConnectionError,
  ProviderTimeoutError,
} from "../../client/mod.ts";

interface Seen {
  url: string;
  method: string;
  headers: Headers;
  body: string | undefined;
}

/** A fetch that records requests and answers from a list (the last answer repeats). */
function scripted(
  answers: (() => Response | Promise<Response>)[],
): { fetchImpl: FetchLike; seen: Seen[] } {
  const seen: Seen[] = [];
  const fetchImpl: FetchLike = (input, init) => {
    seen.push({
      url: String(input),
      method: init?.method ?? "GET",
      headers: new Headers(init?.headers),
      body: init?.body as string | undefined,
    });
    const answer = answers[Math.min(seen.length - 1, answers.length - 1)];
    return Promise.resolve(answer());
  };
  return { fetchImpl, seen };
}

function ok(body: unknown = { ok: true }, headers: Record<string, string> = {}): () => Response {
  return () =>
    new Response(JSON.stringify(body), {
      headers: { "content-type": "application/json", "request-id": "req_ok", ...headers },
    });
}

function fail(
  status: number,
  type: string,
  headers: Record<string, string> = {},
  extra: Record<string, unknown> = {},
): () => Response {
  return () =>
    new Response(
      JSON.stringify({ type: "error", error: { type, message: `${type} happened`, ...extra } }),
      {
        status,
        headers: { "content-type": "application/json", "request-id": "req_err", ...headers },
      },
    );
}

/** A fetch that never answers until its signal aborts (then rejects with the reason). */
const hangingFetch: FetchLike = (_input, init) =>
  new Promise((_resolve, reject) => {
    const signal = init?.signal;
    signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
  });

/** Awaits a rejection that must be a ProviderApiError. */
async function apiError(promise: Promise<unknown>): Promise<ProviderApiError> {
  const error = await promise.then(() => undefined, (e) => e);
  assert.ok(error instanceof ProviderApiError, `expected ProviderApiError, got ${error}`);
  return error;
}

function transport(options: Partial<HttpTransportOptions> = {}): HttpTransport {
  return new HttpTransport({ baseUrl: "https://provider.test/", apiKey: "key", ...options });
}

Deno.test("requests carry x-api-key, the version, the betas and JSON headers", async () => {
  const { fetchImpl, seen } = scripted([ok()]);
  const http = transport({ fetchImpl, betas: ["managed-agents-2026-04-01"] });
  await http.json({ method: "POST", path: "/v1/agents", body: { name: "a" }, betas: ["mine-1"] });
  const [request] = seen;
  assert.equal(request.url, "https://provider.test/v1/agents");
  assert.equal(request.headers.get("x-api-key"), "key");
  assert.equal(request.headers.get("authorization"), null);
  assert.equal(request.headers.get("provider-version"), DEFAULT_PROVIDER_VERSION);
  assert.equal(DEFAULT_PROVIDER_VERSION, "2026-10-21");
  assert.equal(request.headers.get("provider-beta"), "mine-1,managed-agents-2026-04-01");
  assert.equal(request.headers.get("accept"), "application/json");
  assert.equal(request.headers.get("content-type"), "application/json");
  assert.equal(request.body, '{"name":"a"}');
});

Deno.test("authToken is sent as a bearer and wins over apiKey; providerVersion is sent", async () => {
  const { fetchImpl, seen } = scripted([ok()]);
  const http = transport({ fetchImpl, authToken: "tok", providerVersion: "2030-01-01" });
  await http.json({ method: "GET", path: "/v1/x" });
  assert.equal(seen[0].headers.get("authorization"), "Bearer tok");
  assert.equal(seen[0].headers.get("x-api-key"), null);
  assert.equal(seen[0].headers.get("provider-version"), "2030-01-01");
});

Deno.test("a body-less request sends no body and no content type", async () => {
  const { fetchImpl, seen } = scripted([ok()]);
  await transport({ fetchImpl }).json({ method: "POST", path: "/v1/agents/a/archive" });
  assert.equal(seen[0].body, undefined);
  assert.equal(seen[0].headers.get("content-type"), null);
  assert.equal(seen[0].headers.get("provider-beta"), null);
});

Deno.test("a missing or invalid baseUrl is a TypeError", () => {
  assert.throws(() => new HttpTransport({ baseUrl: undefined }), TypeError);
  assert.throws(() => new HttpTransport({ baseUrl: "" }), TypeError);
  assert.throws(() => new HttpTransport({ baseUrl: "not a url" }), TypeError);
});

Deno.test("encodeQuery writes arrays in bracket form and ranges as key[op]", () => {
  assert.equal(encodeQuery(undefined), "");
  assert.equal(encodeQuery({ a: undefined, b: null }), "");
  const query = encodeQuery({
    statuses: ["idle", "running"],
    created_at: { gte: "2026-01-01T00:00:00Z", lte: undefined },
    include_archived: true,
    limit: 5,
    page: "p 2",
  });
  assert.equal(
    query,
    "?statuses%5B%5D=idle&statuses%5B%5D=running&created_at%5Bgte%5D=2026-01-01T00%3A00%3A00Z" +
      "&include_archived=true&limit=5&page=p+2",
  );
  const decoded = [...new URLSearchParams(query.slice(1))];
  assert.deepEqual(decoded[0], ["statuses[]", "idle"]);
});

Deno.test("retryAfterMs reads retry-after-ms, seconds and HTTP dates; backoff is bounded", () => {
  assert.equal(retryAfterMs(new Headers({ "retry-after-ms": "250" })), 250);
  assert.equal(retryAfterMs(new Headers({ "retry-after": "1.5" })), 1500);
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(
    retryAfterMs(new Headers({ "retry-after": "Thu, 01 Jan 2026 00:00:02 GMT" }), now),
    2000,
  );
  assert.equal(retryAfterMs(new Headers({ "retry-after": "soon" })), undefined);
  assert.equal(retryAfterMs(new Headers({ "retry-after-ms": "-5" })), undefined);
  assert.equal(retryAfterMs(new Headers()), undefined);
  for (let k = 0; k < 8; k++) {
    const value = backoffMs(k);
    const base = Math.min(0.5 * 2 ** k, 8) * 1000;
    assert.ok(value <= base && value > base * 0.75, `backoff ${k} = ${value}`);
  }
});

Deno.test("a 429 is retried after retry-after-ms and then succeeds", async () => {
  const { fetchImpl, seen } = scripted([
    fail(429, "rate_limit_error", { "retry-after-ms": "40" }),
    ok({ done: 1 }),
  ]);
  const started = performance.now();
  const answer = await transport({ fetchImpl }).json<{ done: number }>({
    method: "GET",
    path: "/v1/x",
  });
  assert.deepEqual(answer, { done: 1 });
  assert.equal(seen.length, 2);
  assert.ok(performance.now() - started >= 35, "waited for retry-after-ms");
});

Deno.test("5xx is retried twice, then the typed error surfaces", async () => {
  const { fetchImpl, seen } = scripted([fail(500, "api_error", { "retry-after-ms": "1" })]);
  const error = await transport({ fetchImpl }).json({ method: "GET", path: "/v1/x" }).catch((e) =>
    e
  );
  assert.ok(error instanceof ProviderApiError);
  assert.equal(error.status, 500);
  assert.equal(error.type, "api_error");
  assert.equal(error.message, "api_error happened");
  assert.equal(error.requestId, "req_err");
  assert.equal(error.retryable, true);
  assert.equal(error.code, "providerApiError");
  assert.equal(seen.length, 3);
});

Deno.test("x-should-retry overrides the status rules both ways", async () => {
  const never = scripted([fail(503, "overloaded_error", { "x-should-retry": "false" })]);
  await assert.rejects(
    transport({ fetchImpl: never.fetchImpl }).json({ method: "GET", path: "/" }),
  );
  assert.equal(never.seen.length, 1);
  const forced = scripted([
    fail(400, "invalid_request_error", { "x-should-retry": "true", "retry-after-ms": "1" }),
    ok(),
  ]);
  await transport({ fetchImpl: forced.fetchImpl }).json({ method: "GET", path: "/" });
  assert.equal(forced.seen.length, 2);
});

Deno.test("a 409 is retried, but a memory path conflict never is", async () => {
  const race = scripted([fail(409, "conflict_error", { "retry-after-ms": "1" }), ok()]);
  await transport({ fetchImpl: race.fetchImpl }).json({ method: "POST", path: "/" });
  assert.equal(race.seen.length, 2);
  const memory = scripted([
    fail(409, "memory_path_conflict_error", {}, { conflicting_memory_id: "mem_1" }),
  ]);
  const error = await transport({ fetchImpl: memory.fetchImpl }).json({ method: "POST", path: "/" })
    .catch((e) => e);
  assert.equal(memory.seen.length, 1);
  assert.ok(error instanceof ProviderApiError);
  assert.equal(error.retryable, false);
  assert.equal(error.providerError?.conflicting_memory_id, "mem_1");
});

Deno.test("a 4xx other than 408/409/429 is not retried and keeps details", async () => {
  const { fetchImpl, seen } = scripted([
    fail(400, "invalid_request_error", {}, { details: { error_code: "environment_archived" } }),
  ]);
  const error = await apiError(transport({ fetchImpl }).json({ method: "GET", path: "/" }));
  assert.equal(seen.length, 1);
  assert.equal(error.errorCode, "environment_archived");
  assert.equal(error.retryable, false);
});

Deno.test("a non-JSON error body is kept as text; request_id falls back to the body", async () => {
  const text = scripted([
    () =>
      new Response("upstream exploded", { status: 502, headers: { "x-should-retry": "false" } }),
  ]);
  const error = await apiError(
    transport({ fetchImpl: text.fetchImpl }).json({ method: "GET", path: "/" }),
  );
  assert.equal(error.message, "upstream exploded");
  assert.equal(error.type, "api_error");
  const body = scripted([() =>
    new Response(
      JSON.stringify({
        type: "error",
        error: { type: "not_found_error", message: "nope" },
        request_id: "req_b",
      }),
      { status: 404 },
    )]);
  const missing = await apiError(
    transport({ fetchImpl: body.fetchImpl }).json({ method: "GET", path: "/" }),
  );
  assert.equal(missing.requestId, "req_b");
  assert.equal(missing.status, 404);
});

Deno.test("connection failures are retried, then surface as ProviderConnectionError", async () => {
  let calls = 0;
  const fetchImpl: FetchLike = () => {
    calls++;
    return Promise.reject(new TypeError("connection refused"));
  };
  const error = await transport({ fetchImpl, maxRetries: 1 }).json({ method: "GET", path: "/" })
    .catch((e) => e);
  assert.ok(error instanceof ProviderConnectionError);
  assert.equal(error.code, "providerConnectionError");
  assert.equal(calls, 2);
});

Deno.test("a unary call that outlives defaultTimeoutMs fails with ProviderTimeoutError", async () => {
  const error = await transport({ fetchImpl: hangingFetch, defaultTimeoutMs: 30, maxRetries: 0 })
    .json({ method: "GET", path: "/" }).catch((e) => e);
  assert.ok(error instanceof ProviderTimeoutError);
  assert.equal(error.timeoutMs, 30);
  assert.equal(error.code, "providerTimeout");
});

Deno.test("a stream's timeout covers only the wait for its headers", async () => {
  const early = await transport({ fetchImpl: hangingFetch, streamTimeoutMs: 30, maxRetries: 0 })
    .send({ method: "GET", path: "/s", stream: true }).catch((e) => e);
  assert.ok(early instanceof ProviderTimeoutError);
  assert.equal(early.timeoutMs, 30);

  // Headers at once, the body slowly: longer than the stream and the unary timeouts together.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const slowBody: FetchLike = (_input, init) => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        timer = setTimeout(() => {
          controller.enqueue(new TextEncoder().encode("data: late\n\n"));
          controller.close();
        }, 120);
        init?.signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          controller.error(init.signal?.reason);
        });
      },
    });
    return Promise.resolve(
      new Response(body, { headers: { "content-type": "text/event-stream" } }),
    );
  };
  const response = await transport({
    fetchImpl: slowBody,
    streamTimeoutMs: 30,
    defaultTimeoutMs: 30,
  })
    .send({ method: "GET", path: "/s", stream: true });
  assert.equal(await response.text(), "data: late\n\n");
});

Deno.test("an abort during the request or the backoff is ProviderAbortError, never retried", async () => {
  const controller = new AbortController();
  let calls = 0;
  const fetchImpl: FetchLike = (input, init) => {
    calls++;
    return hangingFetch(input, init);
  };
  setTimeout(() => controller.abort("stop"), 10);
  const error = await transport({ fetchImpl }).json({
    method: "GET",
    path: "/",
    signal: controller.signal,
  })
    .catch((e) => e);
  assert.ok(error instanceof ProviderAbortError);
  assert.equal(error.cause, "stop");
  assert.equal(calls, 1);

  const backoff = new AbortController();
  const { fetchImpl: failing } = scripted([
    fail(503, "overloaded_error", { "retry-after-ms": "10000" }),
  ]);
  setTimeout(() => backoff.abort(), 10);
  const started = performance.now();
  const during = await transport({ fetchImpl: failing }).json({
    method: "GET",
    path: "/",
    signal: backoff.signal,
  })
    .catch((e) => e);
  assert.ok(during instanceof ProviderAbortError);
  assert.ok(performance.now() - started < 2000, "the backoff sleep was cut short");

  const before = new AbortController();
  before.abort();
  await assert.rejects(
    transport({ fetchImpl: scripted([ok()]).fetchImpl }).json({
      method: "GET",
      path: "/",
      signal: before.signal,
    }),
    ProviderAbortError,
  );
});

Deno.test("onTrace gets one trace per attempt: method, path, status, duration, attempt, request id", async () => {
  const traces: ProviderTrace[] = [];
  const { fetchImpl } = scripted([fail(429, "rate_limit_error", { "retry-after-ms": "1" }), ok()]);
  await transport({ fetchImpl, onTrace: (t) => traces.push(t) }).json({
    method: "GET",
    path: "/v1/sessions",
    query: { limit: 1 },
    headers: { "x-secret": "s3cret" },
  });
  assert.equal(traces.length, 2);
  assert.deepEqual(traces.map((t) => [t.method, t.path, t.status, t.attempt, t.requestId]), [
    ["GET", "/v1/sessions", 429, 0, "req_err"],
    ["GET", "/v1/sessions", 200, 1, "req_ok"],
  ]);
  for (const trace of traces) {
    assert.ok(trace.durationMs >= 0);
    assert.deepEqual(
      Object.keys(trace).sort(),
      ["attempt", "durationMs", "error", "method", "path", "requestId", "status"],
    );
    assert.ok(!JSON.stringify(trace).includes("key"), "no credentials in traces");
    assert.ok(!JSON.stringify(trace).includes("s3cret"), "no headers in traces");
  }
});

Deno.test("a failed attempt is traced with its error code; a throwing onTrace is harmless", async () => {
  const traces: ProviderTrace[] = [];
  const fetchImpl: FetchLike = () => Promise.reject(new TypeError("refused"));
  await assert.rejects(
    transport({ fetchImpl, maxRetries: 0, onTrace: (t) => traces.push(t) }).json({
      method: "GET",
      path: "/",
    }),
    ProviderConnectionError,
  );
  assert.equal(traces[0].status, undefined);
  assert.equal(traces[0].error, "providerConnectionError");
  const answer = await transport({
    fetchImpl: scripted([ok({ fine: true })]).fetchImpl,
    onTrace: () => {
      throw new Error("broken tracer");
    },
  }).json({ method: "GET", path: "/" });
  assert.deepEqual(answer, { fine: true });
});

Deno.test("204 and empty bodies resolve to undefined", async () => {
  const { fetchImpl } = scripted([() => new Response(null, { status: 204 })]);
  assert.equal(await transport({ fetchImpl }).json({ method: "DELETE", path: "/" }), undefined);
});
