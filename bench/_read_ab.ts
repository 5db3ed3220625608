/**
 * Compares the authenticated read (`GET /v1/runtime`) of two or more builds of the service against
 * the read floor (`bench/peers/floor_read.ts`), all in one run: each build's `serve` and the floor
 * run pinned to CPU 0 (wrk on CPU 1, 50 connections, the shared headers), in interleaved rounds
 * whose order rotates every round, and every round reads each server's CPU time per request from
 * `/proc/<pid>/stat`. It prints each round, then the medians and spreads of CPU per request, of
 * the floor's CPU over each build's (the read ratio by CPU) and of each build's CPU over the
 * first's. A build is a directory holding a copy of the repository (`git archive <rev> | tar -x -C
 * DIR`). Not part of `deno task bench` (its name starts with `_`).
 *
 * Run: `deno run -A bench/_read_ab.ts ROUNDS SECONDS name=DIR [name=DIR ...]`, for instance
 * `deno run -A bench/_read_ab.ts 10 4 before=/tmp/before after=.`
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
import { runWrk } from "./_wrk.ts";
import { cpuSeconds } from "./server_bench.ts";

const rounds = Number(Deno.args[0] ?? 5);
const seconds = Number(Deno.args[1] ?? 5);
const builds = Deno.args.slice(2).map((arg) => arg.split("="));
if (builds.length === 0 || builds.some((build) => build.length !== 2)) {
  console.error("usage: deno run -A bench/_read_ab.ts ROUNDS SECONDS name=DIR [name=DIR ...]");
  Deno.exit(2);
}
await pinSelf();
const workDir = await Deno.makeTempDir({ prefix: "automation-runtime-read-ab-" });
const bootstrap = benchBootstrap();
const bearer = bootstrap.AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN;
const servers: Record<string, BenchServer> = {};
servers.floor = await startServer({
  name: "floor",
  args: ["--allow-net", "bench/peers/floor_read.ts", "{port}"],
});
for (const [name, dir] of builds) {
  const home = `${workDir}/${name}`;
  await Deno.mkdir(home);
  const spec = ourServeSpec({ home, bootstrap });
  spec.args = spec.args.map((arg) => arg === "cli/main.ts" ? `${dir}/cli/main.ts` : arg);
  servers[name] = await startServer({ ...spec, name });
}
const names = ["floor", ...builds.map((build) => build[0])];
const cpu: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
const rps: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
const measure = (name: string, secs: number) =>
  runWrk({
    url: servers[name].url + "/v1/runtime",
    bearer,
    mode: "read",
    connections: 50,
    seconds: secs,
    workDir,
  });
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];
const spread = (values: number[], digits: number) =>
  `median ${median(values).toFixed(digits)} [${Math.min(...values).toFixed(digits)}-${
    Math.max(...values).toFixed(digits)
  }]`;
try {
  for (const name of names) await measure(name, 3);
  for (let round = 0; round < rounds; round++) {
    for (const name of names.map((_, i) => names[(i + round) % names.length])) {
      const before = cpuSeconds(servers[name].pid)!;
      const result = await measure(name, seconds);
      const after = cpuSeconds(servers[name].pid)!;
      if (result.non2xx || result.socketErrors) {
        console.error(`${name}: ${result.non2xx} non-2xx, ${result.socketErrors} socket errors`);
      }
      cpu[name].push((after - before) * 1e6 / (result.rps * seconds));
      rps[name].push(result.rps);
    }
    console.log(
      `round ${round + 1}: ` +
        names.map((name) =>
          `${name} ${cpu[name].at(-1)!.toFixed(2)} µs ${Math.round(rps[name].at(-1)!)} req/s`
        ).join(" | "),
    );
  }
  for (const name of names) {
    console.log(
      `${name}: CPU per request ${spread(cpu[name], 2)} µs, req/s median ${
        Math.round(median(rps[name]))
      }`,
    );
  }
  for (const name of names.slice(1)) {
    const ratio = cpu.floor.map((floor, i) => floor / cpu[name][i]);
    const byRps = rps[name].map((value, i) => value / rps.floor[i]);
    console.log(
      `floor CPU / ${name}: ${spread(ratio, 3)}; ${name} / floor req/s: ${spread(byRps, 3)}`,
    );
  }
  const first = names[1];
  for (const name of names.slice(2)) {
    const ratio = cpu[name].map((value, i) => value / cpu[first][i]);
    console.log(`${name} CPU / ${first} CPU: ${spread(ratio, 3)}`);
  }
} finally {
  for (const name of names) await servers[name].stop();
  await Deno.remove(workDir, { recursive: true });
}
