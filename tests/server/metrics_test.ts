/**
 * `GET /metrics` on its own listener (`--metrics-port`), scraped and parsed with an independent
 * Prometheus text parser; and the gateway's provider errors and active runs as metrics.
 *
 * @module
 */
import assert from "node:assert/strict";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { RuntimeMetrics } from "../../server/metrics.ts";
import { startGateway } from "../gateway/_harness.ts";
import { call } from "./_http.ts";
import { sharedHeaders, startServer } from "../support/server.ts";

interface Family {
  name: string;
  type: string;
  metrics: {
    labels?: Record<string, string>;
    value?: string;
    buckets?: Record<string, string>;
    count?: string;
    sum?: string;
  }[];
}

function parse(text: string): Map<string, Family> {
  const families = parsePrometheusTextFormat(text) as Family[];
  return new Map(families.map((family) => [family.name, family]));
}

function value(family: Family | undefined, labels: Record<string, string> = {}): number {
  assert.ok(family !== undefined, "the family is exposed");
  const series = family.metrics.find((metric) =>
    Object.entries(labels).every(([name, wanted]) => metric.labels?.[name] === wanted)
  );
  assert.ok(series !== undefined, `a series with ${JSON.stringify(labels)}`);
  return Number(series.value ?? series.count);
}

/**
 * One series of a histogram, parsed. The parser folds the buckets of every series of a family
 * into one and drops `_count`/`_sum` lines that carry labels, so it is handed the lines of the
 * one series with its labels (other than `le`) taken out.
 */
function histogramSeries(text: string, name: string, labels: string): Family["metrics"][number] {
  const lines = text.split("\n").filter((line) =>
    line.endsWith(` ${name}`) || line.includes(` ${name} `) ||
    (line.startsWith(name) && line.includes(`{${labels}`))
  ).map((line) => line.replace(`{${labels},`, "{").replace(`{${labels}}`, ""));
  const family = parse(lines.join("\n") + "\n").get(name);
  assert.equal(family?.metrics.length, 1);
  return family!.metrics[0];
}

function metricsUrl(logs: string[]): string {
  for (const line of logs) {
    if (!line.startsWith("{")) continue;
    const record = JSON.parse(line);
    if (record.msg === "listening" && typeof record.metricsUrl === "string") {
      return record.metricsUrl;
    }
  }
  throw new Error("serve logged no metricsUrl");
}

