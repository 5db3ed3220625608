/**
 * `automation-runtime token exchange` against a real `serve` (loopback OIDC issuers allowed) and
 * a local OIDC issuer: the ID token read from a file, from standard input, or from a local server
 * playing GitHub Actions' token endpoint (`--audience`) yields one `export` line whose bearer
 * works; a refused token exits 1 with one line naming its reason; usage mistakes exit 2; the ID
 * token never appears in the output, an error or the service's log.
 */
import assert from "node:assert/strict";
import { RuntimeServiceClient } from "../../sdk/mod.ts";
import { LocalOidcIssuer } from "../support/oidc_issuer.ts";
import { makeTempHome, runCli } from "../support/cli.ts";
import { startServer } from "../support/server.ts";
import { policyBody } from "../oidc/_exchange.ts";

const EXPORT_LINE = /^export AUTOMATION_RUNTIME_TOKEN=(art_[A-Za-z0-9_-]{43})\n$/;

function assertAbsent(token: string, texts: readonly string[]): void {
  for (const part of [token, ...token.split(".").filter((part) => part.length >= 16)]) {
    for (const text of texts) assert.ok(!text.includes(part), `the ID token leaked: ${text}`);
  }
}

Deno.test("token exchange reads the ID token from a file, standard input or GitHub Actions and prints the export line", async () => {
  const issuer = await LocalOidcIssuer.start();
  const server = await startServer({
    env: { AUTOMATION_RUNTIME_OIDC_ALLOW_LOOPBACK_HTTP: "true" },
  });
  const temp = await makeTempHome();
  const requestToken = `ghs_${crypto.randomUUID()}`;
  const audiences: (string | null)[] = [];
  const github = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    if (request.headers.get("authorization") !== `Bearer ${requestToken}`) {
      return new Response("unauthorized", { status: 401 });
    }
    const audience = new URL(request.url).searchParams.get("audience");
    audiences.push(audience);
    return Response.json({ value: await issuer.mint({ aud: audience ?? "" }) });
  });
  try {
    const admin = new RuntimeServiceClient({ baseUrl: server.url, token: server.bearer });
    await admin.trustPolicies.create(policyBody(issuer.issuer) as never);
    const env = { ...temp.env, AUTOMATION_RUNTIME_URL: server.url };
    const tokens: string[] = [];
    const outputs: string[] = [];

    // From a file.
    const fromFile = await issuer.mint();
    tokens.push(fromFile);
    const file = `${temp.home}/id-token.jwt`;
    await Deno.writeTextFile(file, `${fromFile}\n`);
    const first = await runCli(
      ["token", "exchange", "--policy", "octo-repo", "--token-file", file],
      {
        env,
      },
    );
    assert.equal(first.code, 0, first.stderr);
    const bearer = EXPORT_LINE.exec(first.stdout)?.[1];
    assert.ok(bearer !== undefined, first.stdout);
    assert.match(first.stderr, /^Exchanged for principal [0-9a-f-]{36}, expires /);
    assert.ok(!first.stderr.includes(bearer));
    const job = new RuntimeServiceClient({ baseUrl: server.url, token: bearer });
    assert.deepEqual((await job.runtime()).capabilities, ["session:read"]);
    outputs.push(first.stdout, first.stderr);

    // The same token again: refused, one line with its reason.
    const again = await runCli(
      ["token", "exchange", "--policy", "octo-repo", "--token-file", file],
      {
        env,
      },
    );
    assert.equal(again.code, 1);
    assert.equal(again.stdout, "");
    assert.equal(again.stderr.trim().split("\n").length, 1, again.stderr);
    assert.match(again.stderr, /HTTP 401, authenticationFailed, reason replayed/);
    outputs.push(again.stderr);

    // From standard input.
    const piped = await issuer.mint();
    tokens.push(piped);
    const fromStdin = await runCli(["token", "exchange", "--policy", "octo-repo"], {
      env,
      stdin: piped,
    });
    assert.equal(fromStdin.code, 0, fromStdin.stderr);
    assert.match(fromStdin.stdout, EXPORT_LINE);
    outputs.push(fromStdin.stdout, fromStdin.stderr);

    // From GitHub Actions' endpoint, for the policy's audience.
    const githubEnv = {
      ...env,
      ACTIONS_ID_TOKEN_REQUEST_URL: `http://127.0.0.1:${github.addr.port}/token?api-version=2.0`,
      ACTIONS_ID_TOKEN_REQUEST_TOKEN: requestToken,
    };
    const actions = await runCli(
      ["token", "exchange", "--policy", "octo-repo", "--audience", "automation-runtime"],
      { env: githubEnv },
    );
    assert.equal(actions.code, 0, actions.stderr);
    assert.match(actions.stdout, EXPORT_LINE);
    assert.deepEqual(audiences, ["automation-runtime"]);
    outputs.push(actions.stdout, actions.stderr);
    // Another audience than the policy's: GitHub hands out the token, the service refuses it.
    const wrongAudience = await runCli(
      ["token", "exchange", "--policy", "octo-repo", "--audience", "someone-else"],
      { env: githubEnv },
    );
    assert.equal(wrongAudience.code, 1);
    assert.match(wrongAudience.stderr, /reason audienceMismatch/);
    assert.ok(!wrongAudience.stderr.includes(requestToken));
    // Without the job's permission (no variables): one line saying what is missing.
    const noPermission = await runCli(
      ["token", "exchange", "--policy", "octo-repo", "--audience", "automation-runtime"],
      { env },
    );
    assert.equal(noPermission.code, 1);
    assert.match(noPermission.stderr, /id-token: write/);

    for (const token of tokens) assertAbsent(token, [...outputs, ...server.logs()]);
    assert.ok(!server.logs().some((line) => line.includes(requestToken)));
  } finally {
    await github.shutdown();
    await temp.cleanup();
    await server.stop();
    await issuer.close();
  }
});

Deno.test("token exchange: usage mistakes exit 2, and the ID token is never an argument", async () => {
  const temp = await makeTempHome();
  try {
    const env = { ...temp.env, AUTOMATION_RUNTIME_URL: "http://127.0.0.1:9" };
    const cases: string[][] = [
      ["token", "exchange"],
      ["token", "exchange", "--policy", "octo-repo", "--token", "eyJ.eyJ.sig"],
      ["token", "exchange", "--policy", "octo-repo", "--token-file", "f", "--audience", "a"],
      ["token", "exchange", "--policy", "no/slash", "--token-file", "f"],
      ["token", "swap"],
    ];
    for (const args of cases) {
      const result = await runCli(args, { env });
      assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
      assert.equal(result.stderr.trim().split("\n").length, 1);
    }
    const missing = await runCli(
      ["token", "exchange", "--policy", "octo-repo", "--token-file", `${temp.home}/absent`],
      { env },
    );
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /No such file/);
    const help = await runCli(["--help"], { env });
    assert.match(help.stdout, /token exchange/);
  } finally {
    await temp.cleanup();
  }
});
