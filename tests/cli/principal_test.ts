import assert from "node:assert/strict";
import { RuntimeServiceClient, RuntimeServiceError } from "../../sdk/mod.ts";
import { BEARER_PATTERN, makeTempHome, runCli } from "../support/cli.ts";
import { startServer } from "../support/server.ts";

function lines(text: string): string[] {
  return text.split("\n").filter((line) => line !== "");
}

Deno.test("principal issue, list and revoke work end to end with the token from the environment", async () => {
  const server = await startServer();
  const temp = await makeTempHome();
  try {
    const env = {
      ...temp.env,
      AUTOMATION_RUNTIME_URL: server.url,
      AUTOMATION_RUNTIME_TOKEN: server.bearer,
    };
    const principalId = crypto.randomUUID();
    const expiresAt = new Date(Date.now() + 2 * 86_400_000).toISOString();
    const issueArgs = [
      "principal",
      "issue",
      "--capabilities",
      "session:read,session:write",
      "--expires-at",
      expiresAt,
      "--principal-id",
      principalId,
      "--idempotency-key",
      "cli-issue-1",
    ];
    const issued = await runCli(issueArgs, { env });
    assert.equal(issued.code, 0, issued.stderr);
    const created = JSON.parse(issued.stdout);
    assert.equal(created.principalId, principalId);
    assert.deepEqual(created.capabilities, ["session:read", "session:write"]);
    assert.match(created.bearer, BEARER_PATTERN);
    assert.ok(!issued.stderr.includes(created.bearer), "the bearer only on stdout");

    const replayed = await runCli(issueArgs, { env });
    assert.equal(replayed.code, 0, replayed.stderr);
    assert.deepEqual(JSON.parse(replayed.stdout), created, "same key, same answer");

    const scoped = new RuntimeServiceClient({ baseUrl: server.url, token: created.bearer });
    assert.equal((await scoped.runtime()).principalId, principalId);

    const listed = await runCli(["principal", "list"], { env });
    assert.equal(listed.code, 0, listed.stderr);
    const principals = JSON.parse(listed.stdout);
    const entry = principals.find((p: { principalId: string }) => p.principalId === principalId);
    assert.ok(entry !== undefined && entry.revokedAt === undefined);
    assert.ok(!listed.stdout.includes(created.bearer));

    const revoked = await runCli(["principal", "revoke", principalId], { env });
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal(revoked.stdout, "");
    await assert.rejects(
      scoped.runtime(),
      (error: unknown) => error instanceof RuntimeServiceError && error.status === 401,
    );
    const relisted = JSON.parse((await runCli(["principal", "list"], { env })).stdout);
    assert.ok(
      relisted.find((p: { principalId: string }) => p.principalId === principalId).revokedAt,
    );

    const unknown = await runCli(["principal", "revoke", crypto.randomUUID()], { env });
    assert.equal(unknown.code, 1);
    assert.equal(lines(unknown.stderr).length, 1, unknown.stderr);
    assert.ok(unknown.stderr.includes("notFound") && unknown.stderr.includes("HTTP 404"));

    const refused = await runCli(["principal", "issue", "--capabilities", "session:read"], {
      env: { ...env, AUTOMATION_RUNTIME_TOKEN: created.bearer },
    });
    assert.equal(refused.code, 1);
    assert.equal(lines(refused.stderr).length, 1, refused.stderr);
    assert.ok(refused.stderr.includes("authenticationFailed"), refused.stderr);
    assert.ok(!refused.stderr.includes(created.bearer));
  } finally {
    await temp.cleanup();
    await server.stop();
  }
});

Deno.test("client commands fall back to the bootstrap bearer in the secret file", async () => {
  const temp = await makeTempHome();
  try {
    const init = await runCli(["init"], { env: temp.env });
    assert.equal(init.code, 0, init.stderr);
    const server = await startServer({
      home: temp.home,
      autoInit: true,
      env: { XDG_CONFIG_HOME: temp.configDir },
    });
    try {
      assert.deepEqual(server.stdout(), [], "the file was used; nothing generated");
      const env = { ...temp.env, AUTOMATION_RUNTIME_URL: server.url };
      const issued = await runCli(
        ["principal", "issue", "--capabilities", "session:read", "--ttl-days", "1"],
        { env },
      );
      assert.equal(issued.code, 0, issued.stderr);
      const created = JSON.parse(issued.stdout);
      const expires = Date.parse(created.expiresAt);
      assert.ok(Math.abs(expires - (Date.now() + 86_400_000)) < 60_000);

      const named = await runCli(["principal", "list"], {
        env: {
          ...env,
          XDG_CONFIG_HOME: `${temp.home}/elsewhere`,
          RUNTIME_BOOTSTRAP_ENV: temp.secretFile,
        },
      });
      assert.equal(named.code, 0, named.stderr);
      assert.equal(JSON.parse(named.stdout)[0].principalId, created.principalId);

      await Deno.chmod(temp.secretFile, 0o644);
      const insecure = await runCli(["principal", "list"], { env });
      assert.equal(insecure.code, 1);
      assert.equal(lines(insecure.stderr).length, 1);
      assert.ok(insecure.stderr.includes(`chmod 600 ${temp.secretFile}`), insecure.stderr);
    } finally {
      await server.stop();
    }
  } finally {
    await temp.cleanup();
  }
});
