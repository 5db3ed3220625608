/**
 * The service's metrics and their rendering in the Prometheus text format (version 0.0.4), written
 * here rather than with a client library: a handful of counters, gauges and histograms is all the
 * service needs.
 *
 * | metric | type | labels |
 * |---|---|---|
 * | `automation_runtime_http_requests_total` | counter | `method`, `route`, `status` |
 * | `automation_runtime_http_request_duration_seconds` | histogram | `method`, `route` |
 * | `automation_runtime_http_requests_in_flight` | gauge | |
 * | `automation_runtime_active_runs` | gauge | |
 * | `automation_runtime_event_streams_open` | gauge | |
 * | `automation_runtime_run_tails_held` | gauge | |
 * | `automation_runtime_provider_errors_total` | counter | `type` |
 * | `automation_runtime_run_list_cost_total` | counter | `agent_id`, `currency` |
 * | `automation_runtime_store_operation_duration_seconds` | histogram | `operation`, `outcome` |
 *
 * `route` is the route's path pattern (`/v1/runs/:runId`), never the raw path: ids would make
 * every run its own series. A request that matched no route is `route="unmatched"`. Likewise
 * `method` is one of the standard methods, and any other method a client makes up is
 * `method="other"` ({@linkcode methodLabel}): the request line is the client's to choose, and a
 * label per made-up method would let anyone grow the scrape and the process without bound.
 * List cost is counted by agent, never by principal (principals come and go by the thousand), and
 * at most {@linkcode MAX_COST_AGENTS} agents have their own series; the rest are
 * `agent_id="other"`.
 *
 * @module
 */
import type { Store } from "./store/types.ts";
import { wrapStore } from "./store/wrap.ts";

/** Content type of the Prometheus text format. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Most agents with their own list cost series; further ones count as `other`. */
export const MAX_COST_AGENTS = 100;

/** Buckets of the request latency histogram, in seconds. */
export const REQUEST_BUCKETS: readonly number[] = Object.freeze([
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
]);

/** Buckets of the store latency histogram, in seconds. */
export const STORE_BUCKETS: readonly number[] = Object.freeze([
  0.0001,
  0.00025,
  0.0005,
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  1,
]);

function escapeLabel(value: string): string {
  return value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
}

function labelText(names: readonly string[], values: readonly string[]): string {
  if (names.length === 0) return "";
  return `{${names.map((name, i) => `${name}="${escapeLabel(values[i])}"`).join(",")}}`;
}

function number(value: number): string {
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return Number.isNaN(value) ? "NaN" : String(value);
}

/**
 * A value that goes up and down, such as the requests in flight.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Gauge } from "./metrics.ts";
 * const streams = new Gauge();
 * streams.inc();
 * streams.inc();
 * streams.dec();
 * assert.equal(streams.value, 1);
 * ```
 */
export class Gauge {
  #value = 0;
  /** Adds one (or `by`). */
  inc(by = 1): void {
    this.#value += by;
  }
  /** Takes one (or `by`) away. */
  dec(by = 1): void {
    this.#value -= by;
  }
  /** Sets the value. */
  set(value: number): void {
    this.#value = value;
  }
  /** The current value. */
  get value(): number {
    return this.#value;
  }
}

/**
 * A counter by label values.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LabeledCounter } from "./metrics.ts";
 * const errors = new LabeledCounter(["type"]);
 * errors.inc(["timeout"]);
 * assert.deepEqual(errors.render("errors_total"), ['errors_total{type="timeout"} 1']);
 * ```
 */
export class LabeledCounter {
  readonly #names: readonly string[];
  readonly #values = new Map<string, { labels: readonly string[]; count: number }>();

  /** Creates a counter with these label names. */
  constructor(names: readonly string[]) {
    this.#names = names;
  }

  /** Adds `by` (default 1) to the series of these label values. */
  inc(labels: readonly string[], by = 1): void {
    const key = labels.join("\u0000");
    const series = this.#values.get(key);
    if (series === undefined) this.#values.set(key, { labels: [...labels], count: by });
    else series.count += by;
  }

  /** The count of one series (0 when never counted). */
  get(labels: readonly string[]): number {
    return this.#values.get(labels.join("\u0000"))?.count ?? 0;
  }

  /** Lines of the text format. */
  render(name: string): string[] {
    return [...this.#values.values()].map((series) =>
      `${name}${labelText(this.#names, series.labels)} ${number(series.count)}`
    );
  }
}

interface HistogramSeries {
  readonly labels: readonly string[];
  readonly buckets: number[];
  sum: number;
  count: number;
}

