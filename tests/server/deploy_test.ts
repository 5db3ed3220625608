/**
 * The Deploy-style entry (`server/deploy.ts`) run as hosts run it: `deno serve`, with the flags
 * of the `deploy-local` task. With `--parallel` and two workers, a revocation acknowledged by one
 * worker holds for every request after it, whichever worker answers; without the bootstrap
 * variables the entry refuses to start and writes nothing. It serves the web console too.
 */
import assert from "node:assert/strict";
import { createDeployServer, DeployStartError } from "../../server/deploy.ts";
import { createTestBootstrap, sharedHeaders, type TestBootstrap } from "../support/server.ts";
import { assertServesConsole } from "./_console.ts";

const ROOT = new URL("../../", import.meta.url);
const ENTRY = new URL("server/deploy.ts", ROOT).pathname;

/** The `deploy-local` task's flags, minus the entry and the host (the tests bind 127.0.0.1). */
async function taskFlags(): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
  const words: string[] = config.tasks["deploy-local"].split(/\s+/);
  assert.deepEqual(words.slice(0, 2), ["deno", "serve"]);
  assert.equal(words.at(-1), "server/deploy.ts");
  return words.slice(2, -1);
}

/** The four bootstrap variables of `bootstrap`. */
function bootstrapVariables(bootstrap: TestBootstrap): Record<string, string> {
  return {
    AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: bootstrap.token,
    AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: bootstrap.principalId,
    AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: bootstrap.capabilities.join(","),
    AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: bootstrap.expiresAt,
  };
}

