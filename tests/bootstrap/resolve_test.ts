import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { BootstrapError, resolveBootstrap } from "../../server/bootstrap/resolve.ts";
import { writeSecretFile } from "../../server/bootstrap/secret_file.ts";
import {
  formatSecretFile,
  generateBootstrapValues,
  legacyAuthorityKey,
} from "../../server/bootstrap/variables.ts";

const TOKEN = "art_" + "k".repeat(43);
const PRINCIPAL = "0b7a2f6e-2c56-4d1c-9a41-6a4b8b9fb0c1";
const FUTURE = new Date(Date.now() + 86_400_000).toISOString();

function fullEnv(
  overrides: Record<string, string | undefined> = {},
): Record<string, string | undefined> {
  return {
    AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: TOKEN,
    AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: PRINCIPAL,
    AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: "session:read,authority:admin",
    AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: FUTURE,
    XDG_CONFIG_HOME: "/nonexistent/art-config",
    ...overrides,
  };
}

async function withTemp(fn: (dir: string, env: Record<string, string>) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "art-resolve-" });
  try {
    await fn(dir, { HOME: dir, XDG_CONFIG_HOME: `${dir}/cfg` });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function silent() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    stdout: (line: string) => out.push(line),
    stderr: (line: string) => err.push(line),
  };
}

async function rejectsWith(promise: Promise<unknown>, code: string, ...needles: string[]) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof BootstrapError, String(error));
    assert.equal(error.code, code, error.message);
    assert.ok(!error.message.includes("\n"), "one line");
    for (const needle of needles) assert.ok(error.message.includes(needle), error.message);
    return true;
  });
}

function digest(token: string): Uint8Array {
  return new Uint8Array(createHash("sha256").update(token).digest());
}

Deno.test("the environment wins over the secret file", async () => {
  await withTemp(async (dir, env) => {
    const fileValues = generateBootstrapValues();
    await writeSecretFile(
      `${dir}/cfg/automation-runtime/bootstrap.env`,
      formatSecretFile(fileValues),
    );
    const { credential, secretFilePath } = await resolveBootstrap({
      hostname: "0.0.0.0",
      env: { ...fullEnv(), ...env },
    });
    assert.equal(credential.source, "environment");
    assert.equal(credential.principalId, PRINCIPAL);
    assert.deepEqual(credential.capabilities, ["session:read", "authority:admin"]);
    assert.equal(credential.expiresAt, FUTURE);
    assert.deepEqual(credential.tokenDigest, digest(TOKEN));
    assert.equal(secretFilePath, `${dir}/cfg/automation-runtime/bootstrap.env`);
  });
});

Deno.test("a partial environment fails closed naming the missing variables, never reading the file", async () => {
  await withTemp(async (dir, env) => {
    await writeSecretFile(
      `${dir}/cfg/automation-runtime/bootstrap.env`,
      formatSecretFile(generateBootstrapValues()),
    );
    await rejectsWith(
      resolveBootstrap({
        hostname: "127.0.0.1",
        env: { ...env, AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: TOKEN },
      }),
      "incompleteEnvironment",
      "AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL",
      "AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES",
      "AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT",
    );
    await rejectsWith(
      resolveBootstrap({
        hostname: "127.0.0.1",
        env: { ...fullEnv({ AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: undefined }), ...env },
      }),
      "incompleteEnvironment",
      "AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT",
    );
    // A misspelt variable counts as set: it is reported instead of silently using the file.
    await rejectsWith(
      resolveBootstrap({
        hostname: "127.0.0.1",
        env: { ...env, AUTOMATION_RUNTIME_BOOTSTRAP_TOKN: TOKEN },
      }),
      "incompleteEnvironment",
      "AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN",
      "unknown AUTOMATION_RUNTIME_BOOTSTRAP_TOKN",
    );
  });
});