/**
 * A histogram by label values, with fixed buckets.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LabeledHistogram } from "./metrics.ts";
 * const latency = new LabeledHistogram(["route"], [0.1, 1]);
 * latency.observe(["/healthz"], 0.05);
 * latency.observe(["/healthz"], 0.5);
 * assert.deepEqual(latency.render("latency_seconds"), [
 *   'latency_seconds_bucket{route="/healthz",le="0.1"} 1',
 *   'latency_seconds_bucket{route="/healthz",le="1"} 2',
 *   'latency_seconds_bucket{route="/healthz",le="+Inf"} 2',
 *   'latency_seconds_sum{route="/healthz"} 0.55',
 *   'latency_seconds_count{route="/healthz"} 2',
 * ]);
 * ```
 */
export class LabeledHistogram {
  readonly #names: readonly string[];
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, HistogramSeries>();

  /** Creates a histogram with these label names and bucket upper bounds (ascending). */
  constructor(names: readonly string[], bounds: readonly number[]) {
    this.#names = names;
    this.#bounds = bounds;
  }

  /** Records one observation. */
  observe(labels: readonly string[], value: number): void {
    const key = labels.join("\u0000");
    let series = this.#series.get(key);
    if (series === undefined) {
      series = { labels: [...labels], buckets: this.#bounds.map(() => 0), sum: 0, count: 0 };
      this.#series.set(key, series);
    }
    // Buckets are counted per bound and made cumulative when rendered.
    const bounds = this.#bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        series.buckets[i]++;
        break;
      }
    }
    series.sum += value;
    series.count++;
  }

  /** Lines of the text format. */
  render(name: string): string[] {
    const lines: string[] = [];
    for (const series of this.#series.values()) {
      let cumulative = 0;
      const names = [...this.#names, "le"];
      this.#bounds.forEach((bound, i) => {
        cumulative += series.buckets[i];
        lines.push(
          `${name}_bucket${labelText(names, [...series.labels, number(bound)])} ${cumulative}`,
        );
      });
      lines.push(`${name}_bucket${labelText(names, [...series.labels, "+Inf"])} ${series.count}`);
      const labels = labelText(this.#names, series.labels);
      lines.push(`${name}_sum${labels} ${number(series.sum)}`);
      lines.push(`${name}_count${labels} ${series.count}`);
    }
    return lines;
  }
}

/** Options of {@linkcode RuntimeMetrics}. */
export interface RuntimeMetricsOptions {
  /** Reads the service's active runs when scraped (the server sets it from its store). */
  activeRuns?: () => Promise<number>;
}

const PROVIDER_ERROR_TYPE = /^[a-z0-9_]{1,64}$/;
const AGENT_LABEL = /^[A-Za-z0-9_-]{1,128}$/;

/** The methods labelled as they are; any other is `other`. */
const STANDARD_METHODS: ReadonlySet<string> = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "DELETE",
  "PATCH",
  "OPTIONS",
  "CONNECT",
  "TRACE",
]);

/**
 * The `method` label of a request: a standard HTTP method as it is, anything else `other`, so
 * the methods clients make up share one series.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { methodLabel } from "./metrics.ts";
 * assert.equal(methodLabel("PATCH"), "PATCH");
 * assert.equal(methodLabel("BREW"), "other");
 * assert.equal(methodLabel("X".repeat(60_000)), "other");
 * ```
 */
export function methodLabel(method: string): string {
  return STANDARD_METHODS.has(method) ? method : "other";
}

/**
 * Every metric of one runtime process. The server updates the request metrics at its one dispatch
 * point and samples the open event streams and the tails it holds at each scrape
 * ({@linkcode RuntimeMetrics.sampleOnScrape}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RuntimeMetrics } from "./metrics.ts";
 * const metrics = new RuntimeMetrics();
 * metrics.requestFinished("GET", "/v1/runs/:runId", 200, 0.004);
 * metrics.eventStreams.inc();
 * const text = await metrics.render();
 * assert.match(text, /automation_runtime_http_requests_total\{method="GET",route="\/v1\/runs\/:runId",status="200"\} 1/);
 * assert.match(text, /automation_runtime_event_streams_open 1/);
 * ```
 */
