/**
 * Server benchmarks: requests per second and p50/p99 latency at 50 connections, measured with
 * wrk (one thread, CPU 1) against servers pinned to CPU 0, all in one run so the ratios compare
 * like with like:
 *
 * - `bare`: a bare `Deno.serve` returning a fixed JSON body (the limit for reads);
 * - `floor read` (context): `Deno.serve` doing only the HTTP work a read must do, reading the six
 *   headers the rules look at and echoing the four response headers, with no code of ours;
 * - `hono`: Hono on `Deno.serve` with `hono/bearer-auth` checking one static token (the peer);
 * - `ours read`: authenticated `GET /v1/runtime` with every shared header, through `serve` with
 *   the Deno KV store;
 * - `kv commit`: a bare `Deno.serve` doing one Deno KV atomic commit per request (the limit for
 *   an HTTP write path);
 * - `issuance-shaped commit` (context): the same, committing what one issuance writes (three
 *   checks, four sets), one commit per request;
 * - `ours issue`: `POST /v1/principals` with fresh idempotency keys.
 *
 * Every case runs on its own process (reads and issuance each get their own `serve`), and the
 * write cases run after all the read cases. On Linux each round also reads the server process's
 * CPU time (`/proc/<pid>/stat`), so the table shows the CPU it spent per request: on a machine
 * shared with other work, requests per second move with whatever else runs, CPU per request much
 * less.
 *
 * Every request carries the same shared headers (fresh correlation id, deadline) whichever server
 * receives it. The cases run in interleaved rounds and each figure is the median over rounds.
 *
 * Run alone: `deno run -A bench/server_bench.ts [--quick] [--rounds N] [--seconds N]`
 *
 * @module
 */
import {
  benchBootstrap,
  type BenchServer,
  kvPeerSpec,
  ourServeSpec,
  pinSelf,
  startServer,
} from "./_process.ts";
import { ensureWrk, pinning, runWrk, type WrkResult } from "./_wrk.ts";

/** Identifiers of the measured cases. */
export type ServerCase =
  | "bare"
  | "floorRead"
  | "hono"
  | "oursRead"
  | "kvCommit"
  | "kvIssue"
  | "oursIssue";

/** One case's figures: medians over the rounds. */
export interface CaseResult {
  /** Case identifier. */
  id: ServerCase;
  /** Label in the table. */
  label: string;
  /** Median requests per second. */
  rps: number;
  /** Median of the rounds' p50 latency, ms. */
  p50Ms: number;
  /** Median of the rounds' p99 latency, ms. */
  p99Ms: number;
  /** Responses outside 2xx/3xx plus socket errors, summed over the rounds. */
  errors: number;
  /** Median of the rounds' server CPU time per request, µs; null where it cannot be read. */
  cpuUs: number | null;
  /** Every round's wrk result. */
  rounds: WrkResult[];
}

/** Options of {@linkcode runServerBench}. */
export interface ServerBenchOptions {
  /** Rounds of every case (default 3). */
  rounds?: number;
  /** Measured seconds per case and round (default 5). */
  seconds?: number;
  /** Warm-up seconds per case before the first round (default 3). */
  warmupSeconds?: number;
  /** Open connections (default 50). */
  connections?: number;
  /** Progress lines go here (default stderr). */
  progress?: (line: string) => void;
}

/** Result of {@linkcode runServerBench}. */
export interface ServerBenchResult {
  /** Figures by case. */
  cases: Record<ServerCase, CaseResult>;
  /** Rounds and seconds actually used. */
  rounds: number;
  /** Seconds per measurement. */
  seconds: number;
  /** Connections used. */
  connections: number;
  /** Whether server and wrk were pinned to separate cores. */
  pinned: boolean;
}

interface CaseDef {
  id: ServerCase;
  label: string;
  server: "bare" | "floor" | "hono" | "oursRead" | "kv" | "kvIssue" | "oursIssue";
  path: string;
  mode: "read" | "issue";
}

