import assert from "node:assert/strict";
import { parse } from "dotenv";
import { deriveBootstrapCredential } from "../../server/bootstrap/credential.ts";
import { parseBootstrapValues } from "../../server/bootstrap/variables.ts";
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

/** The namespace a secret file's credential files its records under. */
function namespaceOf(text: string): string {
  const values = parseBootstrapValues(parse(text), { origin: "test" });
  return deriveBootstrapCredential({ ...values, source: "file" }).namespace;
}

Deno.test("init --rotate replaces the bearer and keeps the principal, the authority key and the namespace", async () => {
  const temp = await makeTempHome();
  try {
    const first = await runCli(["init", "--ttl-days", "3"], { env: temp.env });
    assert.equal(first.code, 0, first.stderr);
    const before = await Deno.readTextFile(temp.secretFile);
    const rotated = await runCli(["init", "--rotate"], { env: temp.env });
    assert.equal(rotated.code, 0, rotated.stderr);
    const token = rotated.stdout.trim();
    assert.match(token, BEARER_PATTERN);
    assert.notEqual(token, first.stdout.trim());
    assert.ok(!rotated.stderr.includes(token), "the bearer only on stdout");
    const after = await Deno.readTextFile(temp.secretFile);
    const [old, next] = [parse(before), parse(after)];
    assert.equal(next.AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN, token);
    for (
      const kept of [
        "AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL",
        "AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES",
        "AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT",
        "AUTOMATION_RUNTIME_BOOTSTRAP_AUTHORITY_KEY",
      ]
    ) {
      assert.equal(next[kept], old[kept], kept);
    }
    assert.equal(old.AUTOMATION_RUNTIME_BOOTSTRAP_GENERATION, "1");
    assert.equal(next.AUTOMATION_RUNTIME_BOOTSTRAP_GENERATION, "2");
    assert.equal(namespaceOf(after), namespaceOf(before));
    if (Deno.build.os !== "windows") {
      assert.equal((await Deno.stat(temp.secretFile)).mode! & 0o777, 0o600);
    }

    // --ttl-days renews the expiry from now; --force starts a new namespace.
    const renewed = await runCli(["init", "--rotate", "--ttl-days", "90"], { env: temp.env });
    assert.equal(renewed.code, 0, renewed.stderr);
    const third = parse(await Deno.readTextFile(temp.secretFile));
    assert.ok(
      Date.parse(third.AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT) > Date.now() + 89 * 86_400_000,
    );
    assert.equal(third.AUTOMATION_RUNTIME_BOOTSTRAP_GENERATION, "3");
    const forced = await runCli(["init", "--force"], { env: temp.env });
    assert.equal(forced.code, 0, forced.stderr);
    assert.notEqual(namespaceOf(await Deno.readTextFile(temp.secretFile)), namespaceOf(before));
  } finally {
    await temp.cleanup();
  }
});

Deno.test("init --rotate of a file made before rotation existed writes its key down, same namespace", async () => {
  const temp = await makeTempHome();
  try {
    assert.equal((await runCli(["init"], { env: temp.env })).code, 0);
    // The four variables only, as `init` wrote them before.
    const legacy = (await Deno.readTextFile(temp.secretFile)).split("\n").filter((line) =>
      !line.startsWith("AUTOMATION_RUNTIME_BOOTSTRAP_AUTHORITY_KEY=") &&
      !line.startsWith("AUTOMATION_RUNTIME_BOOTSTRAP_GENERATION=")
    ).join("\n");
    await Deno.writeTextFile(temp.secretFile, legacy, { mode: 0o600 });
    const rotated = await runCli(["init", "--rotate"], { env: temp.env });
    assert.equal(rotated.code, 0, rotated.stderr);
    const after = await Deno.readTextFile(temp.secretFile);
    assert.equal(parse(after).AUTOMATION_RUNTIME_BOOTSTRAP_GENERATION, "1");
    assert.equal(namespaceOf(after), namespaceOf(legacy), "issued principals stay reachable");
  } finally {
    await temp.cleanup();
  }
});

Deno.test("init --rotate refuses without a file, with --force, or an expired bootstrap without --ttl-days", async () => {
  const temp = await makeTempHome();
  try {
    const none = await runCli(["init", "--rotate"], { env: temp.env });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /No secret file at .* to rotate/);
    const both = await runCli(["init", "--rotate", "--force"], { env: temp.env });
    assert.equal(both.code, 2);

    assert.equal((await runCli(["init"], { env: temp.env })).code, 0);
    const expired = (await Deno.readTextFile(temp.secretFile)).replace(
      /AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT=.*/,
      "AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT=2020-01-01T00:00:00.000Z",
    );
    await Deno.writeTextFile(temp.secretFile, expired, { mode: 0o600 });
    const refused = await runCli(["init", "--rotate"], { env: temp.env });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /--ttl-days/);
    assert.equal(refused.stdout, "");
    assert.equal(await Deno.readTextFile(temp.secretFile), expired, "the file is unchanged");
    const renewed = await runCli(["init", "--rotate", "--ttl-days", "7"], { env: temp.env });
    assert.equal(renewed.code, 0, renewed.stderr);
  } finally {
    await temp.cleanup();
  }
});