Deno.test("serve --metrics-port exposes request, latency and gauge metrics in Prometheus text", async () => {
  const server = await startServer({ args: ["--metrics-port", "0"] });
  try {
    const url = metricsUrl(server.logs());
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/, "loopback by default");
    for (let i = 0; i < 3; i++) {
      assert.equal(
        (await call(server.url, "GET", "/v1/runtime", { bearer: server.bearer })).status,
        200,
      );
    }
    const runId = `sesn_${crypto.randomUUID()}`;
    const run = await call(server.url, "GET", `/v1/runs/${runId}`, { bearer: server.bearer });
    assert.equal(run.status, 503, "runs are disabled without a provider");
    assert.equal((await call(server.url, "GET", "/v1/nothing", { bearer: null })).status, 404);
    // The API listener does not serve the metrics.
    assert.equal((await call(server.url, "GET", "/metrics", { bearer: null })).status, 404);

    const response = await fetch(url);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    const text = await response.text();
    const families = parse(text);
    const requests = families.get("automation_runtime_http_requests_total");
    assert.equal(requests?.type, "COUNTER");
    assert.equal(value(requests, { method: "GET", route: "/v1/runtime", status: "200" }), 3);
    assert.equal(value(requests, { method: "GET", route: "/healthz", status: "200" }), 1);
    assert.equal(value(requests, { route: "/v1/runs/:runId", status: "503" }), 1);
    assert.equal(value(requests, { route: "unmatched", status: "404" }), 2);
    assert.ok(!text.includes(runId), "the raw path with its id is never a label");
    assert.ok(!text.includes(server.bearer), "no bearer in the metrics");

    assert.equal(
      families.get("automation_runtime_http_request_duration_seconds")?.type,
      "HISTOGRAM",
    );
    const series = histogramSeries(
      text,
      "automation_runtime_http_request_duration_seconds",
      'method="GET",route="/v1/runtime"',
    );
    assert.equal(Number(series.count), 3);
    assert.equal(Number(series.buckets!["+Inf"]), 3);
    assert.equal(Object.keys(series.buckets!).length, 14);
    assert.ok(Number(series.sum) > 0);

    assert.equal(value(families.get("automation_runtime_http_requests_in_flight")), 0);
    assert.equal(value(families.get("automation_runtime_active_runs")), 0);
    assert.equal(value(families.get("automation_runtime_event_streams_open")), 0);
    assert.equal(value(families.get("automation_runtime_run_tails_held")), 0);
    assert.ok(families.has("automation_runtime_provider_errors_total"));
    const store = "automation_runtime_store_operation_duration_seconds";
    assert.equal(families.get(store)?.type, "HISTOGRAM");
    // The first authenticated request reads the authority state from the store; later ones
    // read it again only when something was committed since.
    const reads = histogramSeries(text, store, 'operation="readAuthorityState",outcome="ok"');
    assert.ok(Number(reads.count) >= 1, "store calls are timed");

    const elsewhere = await fetch(url.replace("/metrics", "/other"));
    await elsewhere.body?.cancel();
    assert.equal(elsewhere.status, 404);
  } finally {
    await server.stop();
  }
});

Deno.test("serve without --metrics-port opens no metrics listener; a bad port is a usage error", async () => {
  const server = await startServer();
  try {
    assert.ok(server.logs().every((line) => !line.includes("metricsUrl")));
    const taken = new URL(server.url).port;
    await assert.rejects(
      startServer({ args: ["--metrics-port", taken], timeoutMs: 15_000 }),
      new RegExp(`serve exited with 1[^]*Cannot listen for metrics on 127\\.0\\.0\\.1:${taken}`),
    );
  } finally {
    await server.stop();
  }
  await assert.rejects(
    startServer({ args: ["--metrics-port", "70000"], timeoutMs: 15_000 }),
    /serve exited with 2/,
  );
  await assert.rejects(
    startServer({ env: { AUTOMATION_RUNTIME_METRICS_PORT: "x" }, timeoutMs: 15_000 }),
    /serve exited with 1[^]*AUTOMATION_RUNTIME_METRICS_PORT/,
  );
});

Deno.test("provider errors are counted by type and active runs read from the store", async () => {
  const metrics = new RuntimeMetrics();
  const gateway = await startGateway({ metrics });
  gateway.holdTurns(true);
  try {
    const writer = await gateway.issue(["session:read", "session:write"]);
    gateway.fake.failNext({ method: "POST", path: "/v1/sessions", status: 400 });
    const refused = await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "hi" },
    });
    assert.equal(refused.status, 502);
    const started = await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "hi" },
    });
    assert.equal(started.status, 201, started.text);
    const text = await metrics.render();
    const families = parse(text);
    assert.equal(
      value(families.get("automation_runtime_provider_errors_total"), {
        type: "invalid_request_error",
      }),
      1,
    );
    assert.equal(value(families.get("automation_runtime_active_runs")), 1);
    assert.equal(
      value(families.get("automation_runtime_http_requests_total"), {
        method: "POST",
        route: "/v1/runs",
        status: "201",
      }),
      1,
    );
    assert.ok(!text.includes(gateway.providerKey));
    // An open event stream on the started run, and the run's tail held by this process: both
    // gauges are sampled at the scrape.
    const runId = started.json.runId as string;
    const stream = await gateway.server.handler(
      new Request(`http://gateway.test/v1/runs/${runId}/events`, {
        headers: sharedHeaders(writer.bearer, { accept: "text/event-stream" }),
      }),
    );
    assert.equal(stream.status, 200);
    const reader = stream.body!.getReader();
    await reader.read(); // `retry:` and the first events: the stream is open
    let gauges = parse(await metrics.render());
    for (let waited = 0; waited < 5_000; waited += 50) {
      if (value(gauges.get("automation_runtime_run_tails_held")) >= 1) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
      gauges = parse(await metrics.render());
    }
    assert.equal(value(gauges.get("automation_runtime_event_streams_open")), 1);
    assert.equal(value(gauges.get("automation_runtime_run_tails_held")), 1);
    await reader.cancel();
    gauges = parse(await metrics.render());
    for (let waited = 0; waited < 2_000; waited += 50) {
      if (value(gauges.get("automation_runtime_event_streams_open")) === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
      gauges = parse(await metrics.render());
    }
    assert.equal(value(gauges.get("automation_runtime_event_streams_open")), 0, "a closed stream");
  } finally {
    await gateway.close();
  }
});