export class RuntimeMetrics {
  /** Requests by method, route pattern and status. */
  readonly requests: LabeledCounter = new LabeledCounter(["method", "route", "status"]);
  /** Request latency by method and route pattern, in seconds. */
  readonly requestDuration: LabeledHistogram = new LabeledHistogram(
    ["method", "route"],
    REQUEST_BUCKETS,
  );
  /** Requests being answered. */
  readonly inFlight: Gauge = new Gauge();
  /** Open `GET /v1/runs/{runId}/events` streams (the server samples them at each scrape). */
  readonly eventStreams: Gauge = new Gauge();
  /** Provider event tails this process holds (the server samples them at each scrape). */
  readonly tailsHeld: Gauge = new Gauge();
  /** Provider failures by type (the provider's error type, or `connection`, `timeout`...). */
  readonly providerErrors: LabeledCounter = new LabeledCounter(["type"]);
  /** List cost settled by this process, by agent and currency, in minor units. */
  readonly listCost: LabeledCounter = new LabeledCounter(["agent_id", "currency"]);
  /** The agents with their own list cost series. */
  readonly #costAgents = new Set<string>();
  /** Store call latency by operation and outcome (`ok` or `error`), in seconds. */
  readonly storeDuration: LabeledHistogram = new LabeledHistogram(
    ["operation", "outcome"],
    STORE_BUCKETS,
  );
  #activeRuns: (() => Promise<number>) | undefined;
  readonly #samplers: (() => void)[] = [];

  /** Creates the metrics. */
  constructor(options: RuntimeMetricsOptions = {}) {
    this.#activeRuns = options.activeRuns;
  }

  /** Sets where the active-run count comes from (the server does, from its store). */
  set activeRuns(read: (() => Promise<number>) | undefined) {
    this.#activeRuns = read;
  }

  /**
   * Adds a function run at the start of every scrape, to set gauges that are cheaper to read
   * then than to keep current (open streams, tails held).
   */
  sampleOnScrape(sample: () => void): void {
    this.#samplers.push(sample);
  }

  /**
   * Counts one answered request. `route` is the path pattern, or null when none matched; a
   * method that is not a standard one is counted as `other` ({@linkcode methodLabel}).
   */
  requestFinished(method: string, route: string | null, status: number, seconds: number): void {
    const label = route ?? "unmatched";
    const methodText = methodLabel(method);
    this.requests.inc([methodText, label, String(status)]);
    this.requestDuration.observe([methodText, label], seconds);
  }

  /** Counts one provider failure; a type outside `[a-z0-9_]{1,64}` is counted as `other`. */
  providerError(type: string): void {
    this.providerErrors.inc([PROVIDER_ERROR_TYPE.test(type) ? type : "other"]);
  }

  /**
   * Counts list cost a run's settlement added, in minor units of USD, under its agent (one of
   * the first {@linkcode MAX_COST_AGENTS} agents seen, else `other`; an id outside
   * `[A-Za-z0-9_-]{1,128}` is `other` too).
   */
  runListCost(agentId: string, amount: bigint): void {
    let agent = AGENT_LABEL.test(agentId) ? agentId : "other";
    if (agent !== "other" && !this.#costAgents.has(agent)) {
      if (this.#costAgents.size >= MAX_COST_AGENTS) agent = "other";
      else this.#costAgents.add(agent);
    }
    this.listCost.inc([agent, "USD"], Number(amount));
  }

  /** The metrics in the Prometheus text format. */
  async render(): Promise<string> {
    for (const sample of this.#samplers) sample();
    let activeRuns = Number.NaN;
    if (this.#activeRuns !== undefined) {
      try {
        activeRuns = await this.#activeRuns();
      } catch {
        // An unreachable store is a scrape with NaN, not a failed scrape.
      }
    }
    const lines: string[] = [];
    const family = (name: string, type: string, help: string, body: string[]): void => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...body);
    };
    family(
      "automation_runtime_http_requests_total",
      "counter",
      "HTTP requests answered, by method, route pattern and status.",
      this.requests.render("automation_runtime_http_requests_total"),
    );
    family(
      "automation_runtime_http_request_duration_seconds",
      "histogram",
      "Time to answer an HTTP request (to its response head), by method and route pattern.",
      this.requestDuration.render("automation_runtime_http_request_duration_seconds"),
    );
    family(
      "automation_runtime_http_requests_in_flight",
      "gauge",
      "HTTP requests being answered.",
      [`automation_runtime_http_requests_in_flight ${this.inFlight.value}`],
    );
    family(
      "automation_runtime_active_runs",
      "gauge",
      "Active runs of the whole service, read from the store when scraped.",
      [`automation_runtime_active_runs ${number(activeRuns)}`],
    );
    family(
      "automation_runtime_event_streams_open",
      "gauge",
      "Open run event streams served by this process.",
      [`automation_runtime_event_streams_open ${this.eventStreams.value}`],
    );
    family(
      "automation_runtime_run_tails_held",
      "gauge",
      "Provider event tails held by this process.",
      [`automation_runtime_run_tails_held ${this.tailsHeld.value}`],
    );
    family(
      "automation_runtime_provider_errors_total",
      "counter",
      "Provider calls that failed, by error type.",
      this.providerErrors.render("automation_runtime_provider_errors_total"),
    );
    family(
      "automation_runtime_run_list_cost_total",
      "counter",
      "List cost of runs settled by this process (minor units: cents for USD), by agent.",
      this.listCost.render("automation_runtime_run_list_cost_total"),
    );
    family(
      "automation_runtime_store_operation_duration_seconds",
      "histogram",
      "Time of one store call, by operation and outcome.",
      this.storeDuration.render("automation_runtime_store_operation_duration_seconds"),
    );
    return lines.join("\n") + "\n";
  }
}

