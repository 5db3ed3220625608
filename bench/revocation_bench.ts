/**
 * Revocation latency: how long `DELETE /v1/principals/{id}` takes to answer when another
 * process on the same store holds an authority lease and has the principal in its cache, so the
 * revocation waits for that process to acknowledge it (see `server/authority_lease.ts`).
 *
 * Two `serve` processes (A and B, the `start` task's flags, one Deno KV file, one bootstrap) run
 * pinned to the server core. Each round issues a principal on A, uses it on B twice (B caches
 * it, under its lease) and once on A, then times the revocation on A and checks that B refuses
 * the bearer on its very next request. For context, the same revocation on one process alone
 * (no other lease to wait for) is timed in alternating rounds.
 *
 * Run alone: `deno run -A bench/revocation_bench.ts [--quick] [--rounds N]`
 *
 * @module
 */
import {
  benchBootstrap,
  type BenchServer,
  ourServeSpec,
  pinSelf,
  startServer,
} from "./_process.ts";

/** Options of {@linkcode runRevocationBench}. */
export interface RevocationBenchOptions {
  /** Revocations timed in each case (default 40). */
  rounds?: number;
  /** Progress lines go here (default stderr). */
  progress?: (line: string) => void;
}

/** Percentiles of one case, ms. */
export interface LatencyFigures {
  /** Median. */
  p50Ms: number;
  /** 99th percentile (nearest rank). */
  p99Ms: number;
  /** Slowest. */
  maxMs: number;
  /** Every timed revocation, ms, in order. */
  runs: number[];
}

/** Result of {@linkcode runRevocationBench}. */
export interface RevocationBenchResult {
  /** Revocations on A while B holds a lease and caches the principal. */
  twoProcesses: LatencyFigures;
  /** Revocations on a process alone on its store. */
  oneProcess: LatencyFigures;
  /** Requests on B after a revocation answered that were not refused (must be 0). */
  stillAccepted: number;
}

/**
 * The percentiles of `runs` (nearest rank).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { latencyFigures } from "./revocation_bench.ts";
 * const figures = latencyFigures([5, 1, 3]);
 * assert.deepEqual([figures.p50Ms, figures.p99Ms, figures.maxMs], [3, 5, 5]);
 * ```
 */
export function latencyFigures(runs: number[]): LatencyFigures {
  const sorted = [...runs].sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
  return { p50Ms: rank(0.5), p99Ms: rank(0.99), maxMs: sorted[sorted.length - 1], runs };
}

/** The few calls a round makes, on one server with a client of its own. */
class Caller {
  readonly #url: string;
  readonly #client = Deno.createHttpClient({});

  constructor(server: BenchServer) {
    this.#url = server.url;
  }

  async #call(path: string, bearer: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${bearer}`);
    headers.set("x-interface-version", "2026-07-23");
    headers.set("x-correlation-id", crypto.randomUUID());
    headers.set("x-deadline", new Date(Date.now() + 60_000).toISOString());
    return await fetch(`${this.#url}${path}`, { ...init, headers, client: this.#client });
  }

  /** Issues a principal; returns its id and bearer. */
  async issue(admin: string): Promise<{ principalId: string; bearer: string }> {
    const principalId = crypto.randomUUID();
    const response = await this.#call("/v1/principals", admin, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": crypto.randomUUID() },
      body: JSON.stringify({
        principalId,
        capabilities: ["session:read"],
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      }),
    });
    const body = await response.json();
    if (response.status !== 201) throw new Error(`issuance answered ${response.status}`);
    return { principalId, bearer: body.bearer };
  }

  /** `GET /v1/runtime` with `bearer`; its status. */
  async use(bearer: string): Promise<number> {
    const response = await this.#call("/v1/runtime", bearer);
    await response.body?.cancel();
    return response.status;
  }

  /** Revokes a principal; the ms until the answer. */
  async revoke(admin: string, principalId: string): Promise<number> {
    const started = performance.now();
    const response = await this.#call(`/v1/principals/${principalId}`, admin, {
      method: "DELETE",
    });
    await response.body?.cancel();
    const ms = performance.now() - started;
    if (response.status !== 204) throw new Error(`revocation answered ${response.status}`);
    return ms;
  }

  close(): void {
    this.#client.close();
  }
}

