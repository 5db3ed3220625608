/**
 * `deno task bench`: the server benchmarks (wrk against the service and its peers), the startup
 * benchmark, the revocation latency, then every standalone client benchmark script in `bench/`
 * as a subprocess; prints one combined report with the measured ratios next to their targets.
 * Absolute figures move from machine to machine; the ratios are measured in one run on one
 * machine.
 *
 * A client script states each target on a line of its own, which {@linkcode parseClientTargets}
 * reads: `<name> = <ratio>x[, median <ratio>x] (target >= <bound>x: ...)`. The first ratio is of
 * the best rounds; the median, when the script prints one, shows the spread.
 *
 * Flags:
 * - `--only server,startup,revocation,client`: run only these parts (comma-separated);
 * - `--quick`: one short round (a smoke run, figures are noisier);
 * - `--rounds N`, `--seconds N`: rounds and seconds per server case;
 * - `--runs N`: measured starts in the startup benchmark;
 * - `--revocations N`: revocations timed in each case of the revocation benchmark.
 *
 * Exits 1 when a target is missed or a benchmark fails.
 *
 * @module
 */
import { formatServerTable, runServerBench, type ServerBenchResult } from "./server_bench.ts";
import { runStartupBench, type StartupBenchResult } from "./startup_bench.ts";
import {
  formatRevocationTable,
  type RevocationBenchResult,
  runRevocationBench,
} from "./revocation_bench.ts";

const PARTS = ["server", "startup", "revocation", "client"] as const;
type Part = typeof PARTS[number];

/** Scripts of this folder that are not client benchmarks. */
const NOT_CLIENT = new Set([
  "main.ts",
  "server_bench.ts",
  "startup_bench.ts",
  "revocation_bench.ts",
  "tracing_bench.ts",
]);

/** One measured ratio against its target. */
export interface TargetCheck {
  /** What is compared. */
  name: string;
  /** Measured ratio. */
  ratio: number;
  /** `min`: the ratio must be at least `bound`; `max`: at most. */
  kind: "min" | "max";
  /** The target. */
  bound: number;
  /** How the figures print (default `x`, a ratio). */
  unit?: string;
}

/**
 * The issue's targets, computed from one run's figures.
 *
 * @example
 * ```ts ignore
 * import { targetChecks } from "./main.ts";
 * for (const check of targetChecks(server, startup, revocation)) console.log(check.name, check.ratio);
 * ```
 */
export function targetChecks(
  server: ServerBenchResult | undefined,
  startup: StartupBenchResult | undefined,
  revocation?: RevocationBenchResult,
): TargetCheck[] {
  const checks: TargetCheck[] = [];
  if (server) {
    const c = server.cases;
    checks.push(
      {
        name: "authenticated reads / read floor",
        ratio: c.oursRead.rps / c.floorRead.rps,
        kind: "min",
        bound: 0.85,
      },
      {
        name: "authenticated reads / bare Deno.serve",
        ratio: c.oursRead.rps / c.bare.rps,
        kind: "min",
        bound: 0.6,
      },
      {
        name: "authenticated reads / Hono bearer-auth",
        ratio: c.oursRead.rps / c.hono.rps,
        kind: "min",
        bound: 1.0,
      },
      {
        name: "issuance / bare + 1 KV commit",
        ratio: c.oursIssue.rps / c.kvCommit.rps,
        kind: "min",
        bound: 0.6,
      },
      {
        name: "read p99 / bare p99",
        ratio: c.oursRead.p99Ms / c.bare.p99Ms,
        kind: "max",
        bound: 2.0,
      },
    );
  }
  if (startup) {
    checks.push({
      name: "startup to first 200 / bare",
      ratio: startup.oursMs / startup.bareMs,
      kind: "max",
      bound: 1.5,
    });
  }
  if (revocation) {
    checks.push({
      name: "revocation p99, two processes, seconds",
      ratio: revocation.twoProcesses.p99Ms / 1000,
      kind: "max",
      bound: 1.5,
      unit: " s",
    });
  }
  return checks;
}

/**
 * Ratios that put the targets in context, with no target of their own: how close Deno itself
 * gets to each limit when doing only the work the service must do (the floor peers), and how
 * close the service gets to that floor.
 *
 * @example
 * ```ts ignore
 * import { contextRatios } from "./main.ts";
 * for (const [name, ratio] of contextRatios(server, startup)) console.log(name, ratio);
 * ```
 */