Deno.test("invalid environment values fail closed without echoing the bearer", async () => {
  const cases: [Record<string, string>, string][] = [
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: "art_short" }, "not high entropy"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: "x".repeat(513) }, "not high entropy"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: "art_" + "a".repeat(30) + ",bcd" }, "invalid character"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: "art_" + "a".repeat(30) + " bcd" }, "invalid character"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: "art_" + "a".repeat(30) + "ébcd" }, "invalid character"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: "" }, "not high entropy"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: PRINCIPAL.toUpperCase() }, "lower-case UUID"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: "admin" }, "lower-case UUID"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: "session:read,root" }, "unknown capability"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: "" }, "comma-separated"],
    [
      { AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: "session:read,,authority:admin" },
      "comma-separated",
    ],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: "2030-01-01" }, "RFC 3339"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: "2030-02-30T00:00:00Z" }, "RFC 3339"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_AUTHORITY_KEY: "a".repeat(42) }, "32 bytes"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_AUTHORITY_KEY: "b".repeat(43) }, "32 bytes"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_GENERATION: "-1" }, "whole number"],
    [{ AUTOMATION_RUNTIME_BOOTSTRAP_GENERATION: "two" }, "whole number"],
  ];
  for (const [override, reason] of cases) {
    const name = Object.keys(override)[0];
    await assert.rejects(
      resolveBootstrap({ hostname: "127.0.0.1", env: fullEnv(override) }),
      (error: unknown) => {
        assert.ok(error instanceof BootstrapError);
        assert.equal(error.code, "invalidValue");
        assert.ok(error.message.includes(name) && error.message.includes(reason), error.message);
        assert.ok(error.message.includes("the environment"), error.message);
        const value = override[name];
        if (value.length >= 8) assert.ok(!error.message.includes(value), "no value echoed");
        return true;
      },
    );
  }
});

Deno.test("an accepted supplied bearer may use any printable ASCII but the comma", async () => {
  const token = "!\"#$%&'()*+-./0123456789:;<=>?@ABCXYZ[\\]^_`abcxyz{|}~";
  const { credential } = await resolveBootstrap({
    hostname: "0.0.0.0",
    env: fullEnv({ AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: token }),
  });
  assert.deepEqual(credential.tokenDigest, digest(token));
});

Deno.test("an expired bootstrap is refused and the message says to run init --force", async () => {
  await rejectsWith(
    resolveBootstrap({
      hostname: "127.0.0.1",
      env: fullEnv({ AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: "2020-01-01T00:00:00Z" }),
    }),
    "bootstrapExpired",
    "init --force",
  );
  await withTemp(async (dir, env) => {
    const path = `${dir}/cfg/automation-runtime/bootstrap.env`;
    const values = generateBootstrapValues({ now: Date.now() - 40 * 86_400_000 });
    await writeSecretFile(path, formatSecretFile(values));
    await rejectsWith(
      resolveBootstrap({ hostname: "127.0.0.1", env }),
      "bootstrapExpired",
      path,
      "init --force",
    );
    assert.equal(await Deno.readTextFile(path), formatSecretFile(values), "no silent regeneration");
  });
});

Deno.test("the secret file is found at the default path, RUNTIME_BOOTSTRAP_ENV or the explicit path", async () => {
  await withTemp(async (dir, env) => {
    const defaultPath = `${dir}/cfg/automation-runtime/bootstrap.env`;
    const atDefault = generateBootstrapValues();
    await writeSecretFile(defaultPath, formatSecretFile(atDefault));
    const fromDefault = await resolveBootstrap({ hostname: "10.0.0.5", env });
    assert.equal(fromDefault.credential.source, "file");
    assert.equal(fromDefault.credential.principalId, atDefault.principalId);
    assert.deepEqual(fromDefault.credential.tokenDigest, digest(atDefault.token));
    assert.equal(fromDefault.secretFilePath, defaultPath);

    const namedPath = `${dir}/elsewhere/boot.env`;
    const named = generateBootstrapValues();
    await writeSecretFile(namedPath, formatSecretFile(named));
    const fromNamed = await resolveBootstrap({
      hostname: "10.0.0.5",
      env: { ...env, RUNTIME_BOOTSTRAP_ENV: namedPath },
    });
    assert.equal(fromNamed.credential.principalId, named.principalId);
    assert.equal(fromNamed.secretFilePath, namedPath);

    const fromOption = await resolveBootstrap({
      hostname: "10.0.0.5",
      env: { ...env, RUNTIME_BOOTSTRAP_ENV: `${dir}/missing.env` },
      secretFilePath: namedPath,
    });
    assert.equal(fromOption.credential.principalId, named.principalId);
  });
});

for (const hostname of ["127.0.0.1", "::1"]) {
  Deno.test(`loopback ${hostname} without a bootstrap auto-inits, writes the file and prints the bearer once`, async () => {
    await withTemp(async (dir, env) => {
      const io = silent();
      const { credential, secretFilePath } = await resolveBootstrap({ hostname, env, ...io });
      assert.equal(credential.source, "auto-init");
      assert.equal(io.out.length, 1, "one stdout line");
      const bearer = io.out[0];
      assert.match(bearer, /^art_[A-Za-z0-9_-]{43}$/);
      assert.deepEqual(credential.tokenDigest, digest(bearer));
      assert.ok(io.err.length >= 1 && io.err.every((line) => !line.includes(bearer)));
      assert.ok(io.err.join(" ").includes(secretFilePath));
      assert.equal((await Deno.stat(secretFilePath)).mode! & 0o777, 0o600);
      assert.equal((await Deno.stat(`${dir}/cfg/automation-runtime`)).mode! & 0o777, 0o700);

      const again = silent();
      const second = await resolveBootstrap({ hostname, env, ...again });
      assert.equal(second.credential.source, "file");
      assert.equal(second.credential.namespace, credential.namespace);
      assert.deepEqual(again.out, [], "the bearer is printed only at generation");
    });
  });
}

