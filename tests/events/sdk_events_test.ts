/**
 * The SDK over a real (in-process, served over HTTP) gateway: `client.runs.events` follows a run
 * to its end, resumes after `after`, reconnects by itself when the server ends its stream, and
 * `streamRun` of the `runtime-service` provider module works like a provider's.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createRuntimeServiceProviderModule, RuntimeServiceClient } from "../../sdk/mod.ts";
import type { RunStreamEvent } from "../../client/contract.ts";
import { type Gateway, startGateway } from "../gateway/_harness.ts";

/** Serves the gateway over HTTP; `cut()` breaks every SSE response in flight. */
function serve(gateway: Gateway): { url: string; cut(): void; close(): Promise<void> } {
  const cutters = new Set<() => void>();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const response = await gateway.server.handler(request);
      if (!response.headers.get("content-type")?.startsWith("text/event-stream")) return response;
      const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
      const controller = new AbortController();
      const cut = () => controller.abort();
      cutters.add(cut);
      response.body!.pipeTo(writable, { signal: controller.signal }).catch(() => {})
        .finally(() => cutters.delete(cut));
      return new Response(readable, response);
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    cut: () => {
      for (const cut of [...cutters]) cut();
    },
    close: async () => {
      await server.shutdown();
    },
  };
}

function slowScript(gateway: Gateway, count: number, gapMs: number): void {
  gateway.fake.managedAgents!.script = ({ text }) =>
    Array.from({ length: count }, (_, i) => [
      { delayMs: gapMs },
      { type: "agent.message", content: [{ type: "text", text: `${text} ${i + 1}` }] },
    ]).flat();
}

Deno.test("sdk: runs.events yields the whole run in order, and resumes after `after`", async () => {
  const gateway = await startGateway();
  const http = serve(gateway);
  try {
    slowScript(gateway, 3, 50);
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const client = new RuntimeServiceClient({ baseUrl: http.url, token: bearer });
    const run = await client.runs.start({ input: "count" });
    const events = [];
    for await (const event of client.runs.events(run.runId)) events.push(event);
    assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1));
    assert.equal(events[0].type, "run.started");
    assert.equal(events.at(-1)!.type, "run.completed");
    const resumed = [];
    for await (const event of client.runs.events(run.runId, { after: 2 })) resumed.push(event);
    assert.deepEqual(resumed, events.slice(2));
    // After the terminal event of a finished run, the iterator ends without waiting.
    const none = [];
    for await (const event of client.runs.events(run.runId, { after: events.at(-1)!.seq })) {
      none.push(event);
    }
    assert.deepEqual(none, []);
    const page = await client.runs.eventPage(run.runId, { after: 0, limit: 2 });
    assert.deepEqual(page.events, events.slice(0, 2));
  } finally {
    await http.close();
    await gateway.close();
  }
});

Deno.test("sdk: runs.events reconnects when the server ends its stream, skipping and repeating nothing", async () => {
  const gateway = await startGateway();
  const http = serve(gateway);
  try {
    slowScript(gateway, 8, 60);
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const client = new RuntimeServiceClient({ baseUrl: http.url, token: bearer });
    const run = await client.runs.start({ input: "n" });
    const seen = [];
    let cut = false;
    for await (const event of client.runs.events(run.runId)) {
      seen.push(event.seq);
      if (!cut && seen.length === 3) {
        cut = true;
        // The connection breaks mid-run, and the provider drops the tail's stream as well.
        gateway.fake.dropNextStream({ afterFrames: 1 });
        http.cut();
      }
    }
    assert.ok(cut);
    assert.deepEqual(seen, seen.map((_, i) => i + 1));
    const all = await client.runs.eventPage(run.runId, { limit: 500 });
    assert.equal(seen.length, all.events.length);
  } finally {
    await http.close();
    await gateway.close();
  }
});

Deno.test("sdk: streamRun of the runtime-service module hands every event to onEvent", async () => {
  const gateway = await startGateway();
  const http = serve(gateway);
  try {
    slowScript(gateway, 2, 40);
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const client = createRuntimeServiceProviderModule({ baseUrl: http.url, token: bearer })
      .createClient();
    assert.equal(client.getRuntimeCapabilities().streaming, true);
    const events: RunStreamEvent[] = [];
    const result = await client.streamRun({ input: "go" }, {
      onEvent: (event) => void events.push(event),
    });
    assert.equal(result.terminal?.type, "run.completed");
    assert.equal(events[0].type, "run.started");
    assert.deepEqual(
      events.filter((e) => e.type === "message.completed").map((e) => (e as { text: string }).text),
      ["go 1", "go 2"],
    );
    assert.ok(events.every((e) => !("seq" in e) && e.runId === result.runId));
  } finally {
    await http.close();
    await gateway.close();
  }
});

Deno.test("sdk: runs.activity follows changes from now, resumes after a cut without gap or repeat; runs.inbox lists the waiting request", async () => {
  const gateway = await startGateway();
  const http = serve(gateway);
  try {
    gateway.fake.managedAgents!.script = () => [
      {
        type: "agent.tool_use",
        name: "bash",
        input: { command: "ls" },
        evaluated_permission: "ask",
      },
    ];
    const writer = await gateway.issue(["session:read", "session:write"]);
    const approver = await gateway.issue(["session:read", "session:approve"]);
    const client = new RuntimeServiceClient({ baseUrl: http.url, token: approver.bearer });
    const own = new RuntimeServiceClient({ baseUrl: http.url, token: writer.bearer });
    const before = await own.runs.start({ input: "before" });
    // Wait until the first run's changes are in: the feed starts after them.
    for (;;) {
      if ((await client.runs.inbox()).pending.length === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const stop = new AbortController();
    const seen: { seq: number; type: string; runId: string }[] = [];
    const following = (async () => {
      try {
        for await (const change of client.runs.activity({ signal: stop.signal })) {
          seen.push({ seq: change.seq, type: change.type, runId: change.runId });
          if (seen.filter((c) => c.type === "tool.pending").length === 1) http.cut();
          if (change.type === "tool.answered") stop.abort();
        }
      } catch (error) {
        if (!stop.signal.aborted) throw error;
      }
    })();
    // Give the iterator its start (it reads the inbox's activitySeq, then opens the stream).
    await new Promise((resolve) => setTimeout(resolve, 200));
    const after = await own.runs.start({ input: "after", title: "second" });
    let waiting;
    for (;;) {
      waiting = (await client.runs.inbox()).pending.find((item) => item.runId === after.runId);
      if (waiting !== undefined) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(waiting.title, "second");
    assert.equal(waiting.principalId, writer.principalId);
    await client.runs.confirmTool(after.runId, { toolUseId: waiting.toolUseId, result: "allow" });
    await following;
    assert.ok(seen.every((change) => change.runId === after.runId), "nothing from before");
    assert.deepEqual(seen.map((c) => c.seq), seen.map((_, i) => seen[0].seq + i));
    assert.equal(seen[0].type, "run.created");
    assert.ok(seen.some((c) => c.type === "tool.pending"));
    assert.notEqual(before.runId, after.runId);
    const page = await client.runs.activityPage({ after: seen[0].seq - 1, limit: 1 });
    assert.equal(page.events[0].seq, seen[0].seq);
  } finally {
    await http.close();
    await gateway.close();
  }
});
