/**
 * `serve` in PostgreSQL mode, started as a user would: an unreachable database fails the start
 * with one clear line and exit code 1, and neither that line nor any later log line ever holds
 * the store URL or its password. It also runs with only the flags docs/postgres.md documents for this
 * mode: `--allow-net` (listen address and database) and `--allow-env`.
 */
import assert from "node:assert/strict";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import { createTestBootstrap, type TestBootstrap } from "../support/server.ts";
import { issue, issueBody, use } from "./_replicas.ts";

const MAIN = new URL("../../cli/main.ts", import.meta.url).href;
const ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname);
const PASSWORD = "pw-7Hq2-never-in-logs";
/** The flags docs/postgres.md documents for PostgreSQL mode with the bootstrap in the environment. */
const POSTGRES_FLAGS = ["--allow-net=127.0.0.1", "--allow-env"];

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

function bootstrapEnv(bootstrap: TestBootstrap): Record<string, string> {
  return {
    AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: bootstrap.token,
    AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: bootstrap.principalId,
    AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: bootstrap.capabilities.join(","),
    AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: bootstrap.expiresAt,
  };
}

function denoDir(): string {
  const explicit = Deno.env.get("DENO_DIR");
  if (explicit) return explicit;
  const home = Deno.env.get("HOME") ?? "";
  if (Deno.build.os === "darwin") return `${home}/Library/Caches/deno`;
  return `${Deno.env.get("XDG_CACHE_HOME") || `${home}/.cache`}/deno`;
}

function spawnServe(args: string[], env: Record<string, string>): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", ...POSTGRES_FLAGS, MAIN, "serve", "--port", "0", ...args],
    cwd: ROOT,
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH") ?? "",
      HOME: "/nonexistent",
      DENO_DIR: denoDir(),
      NO_COLOR: "1",
      ...env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

function assertNoSecret(text: string, url: string): void {
  assert.ok(!text.includes(PASSWORD), `output holds the password: ${text}`);
  assert.ok(!text.includes(url), `output holds the URL: ${text}`);
  assert.ok(!text.includes("postgres://"), `output holds a URL: ${text}`);
}

for (const via of ["--store", "AUTOMATION_RUNTIME_STORE"]) {
  Deno.test(`replicas: serve fails at start with one clear line when the database is unreachable (${via})`, async () => {
    const url = `postgres://app:${PASSWORD}@127.0.0.1:${freePort()}/app`;
    const bootstrap = bootstrapEnv(createTestBootstrap());
    const child = via === "--store"
      ? spawnServe(["--store", url], bootstrap)
      : spawnServe([], { ...bootstrap, AUTOMATION_RUNTIME_STORE: url });
    const output = await child.output();
    const stdout = new TextDecoder().decode(output.stdout);
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 1);
    assert.equal(stdout, "");
    assert.equal(
      stderr,
      "automation-runtime: Cannot open the store: PostgreSQL is unreachable: connection refused (ECONNREFUSED)\n",
    );
    assertNoSecret(stderr, url);
  });
}

Deno.test({
  name:
    `replicas: serve runs on PostgreSQL with --allow-net and --allow-env only, URL never logged${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const url = new URL(db.url);
    url.password = PASSWORD; // The throwaway cluster trusts loopback, so any password works.
    const bootstrap = createTestBootstrap();
    const child = spawnServe([], {
      ...bootstrapEnv(bootstrap),
      AUTOMATION_RUNTIME_STORE: url.href,
    });
    const stdout = new Response(child.stdout).text();
    let stderr = "";
    try {
      const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
      let listening: { url: string; store: string } | undefined;
      while (listening === undefined) {
        const { value, done } = await reader.read();
        if (done) break;
        stderr += value;
        for (const line of stderr.split("\n")) {
          if (line.includes('"msg":"listening"')) listening = JSON.parse(line);
        }
      }
      assert.ok(listening !== undefined, `serve did not start: ${stderr}`);
      assert.equal(listening.store, "postgres");
      using client = Deno.createHttpClient({});
      const server = { url: listening.url, client };
      const issued = await issue(server, bootstrap.token, issueBody());
      assert.equal(issued.status, 201);
      assert.equal((await use(server, issued.body.bearer)).status, 200);
      child.kill("SIGTERM");
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        stderr += chunk.value;
      }
    } finally {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already exited.
      }
      await child.status;
      stderr += await stdout;
    }
    assertNoSecret(stderr, url.href);
    assert.match(stderr, /"msg":"stopped"/);
  },
});