Deno.test("a non-loopback bind without a bootstrap fails closed and writes nothing", async () => {
  for (const hostname of ["0.0.0.0", "::", "localhost", "192.168.1.10"]) {
    await withTemp(async (dir, env) => {
      const io = silent();
      await rejectsWith(
        resolveBootstrap({ hostname, env, ...io }),
        "noBootstrap",
        `${dir}/cfg/automation-runtime/bootstrap.env`,
      );
      assert.deepEqual(io.out, []);
      await assert.rejects(Deno.stat(`${dir}/cfg`), Deno.errors.NotFound);
    });
  }
});

Deno.test("a broken secret file fails closed and names the path", async () => {
  await withTemp(async (dir, env) => {
    const path = `${dir}/cfg/automation-runtime/bootstrap.env`;
    const good = formatSecretFile(generateBootstrapValues());
    const write = async (text: string | Uint8Array, mode = 0o600) => {
      await Deno.remove(path, { recursive: true }).catch(() => {});
      await Deno.mkdir(`${dir}/cfg/automation-runtime`, { recursive: true, mode: 0o700 });
      if (typeof text === "string") await Deno.writeTextFile(path, text, { mode });
      else await Deno.writeFile(path, text, { mode });
      await Deno.chmod(path, mode);
    };
    const resolveOn = (hostname = "127.0.0.1") => resolveBootstrap({ hostname, env, ...silent() });

    await write("this is not a dotenv file\n" + good);
    await rejectsWith(resolveOn(), "secretFileUnparseable", path, "line 1");

    await write(new Uint8Array([0xff, 0xfe, 0x41, 0x3d, 0x0a]));
    await rejectsWith(resolveOn(), "secretFileUnparseable", path);

    await write(good.split("\n").filter((line) => !line.includes("_PRINCIPAL=")).join("\n"));
    await rejectsWith(
      resolveOn(),
      "secretFileIncomplete",
      path,
      "AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL",
    );

    await write(good.replace(/_TOKEN=.*/, "_TOKEN=short"));
    await rejectsWith(resolveOn(), "invalidValue", path, "not high entropy");

    await write(good, 0o640);
    await rejectsWith(resolveOn(), "secretFileInsecure", path, `chmod 600 ${path}`);
    await write(good, 0o604);
    await rejectsWith(resolveOn("0.0.0.0"), "secretFileInsecure", path, "chmod 600");

    await Deno.remove(path);
    await Deno.mkdir(path);
    await rejectsWith(resolveOn(), "secretFileUnreadable", path);
  });
});

Deno.test("the authority key, not the bearer, decides the namespace; without one it derives from the bearer", async () => {
  const key = generateBootstrapValues().authorityKey!;
  const withKey = (token: string, generation: string) =>
    resolveBootstrap({
      hostname: "127.0.0.1",
      env: fullEnv({
        AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: token,
        AUTOMATION_RUNTIME_BOOTSTRAP_AUTHORITY_KEY: key,
        AUTOMATION_RUNTIME_BOOTSTRAP_GENERATION: generation,
      }),
    });
  const first = (await withKey(TOKEN, "1")).credential;
  const rotated = (await withKey("art_" + "r".repeat(43), "2")).credential;
  assert.equal(rotated.namespace, first.namespace, "a rotated bearer keeps the namespace");
  assert.deepEqual(rotated.authorityKey, first.authorityKey);
  assert.equal(rotated.generation, 2);
  assert.notDeepEqual(rotated.tokenDigest, first.tokenDigest);
  // Four variables only: the key of a bootstrap made before rotation existed, from its bearer.
  const legacy = (await resolveBootstrap({ hostname: "127.0.0.1", env: fullEnv() })).credential;
  assert.equal(legacy.generation, 0);
  assert.notEqual(legacy.namespace, first.namespace);
  const written = (await resolveBootstrap({
    hostname: "127.0.0.1",
    env: fullEnv({
      AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: "art_" + "n".repeat(43),
      AUTOMATION_RUNTIME_BOOTSTRAP_AUTHORITY_KEY: btoa(
        String.fromCharCode(...legacyAuthorityKey(TOKEN)),
      ).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, ""),
      AUTOMATION_RUNTIME_BOOTSTRAP_GENERATION: "1",
    }),
  })).credential;
  assert.equal(written.namespace, legacy.namespace, "the legacy key written down is the same");
});
