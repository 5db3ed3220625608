/**
 * Two real `serve` processes on one Deno KV file (`store.kv` beside the secret file of one HOME):
 * whatever one of them learns (a revocation, an expiry, a bootstrap rotation) the other holds on
 * its very next request, although it had just answered that bearer from its principal cache.
 */
import assert from "node:assert/strict";
import { runCli } from "../support/cli.ts";
import { createTestBootstrap, startServer, type TestServer } from "../support/server.ts";
import { issue, issueBody, type Replica, revoke, use } from "./_replicas.ts";

function replica(server: TestServer): Replica & { close(): void } {
  const client = Deno.createHttpClient({});
  return { url: server.url, client, server, close: () => client.close() };
}

/** The environment of a CLI command whose secret file is the one of `serve` in `home`. */
function cliEnv(home: string): Record<string, string> {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: home,
    XDG_CONFIG_HOME: `${home}/.config`,
    NO_COLOR: "1",
    DENO_DIR: Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME") ?? "/root"}/.cache/deno`,
  };
}

/** Runs `init` with `args` in the HOME of `env`, then starts two processes on its secret file. */
async function initTwoProcesses(
  env: Record<string, string>,
  args: string[],
): Promise<{ oldBootstrap: string; a: TestServer; b: TestServer }> {
  const init = await runCli(args, { env });
  assert.equal(init.code, 0, init.stderr);
  const a = await startServer({ home: env.HOME, autoInit: true });
  const b = await startServer({ home: env.HOME, autoInit: true });
  return { oldBootstrap: init.stdout.trim(), a, b };
}

async function twoProcesses(
  home: string,
  options: { autoInit?: boolean } = {},
): Promise<{ a: TestServer; b: TestServer }> {
  const bootstrap = createTestBootstrap();
  const a = await startServer({ home, bootstrap, autoInit: options.autoInit });
  const b = await startServer({ home, bootstrap, autoInit: options.autoInit });
  return { a, b };
}

