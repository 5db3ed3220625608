/**
 * Traces: `serve` with Deno's OpenTelemetry support on (`OTEL_DENO=true`) exports to a small
 * OTLP/HTTP JSON receiver started here: one server span per request named after its route
 * pattern, with the principal and run ids; the provider calls as child spans, whose
 * `traceparent` reaches the provider; never a bearer, key or body in an attribute.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ProviderManagedAgentClient } from "../../client/mod.ts";
import { FakeProvider } from "../support/fake_provider.ts";
import { startServer } from "../support/server.ts";
import { call } from "./_http.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

/** A minimal OTLP/HTTP receiver of the JSON protocol: keeps every span it is sent. */
function startReceiver(): { url: string; spans: Span[]; raw: string[]; close(): Promise<void> } {
  const spans: Span[] = [];
  const raw: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const text = await request.text();
    if (new URL(request.url).pathname === "/v1/traces") {
      raw.push(text);
      const body: Json = JSON.parse(text);
      for (const resource of body.resourceSpans ?? []) {
        for (const scope of resource.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            const attributes: Record<string, unknown> = {};
            for (const { key, value } of span.attributes ?? []) {
              attributes[key] = value.stringValue ?? value.intValue ?? value.boolValue ??
                value.doubleValue;
            }
            spans.push({ ...span, attributes });
          }
        }
      }
    }
    return Response.json({});
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    spans,
    raw,
    close: () => server.shutdown(),
  };
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

Deno.test("serve with OTEL_DENO exports request spans by route and provider calls as children", async () => {
  const receiver = startReceiver();
  const providerKey = `sk-fake-${crypto.randomUUID().replaceAll("-", "")}`;
  const fake = await FakeProvider.start({ apiKey: providerKey });
  const setup = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey: providerKey });
  const agent = await setup.createAgent({ name: "worker", model: "model-small" });
  const environment = await setup.createEnvironment({ name: "env" });
  fake.requests.length = 0;
  const server = await startServer({
    env: {
      OTEL_DENO: "true",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "automation-runtime-test",
      OTEL_DENO_CONSOLE: "ignore",
      AUTOMATION_RUNTIME_PROVIDER_API_KEY: providerKey,
      AUTOMATION_RUNTIME_PROVIDER_BASE_URL: fake.baseUrl,
      AUTOMATION_RUNTIME_DEFAULT_AGENT_ID: agent.id as string,
      AUTOMATION_RUNTIME_DEFAULT_ENVIRONMENT_ID: environment.id as string,
    },
  });
  let stopped = false;
  try {
    const runtime = await call(server.url, "GET", "/v1/runtime", { bearer: server.bearer });
    assert.equal(runtime.status, 200);
    const secretInput = `input-${crypto.randomUUID()}`;
    const started = await call(server.url, "POST", "/v1/runs", {
      bearer: server.bearer,
      headers: { "idempotency-key": crypto.randomUUID() },
      body: { input: secretInput },
    });
    assert.equal(started.status, 201, started.text);
    const runId: string = started.json.runId;
    const read = await call(server.url, "GET", `/v1/runs/${runId}`, { bearer: server.bearer });
    assert.equal(read.status, 200);
    // Spans are exported in batches and at the latest when the process ends.
    assert.equal(await server.stop(), 0);
    stopped = true;
    await until(
      () => receiver.spans.some((span) => span.attributes["http.route"] === "/v1/runs/:runId"),
      "the span of GET /v1/runs/:runId",
    );

    const principalId = server.bootstrap.principalId;
    const runtimeSpan = receiver.spans.find((span) =>
      span.attributes["http.route"] === "/v1/runtime"
    );
    assert.ok(runtimeSpan, "a server span for GET /v1/runtime");
    assert.equal(runtimeSpan.name, "GET /v1/runtime");
    assert.equal(runtimeSpan.kind, 2, "SPAN_KIND_SERVER");
    assert.equal(runtimeSpan.attributes["automation_runtime.principal_id"], principalId);
    assert.equal(Number(runtimeSpan.attributes["http.response.status_code"]), 200);

    const readSpan = receiver.spans.find((span) => span.name === "GET /v1/runs/:runId")!;
    assert.equal(readSpan.attributes["automation_runtime.run_id"], runId);
    assert.equal(readSpan.attributes["automation_runtime.principal_id"], principalId);

    const startSpan = receiver.spans.find((span) => span.name === "POST /v1/runs");
    assert.ok(startSpan, "a server span for POST /v1/runs");
    const children = receiver.spans.filter((span) =>
      span.parentSpanId === startSpan.spanId && span.traceId === startSpan.traceId
    );
    assert.ok(children.length >= 1, "the provider calls are child spans of the request");
    assert.ok(children.every((span) => span.kind === 3), "SPAN_KIND_CLIENT");

    // The W3C traceparent reached the provider, in the request's trace.
    const sessions = fake.requests.find((request) =>
      request.method === "POST" && request.path === "/v1/sessions"
    );
    assert.ok(sessions, "the provider was called");
    const traceparent = sessions.headers["traceparent"];
    assert.match(traceparent ?? "", /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    assert.equal(traceparent.split("-")[1], startSpan.traceId);

    const exported = receiver.raw.join("\n");
    for (const secret of [server.bearer, providerKey, secretInput]) {
      assert.ok(!exported.includes(secret), "no bearer, key or body in the exported spans");
    }
    for (const span of receiver.spans) {
      const route = span.attributes["http.route"];
      if (typeof route === "string") assert.ok(!route.includes(runId), "a route never holds an id");
    }
  } finally {
    if (!stopped) await server.stop();
    await fake.close();
    await receiver.close();
  }
});
