import assert from "node:assert/strict";
import { RuntimeServiceClient, RuntimeServiceError } from "../../sdk/mod.ts";
import { BEARER_PATTERN, makeTempHome, runCli, type TempHome } from "../support/cli.ts";
import { createTestBootstrap, startServer } from "../support/server.ts";

function oneLine(text: string): string {
  const all = text.split("\n").filter((line) => line !== "");
  assert.equal(all.length, 1, `expected one line: ${text}`);
  return all[0];
}

/** Runs `serve`, which must refuse to start: exit 1, one line on stderr, nothing on stdout. */
async function serveRefuses(
  temp: TempHome,
  args: string[],
  extraEnv: Record<string, string> = {},
): Promise<string> {
  const result = await runCli(["serve", "--port", "0", ...args], {
    env: { ...temp.env, ...extraEnv },
    timeoutMs: 20_000,
  });
  assert.equal(result.code, 1, result.stderr);
  assert.equal(result.stdout, "");
  return oneLine(result.stderr);
}

Deno.test("serve on a non-loopback address without a bootstrap fails closed", async () => {
  const temp = await makeTempHome();
  try {
    const line = await serveRefuses(temp, ["--hostname", "0.0.0.0"]);
    assert.ok(line.includes("non-loopback") && line.includes(temp.secretFile), line);
    await assert.rejects(Deno.stat(temp.configDir), Deno.errors.NotFound, "nothing generated");
  } finally {
    await temp.cleanup();
  }
});

Deno.test("serve with a partial bootstrap environment names the missing variables", async () => {
  const temp = await makeTempHome();
  try {
    await runCli(["init"], { env: temp.env }); // a valid file must not be used instead
    const line = await serveRefuses(temp, [], {
      AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: "art_" + "p".repeat(43),
      AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: "authority:admin",
    });
    assert.ok(line.includes("AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL"), line);
    assert.ok(line.includes("AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT"), line);
    assert.ok(!line.includes("p".repeat(43)), "the bearer is not echoed");
  } finally {
    await temp.cleanup();
  }
});

Deno.test("serve refuses a corrupt, unreadable, group-readable or expired secret file, naming it", async () => {
  const temp = await makeTempHome();
  try {
    assert.equal((await runCli(["init"], { env: temp.env })).code, 0);
    const good = await Deno.readTextFile(temp.secretFile);

    await Deno.writeTextFile(temp.secretFile, "{ not dotenv }\n" + good);
    let line = await serveRefuses(temp, []);
    assert.ok(line.includes(temp.secretFile), line);

    await Deno.writeTextFile(temp.secretFile, good.replace(/.*_CAPABILITIES=.*\n/, ""));
    line = await serveRefuses(temp, []);
    assert.ok(line.includes(temp.secretFile) && line.includes("CAPABILITIES"), line);

    await Deno.writeTextFile(temp.secretFile, good);
    await Deno.chmod(temp.secretFile, 0o640);
    line = await serveRefuses(temp, ["--hostname", "0.0.0.0"]);
    assert.ok(line.includes(`chmod 600 ${temp.secretFile}`), line);
    await Deno.chmod(temp.secretFile, 0o600);

    await Deno.remove(temp.secretFile);
    await Deno.mkdir(temp.secretFile);
    line = await serveRefuses(temp, []);
    assert.ok(line.includes(temp.secretFile), line);
    await Deno.remove(temp.secretFile);

    await Deno.writeTextFile(
      temp.secretFile,
      good.replace(/_EXPIRES_AT=.*/, "_EXPIRES_AT=2021-06-01T00:00:00Z"),
      { mode: 0o600 },
    );
    line = await serveRefuses(temp, []);
    assert.ok(line.includes("expired") && line.includes("init --force"), line);
  } finally {
    await temp.cleanup();
  }
});

Deno.test("serve refuses an expired bootstrap from the environment", async () => {
  const temp = await makeTempHome();
  try {
    const expired = createTestBootstrap({ expiresAt: "2021-06-01T00:00:00Z" });
    const line = await serveRefuses(temp, [], {
      AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: expired.token,
      AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: expired.principalId,
      AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: expired.capabilities.join(","),
      AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: expired.expiresAt,
    });
    assert.ok(line.includes("expired") && line.includes("init --force"), line);
  } finally {
    await temp.cleanup();
  }
});

