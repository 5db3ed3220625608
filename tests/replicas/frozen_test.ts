/**
 * Two real `serve` processes on one Deno KV file, each holding a 1.5 s authority lease, and one
 * of them frozen (SIGSTOP) while it holds its lease with a principal in its cache: the revocation
 * made on the other waits for the frozen lease and no longer; the frozen process, resumed
 * (SIGCONT) with a request for the revoked bearer already waiting on its socket, refuses it: it
 * finds its lease lapsed on its own clock before it answers anything from memory.
 */
import assert from "node:assert/strict";
import { sharedHeaders, startServer } from "../support/server.ts";
import { issue, issueBody, type Replica, revoke, use } from "./_replicas.ts";

const LEASE_MS = 1_500;

/** Sends one HTTP/1.1 request on a new connection; its answer is read by `answer()`. */
async function sendRaw(url: string, headers: Headers) {
  const { hostname, port } = new URL(url);
  const connection = await Deno.connect({ hostname, port: Number(port) });
  const lines = [`GET /v1/runtime HTTP/1.1`, `host: ${hostname}:${port}`, "connection: close"];
  for (const [name, value] of headers) lines.push(`${name}: ${value}`);
  await connection.write(new TextEncoder().encode(`${lines.join("\r\n")}\r\n\r\n`));
  return {
    async answer(): Promise<string> {
      const chunks: Uint8Array[] = [];
      const buffer = new Uint8Array(4096);
      try {
        while (true) {
          const read = await connection.read(buffer);
          if (read === null) break;
          chunks.push(buffer.slice(0, read));
        }
      } finally {
        connection.close();
      }
      return new TextDecoder().decode(new Uint8Array(chunks.flatMap((chunk) => [...chunk])));
    },
  };
}

Deno.test("frozen process: a revocation waits for its lease and no longer; resumed, it refuses the bearer before answering anything", async () => {
  const home = await Deno.makeTempDir({ prefix: "art-frozen-" });
  const args = ["--authority-lease-ms", String(LEASE_MS)];
  const a = await startServer({ home, args });
  const b = await startServer({ home, args, bootstrap: a.bootstrap });
  const [ra, rb]: Replica[] = [a, b].map((server) => ({
    url: server.url,
    client: Deno.createHttpClient({}),
  }));
  let frozen = false;
  try {
    const body = issueBody();
    const issued = await issue(ra, a.bearer, body);
    assert.equal(issued.status, 201);
    const bearer: string = issued.body.bearer;
    // B caches the principal and takes its lease (its first renewal follows its first request).
    for (let i = 0; i < 5; i++) {
      assert.equal((await use(rb, bearer)).status, 200);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal((await use(ra, bearer)).status, 200);

    b.kill("SIGSTOP");
    frozen = true;
    const started = performance.now();
    assert.equal((await revoke(ra, a.bearer, body.principalId)).status, 204);
    const waited = performance.now() - started;
    assert.ok(waited >= LEASE_MS * 0.8, `the revocation waited for B's lease: ${waited} ms`);
    assert.ok(waited < LEASE_MS + 1_500, `and not much longer: ${waited} ms`);
    assert.equal((await use(ra, bearer)).status, 401);

    // Requests for the revoked bearer wait on B's socket while B is frozen; B answers them first
    // thing once resumed, before any timer of its own could tell it anything.
    const pending = await Promise.all(
      Array.from({ length: 8 }, () => sendRaw(b.url, sharedHeaders(bearer))),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    b.kill("SIGCONT");
    frozen = false;
    for (const request of pending) {
      const answer = await request.answer();
      assert.match(answer, /^HTTP\/1\.1 401 /, answer.split("\r\n")[0]);
      assert.match(answer, /"code":"authenticationFailed"/);
    }
    assert.equal((await use(rb, bearer)).status, 401);
    // B goes on serving, and holds its lease again.
    assert.equal((await use(rb, a.bearer)).status, 200);
  } finally {
    if (frozen) b.kill("SIGCONT");
    for (const replica of [ra, rb]) replica.client.close();
    await a.stop();
    await b.stop();
    await Deno.remove(home, { recursive: true });
  }
});
