import assert from "node:assert/strict";
import { parse } from "dotenv";
import { BEARER_PATTERN, makeTempHome, runCli } from "../support/cli.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function oneLine(text: string): string {
  const lines = text.split("\n").filter((line) => line !== "");
  assert.equal(lines.length, 1, `expected one line, got: ${text}`);
  return lines[0];
}

Deno.test("init writes a 0600 secret file in a 0700 directory and prints the bearer once", async () => {
  const temp = await makeTempHome();
  try {
    const before = Date.now();
    const result = await runCli(["init"], { env: temp.env });
    assert.equal(result.code, 0, result.stderr);
    const bearer = oneLine(result.stdout);
    assert.match(bearer, BEARER_PATTERN);
    assert.equal(result.stdout, bearer + "\n", "stdout holds only the bearer");
    assert.ok(!result.stderr.includes(bearer), "the bearer is not repeated on stderr");
    assert.ok(result.stderr.includes(temp.secretFile), "guidance names the file");

    const fileInfo = await Deno.stat(temp.secretFile);
    assert.equal(fileInfo.mode! & 0o777, 0o600);
    const dirInfo = await Deno.stat(`${temp.configDir}/automation-runtime`);
    assert.equal(dirInfo.mode! & 0o777, 0o700);
    const entries = [...Deno.readDirSync(`${temp.configDir}/automation-runtime`)];
    assert.deepEqual(entries.map((entry) => entry.name), ["bootstrap.env"], "no temp file left");

    const values = parse(await Deno.readTextFile(temp.secretFile));
    assert.equal(values.AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN, bearer);
    assert.match(values.AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL, UUID);
    assert.equal(
      values.AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES,
      "session:read,session:write,session:approve,authority:admin",
    );
    const expires = Date.parse(values.AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT);
    assert.ok(expires >= before + 30 * 86_400_000 && expires <= Date.now() + 30 * 86_400_000);
  } finally {
    await temp.cleanup();
  }
});

Deno.test("init refuses an existing secret file without --force and replaces it with --force", async () => {
  const temp = await makeTempHome();
  try {
    const first = await runCli(["init"], { env: temp.env });
    assert.equal(first.code, 0, first.stderr);
    const original = await Deno.readTextFile(temp.secretFile);

    const refused = await runCli(["init"], { env: temp.env });
    assert.equal(refused.code, 1);
    assert.equal(refused.stdout, "");
    const line = oneLine(refused.stderr);
    assert.ok(line.includes(temp.secretFile) && line.includes("--force"), line);
    assert.equal(await Deno.readTextFile(temp.secretFile), original, "file untouched");

    const forced = await runCli(["init", "--force"], { env: temp.env });
    assert.equal(forced.code, 0, forced.stderr);
    const bearer = oneLine(forced.stdout);
    assert.match(bearer, BEARER_PATTERN);
    assert.notEqual(bearer, first.stdout.trim(), "a new bearer");
    const replaced = parse(await Deno.readTextFile(temp.secretFile));
    assert.equal(replaced.AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN, bearer);
    assert.equal((await Deno.stat(temp.secretFile)).mode! & 0o777, 0o600);
  } finally {
    await temp.cleanup();
  }
});

Deno.test("init honours --path, RUNTIME_BOOTSTRAP_ENV, --ttl-days and --capabilities", async () => {
  const temp = await makeTempHome();
  try {
    const explicit = `${temp.home}/custom/secrets/boot.env`;
    const byFlag = await runCli(
      ["init", "--path", explicit, "--ttl-days", "1", "--capabilities", "session:read"],
      { env: temp.env },
    );
    assert.equal(byFlag.code, 0, byFlag.stderr);
    const values = parse(await Deno.readTextFile(explicit));
    assert.equal(values.AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES, "session:read");
    const expires = Date.parse(values.AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT);
    assert.ok(Math.abs(expires - (Date.now() + 86_400_000)) < 60_000);
    assert.equal((await Deno.stat(`${temp.home}/custom/secrets`)).mode! & 0o777, 0o700);
    await assert.rejects(Deno.stat(temp.secretFile), Deno.errors.NotFound);

    const named = `${temp.home}/named.env`;
    const byEnv = await runCli(["init", "--ttl-days=3650"], {
      env: { ...temp.env, RUNTIME_BOOTSTRAP_ENV: named },
    });
    assert.equal(byEnv.code, 0, byEnv.stderr);
    assert.equal(
      parse(await Deno.readTextFile(named)).AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN,
      byEnv.stdout.trim(),
    );
  } finally {
    await temp.cleanup();
  }
});

Deno.test("init rejects bad options with exit code 2 and one line on stderr", async () => {
  const temp = await makeTempHome();
  try {
    const cases: string[][] = [
      ["init", "--ttl-days", "0"],
      ["init", "--ttl-days", "3651"],
      ["init", "--ttl-days", "ten"],
      ["init", "--capabilities", "session:read,root"],
      ["init", "--capabilities", ""],
      ["init", "--token", "art_abc"],
      ["init", "extra"],
      ["init", "--path"],
    ];
    for (const args of cases) {
      const result = await runCli(args, { env: temp.env });
      assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
      assert.equal(result.stdout, "");
      oneLine(result.stderr);
    }
    await assert.rejects(Deno.stat(temp.secretFile), Deno.errors.NotFound, "nothing written");
  } finally {
    await temp.cleanup();
  }
});
