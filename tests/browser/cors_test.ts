/**
 * The SDK in a real browser, across origins: headless Chromium loads a page from one local origin
 * whose script (the SDK bundled for browsers) issues and revokes a principal on `serve` running
 * on another port. With the page's origin in `--cors-origins` both calls succeed; with it left
 * out, the browser blocks the call and the service never sees it. The page reports its outcome by
 * posting it back to the page server; the bearer reaches the page through that server, never a
 * URL or an argument.
 */
import assert from "node:assert/strict";
import { CHROMIUM, CHROMIUM_FLAGS, HAS_CHROMIUM } from "../support/chromium.ts";
import { sharedHeaders, startServer, type TestServer } from "../support/server.ts";

const ROOT = new URL("../../", import.meta.url);

interface Outcome {
  ok: boolean;
  steps: string[];
  error?: { name: string; code?: string; message: string };
}

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>automation-runtime SDK in a browser</title>
<script type="module">
import { RuntimeServiceClient } from "/sdk.js";
const report = (outcome) =>
  fetch("/report", { method: "POST", body: JSON.stringify(outcome) });
const steps = [];
try {
  const config = await (await fetch("/config")).json();
  const client = new RuntimeServiceClient({
    baseUrl: config.service,
    token: config.token,
    maxRetries: 0,
    deadlineMs: 10000,
  });
  const issued = await client.createPrincipal({
    capabilities: ["session:read"],
    expiresAt: new Date(Date.now() + 3600000),
  });
  steps.push("issued " + issued.principalId);
  const listed = await client.listPrincipals();
  steps.push("listed " + listed.length);
  await client.revokePrincipal(issued.principalId);
  steps.push("revoked");
  await report({ ok: true, steps });
} catch (error) {
  await report({
    ok: false,
    steps,
    error: { name: error.name, code: error.code, message: String(error.message) },
  });
}
</script>`;

/** Bundles the SDK for browsers into `dir/sdk.js` with Deno's built-in bundler (offline). */
async function bundleSdk(dir: string): Promise<string> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--platform", "browser", "-o", `${dir}/sdk.js`, "sdk/mod.ts"],
    cwd: ROOT.pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  return await Deno.readTextFile(`${dir}/sdk.js`);
}

/** Serves the page, the bundle, its config and the report endpoint on a port of its own. */
function pageServer(sdk: string, config: { service: string; token: string }) {
  const reported = Promise.withResolvers<Outcome>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const path = new URL(request.url).pathname;
    if (path === "/") return new Response(PAGE, { headers: { "content-type": "text/html" } });
    if (path === "/sdk.js") {
      return new Response(sdk, { headers: { "content-type": "text/javascript" } });
    }
    if (path === "/config") return Response.json(config);
    if (path === "/report" && request.method === "POST") {
      reported.resolve(await request.json());
      return new Response(null, { status: 204 });
    }
    return new Response("not found", { status: 404 });
  });
  return {
    origin: `http://127.0.0.1:${server.addr.port}`,
    outcome: reported.promise,
    close: () => server.shutdown(),
  };
}

/** Runs headless Chromium on `url` until the page reports (or 60 s pass). */
async function runChromium(url: string, outcome: Promise<Outcome>): Promise<Outcome> {
  const profile = await Deno.makeTempDir({ prefix: "art-chromium-" });
  const child = new Deno.Command(CHROMIUM, {
    args: [...CHROMIUM_FLAGS, `--user-data-dir=${profile}`, url],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      outcome,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("the page did not report in 60 s")), 60_000);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    await child.status;
    await Deno.remove(profile, { recursive: true }).catch(() => {});
  }
}

async function principalCount(server: TestServer): Promise<number> {
  const response = await fetch(`${server.url}/v1/principals`, {
    headers: sharedHeaders(server.bearer),
  });
  assert.equal(response.status, 200);
  return (await response.json()).principals.length;
}

async function scenario(listed: boolean): Promise<{ outcome: Outcome; count: number }> {
  const dir = await Deno.makeTempDir({ prefix: "art-browser-" });
  try {
    const sdk = await bundleSdk(dir);
    // The page server's port must be known before serve starts: reserve it first.
    const config = { service: "", token: "" };
    const page = pageServer(sdk, config);
    const other = "http://127.0.0.1:1";
    const server = await startServer({
      args: ["--cors-origins", listed ? `${other},${page.origin}` : other],
    });
    try {
      config.service = server.url;
      config.token = server.bearer;
      const outcome = await runChromium(`${page.origin}/`, page.outcome);
      return { outcome, count: await principalCount(server) };
    } finally {
      await page.close();
      await server.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name: "browser: a listed origin issues, lists and revokes across origins with the SDK",
  ignore: !HAS_CHROMIUM,
  async fn() {
    const { outcome, count } = await scenario(true);
    assert.equal(outcome.ok, true, JSON.stringify(outcome));
    assert.equal(outcome.steps.length, 3);
    assert.match(outcome.steps[0], /^issued [0-9a-f-]{36}$/);
    assert.equal(outcome.steps[1], "listed 1");
    assert.equal(outcome.steps[2], "revoked");
    assert.equal(count, 1);
  },
});

Deno.test({
  name: "browser: an unlisted origin is blocked by the browser and the service sees no call",
  ignore: !HAS_CHROMIUM,
  async fn() {
    const { outcome, count } = await scenario(false);
    assert.equal(outcome.ok, false, JSON.stringify(outcome));
    assert.deepEqual(outcome.steps, []);
    assert.equal(outcome.error?.code, "connectionFailed", JSON.stringify(outcome));
    assert.equal(count, 0, "the preflight failed, so the POST never reached the service");
  },
});
