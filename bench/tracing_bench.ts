/**
 * What observability costs on authenticated reads (`GET /v1/runtime` through the real `serve`,
 * wrk at 50 connections), in interleaved rounds on separate processes:
 *
 * - `off`: `serve` as it runs by default (no `OTEL_DENO`, no `--metrics-port`);
 * - `traced`: `OTEL_DENO=true`, exporting OTLP/HTTP protobuf to a sink that discards it
 *   (`bench/peers/otlp_sink.ts`): Deno's server span plus our route and principal attributes;
 * - `metrics`: `--metrics-port 0`: the request counters, latency histogram and store timings;
 * - `floor off` and `floor traced`: the read floor (`bench/peers/floor_read.ts`, `Deno.serve`
 *   reading the headers the rules read and nothing of ours), without and with the same
 *   `OTEL_DENO` settings: what Deno's own tracing of a request costs with no code of ours.
 *
 * Targets: `traced / off >= 0.85` (tracing on costs under 15%); the report prints the floor's
 * `traced / off` beside it, since Deno's server span and its export are most of that cost. With tracing off the server loads
 * no OpenTelemetry code and decides per request by one `undefined` check, so `off` is the same
 * figure as `ours: GET /v1/runtime` in `server_bench.ts` (compare the two on one machine).
 *
 * Run alone: `deno run -A bench/tracing_bench.ts [--quick] [--rounds N] [--seconds N]`
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
import { ensureWrk, runWrk, type WrkResult } from "./_wrk.ts";

/** The cases. */
export type TracingCase = "off" | "traced" | "metrics" | "floor off" | "floor traced";

/** Medians of one case. */
export interface TracingCaseResult {
  /** Median requests per second. */
  rps: number;
  /** Median p50 latency, ms. */
  p50Ms: number;
  /** Median p99 latency, ms. */
  p99Ms: number;
  /** Non-2xx answers and socket errors, summed. */
  errors: number;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/**
 * Runs the three cases and returns their medians.
 *
 * @example
 * ```ts ignore
 * import { runTracingBench } from "./tracing_bench.ts";
 * const result = await runTracingBench({ rounds: 1, seconds: 2 });
 * console.log(result.traced.rps / result.off.rps);
 * ```
 */
export async function runTracingBench(
  options: { rounds?: number; seconds?: number; warmupSeconds?: number } = {},
): Promise<Record<TracingCase, TracingCaseResult>> {
  const rounds = options.rounds ?? 3;
  const seconds = options.seconds ?? 5;
  await ensureWrk();
  await pinSelf();
  const workDir = await Deno.makeTempDir({ prefix: "automation-runtime-tracing-bench-" });
  const servers: BenchServer[] = [];
  try {
    const bootstrap = benchBootstrap();
    const bearer = bootstrap.AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN;
    const otel = (url: string): Record<string, string> => ({
      OTEL_DENO: "true",
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_SERVICE_NAME: "automation-runtime-bench",
      OTEL_DENO_CONSOLE: "ignore",
    });
    const sink = await startServer({
      name: "sink",
      args: ["--allow-net", "bench/peers/otlp_sink.ts", "{port}"],
    });
    servers.push(sink);
    const ours = async (name: TracingCase, args: string[], env: Record<string, string>) => {
      const home = `${workDir}/${name}`;
      await Deno.mkdir(home, { recursive: true });
      const spec = ourServeSpec({ home, bootstrap });
      const server = await startServer({
        name,
        args: [...spec.args, ...args],
        env: { ...spec.env, ...env },
      });
      servers.push(server);
      return server;
    };
    const floor = async (name: TracingCase, env: Record<string, string>) => {
      const server = await startServer({
        name,
        args: ["--allow-net", "--allow-env", "bench/peers/floor_read.ts", "{port}"],
        env,
      });
      servers.push(server);
      return server;
    };
    const targets: Record<TracingCase, BenchServer> = {
      off: await ours("off", [], {}),
      traced: await ours("traced", [], otel(sink.url)),
      metrics: await ours("metrics", ["--metrics-port", "0"], {}),
      "floor off": await floor("floor off", {}),
      "floor traced": await floor("floor traced", otel(sink.url)),
    };
    const cases: TracingCase[] = ["off", "traced", "metrics", "floor off", "floor traced"];
    const measure = (name: TracingCase, secs: number) =>
      runWrk({
        url: `${targets[name].url}/v1/runtime`,
        bearer,
        mode: "read",
        seconds: secs,
        workDir,
      });
    for (const name of cases) await measure(name, options.warmupSeconds ?? 3);
    const runs = new Map<TracingCase, WrkResult[]>(cases.map((name) => [name, []]));
    for (let round = 1; round <= rounds; round++) {
      for (const name of cases) {
        console.error(`round ${round}/${rounds}: ${name}`);
        runs.get(name)!.push(await measure(name, seconds));
      }
    }
    const result = {} as Record<TracingCase, TracingCaseResult>;
    for (const name of cases) {
      const list = runs.get(name)!;
      result[name] = {
        rps: median(list.map((run) => run.rps)),
        p50Ms: median(list.map((run) => run.p50Ms)),
        p99Ms: median(list.map((run) => run.p99Ms)),
        errors: list.reduce((sum, run) => sum + run.non2xx + run.socketErrors, 0),
      };
    }
    return result;
  } finally {
    for (const server of servers) await server.stop();
    await Deno.remove(workDir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  const quick = Deno.args.includes("--quick");
  const flag = (name: string) => {
    const index = Deno.args.indexOf(name);
    return index === -1 ? undefined : Number(Deno.args[index + 1]);
  };
  const result = await runTracingBench({
    rounds: flag("--rounds") ?? (quick ? 1 : 3),
    seconds: flag("--seconds") ?? (quick ? 2 : 5),
    warmupSeconds: quick ? 1 : 3,
  });
  console.log("| case | req/s | p50 ms | p99 ms | errors |");
  console.log("|---|---|---|---|---|");
  for (const [name, figures] of Object.entries(result)) {
    console.log(
      `| ${name} | ${figures.rps.toFixed(0)} | ${figures.p50Ms.toFixed(2)} | ` +
        `${figures.p99Ms.toFixed(2)} | ${figures.errors} |`,
    );
  }
  const traced = result.traced.rps / result.off.rps;
  const metrics = result.metrics.rps / result.off.rps;
  const floorTraced = result["floor traced"].rps / result["floor off"].rps;
  console.log(`traced / off: ${traced.toFixed(3)} (target >= 0.85)`);
  console.log(`metrics / off: ${metrics.toFixed(3)}`);
  console.log(`context: the floor's traced / off (Deno's own tracing): ${floorTraced.toFixed(3)}`);
  console.log(`context: ours traced / off over the floor's: ${(traced / floorTraced).toFixed(3)}`);
  const failed = traced < 0.85 || result.off.errors + result.traced.errors > 0;
  Deno.exit(failed ? 1 : 0);
}
