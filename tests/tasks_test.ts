/**
 * The flags the tests and the benchmarks launch `serve` and the CLI with are the flags of the
 * `start` and `cli` tasks in deno.json, so what is tested and measured is what users run.
 */
import assert from "node:assert/strict";
import { SERVE_PERMISSIONS as BENCH_SERVE_FLAGS } from "../bench/_process.ts";
import { CLI_PERMISSIONS } from "./support/cli.ts";
import { SERVE_PERMISSIONS } from "./support/server.ts";

const config = JSON.parse(
  await Deno.readTextFile(new URL("../deno.json", import.meta.url)),
) as { tasks: Record<string, string> };

function flagsOf(task: string, entry: string): string[] {
  const words = config.tasks[task].split(/\s+/);
  assert.equal(words[0], "deno");
  assert.equal(words[1], "run");
  const end = words.indexOf(entry);
  assert.ok(end > 2, `task ${task} runs ${entry}`);
  return words.slice(2, end);
}

Deno.test("tests and benchmarks start serve with the start task's flags", () => {
  const start = flagsOf("start", "cli/main.ts");
  assert.deepEqual([...SERVE_PERMISSIONS], start);
  assert.deepEqual([...BENCH_SERVE_FLAGS], start);
});

Deno.test("the demo task runs `demo` with the start task's flags", () => {
  assert.deepEqual(flagsOf("demo", "cli/main.ts"), flagsOf("start", "cli/main.ts"));
  assert.equal(config.tasks.demo.split(/\s+/).at(-1), "demo");
});

Deno.test("tests run the CLI with the cli task's flags", () => {
  assert.deepEqual([...CLI_PERMISSIONS], flagsOf("cli", "cli/main.ts"));
});

Deno.test("the compile task grants the start task's permissions", () => {
  const start = flagsOf("start", "cli/main.ts").filter((flag) => flag.startsWith("--allow-"));
  const compile = config.tasks.compile.split(/\s+/).filter((flag) => flag.startsWith("--allow-"));
  assert.deepEqual(compile, start);
});