Deno.test("label values are escaped so a parser reads them back; provider types are bounded", async () => {
  const metrics = new RuntimeMetrics();
  metrics.requestFinished("GET", 'odd "route"\\with\nbreak', 200, 0.001);
  metrics.providerError("Rate Limit!");
  metrics.providerError("overloaded_error");
  const families = parse(await metrics.render());
  assert.equal(
    value(families.get("automation_runtime_http_requests_total"), {
      route: 'odd "route"\\with\nbreak',
    }),
    1,
  );
  const types = families.get("automation_runtime_provider_errors_total")!.metrics.map((metric) =>
    metric.labels?.type
  );
  assert.deepEqual(types.sort(), ["other", "overloaded_error"]);
  assert.ok(Number.isNaN(value(families.get("automation_runtime_active_runs"))));
});

Deno.test("made-up HTTP methods fold into one method label; log lines cap the method and path", async () => {
  const gateway = await startGateway({ metrics: new RuntimeMetrics() });
  const metrics = gateway.server.services.metrics!;
  try {
    // 200 distinct made-up methods, and a few of 60,000 characters.
    const methods = [
      ...Array.from({ length: 200 }, (_, i) => `BREW${i}`),
      ...Array.from({ length: 3 }, (_, i) => `${"X".repeat(60_000)}${i}`),
    ];
    for (const method of methods) {
      const response = await gateway.server.handler(
        new Request(`http://127.0.0.1/v1/runtime/${"p".repeat(5_000)}`, { method }),
      );
      await response.body?.cancel();
      assert.ok(response.status >= 400);
    }
    const text = await metrics.render();
    const families = parse(text);
    const series = families.get("automation_runtime_http_requests_total")!.metrics;
    assert.deepEqual([...new Set(series.map((metric) => metric.labels?.method))], ["other"]);
    assert.equal(
      value(families.get("automation_runtime_http_requests_total"), {
        method: "other",
      }),
      methods.length,
    );
    // None of the made-up methods reaches the scrape, in any family or label. (Its total size
    // is not the measure: the store's own series grow with whatever background work ran.)
    assert.ok(!text.includes("BREW") && !text.includes("XXXX"), "a made-up method in the scrape");
    const longest = Math.max(...text.split("\n").map((line) => line.length));
    assert.ok(longest < 512, `a scrape line of ${longest} characters`);
    const lines = gateway.logs.filter((line) => line.includes('"method"'));
    assert.ok(lines.length >= methods.length);
    for (const line of lines) {
      const record = JSON.parse(line);
      assert.ok(record.method.length <= 32, `method of ${record.method.length} characters`);
      assert.ok(record.path.length <= 256, `path of ${record.path.length} characters`);
    }
  } finally {
    await gateway.close();
  }
});
