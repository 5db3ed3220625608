/**
 * The production recipe's proxy works as written: nginx (Debian's package) runs the `nginx` block
 * of `docs/deployment.md` (its addresses, ports and certificate paths replaced) with a self-signed
 * certificate made here with `openssl`, in front of the real `serve` whose provider is the
 * provider simulator. Over TLS, run events stream through it unbuffered: the first event of a run
 * arrives while the run is still going, seconds before its end. Plain HTTP is redirected to TLS.
 *
 * Skipped with a notice outside CI when nginx or openssl is missing; in CI (`CI` set) it runs.
 */
import assert from "node:assert/strict";
import { agentMessage, pause, ProviderSimulator } from "../../testing/mod.ts";
import { REPO_ROOT } from "../support/cli.ts";
import { sharedHeaders, startServer } from "../support/server.ts";

/** The first of `names` that runs (`-v`, `version`), or null. */
async function findTool(names: string[], args: string[]): Promise<string | null> {
  for (const name of names) {
    try {
      const { success } = await new Deno.Command(name, { args, stdout: "null", stderr: "null" })
        .output();
      if (success) return name;
    } catch {
      // Not there.
    }
  }
  return null;
}

const nginx = await findTool(["nginx", "/usr/sbin/nginx"], ["-v"]);
const openssl = await findTool(["openssl", "/usr/bin/openssl"], ["version"]);
const missing = nginx === null || openssl === null;
if (missing && !Deno.env.get("CI")) {
  console.error("nginx_tls_test: skipped, nginx or openssl is not installed (CI installs them)");
}

/** The `nginx` block of the deployment page. */
async function documentedConfig(): Promise<string> {
  const page = await Deno.readTextFile(`${REPO_ROOT}docs/deployment.md`);
  const block = /^```nginx\n([\s\S]*?)^```$/m.exec(page)?.[1];
  assert.ok(block, "docs/deployment.md has an nginx block");
  return block;
}