const CASES: readonly CaseDef[] = [
  {
    id: "bare",
    label: "bare Deno.serve, fixed JSON (limit)",
    server: "bare",
    path: "/v1/runtime",
    mode: "read",
  },
  {
    id: "floorRead",
    label: "floor: headers read and echoed (context)",
    server: "floor",
    path: "/v1/runtime",
    mode: "read",
  },
  {
    id: "hono",
    label: "Hono + hono/bearer-auth (peer)",
    server: "hono",
    path: "/v1/runtime",
    mode: "read",
  },
  {
    id: "oursRead",
    label: "ours: GET /v1/runtime, KV store",
    server: "oursRead",
    path: "/v1/runtime",
    mode: "read",
  },
  {
    id: "kvCommit",
    label: "bare Deno.serve + 1 KV commit (limit)",
    server: "kv",
    path: "/v1/principals",
    mode: "issue",
  },
  {
    id: "kvIssue",
    label: "floor: 1 issuance-shaped commit (context)",
    server: "kvIssue",
    path: "/v1/principals",
    mode: "issue",
  },
  {
    id: "oursIssue",
    label: "ours: POST /v1/principals",
    server: "oursIssue",
    path: "/v1/principals",
    mode: "issue",
  },
];

/**
 * A process's CPU time so far (user and system), in seconds, from `/proc/<pid>/stat`; null where
 * there is none (not Linux, or the process is gone).
 *
 * @example
 * ```ts
 * import { cpuSeconds } from "./server_bench.ts";
 * const seconds = cpuSeconds(Deno.pid);
 * console.log(seconds === null || seconds >= 0); // true
 * ```
 */
