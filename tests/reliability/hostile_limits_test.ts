/**
 * Hostile input aimed at the service's bounds, against the real `serve` (the in-process fake
 * provider behind it, Deno KV, metrics on, webhooks on): each case is one way the service was
 * once made to grow or to starve others, and what holds now.
 *
 * 1. Made-up HTTP methods fold into one metrics label; log lines cap the method.
 * 2. MCP replay buffers are bounded in bytes per session (`--mcp-replay-bytes-per-session`).
 * 3. One principal holds at most its share of event streams
 *    (`--max-event-streams-per-principal`); a resume past the end of a finished run ends at once.
 * 4. MCP tool calls hold an in-flight slot for as long as they run, `waitMs` included.
 * 5. Webhook intake: bodies capped before verification, and at most a few verified at once.
 * 6. A run's frame window is bounded in bytes: a run of large events still reaches a late
 *    subscriber complete and in order (from the store, behind the window).
 * 7. Reads of an active run and its pending requests ask the provider at most once a second.
 */
import assert from "node:assert/strict";
import { ProviderManagedAgentClient } from "../../client/mod.ts";
import { FakeProvider } from "../support/fake_provider.ts";
import { sharedHeaders } from "../support/server.ts";
import { answerOf, mcpFetch, openSession, readEvents, rpc } from "../mcp/_mcp.ts";
import { RawConnection } from "./_raw_http.ts";
import { issuePrincipal, launch, type Launched } from "./_serve.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const WEBHOOK_SECRET = `whsec_${btoa("hostile-limits-secret-0123456789")}`;

interface Setup {
  fake: FakeProvider;
  server: Launched;
  metricsUrl: string;
}

async function start(): Promise<Setup> {
  const providerKey = `sk-fake-${crypto.randomUUID()}`;
  const fake = await FakeProvider.start({ apiKey: providerKey });
  const setup = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey: providerKey });
  const agent = await setup.createAgent({ name: "limits", model: "model-small" });
  const environment = await setup.createEnvironment({ name: "limits" });
  const server = await launch({
    args: [
      "--metrics-port",
      "0",
      "--max-event-streams-per-principal",
      "2",
      "--mcp-replay-bytes-per-session",
      "65536",
      "--webhook-max-unverified",
      "2",
    ],
    env: {
      AUTOMATION_RUNTIME_PROVIDER_API_KEY: providerKey,
      AUTOMATION_RUNTIME_PROVIDER_BASE_URL: fake.baseUrl,
      AUTOMATION_RUNTIME_DEFAULT_AGENT_ID: agent.id as string,
      AUTOMATION_RUNTIME_DEFAULT_ENVIRONMENT_ID: environment.id as string,
      AUTOMATION_RUNTIME_PROVIDER_WEBHOOK_SECRETS: WEBHOOK_SECRET,
    },
  });
  const listening = server.logTail().map((line) => {
    try {
      return JSON.parse(line);
    } catch {
      return {};
    }
  }).find((record) => record.msg === "listening");
  return { fake, server, metricsUrl: `${listening.metricsUrl}` };
}

async function call(
  server: Launched,
  method: string,
  path: string,
  bearer: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Json; headers: Headers }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: sharedHeaders(bearer, {
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
      ...(method === "POST" ? { "idempotency-key": crypto.randomUUID() } : {}),
      ...headers,
    }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json: Json;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: response.status, json, headers: response.headers };
}