/** `text` with `pattern` replaced, asserting that it was there. */
function replaced(text: string, pattern: RegExp, by: string): string {
  assert.match(text, pattern, `the documented configuration keeps ${pattern}`);
  return text.replace(pattern, by);
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

async function run(command: string, args: string[]): Promise<void> {
  const output = await new Deno.Command(command, { args, stdout: "piped", stderr: "piped" })
    .output();
  assert.ok(
    output.success,
    `${command} ${args.join(" ")}: ${new TextDecoder().decode(output.stderr)}`,
  );
}

Deno.test({
  name: "nginx with TLS, configured as documented, streams run events as they happen",
  ignore: missing && !Deno.env.get("CI"),
  sanitizeResources: false,
  async fn() {
    assert.ok(nginx !== null && openssl !== null, "CI must have nginx and openssl");
    const dir = await Deno.makeTempDir({ prefix: "art-nginx-" });
    await using simulator = await ProviderSimulator.start({ apiKey: "sk-nginx-test-0001" });
    const agent = simulator.managedAgents!.addAgent({
      name: "slow",
      turn: () => [pause(300), agentMessage("first"), pause(2_000), agentMessage("second")],
    });
    const environment = simulator.managedAgents!.addEnvironment({ name: "nginx" });
    const server = await startServer({
      env: { AUTOMATION_RUNTIME_PROVIDER_API_KEY: simulator.apiKey },
      args: [
        "--provider-base-url",
        simulator.baseUrl,
        "--default-agent",
        agent.id,
        "--default-environment",
        environment.id,
      ],
    });
    let proxy: Deno.ChildProcess | undefined;
    try {
      const cert = `${dir}/cert.pem`;
      const key = `${dir}/key.pem`;
      await run(openssl!, [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        key,
        "-out",
        cert,
        "-days",
        "2",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost,IP:127.0.0.1",
        "-addext",
        "basicConstraints=critical,CA:FALSE",
        "-addext",
        "extendedKeyUsage=serverAuth",
      ]);
      const tlsPort = freePort();
      const plainPort = freePort();
      let site = await documentedConfig();
      site = replaced(site, /server 127\.0\.0\.1:7777;/, `server ${new URL(server.url).host};`);
      site = site.replace(/^\s*listen \[::\].*\n/gm, "");
      site = replaced(site, /listen 443 ssl http2;/, `listen 127.0.0.1:${tlsPort} ssl http2;`);
      site = replaced(site, /listen 80;/, `listen 127.0.0.1:${plainPort};`);
      site = replaced(site, /ssl_certificate\s+\S+;/, `ssl_certificate ${cert};`);
      site = replaced(site, /ssl_certificate_key\s+\S+;/, `ssl_certificate_key ${key};`);
      const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
        .map((name) => `  ${name}_temp_path ${dir}/${name};`).join("\n");
      await Deno.writeTextFile(
        `${dir}/nginx.conf`,
        `daemon off;\nmaster_process off;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log warn;\n` +
          `events { worker_connections 64; }\nhttp {\n  access_log off;\n${temp}\n${site}\n}\n`,
      );
      proxy = new Deno.Command(nginx!, {
        args: ["-e", `${dir}/error.log`, "-p", `${dir}/`, "-c", `${dir}/nginx.conf`],
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }).spawn();
      const proxyErrors = new Response(proxy.stderr).text();

      const tls = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(cert)] });
      try {
        const base = `https://127.0.0.1:${tlsPort}`;
        let health: Response | undefined;
        for (let i = 0; i < 100 && health === undefined; i++) {
          health = await fetch(`${base}/healthz`, { client: tls }).catch(async () => {
            await new Promise((resolve) => setTimeout(resolve, 100));
            return undefined;
          });
        }
        assert.ok(health, `nginx did not answer: ${await Deno.readTextFile(`${dir}/error.log`)}`);
        assert.deepEqual(await health.json(), { ok: true });

        const redirect = await fetch(`http://127.0.0.1:${plainPort}/healthz`, {
          redirect: "manual",
        });
        await redirect.body?.cancel();
        assert.equal(redirect.status, 301);
        assert.match(redirect.headers.get("location") ?? "", /^https:\/\/127\.0\.0\.1\/healthz$/);

        const started = await fetch(`${base}/v1/runs`, {
          client: tls,
          method: "POST",
          headers: sharedHeaders(server.bearer, {
            "idempotency-key": crypto.randomUUID(),
            "content-type": "application/json",
          }),
          body: JSON.stringify({ input: "go" }),
        });
        const record = await started.json();
        assert.equal(started.status, 201, JSON.stringify(record));

        const opened = performance.now();
        const stream = await fetch(`${base}/v1/runs/${record.runId}/events`, {
          client: tls,
          headers: sharedHeaders(server.bearer, { accept: "text/event-stream" }),
        });
        assert.equal(stream.status, 200);
        assert.match(stream.headers.get("content-type") ?? "", /^text\/event-stream/);
        const arrivals: { type: string; at: number; text?: string }[] = [];
        let stateAtFirst: string | undefined;
        let buffer = "";
        const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
        while (!arrivals.some((arrival) => arrival.type === "run.completed")) {
          const { done, value } = await reader.read();
          if (done) break;
          buffer += value;
          let end: number;
          while ((end = buffer.indexOf("\n\n")) !== -1) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = /^data: (.*)$/m.exec(frame)?.[1];
            if (data === undefined) continue;
            const event = JSON.parse(data);
            arrivals.push({ type: event.type, at: performance.now() - opened, text: event.text });
            if (event.type === "message.completed" && stateAtFirst === undefined) {
              const now = await fetch(`${base}/v1/runs/${record.runId}`, {
                client: tls,
                headers: sharedHeaders(server.bearer),
              });
              stateAtFirst = (await now.json()).state;
            }
          }
        }
        await reader.cancel().catch(() => {});
        const first = arrivals.find((arrival) => arrival.type === "message.completed");
        const end = arrivals.find((arrival) => arrival.type === "run.completed");
        assert.ok(first && end, JSON.stringify(arrivals));
        assert.equal(first.text, "first");
        assert.equal(stateAtFirst, "running", "the first event came while the run was going");
        assert.ok(
          end.at - first.at >= 1_000,
          `the first event came ${end.at - first.at} ms before the end: ${
            JSON.stringify(arrivals)
          }`,
        );
      } finally {
        tls.close();
      }
      proxy.kill("SIGTERM");
      await proxy.status;
      assert.doesNotMatch(await proxyErrors, /\[emerg\]/);
      proxy = undefined;
    } finally {
      if (proxy !== undefined) {
        try {
          proxy.kill("SIGKILL");
        } catch {
          // Already gone.
        }
        await proxy.status;
      }
      await server.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