export function cpuSeconds(pid: number): number | null {
  try {
    // The fields after the command name (which may hold spaces) start at its closing parenthesis.
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime, fields 14 and 15 of the file, in clock ticks (100 a second on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/**
 * Starts the servers, runs every case in interleaved rounds and returns the medians.
 *
 * @example
 * ```ts ignore
 * import { runServerBench } from "./server_bench.ts";
 * const result = await runServerBench({ rounds: 1, seconds: 3 });
 * console.log(result.cases.oursRead.rps / result.cases.bare.rps);
 * ```
 */
export async function runServerBench(options: ServerBenchOptions = {}): Promise<ServerBenchResult> {
  const rounds = options.rounds ?? 3;
  const seconds = options.seconds ?? 5;
  const warmupSeconds = options.warmupSeconds ?? 3;
  const connections = options.connections ?? 50;
  const progress = options.progress ?? ((line: string) => console.error(line));
  await ensureWrk();
  await pinSelf();
  const workDir = await Deno.makeTempDir({ prefix: "automation-runtime-bench-" });
  const servers = new Map<CaseDef["server"], BenchServer>();
  try {
    const bootstrap = benchBootstrap();
    const bearer = bootstrap.AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN;
    progress("starting servers");
    servers.set(
      "bare",
      await startServer({ name: "bare", args: ["--allow-net", "bench/peers/bare.ts", "{port}"] }),
    );
    servers.set(
      "floor",
      await startServer({
        name: "floor",
        args: ["--allow-net", "bench/peers/floor_read.ts", "{port}"],
      }),
    );
    servers.set(
      "hono",
      await startServer({
        name: "hono",
        args: ["--allow-net", "--allow-env", "bench/peers/hono_bearer.ts", "{port}"],
        env: { BENCH_BEARER: bearer },
      }),
    );
    servers.set(
      "kv",
      await startServer(
        kvPeerSpec({ name: "kv", script: "kv_commit.ts", path: `${workDir}/peer.kv` }),
      ),
    );
    servers.set(
      "kvIssue",
      await startServer(
        kvPeerSpec({ name: "kvIssue", script: "kv_issue_commit.ts", path: `${workDir}/issue.kv` }),
      ),
    );
    // Reads and issuance each get their own `serve`, as every peer is its own process: what
    // 50 concurrent issuances leave behind (promoted heap, Deno KV's WAL checkpoints) must not
    // land in the read measurement, nor the reads in the issuance one.
    for (const server of ["oursRead", "oursIssue"] as const) {
      const home = `${workDir}/${server}`;
      await Deno.mkdir(home, { recursive: true });
      servers.set(
        server,
        await startServer({ ...ourServeSpec({ home, bootstrap }), name: server }),
      );
    }
    const measure = (def: CaseDef, secs: number) =>
      runWrk({
        url: servers.get(def.server)!.url + def.path,
        bearer,
        mode: def.mode,
        connections,
        seconds: secs,
        workDir,
      });
    const results = new Map<ServerCase, WrkResult[]>(CASES.map((def) => [def.id, []]));
    const cpu = new Map<ServerCase, number[]>(CASES.map((def) => [def.id, []]));
    // Every server shares CPU 0, so the write cases run after all the reads: what a burst of
    // Deno KV commits leaves running in the background (WAL checkpoints, collections) must not
    // slow whichever read case comes next.
    for (const mode of ["read", "issue"] as const) {
      const group = CASES.filter((def) => def.mode === mode);
      for (const def of group) {
        progress(`warming up: ${def.label}`);
        await measure(def, warmupSeconds);
      }
      for (let round = 1; round <= rounds; round++) {
        for (const def of group) {
          progress(`round ${round}/${rounds}: ${def.label}`);
          const pid = servers.get(def.server)!.pid;
          const before = cpuSeconds(pid);
          const result = await measure(def, seconds);
          const after = cpuSeconds(pid);
          results.get(def.id)!.push(result);
          const requests = result.rps * seconds;
          if (before !== null && after !== null && requests > 0) {
            cpu.get(def.id)!.push((after - before) * 1e6 / requests);
          }
        }
      }
    }
    const cases = {} as Record<ServerCase, CaseResult>;
    for (const def of CASES) {
      const runs = results.get(def.id)!;
      const cpuRuns = cpu.get(def.id)!;
      cases[def.id] = {
        id: def.id,
        label: def.label,
        rps: median(runs.map((run) => run.rps)),
        p50Ms: median(runs.map((run) => run.p50Ms)),
        p99Ms: median(runs.map((run) => run.p99Ms)),
        errors: runs.reduce((sum, run) => sum + run.non2xx + run.socketErrors, 0),
        cpuUs: cpuRuns.length === runs.length && runs.length > 0 ? median(cpuRuns) : null,
        rounds: runs,
      };
    }
    return { cases, rounds, seconds, connections, pinned: pinning().pinned };
  } finally {
    await Promise.all([...servers.values()].map((server) => server.stop()));
    await Deno.remove(workDir, { recursive: true }).catch(() => {});
  }
}

/**
 * Renders the cases as a fixed-width table.
 *
 * @example
 * ```ts ignore
 * import { formatServerTable, runServerBench } from "./server_bench.ts";
 * console.log(formatServerTable(await runServerBench()));
 * ```
 */
export function formatServerTable(result: ServerBenchResult): string {
  const lines = [
    `Server benchmarks: ${result.connections} connections, ${result.rounds} round(s) x ${result.seconds} s, ` +
    (result.pinned ? "server on CPU 0, wrk on CPU 1" : "not pinned") + ", medians",
    `${"case".padEnd(44)}${"req/s".padStart(10)}${"p50".padStart(10)}${"p99".padStart(10)}${
      "errors".padStart(8)
    }${"cpu/req".padStart(10)}`,
  ];
  for (const item of Object.values(result.cases)) {
    lines.push(
      item.label.padEnd(44) + Math.round(item.rps).toString().padStart(10) +
        `${item.p50Ms.toFixed(2)}ms`.padStart(10) + `${item.p99Ms.toFixed(2)}ms`.padStart(10) +
        String(item.errors).padStart(8) +
        (item.cpuUs === null ? "-" : `${item.cpuUs.toFixed(1)}us`).padStart(10),
    );
  }
  return lines.join("\n");
}

if (import.meta.main) {
  const args = Deno.args;
  const quick = args.includes("--quick");
  const value = (flag: string) => {
    const index = args.indexOf(flag);
    return index === -1 ? undefined : Number(args[index + 1]);
  };
  const result = await runServerBench({
    rounds: value("--rounds") ?? (quick ? 1 : undefined),
    seconds: value("--seconds") ?? (quick ? 3 : undefined),
    warmupSeconds: quick ? 1 : undefined,
  });
  console.log(formatServerTable(result));
}
