/**
 * The help of the command line comes from its command table: the program's help lists every
 * command of the table, each command answers `--help` with its synopsis, and each group's help
 * lists its subcommands.
 */
import assert from "node:assert/strict";
import { COMMANDS, synopsis } from "../../cli/command_table.ts";
import { makeTempHome, runCli } from "../support/cli.ts";

Deno.test("the program's help lists every command and subcommand of the table", async () => {
  const temp = await makeTempHome();
  try {
    const result = await runCli(["--help"], { env: temp.env });
    assert.equal(result.code, 0, result.stderr);
    const listed = result.stdout.split("\n").filter((line) => line.startsWith("  "))
      .map((line) => line.trim().split(/ {2,}/)[0]);
    assert.deepEqual(
      listed,
      COMMANDS.map((spec) => [spec.name, ...spec.positionals].join(" ")),
    );
    // The subcommands a user once missed, and the ones since.
    for (const name of ["run pending [ID]", "run approve ID TOOL_USE_ID", "run respond", "call"]) {
      assert.ok(result.stdout.includes(name), name);
    }
    for (const line of result.stdout.split("\n")) assert.ok(line.length <= 100, line);
  } finally {
    await temp.cleanup();
  }
});

Deno.test("every command of the table answers --help with its synopsis, every group lists its subcommands", async () => {
  const temp = await makeTempHome();
  try {
    const runs = COMMANDS.map(async (spec) => {
      const result = await runCli([...spec.name.split(" "), "--help"], { env: temp.env });
      assert.equal(result.code, 0, `${spec.name}: ${result.stderr}`);
      const text = result.stdout.replace(/\n +/g, " ");
      assert.ok(text.includes(synopsis(spec)), `${spec.name}: ${result.stdout}`);
      for (const flag of spec.flags) assert.ok(text.includes(`--${flag.name}`), flag.name);
      assert.ok(text.includes("Exit codes: "), spec.name);
      assert.ok(!result.stdout.includes("`"), `${spec.name}: no Markdown in the help`);
    });
    await Promise.all(runs);
    for (const group of ["principal", "provider", "run", "audit"]) {
      const result = await runCli([group, "--help"], { env: temp.env });
      assert.equal(result.code, 0, result.stderr);
      for (const spec of COMMANDS.filter((spec) => spec.name.startsWith(`${group} `))) {
        assert.ok(result.stdout.includes(`automation-runtime ${spec.name}`), spec.name);
      }
    }
  } finally {
    await temp.cleanup();
  }
});
