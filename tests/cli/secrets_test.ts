import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { RuntimeServiceClient, RuntimeServiceError } from "../../sdk/mod.ts";
import { makeTempHome, runCli } from "../support/cli.ts";
import { sharedHeaders, startServer } from "../support/server.ts";

/** The forms in which a bearer could leak: its text, its 32 random bytes, their hex. */
function leakForms(bearer: string): Buffer[] {
  const forms = [Buffer.from(bearer, "utf8")];
  if (bearer.startsWith("art_")) {
    const raw = Buffer.from(bearer.slice(4), "base64url");
    forms.push(raw, Buffer.from(raw.toString("hex"), "utf8"));
  }
  return forms;
}

function assertNoSecret(where: string, data: Uint8Array | string, secrets: Map<string, Buffer[]>) {
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data);
  for (const [label, forms] of secrets) {
    for (const form of forms) {
      assert.equal(bytes.indexOf(form), -1, `${label} found in ${where}`);
    }
  }
}

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) yield* walk(path);
    else if (entry.isFile) yield path;
  }
}

function serverPids(home: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const environ = Deno.readTextFileSync(`/proc/${entry.name}/environ`);
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
      if (environ.split("\0").includes(`HOME=${home}`) && cmdline.includes("serve")) {
        pids.push(Number(entry.name));
      }
    } catch {
      // The process ended or is not ours to read.
    }
  }
  return pids;
}

Deno.test({
  name: "no bearer or bootstrap token reaches the logs, ps, the environment of serve or the store",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const temp = await makeTempHome();
    const secrets = new Map<string, Buffer[]>();
    const remember = (label: string, bearer: string) => secrets.set(label, leakForms(bearer));
    try {
      const init = await runCli(["init"], { env: temp.env });
      assert.equal(init.code, 0, init.stderr);
      const bootstrap = init.stdout.trim();
      remember("bootstrap bearer", bootstrap);

      const server = await startServer({
        home: temp.home,
        autoInit: true,
        env: { XDG_CONFIG_HOME: temp.configDir },
      });
      let stopped = false;
      try {
        const admin = new RuntimeServiceClient({ baseUrl: server.url, token: bootstrap });
        const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
        const params = {
          principalId: crypto.randomUUID(),
          capabilities: ["session:read" as const],
          expiresAt,
        };
        const first = await admin.createPrincipal(params, { idempotencyKey: "secrets-1" });
        remember("issued bearer (SDK)", first.bearer);
        const replay = await admin.createPrincipal(params, { idempotencyKey: "secrets-1" });
        assert.equal(replay.bearer, first.bearer, "replayed");
        await assert.rejects(
          admin.createPrincipal(
            { ...params, capabilities: ["session:write"] },
            { idempotencyKey: "secrets-1" },
          ),
          RuntimeServiceError,
        );
        const scoped = new RuntimeServiceClient({ baseUrl: server.url, token: first.bearer });
        await scoped.runtime();

        const env = {
          ...temp.env,
          AUTOMATION_RUNTIME_URL: server.url,
          AUTOMATION_RUNTIME_TOKEN: bootstrap,
        };
        const issued = await runCli([
          "principal",
          "issue",
          "--capabilities",
          "session:read,session:write",
        ], {
          env,
        });
        assert.equal(issued.code, 0, issued.stderr);
        const second = JSON.parse(issued.stdout);
        remember("issued bearer (CLI)", second.bearer);
        await new RuntimeServiceClient({ baseUrl: server.url, token: second.bearer }).runtime();

        const revoked = await runCli(["principal", "revoke", first.principalId], { env });
        assert.equal(revoked.code, 0, revoked.stderr);
        await admin.revokePrincipal(second.principalId);
        await assert.rejects(scoped.runtime(), RuntimeServiceError);

        const wrong = "art_" + "Wrongbearer0".repeat(4).slice(0, 43);
        remember("unknown bearer", wrong);
        await assert.rejects(
          new RuntimeServiceClient({ baseUrl: server.url, token: wrong }).runtime(),
          RuntimeServiceError,
        );
        const inQuery = "art_" + "QueryBearer1".repeat(4).slice(0, 43);
        remember("bearer in a query", inQuery);
        const inCookie = "art_" + "CookieBearer".repeat(4).slice(0, 43);
        remember("bearer in a cookie", inCookie);
        const viaQuery = await fetch(`${server.url}/v1/runtime?access_token=${inQuery}`, {
          headers: sharedHeaders(bootstrap),
        });
        assert.equal(viaQuery.status, 400);
        await viaQuery.body?.cancel();
        const viaCookie = await fetch(`${server.url}/v1/runtime`, {
          headers: sharedHeaders(bootstrap, { cookie: `access_token=${inCookie}` }),
        });
        await viaCookie.body?.cancel();

        const ps = await new Deno.Command("ps", { args: ["-eww", "-o", "pid=,args="] }).output();
        assert.equal(ps.code, 0);
        assertNoSecret("ps output", ps.stdout, secrets);
        const pids = serverPids(temp.home);
        assert.ok(pids.length >= 1, "found the serve process");
        for (const pid of pids) {
          assertNoSecret(
            `/proc/${pid}/cmdline`,
            Deno.readFileSync(`/proc/${pid}/cmdline`),
            secrets,
          );
          assertNoSecret(
            `/proc/${pid}/environ`,
            Deno.readFileSync(`/proc/${pid}/environ`),
            secrets,
          );
        }
      } finally {
        await server.stop();
        stopped = true;
      }
      assert.ok(stopped);

      const logs = server.logs();
      assert.ok(
        logs.filter((line) => line.includes('"status":401')).length >= 2,
        "requests were logged",
      );
      assertNoSecret("server stderr", logs.join("\n"), secrets);
      assertNoSecret("server stdout", server.stdout().join("\n"), secrets);

      let scanned = 0;
      let storeFiles = 0;
      for await (const path of walk(temp.home)) {
        if (path === temp.secretFile) continue;
        assertNoSecret(path, await Deno.readFile(path), secrets);
        scanned++;
        if (path.includes("store.kv")) storeFiles++;
      }
      assert.ok(storeFiles >= 1, `the store was scanned (${scanned} files)`);
      const secretFile = await Deno.readTextFile(temp.secretFile);
      assert.ok(secretFile.includes(bootstrap), "the only place the bootstrap bearer lives");
    } finally {
      await temp.cleanup();
    }
  },
});