function denoDir(): string {
  return Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME") ?? "/root"}/.cache/deno`;
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** One request on a connection of its own, so the kernel picks a worker for each. */
async function once(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; body: Record<string, unknown> | null }> {
  const client = Deno.createHttpClient({});
  try {
    const response = await fetch(url, { ...init, client });
    const text = await response.text();
    return { status: response.status, body: text === "" ? null : JSON.parse(text) };
  } finally {
    client.close();
  }
}

Deno.test("deploy entry: without the bootstrap variables it refuses to start and writes no file", async () => {
  const home = await Deno.makeTempDir({ prefix: "art-deploy-" });
  try {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["serve", ...await taskFlags(), "--port", String(freePort()), ENTRY],
      cwd: home,
      env: {
        PATH: Deno.env.get("PATH") ?? "",
        HOME: home,
        XDG_CONFIG_HOME: `${home}/.config`,
        DENO_DIR: denoDir(),
        NO_COLOR: "1",
        // A partial bootstrap fails closed as well; none at all is the case tested here.
      },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.notEqual(output.code, 0);
    assert.match(stderr, /No bootstrap credential: set the four AUTOMATION_RUNTIME_BOOTSTRAP_\*/);
    assert.match(stderr, /reads no secret file and never generates one/);
    const written = await Array.fromAsync(Deno.readDir(home));
    assert.deepEqual(written, [], "nothing written in HOME or the working directory");
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("deploy entry: with two workers on one KV file, writes at the same time all succeed and every request after a revocation is refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "art-deploy-" });
  const bootstrap = createTestBootstrap();
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  // A KV file of its own (the host's default KV would outlive the test): the file needs read and
  // write access to its directory on top of the task's flags.
  const access = [`--allow-read=${dir}`, `--allow-write=${dir}`];
  const child = new Deno.Command(Deno.execPath(), {
    args: ["serve", ...await taskFlags(), ...access, "--port", String(port), ENTRY],
    // Where `deno task deploy-local` runs: deno.json (import map, unstable KV) is found there.
    cwd: ROOT.pathname,
    env: {
      PATH: Deno.env.get("PATH") ?? "",
      HOME: dir,
      DENO_DIR: denoDir(),
      NO_COLOR: "1",
      DENO_JOBS: "2",
      AUTOMATION_RUNTIME_STORE: `${dir}/store.kv`,
      ...bootstrapVariables(bootstrap),
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const stdout = new Response(child.stdout).text();
  let bearer = "";
  try {
    const deadline = Date.now() + 60_000;
    while (true) {
      const up = await once(`${base}/healthz`).catch(() => null);
      if (up?.status === 200) break;
      assert.ok(Date.now() < deadline, "deno serve did not answer /healthz in time");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const issue = (principalId: string = crypto.randomUUID()) =>
      once(`${base}/v1/principals`, {
        method: "POST",
        headers: sharedHeaders(bootstrap.token, {
          "content-type": "application/json",
          "idempotency-key": crypto.randomUUID(),
        }),
        body: JSON.stringify({
          principalId,
          capabilities: ["session:read"],
          expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
        }),
      });
    const principalId = crypto.randomUUID();
    const issued = await issue(principalId);
    assert.equal(issued.status, 201);
    bearer = issued.body!.bearer as string;
    // Both workers write the one file at once: a commit that meets the other's write lock waits
    // for it rather than failing the request (10 rounds of 40, inside the in-flight quota).
    const refused: number[] = [];
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(Array.from({ length: 40 }, () => issue()));
      refused.push(...answers.map((answer) => answer.status).filter((status) => status !== 201));
    }
    assert.deepEqual(refused, []);
    const useIt = () => once(`${base}/v1/runtime`, { headers: sharedHeaders(bearer) });
    // Fresh connections land on both workers (SO_REUSEPORT); each caches the principal.
    for (let i = 0; i < 20; i++) assert.equal((await useIt()).status, 200);

    const revoked = await once(`${base}/v1/principals/${principalId}`, {
      method: "DELETE",
      headers: sharedHeaders(bootstrap.token),
    });
    assert.equal(revoked.status, 204);
    const statuses: number[] = [];
    for (let batch = 0; batch < 20; batch++) {
      const answers = await Promise.all(Array.from({ length: 10 }, useIt));
      for (const answer of answers) {
        statuses.push(answer.status);
        assert.equal((answer.body?.error as { code?: string })?.code, "authenticationFailed");
      }
    }
    assert.equal(statuses.length, 200);
    assert.deepEqual(statuses.filter((status) => status !== 401), []);
    // The web console, from the files embedded in the module graph (no read permission on them).
    await assertServesConsole(base);
  } finally {
    try {
      child.kill("SIGTERM");
    } catch {
      // It exited on its own; its output says why.
    }
    await child.status;
    const output = (await Promise.all([stderr, stdout])).join("\n");
    await Deno.remove(dir, { recursive: true });
    // deno serve reports its worker count; two workers were asked for with DENO_JOBS.
    assert.match(output, /with 2 threads/);
    assert.equal(output.includes(bootstrap.token), false);
    if (bearer !== "") assert.equal(output.includes(bearer), false);
  }
});

Deno.test("deploy entry: without a configured store it opens the host's KV with no path", async () => {
  const bootstrap = createTestBootstrap();
  const env = bootstrapVariables(bootstrap);
  const original = Deno.openKv;
  const descriptor = Object.getOwnPropertyDescriptor(Deno, "openKv")!;
  const paths: (string | undefined)[] = [];
  // The host's KV stands in as an in-memory one; what matters is the path asked for.
  Object.defineProperty(Deno, "openKv", {
    configurable: true,
    value: (path?: string) => {
      paths.push(path);
      return original(":memory:");
    },
  });
  try {
    const server = await createDeployServer({ env });
    try {
      assert.deepEqual(paths, [undefined]);
      const answer = await server.handler(
        new Request("http://deploy.test/v1/runtime", { headers: sharedHeaders(bootstrap.token) }),
      );
      assert.equal(answer.status, 200);
      assert.equal((await answer.json()).principalId, bootstrap.principalId);
    } finally {
      await server.close();
      await server.services.store.close();
    }
    // A partial bootstrap fails closed, naming what is missing, before any store is opened.
    await assert.rejects(
      () => createDeployServer({ env: { ...env, AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: undefined } }),
      (error: Error) =>
        error instanceof DeployStartError &&
        /missing AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN/.test(error.message),
    );
    assert.equal(paths.length, 1);
  } finally {
    Object.defineProperty(Deno, "openKv", descriptor);
  }
});

Deno.test("deploy entry: settings come from the table's variables; an invalid one stops it, named", async () => {
  const bootstrap = createTestBootstrap();
  const env = { ...bootstrapVariables(bootstrap), AUTOMATION_RUNTIME_STORE: ":memory:" };
  for (
    const [variable, value, message] of [
      ["AUTOMATION_RUNTIME_RETENTION_DAYS", "0", " must be an integer from 1 to 36500"],
      ["AUTOMATION_RUNTIME_CORS_ORIGINS", "*", ': "*" is not an origin'],
      ["AUTOMATION_RUNTIME_MCP_ALLOWED_ORIGINS", "ide.example", ": MCP allowed origin"],
    ]
  ) {
    await assert.rejects(
      () => createDeployServer({ env: { ...env, [variable]: value } }),
      (error: Error) =>
        error instanceof DeployStartError &&
        error.message.startsWith(`automation-runtime: ${variable}${message}`),
    );
  }
  // The listener's and the runs' settings are not the entry's: their variables are not read.
  const clock = { now: Date.now() };
  const server = await createDeployServer({
    env: {
      ...env,
      AUTOMATION_RUNTIME_MAX_ACTIVE_RUNS: "not read here",
      AUTOMATION_RUNTIME_CORS_ORIGINS: "https://app.example",
    },
    now: () => clock.now,
  });
  try {
    const preflight = await server.handler(
      new Request("http://deploy.test/v1/runtime", {
        method: "OPTIONS",
        headers: {
          origin: "https://app.example",
          "access-control-request-method": "GET",
          "access-control-request-headers": "authorization",
        },
      }),
    );
    assert.equal(preflight.headers.get("access-control-allow-origin"), "https://app.example");
    // The entry's clock is the server's: a bootstrap past its expiry by that clock is refused.
    const runtime = () =>
      server.handler(
        new Request("http://deploy.test/v1/runtime", {
          headers: sharedHeaders(bootstrap.token),
        }),
      );
    assert.equal((await runtime()).status, 200);
    clock.now = Date.parse(bootstrap.expiresAt) + 1;
    const late = await runtime();
    assert.equal(late.status, 401);
    assert.equal((await late.json()).error.code, "tokenExpired");
  } finally {
    await server.close();
    await server.services.store.close();
  }
  await assert.rejects(
    () => createDeployServer({ env, now: () => Date.parse(bootstrap.expiresAt) + 1 }),
    DeployStartError,
  );
});
