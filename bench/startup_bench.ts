/**
 * Startup benchmark: time from process start to the first 200 on `GET /healthz`, for the
 * service's `serve` (Deno KV store, bootstrap from the environment) and for a bare `Deno.serve`
 * script, each pinned to CPU 0 while the poller runs on CPU 1. For context it also times the
 * floor of a service with an embedded store: a bare `Deno.serve` that opens Deno KV first
 * (`bench/peers/kv_commit.ts`), and `serve` reading its bootstrap from the secret file `init`
 * writes, as `deno task start` does after its first run. Runs alternate after one unmeasured
 * warm-up each; the figures are medians.
 *
 * Run alone: `deno run -A bench/startup_bench.ts [--runs N]`
 *
 * @module
 */
import {
  benchBootstrap,
  kvPeerSpec,
  ourServeSpec,
  pinSelf,
  type ServerSpec,
  spawnServer,
  stopChild,
  waitFor200,
} from "./_process.ts";
import { defaultSecretFilePath, writeSecretFile } from "../server/bootstrap/secret_file.ts";
import { formatSecretFile, generateBootstrapValues } from "../server/bootstrap/variables.ts";

/** Options of {@linkcode runStartupBench}. */
export interface StartupBenchOptions {
  /** Measured starts of each (default 11). */
  runs?: number;
  /** Progress lines go here (default stderr). */
  progress?: (line: string) => void;
}

/** Result of {@linkcode runStartupBench}. */
export interface StartupBenchResult {
  /** Median ms from spawn to the first 200 of the bare script. */
  bareMs: number;
  /** Median ms from spawn to the first 200 of `serve`. */
  oursMs: number;
  /** Median ms from spawn to the first 200 of the script that opens Deno KV first. */
  kvFloorMs: number;
  /** Median ms from spawn to the first 200 of `serve` with its bootstrap in the secret file. */
  oursFileMs: number;
  /** Every measured start of the bare script, ms. */
  bareRuns: number[];
  /** Every measured start of `serve`, ms. */
  oursRuns: number[];
  /** Every measured start of the script that opens Deno KV first, ms. */
  kvFloorRuns: number[];
  /** Every measured start of `serve` with its bootstrap in the secret file, ms. */
  oursFileRuns: number[];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

async function timeStart(spec: ServerSpec): Promise<number> {
  const since = performance.now();
  const { child, port } = spawnServer(spec);
  try {
    return await waitFor200(`http://127.0.0.1:${port}/healthz`, { since, exited: child.status });
  } finally {
    await stopChild(child);
  }
}

/**
 * Measures both startups.
 *
 * @example
 * ```ts ignore
 * import { runStartupBench } from "./startup_bench.ts";
 * const { bareMs, oursMs } = await runStartupBench({ runs: 5 });
 * console.log(oursMs / bareMs);
 * ```
 */
export async function runStartupBench(
  options: StartupBenchOptions = {},
): Promise<StartupBenchResult> {
  const runs = options.runs ?? 11;
  const progress = options.progress ?? ((line: string) => console.error(line));
  await pinSelf();
  const home = await Deno.makeTempDir({ prefix: "automation-runtime-startup-" });
  try {
    const bare: ServerSpec = {
      name: "bare",
      args: ["--allow-net", "bench/peers/bare.ts", "{port}"],
    };
    const kvFloor = kvPeerSpec({
      name: "kv floor",
      script: "kv_commit.ts",
      path: `${home}/floor.kv`,
    });
    const ours = ourServeSpec({ home, bootstrap: benchBootstrap() });
    const fileHome = `${home}/file`;
    await writeSecretFile(
      defaultSecretFilePath({ env: { XDG_CONFIG_HOME: fileHome } }),
      formatSecretFile(generateBootstrapValues()),
    );
    const oursFile = ourServeSpec({ home: fileHome, bootstrap: {} });
    progress("startup: warming up");
    await timeStart(bare);
    await timeStart(kvFloor);
    await timeStart(ours);
    await timeStart(oursFile);
    const bareRuns: number[] = [];
    const kvFloorRuns: number[] = [];
    const oursRuns: number[] = [];
    const oursFileRuns: number[] = [];
    for (let run = 1; run <= runs; run++) {
      progress(`startup: run ${run}/${runs}`);
      bareRuns.push(await timeStart(bare));
      kvFloorRuns.push(await timeStart(kvFloor));
      oursRuns.push(await timeStart(ours));
      oursFileRuns.push(await timeStart(oursFile));
    }
    return {
      bareMs: median(bareRuns),
      oursMs: median(oursRuns),
      kvFloorMs: median(kvFloorRuns),
      oursFileMs: median(oursFileRuns),
      bareRuns,
      oursRuns,
      kvFloorRuns,
      oursFileRuns,
    };
  } finally {
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  const index = Deno.args.indexOf("--runs");
  const result = await runStartupBench({
    runs: index === -1 ? undefined : Number(Deno.args[index + 1]),
  });
  console.log(
    `startup to first 200 on /healthz (median of ${result.bareRuns.length}): ` +
      `bare ${result.bareMs.toFixed(1)} ms, Deno KV floor ${result.kvFloorMs.toFixed(1)} ms, ` +
      `ours ${result.oursMs.toFixed(1)} ms (secret file ${result.oursFileMs.toFixed(1)} ms), ` +
      `ratio ${(result.oursMs / result.bareMs).toFixed(2)}x`,
  );
}
