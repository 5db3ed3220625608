import assert from "node:assert/strict";
import { BootstrapError } from "../../server/bootstrap/errors.ts";
import {
  configDirectory,
  defaultSecretFilePath,
  readSecretFile,
  writeSecretFile,
} from "../../server/bootstrap/secret_file.ts";
import { formatSecretFile, generateBootstrapValues } from "../../server/bootstrap/variables.ts";

Deno.test("the config directory follows each operating system's convention", () => {
  assert.equal(configDirectory({ os: "linux", env: { XDG_CONFIG_HOME: "/x", HOME: "/h" } }), "/x");
  assert.equal(configDirectory({ os: "linux", env: { HOME: "/h" } }), "/h/.config");
  assert.equal(
    configDirectory({ os: "linux", env: { XDG_CONFIG_HOME: "relative", HOME: "/h" } }),
    "/h/.config",
    "a relative XDG_CONFIG_HOME is ignored, as the XDG spec says",
  );
  assert.equal(configDirectory({ os: "freebsd", env: { HOME: "/h" } }), "/h/.config");
  assert.equal(
    configDirectory({ os: "darwin", env: { HOME: "/Users/ada", XDG_CONFIG_HOME: "/x" } }),
    "/Users/ada/Library/Application Support",
  );
  assert.equal(
    configDirectory({ os: "windows", env: { APPDATA: "C:\\Users\\ada\\AppData\\Roaming" } }),
    "C:\\Users\\ada\\AppData\\Roaming",
  );
  assert.equal(
    defaultSecretFilePath({ os: "windows", env: { APPDATA: "C:\\A" } }),
    "C:\\A\\automation-runtime\\bootstrap.env",
  );
  assert.equal(
    defaultSecretFilePath({ os: "linux", env: { XDG_CONFIG_HOME: "/cfg/" } }),
    "/cfg/automation-runtime/bootstrap.env",
  );
  assert.throws(
    () => configDirectory({ os: "linux", env: {} }),
    (error: unknown) => error instanceof BootstrapError && error.code === "noConfigDirectory",
  );
  assert.throws(
    () => configDirectory({ os: "windows", env: { HOME: "/h" } }),
    (error: unknown) => error instanceof BootstrapError && error.code === "noConfigDirectory",
  );
});

Deno.test("writeSecretFile creates 0700 directories and a 0600 file, leaving no temp file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "art-secret-" });
  const previousUmask = Deno.umask(0o000);
  try {
    const path = `${dir}/a/b/bootstrap.env`;
    const text = formatSecretFile(generateBootstrapValues());
    await writeSecretFile(path, text);
    assert.equal(await Deno.readTextFile(path), text);
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600, "even with umask 000");
    assert.equal((await Deno.stat(`${dir}/a`)).mode! & 0o777, 0o700);
    assert.equal((await Deno.stat(`${dir}/a/b`)).mode! & 0o777, 0o700);
    assert.deepEqual([...Deno.readDirSync(`${dir}/a/b`)].map((entry) => entry.name), [
      "bootstrap.env",
    ]);
    const read = await readSecretFile(path);
    assert.ok(read !== null);
    assert.ok(
      text.includes(
        `AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN=${read.AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN}`,
      ),
    );
  } finally {
    Deno.umask(previousUmask);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("without force an existing file is kept, even when two writers race", async () => {
  const dir = await Deno.makeTempDir({ prefix: "art-secret-" });
  try {
    const path = `${dir}/bootstrap.env`;
    const texts = Array.from({ length: 8 }, () => formatSecretFile(generateBootstrapValues()));
    const results = await Promise.allSettled(texts.map((text) => writeSecretFile(path, text)));
    const won = results.filter((result) => result.status === "fulfilled");
    assert.equal(won.length, 1, "exactly one writer wins");
    for (const result of results) {
      if (result.status === "rejected") {
        assert.ok(result.reason instanceof BootstrapError);
        assert.equal(result.reason.code, "secretFileExists");
        assert.ok(result.reason.message.includes(path));
      }
    }
    const winner = texts[results.findIndex((result) => result.status === "fulfilled")];
    assert.equal(await Deno.readTextFile(path), winner, "the file is the winner's, whole");
    assert.deepEqual([...Deno.readDirSync(dir)].map((entry) => entry.name), ["bootstrap.env"]);

    const replacement = formatSecretFile(generateBootstrapValues());
    await writeSecretFile(path, replacement, { force: true });
    assert.equal(await Deno.readTextFile(path), replacement);
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a failed write keeps the old file whole and leaves no temp file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "art-secret-" });
  try {
    // The target is a non-empty directory: the final rename fails after the temp file is written.
    const path = `${dir}/bootstrap.env`;
    await Deno.mkdir(`${path}/inner`, { recursive: true });
    await assert.rejects(
      writeSecretFile(path, formatSecretFile(generateBootstrapValues()), { force: true }),
      (error: unknown) =>
        error instanceof BootstrapError && error.code === "secretFileWriteFailed" &&
        error.message.includes(path),
    );
    assert.deepEqual([...Deno.readDirSync(dir)].map((entry) => entry.name), ["bootstrap.env"]);
    assert.ok((await Deno.stat(path)).isDirectory);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readSecretFile returns null for a missing file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "art-secret-" });
  try {
    assert.equal(await readSecretFile(`${dir}/absent.env`), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