Deno.test("serve on loopback auto-inits once: the bearer on stdout, then the file on restart", async () => {
  const temp = await makeTempHome();
  try {
    const env = { XDG_CONFIG_HOME: temp.configDir };
    const first = await startServer({ home: temp.home, autoInit: true, env });
    let bearer: string;
    try {
      assert.equal(first.stdout().length, 1, "exactly one stdout line");
      bearer = first.stdout()[0];
      assert.match(bearer, BEARER_PATTERN);
      assert.ok(first.logs().every((line) => !line.includes(bearer)), "not on stderr");
      assert.ok(first.logs().some((line) => line.includes(temp.secretFile)), "guidance");
      assert.equal((await Deno.stat(temp.secretFile)).mode! & 0o777, 0o600);
      const sdk = new RuntimeServiceClient({ baseUrl: first.url, token: bearer });
      assert.ok((await sdk.runtime()).capabilities.includes("authority:admin"));
    } finally {
      await first.stop();
    }
    const second = await startServer({ home: temp.home, autoInit: true, env });
    try {
      assert.deepEqual(second.stdout(), [], "no new bearer printed");
      const sdk = new RuntimeServiceClient({ baseUrl: second.url, token: bearer });
      assert.ok((await sdk.runtime()).principalId.length > 0, "the same bearer still works");
    } finally {
      await second.stop();
    }
  } finally {
    await temp.cleanup();
  }
});

Deno.test("serve reads the secret file named by RUNTIME_BOOTSTRAP_ENV", async () => {
  const temp = await makeTempHome();
  try {
    const path = `${temp.home}/vault/runtime.env`;
    const init = await runCli(["init", "--path", path], { env: temp.env });
    assert.equal(init.code, 0, init.stderr);
    const server = await startServer({
      home: temp.home,
      autoInit: true,
      env: { RUNTIME_BOOTSTRAP_ENV: path },
    });
    try {
      assert.deepEqual(server.stdout(), []);
      const sdk = new RuntimeServiceClient({ baseUrl: server.url, token: init.stdout.trim() });
      assert.ok((await sdk.runtime()).capabilities.includes("authority:admin"));
    } finally {
      await server.stop();
    }
  } finally {
    await temp.cleanup();
  }
});

Deno.test("after init --force and a restart, principals minted under the old bootstrap get 401", async () => {
  const temp = await makeTempHome();
  try {
    const env = { XDG_CONFIG_HOME: temp.configDir };
    const firstInit = await runCli(["init"], { env: temp.env });
    assert.equal(firstInit.code, 0, firstInit.stderr);
    const oldBootstrap = firstInit.stdout.trim();

    const before = await startServer({ home: temp.home, autoInit: true, env });
    let minted: string;
    try {
      const admin = new RuntimeServiceClient({ baseUrl: before.url, token: oldBootstrap });
      const issued = await admin.createPrincipal({
        capabilities: ["session:read"],
        expiresAt: new Date(Date.now() + 86_400_000),
      });
      minted = issued.bearer;
      const scoped = new RuntimeServiceClient({ baseUrl: before.url, token: minted });
      assert.equal((await scoped.runtime()).principalId, issued.principalId);
    } finally {
      await before.stop();
    }

    const refused = await runCli(["init"], { env: temp.env });
    assert.equal(refused.code, 1, "init without --force keeps the bootstrap");
    const rotated = await runCli(["init", "--force"], { env: temp.env });
    assert.equal(rotated.code, 0, rotated.stderr);
    const newBootstrap = rotated.stdout.trim();

    const after = await startServer({ home: temp.home, autoInit: true, env });
    try {
      for (const token of [minted, oldBootstrap]) {
        const stale = new RuntimeServiceClient({ baseUrl: after.url, token });
        await assert.rejects(stale.runtime(), (error: unknown) => {
          assert.ok(error instanceof RuntimeServiceError);
          assert.equal(error.status, 401);
          assert.equal(error.code, "authenticationFailed");
          return true;
        });
      }
      const admin = new RuntimeServiceClient({ baseUrl: after.url, token: newBootstrap });
      assert.deepEqual(await admin.listPrincipals(), [], "old records are not visible");
    } finally {
      await after.stop();
    }
  } finally {
    await temp.cleanup();
  }
});