export function contextRatios(
  server: ServerBenchResult | undefined,
  startup: StartupBenchResult | undefined,
): [string, number][] {
  const ratios: [string, number][] = [];
  if (server) {
    const c = server.cases;
    ratios.push(
      ["read floor / bare Deno.serve", c.floorRead.rps / c.bare.rps],
      ...(c.oursRead.cpuUs === null || c.floorRead.cpuUs === null ? [] : [[
        "CPU per request: read floor / ours",
        c.floorRead.cpuUs / c.oursRead.cpuUs,
      ] as [string, number]]),
      ["read floor p99 / bare p99", c.floorRead.p99Ms / c.bare.p99Ms],
      ["issuance-shaped commit / 1 KV commit", c.kvIssue.rps / c.kvCommit.rps],
      ["issuance / issuance-shaped commit", c.oursIssue.rps / c.kvIssue.rps],
    );
  }
  if (startup) {
    ratios.push(
      ["startup: Deno KV floor / bare", startup.kvFloorMs / startup.bareMs],
      ["startup: ours / Deno KV floor", startup.oursMs / startup.kvFloorMs],
      ["startup: ours, secret file / environment", startup.oursFileMs / startup.oursMs],
    );
  }
  return ratios;
}

function formatContext(ratios: [string, number][]): string {
  const lines = [`${"context (no target)".padEnd(42)}${"measured".padStart(10)}`];
  for (const [name, ratio] of ratios) {
    lines.push(name.padEnd(42) + `${ratio.toFixed(2)}x`.padStart(10));
  }
  return lines.join("\n");
}

/** A target stated by a client benchmark script. */
export interface ClientTarget extends TargetCheck {
  /** The script's file name. */
  script: string;
  /** The ratio of median rounds, when the script prints one. */
  median?: number;
}

// `<name> = 1.23x, median 1.10x (target >= 1.5x: ok)`; the `=` and the median are optional, so
// older lines (`ours / vendor = 1.23x (target >= 1.5x: ok)`) read too.
const TARGET_LINE =
  /^\s*(.+?)\s*=?\s*(\d+(?:\.\d+)?)x(?:,?\s*median\s+(\d+(?:\.\d+)?)x)?\s*\(target\s*(>=|<=|≥|≤)\s*(\d+(?:\.\d+)?)x/;

/**
 * The targets a client script printed, one per line that states one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseClientTargets } from "./main.ts";
 * const text = "x / peer = 1.80x, median 1.60x (target >= 1.0x: ok)\nother output";
 * assert.deepEqual(parseClientTargets("x_bench.ts", text), [
 *   { script: "x_bench.ts", name: "x / peer", ratio: 1.8, median: 1.6, kind: "min", bound: 1 },
 * ]);
 * ```
 */
export function parseClientTargets(script: string, text: string): ClientTarget[] {
  const targets: ClientTarget[] = [];
  for (const line of text.split("\n")) {
    const match = TARGET_LINE.exec(line);
    if (match === null) continue;
    const [, name, ratio, median, operator, bound] = match;
    targets.push({
      script,
      name,
      ratio: Number(ratio),
      ...(median === undefined ? {} : { median: Number(median) }),
      kind: operator === ">=" || operator === "≥" ? "min" : "max",
      bound: Number(bound),
    });
  }
  return targets;
}

/**
 * The client targets as a table: each script's ratio (and median, when it printed one) beside its
 * target, written to two decimals as the script's own line states it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatClientTargets, parseClientTargets } from "./main.ts";
 * const text = "p99 / floor = 1.43x (target <= 1.25x: missed)";
 * const table = formatClientTargets(parseClientTargets("x_bench.ts", text));
 * assert.match(table, /x_bench: p99 \/ floor +1\.43x +- +<= 1\.25x  MISSED/);
 * ```
 */
export function formatClientTargets(targets: ClientTarget[]): string {
  const names = targets.map((target) => `${target.script.replace(/\.ts$/, "")}: ${target.name}`);
  const width = Math.max(42, ...names.map((name) => name.length + 2));
  const lines = [
    `${"client target (best rounds)".padEnd(width)}${"best".padStart(8)}` +
    `${"median".padStart(8)}${"target".padStart(10)}  result`,
  ];
  for (const [index, target] of targets.entries()) {
    lines.push(
      names[index].padEnd(width) + `${target.ratio.toFixed(2)}x`.padStart(8) +
        (target.median === undefined ? "-" : `${target.median.toFixed(2)}x`).padStart(8) +
        `${target.kind === "min" ? ">=" : "<="} ${target.bound.toFixed(2)}x`.padStart(10) +
        `  ${passes(target) ? "ok" : "MISSED"}`,
    );
  }
  return lines.join("\n");
}

function passes(check: TargetCheck): boolean {
  return check.kind === "min" ? check.ratio >= check.bound : check.ratio <= check.bound;
}

function formatChecks(checks: TargetCheck[]): string {
  const lines = [`${"ratio".padEnd(42)}${"measured".padStart(10)}${"target".padStart(10)}  result`];
  for (const check of checks) {
    const unit = check.unit ?? "x";
    lines.push(
      check.name.padEnd(42) + `${check.ratio.toFixed(2)}${unit}`.padStart(10) +
        `${check.kind === "min" ? ">=" : "<="} ${check.bound.toFixed(2)}${unit}`.padStart(10) +
        `  ${passes(check) ? "ok" : "MISSED"}`,
    );
  }
  return lines.join("\n");
}

function flag(args: string[], name: string): string | undefined {
  const index = args.indexOf(name);
  return index === -1 ? undefined : args[index + 1];
}

function numberFlag(args: string[], name: string): number | undefined {
  const raw = flag(args, name);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    throw new TypeError(`${name} must be a positive integer`);
  }
  return value;
}

