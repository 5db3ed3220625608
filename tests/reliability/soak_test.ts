/**
 * Soak (minutes, behind a flag): one million mixed requests against the real `serve` over 64
 * keep-alive connections (reads as 40 principals, issuances with replays, revocations, health
 * checks, and refusals: unknown bearers, missing headers, wrong methods). The server's RSS and
 * open file descriptors stay flat: sampled every 50,000 requests, the second half of the run
 * may not climb above the first.
 *
 * Run: `AUTOMATION_RUNTIME_SOAK=1 deno test -A --frozen tests/reliability/soak_test.ts`
 * (`AUTOMATION_RUNTIME_SOAK_REQUESTS` changes the count).
 */
import assert from "node:assert/strict";
import { bodyText, RawConnection, type RawResponse } from "./_raw_http.ts";
import { issuePrincipal, launch, type Launched, openFds, rssBytes } from "./_serve.ts";

const ENABLED = Deno.env.get("AUTOMATION_RUNTIME_SOAK") === "1";
const TOTAL = Number(Deno.env.get("AUTOMATION_RUNTIME_SOAK_REQUESTS") ?? 1_000_000);
const CONNECTIONS = 64;
const ADMINS = 8;
const SAMPLE_EVERY = 50_000;

function head(method: string, path: string, bearer: string | null, extra: string[] = []): string[] {
  const lines = [
    `${method} ${path} HTTP/1.1`,
    "host: 127.0.0.1",
    "x-interface-version: 2026-07-23",
    `x-correlation-id: ${crypto.randomUUID()}`,
    `x-deadline: ${new Date(Date.now() + 60_000).toISOString()}`,
    ...extra,
  ];
  if (bearer !== null) lines.push(`authorization: Bearer ${bearer}`);
  return lines;
}

function wire(lines: string[], body = ""): string {
  if (body !== "") lines.push("content-type: application/json", `content-length: ${body.length}`);
  return `${lines.join("\r\n")}\r\n\r\n${body}`;
}

interface Progress {
  sent: number;
  statuses: Map<number, number>;
  rss: number[];
  fds: number[];
  failures: string[];
}

async function worker(
  server: Launched,
  index: number,
  readers: string[],
  progress: Progress,
): Promise<void> {
  const connection = await RawConnection.open(server.port);
  let current = connection;
  const send = async (text: string, expected: number[]): Promise<RawResponse> => {
    if (current.closed) current = await RawConnection.open(server.port);
    const response = await current.request(text);
    progress.sent++;
    progress.statuses.set(response.status, (progress.statuses.get(response.status) ?? 0) + 1);
    if (!expected.includes(response.status) && progress.failures.length < 20) {
      progress.failures.push(
        `expected ${expected}, got ${response.status}: ${bodyText(response).slice(0, 200)}`,
      );
    }
    if (progress.sent % SAMPLE_EVERY === 0) {
      progress.rss.push(rssBytes(server.pid));
      progress.fds.push(openFds(server.pid));
    }
    return response;
  };
  try {
    while (progress.sent < TOTAL) {
      if (index < ADMINS) {
        const principalId = crypto.randomUUID();
        const key = crypto.randomUUID();
        const body = JSON.stringify({
          principalId,
          capabilities: ["session:read"],
          expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
        });
        const issue = () =>
          send(
            wire(head("POST", "/v1/principals", server.bearer, [`idempotency-key: ${key}`]), body),
            [201],
          );
        const issued = await issue();
        if (issued.status !== 201) continue;
        await issue(); // the replay
        const bearer = JSON.parse(bodyText(issued)).bearer;
        for (let i = 0; i < 5; i++) await send(wire(head("GET", "/v1/runtime", bearer)), [200]);
        await send(wire(head("DELETE", `/v1/principals/${principalId}`, server.bearer)), [204]);
        await send(wire(head("GET", "/v1/runtime", bearer)), [401]);
        continue;
      }
      const roll = Math.random();
      const reader = readers[index % readers.length];
      if (roll < 0.8) await send(wire(head("GET", "/v1/runtime", reader)), [200]);
      else if (roll < 0.85) await send("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n", [200]);
      else if (roll < 0.9) {
        await send(wire(head("GET", "/v1/runtime", `art_${crypto.randomUUID()}`)), [401]);
      } else if (roll < 0.95) {
        const noDeadline = head("GET", "/v1/runtime", reader).filter((line) =>
          !line.startsWith("x-deadline")
        );
        await send(wire(noDeadline), [400]);
      } else await send(wire(head("PUT", "/v1/runtime", reader)), [405]);
    }
  } finally {
    current.close();
    connection.close();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

Deno.test({
  name: `soak: ${TOTAL} mixed requests, RSS and open file descriptors flat` +
    (ENABLED ? "" : " (skipped: set AUTOMATION_RUNTIME_SOAK=1)"),
  ignore: !ENABLED,
  async fn() {
    const server = await launch();
    try {
      const readers = (await Promise.all(Array.from({ length: 40 }, () => issuePrincipal(server))))
        .map((principal) => principal.bearer);
      const fdsBefore = openFds(server.pid);
      const progress: Progress = { sent: 0, statuses: new Map(), rss: [], fds: [], failures: [] };
      const started = performance.now();
      await Promise.all(
        Array.from({ length: CONNECTIONS }, (_, i) => worker(server, i, readers, progress)),
      );
      const seconds = (performance.now() - started) / 1000;
      await new Promise((resolve) => setTimeout(resolve, 500));
      const fdsAfter = openFds(server.pid);
      const mib = progress.rss.map((bytes) => Math.round(bytes / 1_048_576));
      console.log(
        `${progress.sent} requests in ${seconds.toFixed(0)} s (${
          Math.round(progress.sent / seconds)
        }/s); ` +
          `statuses ${JSON.stringify(Object.fromEntries(progress.statuses))}\n` +
          `RSS MiB every ${SAMPLE_EVERY}: ${mib.join(" ")}\nopen fds: ${progress.fds.join(" ")}; ` +
          `before ${fdsBefore}, after closing ${fdsAfter}`,
      );
      assert.deepEqual(progress.failures, [], "every request got its expected answer");
      const half = Math.floor(progress.rss.length / 2);
      const firstHalf = median(progress.rss.slice(1, half));
      const secondHalf = median(progress.rss.slice(half));
      assert.ok(secondHalf - firstHalf < 32 * 1_048_576, `RSS climbs: ${mib.join(" ")} MiB`);
      assert.ok(
        Math.max(...progress.fds) <= fdsBefore + CONNECTIONS + 16,
        `fds climb: ${progress.fds.join(" ")}`,
      );
      assert.ok(
        fdsAfter <= fdsBefore + 4,
        `fds not released: ${fdsBefore} before, ${fdsAfter} after`,
      );
      assert.equal(server.serverErrors(), 0, "no 5xx in the server's log");
    } finally {
      await server.stop();
    }
  },
});