/** Starts a run with the fake's next script; its id once the tail has appended `events`. */
async function startRun(
  setup: Setup,
  bearer: string,
  script: Json[],
  events = 1,
): Promise<string> {
  setup.fake.managedAgents!.script = () => script;
  const started = await call(setup.server, "POST", "/v1/runs", bearer, { input: "go" });
  assert.equal(started.status, 201, JSON.stringify(started.json));
  const runId = started.json.runId;
  for (let i = 0; i < 200; i++) {
    const page = await call(setup.server, "GET", `/v1/runs/${runId}/events`, bearer);
    if (page.json.nextAfter >= events) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return runId;
}

Deno.test("hostile limits: the real serve holds items 1 to 7 of its bounds", async (t) => {
  const setup = await start();
  const { server, fake } = setup;
  try {
    const writer = await issuePrincipal(server, ["session:read", "session:write"]);

    await t.step("1. made-up methods share one metrics label; log lines cap them", async () => {
      const connection = await RawConnection.open(server.port);
      try {
        for (let i = 0; i < 300; i++) {
          const method = i % 100 === 0 ? `X${"M".repeat(60_000)}${i}` : `BREW${i}`;
          const response = await connection.request(
            `${method} /v1/runtime HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`,
          );
          assert.ok(response.status >= 400 && response.status < 500, `${response.status}`);
          assert.ok(response.body.length < 2_000, "the refusal does not echo the method");
        }
      } finally {
        connection.close();
      }
      const scrape = await (await fetch(`${setup.metricsUrl}`)).text();
      const methods = new Set([...scrape.matchAll(/method="([^"]*)"/g)].map((match) => match[1]));
      assert.ok(methods.has("other"));
      assert.ok(methods.size <= 9, [...methods].join(","));
      assert.ok(scrape.length < 100_000, `a scrape of ${scrape.length} bytes`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (const line of server.logTail()) {
        assert.ok(line.length < 2_000, `a log line of ${line.length} characters`);
      }
    });

    await t.step("2. an MCP session's replay buffer is bounded in bytes", async () => {
      // About 60 principals make every principals_list result some 25 KB.
      for (let i = 0; i < 60; i++) await issuePrincipal(server, ["session:read"]);
      const sessionId = await openSession(server.url, server.bearer);
      const resultIds: string[] = [];
      for (let i = 1; i <= 6; i++) {
        const response = await mcpFetch(server.url, {
          bearer: server.bearer,
          sessionId,
          body: rpc(i, "tools/call", { name: "principals_list", arguments: { limit: 500 } }),
        });
        const events = await readEvents(response, (event) => event.data.includes(`"id":${i}`));
        resultIds.push(events.at(-1)!.id!);
      }
      const resume = (lastEventId: string) =>
        mcpFetch(server.url, {
          method: "GET",
          bearer: server.bearer,
          sessionId,
          headers: { "last-event-id": lastEventId },
        });
      // The first results went past the session's 64 KiB: resuming from them is refused...
      const old = await resume(resultIds[0]);
      assert.equal(old.status, 400);
      await old.body?.cancel();
      // ...while the latest is still kept.
      const recent = await resume(resultIds[5]);
      assert.equal(recent.status, 200);
      await recent.body?.cancel();
    });

    await t.step("3. one principal holds at most its share of event streams", async () => {
      const runId = await startRun(setup, writer.bearer, [{ delayMs: 600_000 }]);
      const open = (bearer: string, lastEventId?: string) =>
        fetch(`${server.url}/v1/runs/${runId}/events`, {
          headers: sharedHeaders(bearer, {
            accept: "text/event-stream",
            ...(lastEventId !== undefined ? { "last-event-id": lastEventId } : {}),
          }),
        });
      const held = [await open(writer.bearer), await open(writer.bearer)];
      for (const response of held) assert.equal(response.status, 200);
      const third = await open(writer.bearer);
      assert.equal(third.status, 429);
      assert.equal((await third.json()).error.code, "resourceExhausted");
      const admin = await open(server.bearer);
      assert.equal(admin.status, 200, "another principal still streams");
      for (const response of [...held, admin]) await response.body?.cancel();
      // A resume past the end of a finished run ends at once.
      const cancelled = await call(server, "POST", `/v1/runs/${runId}/cancel`, writer.bearer);
      assert.equal(cancelled.status, 202);
      const began = Date.now();
      const past = await open(writer.bearer, "99999");
      assert.equal(past.status, 200);
      assert.equal(await past.text(), "retry: 2000\n\n");
      assert.ok(Date.now() - began < 2_000);
    });

    await t.step("4. MCP tool calls hold an in-flight slot for their whole wait", async () => {
      const runId = await startRun(setup, writer.bearer, [{ delayMs: 600_000 }], 2);
      const { json: page } = await call(server, "GET", `/v1/runs/${runId}/events`, writer.bearer);
      const sessionId = await openSession(server.url, writer.bearer);
      // 70 waits against the default quota of 64 slots: each holds its slot for 1.5 s.
      const outcomes = await Promise.all(Array.from({ length: 70 }, async (_, i) => {
        const response = await mcpFetch(server.url, {
          bearer: writer.bearer,
          sessionId,
          body: rpc(100 + i, "tools/call", {
            name: "run_events",
            arguments: { runId, after: page.nextAfter, waitMs: 1_500 },
          }),
        });
        if (response.status === 429) {
          await response.body?.cancel();
          return "refused";
        }
        const answer = await answerOf(response, 100 + i);
        return answer.result?.isError === true ? "refused" : "admitted";
      }));
      const admitted = outcomes.filter((outcome) => outcome === "admitted").length;
      assert.ok(admitted <= 64, `${admitted} admitted`);
      assert.ok(admitted >= 1);
      assert.equal(outcomes.length - admitted, outcomes.filter((o) => o === "refused").length);
      await call(server, "POST", `/v1/runs/${runId}/cancel`, writer.bearer);
    });

    await t.step("5. webhook intake: bodies capped and few verified at once", async () => {
      const head = (length: number) =>
        [
          "POST /webhooks/provider HTTP/1.1",
          "host: 127.0.0.1",
          "content-type: application/json",
          "webhook-id: msg_1",
          `webhook-timestamp: ${Math.floor(Date.now() / 1000)}`,
          "webhook-signature: v1,AAAA",
          `content-length: ${length}`,
          "",
          "",
        ].join("\r\n");
      const slow = [await RawConnection.open(server.port), await RawConnection.open(server.port)];
      try {
        for (const connection of slow) assert.ok(await connection.write(head(1_000) + "{"));
        await new Promise((resolve) => setTimeout(resolve, 200));
        const refused = await fetch(`${server.url}/webhooks/provider`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}",
        });
        assert.equal(refused.status, 429);
        assert.equal((await refused.json()).error.code, "resourceExhausted");
      } finally {
        for (const connection of slow) connection.close();
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      const large = await fetch(`${server.url}/webhooks/provider`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ pad: "x".repeat(70_000) }),
      });
      assert.equal(large.status, 413);
      assert.equal((await large.json()).error.code, "payloadTooLarge");
    });

    await t.step(
      "6. a run larger than its frame window reaches a late subscriber whole",
      async () => {
        // 500 messages of 10 KB: about 5 MB of frames, past the window's 4 MiB.
        const script = Array.from({ length: 500 }, (_, i) => ({
          type: "agent.message",
          content: [{ type: "text", text: `${i} ${"x".repeat(10_000)}` }],
        }));
        const runId = await startRun(setup, writer.bearer, script, 500);
        const response = await fetch(`${server.url}/v1/runs/${runId}/events`, {
          headers: sharedHeaders(writer.bearer, { accept: "text/event-stream" }),
        });
        assert.equal(response.status, 200);
        const text = await response.text();
        const seqs = [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));
        assert.ok(seqs.length >= 500, `${seqs.length} frames`);
        assert.deepEqual(seqs, seqs.map((_, i) => i + 1), "every frame once, in order");
        assert.match(text, /event: run\.completed/);
      },
    );

    await t.step(
      "7. 60 concurrent reads of an active run ask the provider once or twice",
      async () => {
        const runId = await startRun(setup, server.bearer, [
          { type: "agent.tool_use", name: "bash", input: {}, evaluated_permission: "ask" },
        ], 2);
        await new Promise((resolve) => setTimeout(resolve, 1_100));
        const count = () =>
          fake.requests.filter((request) =>
            request.method === "GET" &&
            (request.path === `/v1/sessions/${runId}` ||
              (request.path === `/v1/sessions/${runId}/events` && request.query === "limit=1000"))
          ).length;
        const before = count();
        // 60: within the in-flight quota of one principal (64).
        const reads = await Promise.all(Array.from({ length: 60 }, (_, i) =>
          call(
            server,
            "GET",
            i % 2 === 0 ? `/v1/runs/${runId}` : `/v1/runs/${runId}/pending`,
            server.bearer,
          )));
        for (const read of reads) assert.equal(read.status, 200, JSON.stringify(read.json));
        assert.ok(count() - before <= 4, `${count() - before} provider reads for 60 reads`);
      },
    );
  } finally {
    const code = await server.stop();
    await fake.close();
    assert.equal(code, 0, `serve exits cleanly:\n${server.logTail().slice(-20).join("\n")}`);
  }
});