/**
 * The `operation` label of each store call, as `/metrics` has always named it: the method names of
 * the flat store interface that preceded the parts, so dashboards and alerts keep their series. A
 * part method not listed here is labelled `part.method` (`runs.get` style): adding one needs no
 * change here.
 */
const OPERATION_LABELS: Readonly<Record<string, string>> = Object.freeze({
  "principals.findByDigest": "findPrincipalByDigest",
  "principals.get": "getPrincipal",
  "principals.list": "listPrincipals",
  "principals.page": "listPrincipalPage",
  "principals.create": "createPrincipal",
  "principals.revoke": "revokePrincipal",
  "principals.purgeRetired": "purgeRetired",
  "idempotency.claim": "claimIdempotency",
  "idempotency.complete": "completeIdempotency",
  "idempotency.release": "releaseIdempotency",
  "idempotency.purgeExpired": "deleteExpired",
  "authority.claim": "claimAuthority",
  "authority.readState": "readAuthorityState",
  "authority.purgeRetired": "purgeRetired",
  "leases.renew": "renewAuthorityLease",
  "leases.release": "releaseAuthorityLease",
  "leases.list": "listAuthorityLeases",
  "leases.purge": "purgeAuthorityLeases",
  "leases.watch": "watchAuthority",
  "runs.reserveSlot": "reserveRunSlot",
  "runs.releaseSlot": "releaseRunSlot",
  "runs.countSlots": "countRunSlots",
  "runs.create": "createRun",
  "runs.get": "getRun",
  "runs.update": "updateRun",
  "runs.list": "listRuns",
  "audit.append": "appendAudit",
  "audit.list": "listAudit",
  "events.append": "appendRunEvents",
  // The tail appends both logs of a run in one call now: the same series as before.
  "events.appendBatch": "appendRunEvents",
  "events.list": "listRunEvents",
  "events.acquireLease": "acquireRunLease",
  "events.releaseLease": "releaseRunLease",
  "events.watch": "watchRunEvents",
  "events.purge": "purgeRunEvents",
  "answers.claim": "claimToolAnswer",
  "answers.complete": "completeToolAnswer",
  "answers.release": "releaseToolAnswer",
  "answers.get": "getToolAnswer",
  "answers.list": "listToolAnswers",
  "answers.recordWebhookDelivery": "recordWebhookDelivery",
  "answers.purge": "purgeAnswers",
});

/**
 * A store whose calls are timed into `metrics.storeDuration`, by operation (see
 * {@linkcode OPERATION_LABELS}) and outcome (`ok`, or `error` when it threw or rejected). It is
 * built once through the store's one seam (`wrapStore`), each method's timer with its label
 * values made then, so a call allocates nothing for its labels.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { measuredStore, RuntimeMetrics } from "./metrics.ts";
 * import { openKvStore } from "./store/mod.ts";
 * const metrics = new RuntimeMetrics();
 * const store = measuredStore(await openKvStore({ path: ":memory:", namespace: "n" }), metrics);
 * await store.principals.get(crypto.randomUUID());
 * assert.match(await metrics.render(), /operation="getPrincipal",outcome="ok"/);
 * await store.close();
 * ```
 */
export function measuredStore(store: Store, metrics: RuntimeMetrics): Store {
  const histogram = metrics.storeDuration;
  return wrapStore(store, (part, method, call) => {
    const operation = OPERATION_LABELS[`${part}.${method}`] ?? `${part}.${method}`;
    const ok: readonly string[] = [operation, "ok"];
    const failed: readonly string[] = [operation, "error"];
    return (...args) => {
      const started = performance.now();
      let result: unknown;
      try {
        result = call(...args);
      } catch (error) {
        histogram.observe(failed, (performance.now() - started) / 1000);
        throw error;
      }
      if (result instanceof Promise) {
        return result.then((settled) => {
          histogram.observe(ok, (performance.now() - started) / 1000);
          return settled;
        }, (error) => {
          histogram.observe(failed, (performance.now() - started) / 1000);
          throw error;
        });
      }
      histogram.observe(ok, (performance.now() - started) / 1000);
      return result;
    };
  });
}