/**
 * Starts the processes, times the revocations and returns the figures.
 *
 * @example
 * ```ts ignore
 * import { runRevocationBench } from "./revocation_bench.ts";
 * const result = await runRevocationBench({ rounds: 10 });
 * console.log(result.twoProcesses.p99Ms);
 * ```
 */
export async function runRevocationBench(
  options: RevocationBenchOptions = {},
): Promise<RevocationBenchResult> {
  const rounds = options.rounds ?? 40;
  const progress = options.progress ?? ((line: string) => console.error(line));
  await pinSelf();
  const workDir = await Deno.makeTempDir({ prefix: "automation-runtime-revocation-" });
  const servers: BenchServer[] = [];
  const callers: Caller[] = [];
  try {
    const bootstrap = benchBootstrap();
    const admin = bootstrap.AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN;
    progress("starting servers");
    const shared = `${workDir}/shared`;
    const alone = `${workDir}/alone`;
    for (const home of [shared, shared, alone]) {
      await Deno.mkdir(home, { recursive: true });
      servers.push(await startServer({ ...ourServeSpec({ home, bootstrap }), name: home }));
    }
    const [a, b, single] = servers.map((server) => new Caller(server));
    callers.push(a, b, single);
    const twoProcesses: number[] = [];
    const oneProcess: number[] = [];
    let stillAccepted = 0;
    // One unmeasured round each: first requests, leases taken.
    for (let round = 0; round <= rounds; round++) {
      if (round > 0) progress(`round ${round}/${rounds}`);
      const issued = await a.issue(admin);
      for (const caller of [b, b, a]) await caller.use(issued.bearer);
      const ms = await a.revoke(admin, issued.principalId);
      if (await b.use(issued.bearer) !== 401) stillAccepted++;
      const own = await single.issue(admin);
      await single.use(own.bearer);
      const alone = await single.revoke(admin, own.principalId);
      if (round === 0) continue;
      twoProcesses.push(ms);
      oneProcess.push(alone);
    }
    return {
      twoProcesses: latencyFigures(twoProcesses),
      oneProcess: latencyFigures(oneProcess),
      stillAccepted,
    };
  } finally {
    for (const caller of callers) caller.close();
    await Promise.all(servers.map((server) => server.stop()));
    await Deno.remove(workDir, { recursive: true }).catch(() => {});
  }
}

/**
 * Renders the figures.
 *
 * @example
 * ```ts ignore
 * import { formatRevocationTable, runRevocationBench } from "./revocation_bench.ts";
 * console.log(formatRevocationTable(await runRevocationBench()));
 * ```
 */
export function formatRevocationTable(result: RevocationBenchResult): string {
  const row = (label: string, figures: LatencyFigures) =>
    label.padEnd(52) + `${figures.p50Ms.toFixed(1)}ms`.padStart(10) +
    `${figures.p99Ms.toFixed(1)}ms`.padStart(10) + `${figures.maxMs.toFixed(1)}ms`.padStart(10);
  return [
    `Revocation latency: DELETE /v1/principals/{id}, ${result.twoProcesses.runs.length} revocations each`,
    `${"case".padEnd(52)}${"p50".padStart(10)}${"p99".padStart(10)}${"max".padStart(10)}`,
    row("two processes on one KV file, B holding a lease", result.twoProcesses),
    row("one process alone (context)", result.oneProcess),
    `requests on B accepted after a revocation answered: ${result.stillAccepted}`,
  ].join("\n");
}

if (import.meta.main) {
  const args = Deno.args;
  const index = args.indexOf("--rounds");
  const result = await runRevocationBench({
    rounds: index === -1 ? (args.includes("--quick") ? 10 : undefined) : Number(args[index + 1]),
  });
  console.log(formatRevocationTable(result));
}
