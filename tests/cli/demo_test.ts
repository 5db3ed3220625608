/**
 * `automation-runtime demo`: the gateway offline. Its standard output is the four `export` lines
 * (written to a private file when redirected to one), the bearer is an admin of a service whose
 * runs go to the provider simulator (the demo agent's turn: a message, a tool that needs a
 * confirmation, completion with usage), the user's own secret file, provider file and settings
 * are neither read nor written, and Ctrl-C stops it cleanly and removes its temporary folder.
 */
import assert from "node:assert/strict";
import { RuntimeServiceClient } from "../../sdk/mod.ts";
import { CLI_PERMISSIONS, makeTempHome, REPO_ROOT, runCli } from "../support/cli.ts";

const NAMES = [
  "AUTOMATION_RUNTIME_URL",
  "AUTOMATION_RUNTIME_TOKEN",
  "AUTOMATION_RUNTIME_DEMO_AGENT_ID",
  "AUTOMATION_RUNTIME_DEMO_ENVIRONMENT_ID",
];

/** Waits until `read` gives a value, at most `ms`. */
async function waitFor<T>(
  read: () => Promise<T | undefined>,
  ms: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

Deno.test("demo: export lines, a run through the simulator, the user's files untouched, Ctrl-C cleans up", async () => {
  const temp = await makeTempHome();
  const userDir = `${temp.configDir}/automation-runtime`;
  await Deno.mkdir(userDir, { recursive: true, mode: 0o700 });
  const userBearer = `art_${"u".repeat(43)}`;
  const userFiles: Record<string, string> = {
    [`${userDir}/bootstrap.env`]: [
      `AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN=${userBearer}`,
      `AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL=${crypto.randomUUID()}`,
      "AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES=authority:admin",
      `AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT=${new Date(Date.now() + 86_400_000).toISOString()}`,
      "",
    ].join("\n"),
    [`${userDir}/provider.env`]: "AUTOMATION_RUNTIME_PROVIDER_API_KEY=sk-users-own-key-0001\n",
  };
  const before: Record<string, number> = {};
  for (const [path, text] of Object.entries(userFiles)) {
    await Deno.writeTextFile(path, text, { mode: 0o600 });
    before[path] = (await Deno.stat(path)).mtime!.getTime();
  }
  const out = `${temp.home}/demo.env`;
  const userStore = `${temp.home}/users-store.kv`;
  // The user's own settings, which the demo must ignore.
  const env = {
    ...temp.env,
    AUTOMATION_RUNTIME_STORE: userStore,
    AUTOMATION_RUNTIME_PROVIDER_BASE_URL: "http://127.0.0.1:9",
    AUTOMATION_RUNTIME_MAX_ACTIVE_RUNS: "1",
  };
  const child = new Deno.Command("bash", {
    args: [
      "-c",
      'exec "$@" > "$OUT"',
      "demo",
      Deno.execPath(),
      "run",
      ...CLI_PERMISSIONS,
      `${REPO_ROOT}cli/main.ts`,
      "demo",
    ],
    cwd: REPO_ROOT,
    env: { ...env, OUT: out },
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  try {
    const lines = await waitFor(
      async () => {
        const text = await Deno.readTextFile(out).catch(() => "");
        const found = text.split("\n").filter((line) => line !== "");
        return found.length === 4 ? found : undefined;
      },
      30_000,
      "the export lines",
    );
    assert.equal((await Deno.stat(out)).mode! & 0o777, 0o600, "the bearer's file is private");
    const values: Record<string, string> = {};
    lines.forEach((line, i) => {
      const match = /^export ([A-Z_]+)=(\S+)$/.exec(line);
      assert.ok(match, line);
      assert.equal(match[1], NAMES[i]);
      values[match[1]] = match[2];
    });
    assert.match(values.AUTOMATION_RUNTIME_URL, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(values.AUTOMATION_RUNTIME_TOKEN, /^art_[A-Za-z0-9_-]{43}$/);
    assert.notEqual(values.AUTOMATION_RUNTIME_TOKEN, userBearer);

    const client = new RuntimeServiceClient({
      baseUrl: values.AUTOMATION_RUNTIME_URL,
      token: values.AUTOMATION_RUNTIME_TOKEN,
    });
    const runtime = await client.runtime();
    assert.ok(runtime.capabilities.includes("authority:admin"));
    assert.equal(runtime.runs, true);

    // Two runs at once: the user's AUTOMATION_RUNTIME_MAX_ACTIVE_RUNS=1 is not the demo's.
    const run = await client.runs.start({ input: "Triage the open issues" });
    const second = await client.runs.start({ input: "Deny this one" });
    assert.equal(run.agentId, values.AUTOMATION_RUNTIME_DEMO_AGENT_ID);
    assert.equal(run.environmentId, values.AUTOMATION_RUNTIME_DEMO_ENVIRONMENT_ID);
    const [request] = await client.runs.pending(run.runId);
    assert.equal(request.kind, "confirmation");
    assert.equal(request.name, "bash");
    await client.runs.confirmTool(run.runId, { toolUseId: request.toolUseId, result: "allow" });
    const types: string[] = [];
    let completed: { usage?: Record<string, number> } | undefined;
    for await (const event of client.runs.events(run.runId)) {
      types.push(event.type);
      if (event.type === "run.completed") completed = event;
    }
    assert.deepEqual(types.filter((type) => type !== "message.delta"), [
      "run.started",
      "run.status",
      "message.completed",
      "tool.call",
      "run.status",
      "tool.result",
      "run.status",
      "message.completed",
      "run.completed",
    ]);
    assert.deepEqual(completed?.usage, {
      input_tokens: 24_000,
      output_tokens: 1_800,
      cache_read_input_tokens: 0,
    });

    const [denied] = await client.runs.pending(second.runId);
    await client.runs.confirmTool(second.runId, { toolUseId: denied.toolUseId, result: "deny" });
    const texts: string[] = [];
    for await (const event of client.runs.events(second.runId)) {
      if (event.type === "message.completed") texts.push(event.text);
    }
    assert.match(texts.at(-1) ?? "", /denied/);

    // The user's files are as they were; no store of theirs was opened.
    for (const [path, text] of Object.entries(userFiles)) {
      assert.equal(await Deno.readTextFile(path), text);
      assert.equal((await Deno.stat(path)).mtime!.getTime(), before[path]);
    }
    await assert.rejects(Deno.stat(userStore), Deno.errors.NotFound);
  } finally {
    child.kill("SIGINT");
  }
  const status = await child.status;
  const log = await stderr;
  try {
    assert.equal(status.code, 0, log);
    const dir = /state in (\S+), removed on exit/.exec(log)?.[1];
    assert.ok(dir, log);
    await assert.rejects(Deno.stat(dir), Deno.errors.NotFound, "the temporary folder is removed");
    assert.equal(log.includes("art_"), false, "the bearer is never on stderr");
    assert.equal(log.includes("sk-"), false, "nor a provider key");
  } finally {
    await temp.cleanup();
  }
});

Deno.test("demo: a bad flag is a usage error, and nothing is started", async () => {
  const temp = await makeTempHome();
  try {
    for (const args of [["--port", "http"], ["--store", "x"], ["--port", "70000"]]) {
      const result = await runCli(["demo", ...args], { env: temp.env });
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stdout, "");
      assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
      assert.match(
        result.stderr,
        /^automation-runtime: .*\(see `automation-runtime demo --help`\)/,
      );
    }
    const help = await runCli(["demo", "--help"], { env: temp.env });
    assert.equal(help.code, 0);
    for (const name of NAMES) assert.ok(help.stdout.includes(name), name);
  } finally {
    await temp.cleanup();
  }
});
