/**
 * The tours run as written. The shell blocks of the README after its first two (starting and
 * testing the service, which this suite cannot run inside itself) — the demo, the short tour,
 * the stop — and the quick tour of `docs/runs.md` are run in order in one bash session, with job
 * control as in a terminal, and every command must succeed (`set -e`, `pipefail`; the failing
 * command is named). The demo's stop block runs last. Nothing but web-safe tools is needed:
 * the blocks may not call `uuidgen`, GNU `date`, `jq` or `curl`, and they reach the service only
 * through the README's invocation (`npx -y deno@<CI's version> task …`).
 *
 * `npx` is replaced by a shell function that accepts only that invocation and runs the same task
 * with the Deno running this test, so the suite does not start Node and npm once per command
 * (CI itself runs the README's test command through the real `npx`). The session runs in a
 * temporary folder inside the checkout (so `deno task` finds `deno.json` and `demo.env` lands in
 * the folder), with an empty HOME and nothing of this process's environment but PATH and DENO_DIR.
 */
import assert from "node:assert/strict";
import { REPO_ROOT } from "./support/cli.ts";

const README = await Deno.readTextFile(`${REPO_ROOT}README.md`);
const RUNS = await Deno.readTextFile(`${REPO_ROOT}docs/runs.md`);
const DENO_VERSION = /^DENO_VERSION=(\S+)$/m.exec(
  await Deno.readTextFile(`${REPO_ROOT}.ci/run`),
)![1];
const INVOCATION = `npx -y deno@${DENO_VERSION}`;

/** The ```sh blocks of a markdown text (or of one `## ` section of it), in order. */
function shellBlocks(markdown: string, section?: string): string[] {
  let text = markdown;
  if (section !== undefined) {
    const start = text.indexOf(`\n## ${section}\n`);
    assert.ok(start !== -1, `no section ${section}`);
    const end = text.indexOf("\n## ", start + 1);
    text = text.slice(start, end === -1 ? undefined : end);
  }
  return [...text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]);
}

const readme = shellBlocks(README);
const [startBlock, testBlock, ...readmeTours] = readme;
const stopBlock = readmeTours.pop()!;
const runsTour = shellBlocks(RUNS, "Quick tour");

Deno.test("the tours are where this test looks for them", () => {
  assert.equal(startBlock.trim(), `${INVOCATION} task start`);
  assert.equal(testBlock.trim(), `${INVOCATION} task test`);
  assert.match(readmeTours[0], new RegExp(`^${INVOCATION} task demo > demo\\.env &`));
  assert.equal(stopBlock.trim(), "kill %1");
  assert.ok(readmeTours.length >= 2 && runsTour.length >= 1);
});

Deno.test("the tours use the README's invocation and no tool a minimal system lacks", () => {
  for (const block of [...readmeTours, ...runsTour, stopBlock]) {
    for (const tool of ["uuidgen", "date ", "jq ", "curl ", "deno task", "automation-runtime "]) {
      const lines = block.split("\n").filter((line) =>
        !line.trimStart().startsWith("#") && line.includes(tool) &&
        !line.includes(`${INVOCATION} task`)
      );
      assert.deepEqual(lines, [], `${tool.trim()} outside the README's invocation`);
    }
    for (const match of block.matchAll(/npx [^\n]*/g)) {
      assert.ok(match[0].startsWith(`${INVOCATION} task `), match[0]);
    }
  }
});

const PRELUDE = `set -eE -o pipefail
set -m
trap 'echo "tour command failed (exit $?): $BASH_COMMAND" >&2' ERR
# A tour that stops half-way stops the demo too (a clean SIGTERM, as \`kill %1\` sends).
trap 'for job in $(jobs -p); do kill -- "-$job" 2>/dev/null || true; done; wait' EXIT
npx() {
  if [ "$1 $2" != "-y deno@${DENO_VERSION}" ] || [ "$3" != task ]; then
    echo "npx $*: not the README's invocation" >&2
    return 127
  fi
  shift 2
  "$TOUR_DENO" "$@"
}
`;

Deno.test({
  name: "the README's demo and tours and the gateway's quick tour run in order against demo",
  sanitizeResources: false,
  async fn() {
    const cwd = await Deno.makeTempDir({ dir: REPO_ROOT, prefix: ".tour-" });
    const home = await Deno.makeTempDir({ prefix: "art-tour-home-" });
    // The process group of the demo (a job of its own under job control), for the test to end it
    // should the session itself be killed.
    const jobsFile = `${cwd}/.jobs`;
    const script = [
      PRELUDE,
      readmeTours[0],
      `jobs -p > ${JSON.stringify(jobsFile)}`,
      ...readmeTours.slice(1),
      ...runsTour,
      stopBlock,
      "wait\n",
    ].join("\n");
    const killJobs = async (): Promise<void> => {
      const pids = (await Deno.readTextFile(jobsFile).catch(() => "")).split(/\s+/);
      for (const pid of pids.filter((text) => /^\d+$/.test(text))) {
        try {
          Deno.kill(-Number(pid), "SIGKILL");
        } catch {
          // Already gone.
        }
      }
    };
    const child = new Deno.Command("bash", {
      args: ["-c", script],
      cwd,
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: home,
        DENO_DIR: Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME") ?? "/root"}/.cache/deno`,
        NO_COLOR: "1",
        TOUR_DENO: Deno.execPath(),
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const timer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
      void killJobs();
    }, 120_000);
    try {
      const output = await child.output();
      const stdout = new TextDecoder().decode(output.stdout);
      const stderr = new TextDecoder().decode(output.stderr);
      assert.equal(output.code, 0, `${stderr}\n--- stdout ---\n${stdout}`);
      // The run of the short tour and the one of the quick tour completed.
      assert.equal((stdout.match(/"type":"run\.completed"/g) ?? []).length, 2, stdout);
      // `kill %1` stopped the demo cleanly: its temporary folder is gone.
      const folder = /state in (\S+), removed on exit/.exec(stderr)?.[1];
      assert.ok(folder, stderr);
      await assert.rejects(Deno.stat(folder), Deno.errors.NotFound);
      assert.ok(stderr.includes("shown only this once"), "a principal was issued");
      // The tour's principal carries its spend limits, and usage sums what the runs cost.
      assert.match(
        stdout,
        /"budget": \{\s*"amount": "500",\s*"currency": "USD",\s*"period": "day"/,
      );
      assert.match(stdout, /"groupBy": "agent"[\s\S]*"listCost": \{\s*"amount": "[1-9]\d*"/);
    } finally {
      clearTimeout(timer);
      await killJobs();
      await Deno.remove(cwd, { recursive: true }).catch(() => {});
      await Deno.remove(home, { recursive: true }).catch(() => {});
    }
  },
});