async function clientScripts(): Promise<string[]> {
  const dir = new URL(".", import.meta.url);
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (
      entry.isFile && entry.name.endsWith(".ts") && !entry.name.startsWith("_") &&
      !entry.name.endsWith("_test.ts") && !NOT_CLIENT.has(entry.name)
    ) names.push(entry.name);
  }
  return names.sort();
}

async function runClientScript(
  name: string,
  quick: boolean,
): Promise<{ ok: boolean; text: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", name, ...(quick ? ["--quick"] : [])],
    cwd: new URL(".", import.meta.url).pathname,
    env: quick ? { BENCH_QUICK: "1" } : {},
    stdout: "piped",
    stderr: "inherit",
  }).output();
  return { ok: output.success, text: new TextDecoder().decode(output.stdout).trimEnd() };
}

/**
 * Runs the selected benchmarks and prints the combined report; returns the exit code.
 *
 * @example
 * ```ts ignore
 * import { main } from "./main.ts";
 * Deno.exit(await main(["--only", "server", "--quick"]));
 * ```
 */
export async function main(args: string[]): Promise<number> {
  const only = flag(args, "--only");
  const parts = new Set<Part>(only === undefined ? PARTS : only.split(",") as Part[]);
  for (const part of parts) {
    if (!PARTS.includes(part)) throw new TypeError(`Unknown part ${part}: use ${PARTS.join(", ")}`);
  }
  const quick = args.includes("--quick");
  const report: string[] = [];
  let failed = false;
  let server: ServerBenchResult | undefined;
  let startup: StartupBenchResult | undefined;
  let revocation: RevocationBenchResult | undefined;
  if (parts.has("server")) {
    server = await runServerBench({
      rounds: numberFlag(args, "--rounds") ?? (quick ? 1 : undefined),
      seconds: numberFlag(args, "--seconds") ?? (quick ? 3 : undefined),
      warmupSeconds: quick ? 1 : undefined,
    });
    report.push(formatServerTable(server));
    if (Object.values(server.cases).some((item) => item.errors > 0)) {
      report.push("note: some responses were errors (see the errors column)");
      failed = true;
    }
  }
  if (parts.has("startup")) {
    startup = await runStartupBench({
      runs: numberFlag(args, "--runs") ?? (quick ? 3 : undefined),
    });
    report.push(
      `Startup, spawn to first 200 on /healthz (median of ${startup.bareRuns.length}): ` +
        `bare Deno.serve ${startup.bareMs.toFixed(1)} ms, Deno KV floor ` +
        `${startup.kvFloorMs.toFixed(1)} ms, ours ${startup.oursMs.toFixed(1)} ms ` +
        `(bootstrap from the secret file: ${startup.oursFileMs.toFixed(1)} ms)`,
    );
  }
  if (parts.has("revocation")) {
    revocation = await runRevocationBench({
      rounds: numberFlag(args, "--revocations") ?? (quick ? 10 : undefined),
    });
    report.push(formatRevocationTable(revocation));
    if (revocation.stillAccepted > 0) {
      report.push("note: a revoked bearer was accepted after its revocation answered");
      failed = true;
    }
  }
  const checks = targetChecks(server, startup, revocation);
  if (checks.length > 0) {
    report.push(formatChecks(checks));
    if (!checks.every(passes)) failed = true;
    const context = contextRatios(server, startup);
    if (context.length > 0) report.push(formatContext(context));
  }
  if (parts.has("client")) {
    const targets: ClientTarget[] = [];
    for (const name of await clientScripts()) {
      console.error(`running bench/${name}`);
      const { ok, text } = await runClientScript(name, quick);
      report.push(`bench/${name}${ok ? "" : " (FAILED)"}\n${text}`);
      if (!ok) failed = true;
      targets.push(...parseClientTargets(name, text));
    }
    if (targets.length > 0) {
      report.push(formatClientTargets(targets));
      if (!targets.every(passes)) failed = true;
    }
  }
  console.log(`\n${report.join("\n\n")}`);
  return failed ? 1 : 0;
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    Deno.exit(2);
  }
}