Deno.test("kv processes: issued on A works on B; revoked on A is refused on B at once", async () => {
  const home = await Deno.makeTempDir({ prefix: "art-kv-processes-" });
  const { a, b } = await twoProcesses(home);
  const [ra, rb] = [replica(a), replica(b)];
  try {
    for (let round = 0; round < 5; round++) {
      const body = issueBody();
      const issued = await issue(ra, a.bearer, body);
      assert.equal(issued.status, 201);
      const bearer: string = issued.body.bearer;
      // Twice on B: the second answer comes from B's principal cache.
      assert.equal((await use(rb, bearer)).status, 200);
      assert.equal((await use(rb, bearer)).status, 200);
      assert.equal((await revoke(ra, a.bearer, body.principalId)).status, 204);
      const refused = await use(rb, bearer);
      assert.equal(refused.status, 401, `round ${round}`);
      assert.equal(refused.body.error.code, "authenticationFailed");
      assert.equal((await use(ra, bearer)).status, 401);
    }
  } finally {
    ra.close();
    rb.close();
    await a.stop();
    await b.stop();
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("kv processes: a principal that expires is refused on both at its expiry", async () => {
  const home = await Deno.makeTempDir({ prefix: "art-kv-processes-" });
  const { a, b } = await twoProcesses(home);
  const [ra, rb] = [replica(a), replica(b)];
  try {
    const expiresAt = Date.now() + 3_000;
    const body = issueBody({ expiresAt: new Date(expiresAt).toISOString() });
    const issued = await issue(ra, a.bearer, body);
    assert.equal(issued.status, 201);
    assert.equal((await use(rb, issued.body.bearer)).status, 200);
    assert.equal((await use(rb, issued.body.bearer)).status, 200);
    await new Promise((resolve) => setTimeout(resolve, Math.max(expiresAt - Date.now() + 50, 0)));
    for (const server of [rb, ra]) {
      const refused = await use(server, issued.body.bearer);
      assert.equal(refused.status, 401);
      assert.equal(refused.body.error.code, "tokenExpired");
    }
  } finally {
    ra.close();
    rb.close();
    await a.stop();
    await b.stop();
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("kv processes: after init --force and a restart of A, B refuses old principals and its own old bootstrap", async () => {
  const home = await Deno.makeTempDir({ prefix: "art-kv-processes-" });
  const env = cliEnv(home);
  const { oldBootstrap, b, ...started } = await initTwoProcesses(env, ["init"]);
  let a = started.a;
  let ra = replica(a);
  const rb = replica(b);
  try {
    const body = issueBody();
    const issued = await issue(ra, oldBootstrap, body);
    assert.equal(issued.status, 201);
    const bearer: string = issued.body.bearer;
    assert.equal((await use(rb, bearer)).status, 200);
    assert.equal((await use(rb, bearer)).status, 200);
    assert.equal((await use(rb, oldBootstrap)).status, 200);

    const rotated = await runCli(["init", "--force"], { env });
    assert.equal(rotated.code, 0, rotated.stderr);
    const newBootstrap = rotated.stdout.trim();
    assert.notEqual(newBootstrap, oldBootstrap);
    ra.close();
    await a.stop();
    a = await startServer({ home, autoInit: true });
    ra = replica(a);

    // B still runs with the old bootstrap: it learns of the rotation on its next request.
    for (const bearerOnB of [bearer, oldBootstrap]) {
      const refused = await use(rb, bearerOnB);
      assert.equal(refused.status, 401);
      assert.equal(refused.body.error.code, "authenticationFailed");
      assert.match(refused.body.error.message, /newer bootstrap/);
    }
    assert.equal((await use(ra, newBootstrap)).status, 200);
    assert.equal((await use(ra, bearer)).status, 401);
    assert.equal((await use(ra, oldBootstrap)).status, 401);
  } finally {
    ra.close();
    rb.close();
    await a.stop();
    await b.stop();
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("kv processes: after init --rotate and a restart of A, both refuse the old bootstrap bearer and keep every issued principal", async () => {
  const home = await Deno.makeTempDir({ prefix: "art-kv-processes-" });
  const env = cliEnv(home);
  const secretFile = `${home}/.config/automation-runtime/bootstrap.env`;
  const { oldBootstrap, b, ...started } = await initTwoProcesses(env, ["init", "--ttl-days", "2"]);
  const oldFile = await Deno.readTextFile(secretFile);
  let a = started.a;
  let ra = replica(a);
  const rb = replica(b);
  try {
    const body = issueBody();
    const issued = await issue(ra, oldBootstrap, body, "rotate-issue-1");
    assert.equal(issued.status, 201);
    const bearer: string = issued.body.bearer;
    assert.equal((await use(rb, bearer)).status, 200);
    assert.equal((await use(rb, oldBootstrap)).status, 200);

    const rotated = await runCli(["init", "--rotate", "--ttl-days", "30"], { env });
    assert.equal(rotated.code, 0, rotated.stderr);
    const newBootstrap = rotated.stdout.trim();
    assert.notEqual(newBootstrap, oldBootstrap);
    assert.match(rotated.stderr, /generation 2/);
    // Until a replica restarts with the new file, nothing changed on the store.
    assert.equal((await use(ra, oldBootstrap)).status, 200);
    ra.close();
    await a.stop();
    a = await startServer({ home, autoInit: true });
    ra = replica(a);

    // B still runs the old file: it refuses the old bearer on its next request, and keeps
    // serving the principal issued under it.
    const refused = await use(rb, oldBootstrap);
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error.code, "authenticationFailed");
    assert.match(refused.body.error.message, /rotated away/);
    assert.equal((await use(rb, bearer)).status, 200);
    // A runs the new one: the new bearer is the admin, with a 30-day expiry now.
    const me = await use(ra, newBootstrap);
    assert.equal(me.status, 200);
    assert.ok(Date.parse(me.body.expiresAt) > Date.now() + 29 * 86_400_000);
    assert.equal((await use(ra, oldBootstrap)).status, 401);
    assert.equal((await use(ra, bearer)).status, 200);
    // The same issuance replayed by the new bearer answers the same bearer: same principal id,
    // same authority key.
    const replayed = await issue(ra, newBootstrap, body, "rotate-issue-1");
    assert.equal(replayed.status, 201);
    assert.equal(replayed.body.bearer, bearer);
    assert.equal(replayed.headers.get("idempotent-replayed"), "true");

    // The old file cannot start a replica any more.
    const oldHome = await Deno.makeTempDir({ prefix: "art-kv-old-" });
    try {
      await Deno.mkdir(`${oldHome}/.config/automation-runtime`, { recursive: true, mode: 0o700 });
      await Deno.writeTextFile(`${oldHome}/.config/automation-runtime/bootstrap.env`, oldFile, {
        mode: 0o600,
      });
      await assert.rejects(
        () =>
          startServer({
            home: oldHome,
            autoInit: true,
            args: ["--store", `${home}/.config/automation-runtime/store.kv`],
            timeoutMs: 15_000,
          }),
        /rotated away on the store/,
      );
    } finally {
      await Deno.remove(oldHome, { recursive: true });
    }
  } finally {
    ra.close();
    rb.close();
    await a.stop();
    await b.stop();
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("kv processes: a process started with a rotated-away bootstrap refuses to start", async () => {
  const home = await Deno.makeTempDir({ prefix: "art-kv-processes-" });
  const old = createTestBootstrap();
  try {
    const first = await startServer({ home, bootstrap: old });
    await first.stop();
    const second = await startServer({ home });
    await second.stop();
    await assert.rejects(
      () => startServer({ home, bootstrap: old, timeoutMs: 15_000 }),
      /replaced on the store/,
    );
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
