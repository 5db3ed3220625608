/**
 * `provider init`: the provider key from standard input into the provider file, written
 * atomically with mode 0600 in a 0700 directory, never printed, never overwritten without
 * `--force`.
 */
import assert from "node:assert/strict";
import { parse as parseDotenv } from "dotenv";
import { parsePlainDotenv } from "../../server/bootstrap/_plain_dotenv.ts";
import { RuntimeServiceClient } from "../../sdk/mod.ts";
import { CLI_PERMISSIONS, makeTempHome, REPO_ROOT } from "../support/cli.ts";
import { startServer } from "../support/server.ts";
import { lines, runCliWithInput } from "./_cli.ts";

const KEY = "sk-prov-0123456789abcdefABCDEF_xyz";
const OTHER_KEY = "sk-prov-replacement-9876543210";
const POSIX = Deno.build.os !== "windows";

async function mode(path: string): Promise<number> {
  return (await Deno.stat(path)).mode! & 0o777;
}

function assertNoKey(result: { stdout: string; stderr: string }, key: string): void {
  assert.ok(!result.stdout.includes(key), "the key is never printed on stdout");
  assert.ok(!result.stderr.includes(key), "the key is never printed on stderr");
}

Deno.test("provider init writes the piped key to provider.env beside the secret file, 0600 in 0700", async () => {
  const temp = await makeTempHome();
  try {
    const result = await runCliWithInput(["provider", "init"], {
      env: temp.env,
      stdin: `${KEY}\n`,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, "", "nothing on stdout");
    assertNoKey(result, KEY);
    const path = `${temp.configDir}/automation-runtime/provider.env`;
    assert.ok(result.stderr.includes(path), result.stderr);

    const text = await Deno.readTextFile(path);
    assert.ok(text.includes(`\nAUTOMATION_RUNTIME_PROVIDER_API_KEY=${KEY}\n`), text);
    const plain = parsePlainDotenv(text);
    assert.deepEqual(plain, { AUTOMATION_RUNTIME_PROVIDER_API_KEY: KEY }, "the plain form");
    assert.deepEqual(parseDotenv(text), plain, "dotenv reads the same");
    if (POSIX) {
      assert.equal(await mode(path), 0o600);
      assert.equal(await mode(`${temp.configDir}/automation-runtime`), 0o700);
    }
    const names = [];
    for await (const entry of Deno.readDir(`${temp.configDir}/automation-runtime`)) {
      names.push(entry.name);
    }
    assert.deepEqual(names, ["provider.env"], "no temporary file is left behind");
  } finally {
    await temp.cleanup();
  }
});

Deno.test("provider init --base-url, --default-agent, --default-environment go to the file, and serve uses them", async () => {
  const temp = await makeTempHome();
  try {
    const result = await runCliWithInput([
      "provider",
      "init",
      "--base-url",
      "http://127.0.0.1:9/provider",
      "--default-agent",
      "agent_01",
      "--default-environment",
      "env_01",
    ], { env: temp.env, stdin: `${KEY}\n` });
    assert.equal(result.code, 0, result.stderr);
    assertNoKey(result, KEY);
    assert.ok(result.stderr.includes("AUTOMATION_RUNTIME_PROVIDER_BASE_URL"), result.stderr);
    const path = `${temp.configDir}/automation-runtime/provider.env`;
    const text = await Deno.readTextFile(path);
    const expected = {
      AUTOMATION_RUNTIME_PROVIDER_API_KEY: KEY,
      AUTOMATION_RUNTIME_PROVIDER_BASE_URL: "http://127.0.0.1:9/provider",
      AUTOMATION_RUNTIME_DEFAULT_AGENT_ID: "agent_01",
      AUTOMATION_RUNTIME_DEFAULT_ENVIRONMENT_ID: "env_01",
    };
    assert.deepEqual(parsePlainDotenv(text), expected, "the plain form");
    assert.deepEqual(parseDotenv(text), expected, "dotenv reads the same");

    // The README's order: the provider file first, then the service, which starts with runs on.
    const server = await startServer({ home: temp.home, autoInit: true, env: temp.env });
    try {
      const me = await new RuntimeServiceClient({ baseUrl: server.url, token: server.bearer })
        .runtime();
      assert.equal(me.runs, true);
    } finally {
      await server.stop();
    }
  } finally {
    await temp.cleanup();
  }
});

Deno.test("provider init refuses a bad --base-url or id before reading the key, writing nothing", async () => {
  const temp = await makeTempHome();
  try {
    for (
      const args of [
        ["--base-url", "ftp://provider.example"],
        ["--base-url", "https://user:pass@provider.example"],
        ["--base-url", "not a url"],
        ["--base-url", "https://provider.example/#x"],
        ["--default-agent", "agent 01"],
        ["--default-environment", 'env"01'],
      ]
    ) {
      const result = await runCliWithInput(["provider", "init", ...args], {
        env: temp.env,
        stdin: `${KEY}\n`,
      });
      assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
      assert.equal(lines(result.stderr).length, 1, result.stderr);
      assertNoKey(result, KEY);
    }
    await assert.rejects(
      Deno.stat(`${temp.configDir}/automation-runtime/provider.env`),
      Deno.errors.NotFound,
    );
  } finally {
    await temp.cleanup();
  }
});

Deno.test("provider init refuses an existing file without --force and leaves it unchanged", async () => {
  const temp = await makeTempHome();
  try {
    const path = `${temp.home}/conf/provider.env`;
    const first = await runCliWithInput(["provider", "init", "--path", path], {
      env: temp.env,
      stdin: KEY,
    });
    assert.equal(first.code, 0, first.stderr);
    const before = await Deno.readTextFile(path);

    const refused = await runCliWithInput(["provider", "init", "--path", path], {
      env: temp.env,
      stdin: `${OTHER_KEY}\n`,
    });
    assert.equal(refused.code, 1);
    assert.equal(refused.stdout, "");
    assert.equal(lines(refused.stderr).length, 1, refused.stderr);
    assert.ok(refused.stderr.includes("already exists") && refused.stderr.includes("--force"));
    assertNoKey(refused, OTHER_KEY);
    assert.equal(await Deno.readTextFile(path), before, "the file is unchanged");

    const forced = await runCliWithInput(["provider", "init", "--path", path, "--force"], {
      env: temp.env,
      stdin: `${OTHER_KEY}\r\n`,
    });
    assert.equal(forced.code, 0, forced.stderr);
    assertNoKey(forced, OTHER_KEY);
    assert.deepEqual(parsePlainDotenv(await Deno.readTextFile(path)), {
      AUTOMATION_RUNTIME_PROVIDER_API_KEY: OTHER_KEY,
    });
    if (POSIX) assert.equal(await mode(path), 0o600);
  } finally {
    await temp.cleanup();
  }
});

Deno.test("provider init --auth-token stores a bearer token under its own variable", async () => {
  const temp = await makeTempHome();
  try {
    const path = `${temp.home}/provider.env`;
    const token = "oauth-token-ABCDEFGHIJKLMNOPQRSTUVWXYZ+/=";
    const result = await runCliWithInput(["provider", "init", "--auth-token", "--path", path], {
      env: temp.env,
      stdin: token,
    });
    assert.equal(result.code, 0, result.stderr);
    assertNoKey(result, token);
    assert.deepEqual(parsePlainDotenv(await Deno.readTextFile(path)), {
      AUTOMATION_RUNTIME_PROVIDER_AUTH_TOKEN: token,
    });
  } finally {
    await temp.cleanup();
  }
});

Deno.test("the default path follows RUNTIME_PROVIDER_ENV, else the bootstrap file's directory", async () => {
  const temp = await makeTempHome();
  try {
    const named = `${temp.home}/named/p.env`;
    const explicit = await runCliWithInput(["provider", "init"], {
      env: { ...temp.env, RUNTIME_PROVIDER_ENV: named },
      stdin: KEY,
    });
    assert.equal(explicit.code, 0, explicit.stderr);
    assert.ok((await Deno.stat(named)).isFile);

    const beside = await runCliWithInput(["provider", "init"], {
      env: { ...temp.env, RUNTIME_BOOTSTRAP_ENV: `${temp.home}/boot/bootstrap.env` },
      stdin: KEY,
    });
    assert.equal(beside.code, 0, beside.stderr);
    assert.ok((await Deno.stat(`${temp.home}/boot/provider.env`)).isFile);

    const empty = await runCliWithInput(["provider", "init"], {
      env: { ...temp.env, RUNTIME_PROVIDER_ENV: " " },
      stdin: KEY,
    });
    assert.equal(empty.code, 1);
    assert.ok(empty.stderr.includes("RUNTIME_PROVIDER_ENV"), empty.stderr);
  } finally {
    await temp.cleanup();
  }
});

Deno.test("an empty, malformed or multi-line key is refused without echoing it and nothing is written", async () => {
  const temp = await makeTempHome();
  try {
    const path = `${temp.home}/provider.env`;
    const inputs = [
      "",
      "\n",
      "short",
      "key with spaces inside it",
      'sk-"quoted"-key-value',
      "sk-first-line-value\nsk-second-line-value\n",
      "sk-key-#-comment-part",
    ];
    for (const input of inputs) {
      const result = await runCliWithInput(["provider", "init", "--path", path], {
        env: temp.env,
        stdin: input,
      });
      assert.equal(result.code, 1, `${JSON.stringify(input)}: ${result.stderr}`);
      assert.equal(result.stdout, "");
      assert.equal(lines(result.stderr).length, 1, result.stderr);
      if (input.trim().length >= 5) assertNoKey(result, input.trim());
      await assert.rejects(Deno.stat(path), Deno.errors.NotFound, JSON.stringify(input));
    }
    const noStdin = await runCliWithInput(["provider", "init", "--path", path], { env: temp.env });
    assert.equal(noStdin.code, 1, noStdin.stderr);
    assert.ok(noStdin.stderr.includes("No provider API key"), noStdin.stderr);
    await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
  } finally {
    await temp.cleanup();
  }
});

Deno.test("provider help and usage errors; the key is never taken as an argument", async () => {
  const temp = await makeTempHome();
  try {
    for (const args of [["provider", "--help"], ["provider", "init", "--help"]]) {
      const result = await runCliWithInput(args, { env: temp.env });
      assert.equal(result.code, 0, result.stderr);
      assert.ok(result.stdout.includes("provider init"), result.stdout);
      assert.ok(result.stdout.includes("--auth-token"), result.stdout);
    }
    const usage = [
      ["provider"],
      ["provider", "rotate"],
      ["provider", "init", "extra"],
      ["provider", "init", "--key", KEY],
      ["provider", "init", "--api-key", KEY],
      ["provider", "init", "--path"],
    ];
    for (const args of usage) {
      const result = await runCliWithInput(args, { env: temp.env, stdin: KEY });
      assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
      assert.equal(result.stdout, "");
      assert.equal(lines(result.stderr).length, 1, result.stderr);
      assert.ok(!result.stderr.includes(KEY), "a key given as an argument is not echoed");
    }
    await assert.rejects(
      Deno.stat(`${temp.configDir}/automation-runtime/provider.env`),
      Deno.errors.NotFound,
    );
  } finally {
    await temp.cleanup();
  }
});

async function hasScript(): Promise<boolean> {
  if (Deno.build.os !== "linux") return false;
  try {
    return (await new Deno.Command("script", { args: ["--version"] }).output()).success;
  } catch {
    return false;
  }
}

/** Runs `provider init` on a pseudo-terminal (util-linux `script`) and types `typed` at the prompt. */
async function initOnTerminal(
  temp: Awaited<ReturnType<typeof makeTempHome>>,
  path: string,
  typed: string,
): Promise<{ code: number; transcript: string }> {
  const command = [Deno.execPath(), "run", ...CLI_PERMISSIONS, `${REPO_ROOT}cli/main.ts`]
    .concat(["provider", "init", "--path", path])
    .map((word) => `'${word}'`).join(" ");
  const child = new Deno.Command("script", {
    args: ["-q", "-e", "-c", command, "/dev/null"],
    env: { ...temp.env, SHELL: "/bin/sh" },
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  let transcript = "";
  const reading = (async () => {
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      transcript += chunk;
    }
  })();
  const writer = child.stdin.getWriter();
  try {
    // Type only once the prompt is shown, as a person would.
    while (!transcript.includes("Provider API key: ")) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await writer.write(new TextEncoder().encode(typed));
    const status = await child.status;
    await reading;
    return { code: status.code, transcript };
  } finally {
    clearTimeout(timer);
    await writer.close().catch(() => {});
  }
}

Deno.test({
  name: "on a terminal the key is typed without echo, and Ctrl-C writes nothing",
  ignore: !(await hasScript()),
  async fn() {
    const temp = await makeTempHome();
    try {
      const path = `${temp.home}/tty/provider.env`;
      const typed = await initOnTerminal(temp, path, `${KEY}x\x7f\r`);
      assert.equal(typed.code, 0, typed.transcript);
      assert.ok(!typed.transcript.includes(KEY), `echoed: ${typed.transcript}`);
      assert.deepEqual(parsePlainDotenv(await Deno.readTextFile(path)), {
        AUTOMATION_RUNTIME_PROVIDER_API_KEY: KEY,
      }, "backspace removed the extra character");

      const cancelledPath = `${temp.home}/tty/cancelled.env`;
      const cancelled = await initOnTerminal(temp, cancelledPath, `${OTHER_KEY.slice(0, 6)}\x03`);
      assert.equal(cancelled.code, 1, cancelled.transcript);
      assert.ok(cancelled.transcript.includes("Cancelled"), cancelled.transcript);
      await assert.rejects(Deno.stat(cancelledPath), Deno.errors.NotFound);
    } finally {
      await temp.cleanup();
    }
  },
});
