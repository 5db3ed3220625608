/**
 * How tools bind to the route table: a tool is offered only when its HTTP twin is in the
 * table, needs the twin's capability, and sends the twin its path, query and `Accept`; and
 * `run_events` with `waitMs` answers as soon as an event arrives, not at the end of its wait.
 * The twin here is a test route serving a JSON page from an array, standing in for the event
 * log's route (its own tests live with it).
 */
import assert from "node:assert/strict";
import { deriveBootstrapCredential } from "../../server/bootstrap/credential.ts";
import type { AuthenticatedPrincipal, RequestContext } from "../../server/context.ts";
import { createJsonLogger } from "../../server/log.ts";
import { McpToolset } from "../../server/mcp/tools.ts";
import type { RouteDefinition } from "../../server/router.ts";
import { createRuntimeServer } from "../../server/server.ts";
import { openKvStore } from "../../server/store/kv/mod.ts";
import { createPrincipalSchema } from "../../server/routes/principals.ts";
import { createPrincipalBody } from "../../server/schemas/principals.ts";
import { z } from "zod";

function principal(capabilities: AuthenticatedPrincipal["capabilities"]): AuthenticatedPrincipal {
  const expiresAtMs = Date.now() + 3_600_000;
  return {
    principalId: crypto.randomUUID(),
    capabilities,
    expiresAt: new Date(expiresAtMs).toISOString(),
    expiresAtMs,
    bootstrap: false,
  };
}

interface Seen {
  path: string;
  query: string;
  accept: string | null;
  runId: string;
}

function eventsRoute(events: { seq: number; type: string }[], seen: Seen[]): RouteDefinition {
  return {
    method: "GET",
    path: "/v1/runs/:runId/events",
    kind: "shared",
    capability: "session:read",
    handle(context: RequestContext): Response {
      seen.push({
        path: context.path,
        query: context.query,
        accept: context.request.headers.get("accept"),
        runId: context.params.runId,
      });
      const after = Number(new URLSearchParams(context.query).get("after") ?? "0");
      const page = events.filter((event) => event.seq > after);
      const last = page.at(-1);
      return Response.json({
        events: page,
        nextAfter: last?.seq ?? after,
        terminal: last?.type === "run.completed",
      });
    },
  };
}

async function withServer(
  fn: (services: ReturnType<typeof createRuntimeServer>["services"]) => Promise<void>,
) {
  const bootstrap = deriveBootstrapCredential({
    token: `art_${crypto.randomUUID().replaceAll("-", "")}${"B".repeat(11)}`,
    principalId: crypto.randomUUID(),
    capabilities: ["authority:admin"],
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    source: "environment",
  });
  const store = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
  const server = createRuntimeServer({
    bootstrap,
    store,
    cleanupIntervalMs: 0,
    logger: createJsonLogger({ write() {}, batchMs: 0 }),
  });
  try {
    await fn(server.services);
  } finally {
    await server.close();
    await store.close();
  }
}

Deno.test("a tool is offered only when its twin route is in the table", async () => {
  await withServer((services) => {
    const bare = new McpToolset(services, { routes: [] });
    assert.deepEqual(bare.list(principal(["session:read", "authority:admin"])), []);
    assert.equal(bare.has("run_events"), false);
    const tools = new McpToolset(services, { routes: [eventsRoute([], [])] });
    assert.deepEqual(tools.list(principal(["session:read"])).map((tool) => tool.name), [
      "run_events",
    ]);
    assert.deepEqual(tools.list(principal(["session:write"])), []);
    assert.equal(tools.has("run_start"), false);
    const schema = tools.list(principal(["session:read"]))[0].inputSchema;
    assert.deepEqual(schema.required, ["runId"]);
    assert.deepEqual(Object.keys(schema.properties ?? {}).sort(), [
      "after",
      "limit",
      "runId",
      "waitMs",
    ]);
    return Promise.resolve();
  });
});

Deno.test("run_events sends the twin its path, query and Accept; checks capability", async () => {
  await withServer(async (services) => {
    const seen: Seen[] = [];
    const tools = new McpToolset(services, {
      routes: [eventsRoute([{ seq: 1, type: "run.started" }], seen)],
    });
    const reader = principal(["session:read"]);
    const result = await tools.call("run_events", { runId: "sesn_1/x", after: 0, limit: 5 }, {
      principal: reader,
      correlationId: null,
      deadline: 0,
    });
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.deepEqual(result.structuredContent, {
      events: [{ seq: 1, type: "run.started" }],
      nextAfter: 1,
      terminal: false,
    });
    assert.deepEqual(seen, [{
      path: "/v1/runs/sesn_1%2Fx/events",
      query: "?after=0&limit=5",
      accept: "application/json",
      runId: "sesn_1/x",
    }]);
    const refused = await tools.call("run_events", { runId: "sesn_1" }, {
      principal: principal(["session:write"]),
      correlationId: null,
      deadline: 0,
    });
    assert.equal(refused.isError, true);
    const error = JSON.parse((refused.content[0] as { text: string }).text).error;
    assert.equal(error.code, "missingCapability");
    const tooLong = await tools.call("run_events", { runId: "sesn_1", waitMs: 30_001 }, {
      principal: reader,
      correlationId: null,
      deadline: 0,
    });
    assert.equal(
      JSON.parse((tooLong.content[0] as { text: string }).text).error.code,
      "invalidRequest",
    );
    assert.equal(seen.length, 1, "a refused call never reaches the route");
  });
});

Deno.test("run_events with waitMs answers when an event arrives, not at the end", async () => {
  await withServer(async (services) => {
    const events: { seq: number; type: string }[] = [{ seq: 1, type: "run.started" }];
    const seen: Seen[] = [];
    const tools = new McpToolset(services, { routes: [eventsRoute(events, seen)] });
    const reader = principal(["session:read"]);
    const call = { principal: reader, correlationId: null, deadline: 0 };

    const started = performance.now();
    const timer = setTimeout(() => events.push({ seq: 2, type: "run.completed" }), 1200);
    const result = await tools.call("run_events", { runId: "r", after: 1, waitMs: 20_000 }, call);
    clearTimeout(timer);
    const elapsed = performance.now() - started;
    assert.deepEqual((result.structuredContent as { events: unknown[] }).events, [
      { seq: 2, type: "run.completed" },
    ]);
    assert.equal((result.structuredContent as { terminal: boolean }).terminal, true);
    assert.ok(elapsed >= 1100, `waited for the event (${elapsed} ms)`);
    assert.ok(elapsed < 10_000, `answered long before the wait ended (${elapsed} ms)`);
    assert.ok(seen.length <= Math.ceil(elapsed / 1000) + 2, "re-read about once a second");

    const empty = performance.now();
    const none = await tools.call("run_events", { runId: "r", after: 2, waitMs: 1500 }, call);
    assert.deepEqual((none.structuredContent as { events: unknown[] }).events, []);
    assert.ok(performance.now() - empty >= 1400, "an empty page waits its waitMs");

    const controller = new AbortController();
    const aborted = performance.now();
    setTimeout(() => controller.abort(), 200);
    await tools.call("run_events", { runId: "r", after: 2, waitMs: 20_000 }, {
      ...call,
      signal: controller.signal,
    });
    assert.ok(performance.now() - aborted < 10_000, "a cancelled call stops waiting");
  });
});

Deno.test("a waiting run_events stops once its caller is no longer valid", async () => {
  await withServer(async (services) => {
    let valid = true;
    const tools = new McpToolset(services, {
      routes: [eventsRoute([], [])],
      isPrincipalValid: () => Promise.resolve(valid),
    });
    setTimeout(() => valid = false, 300);
    const started = performance.now();
    const result = await tools.call("run_events", { runId: "r", waitMs: 25_000 }, {
      principal: principal(["session:read"]),
      correlationId: null,
      deadline: 0,
    });
    assert.deepEqual((result.structuredContent as { events: unknown[] }).events, []);
    assert.ok(performance.now() - started < 10_000, "revocation ends the wait");
  });
});

Deno.test("a tool's input schema is its route's body schema, plus its own arguments", async () => {
  await withServer(async (services) => {
    const tools = new McpToolset(services);
    const issue = tools.list(principal(["authority:admin"]))
      .find((tool) => tool.name === "principal_issue")!;
    const { $schema: _dialect, ...body } = z.toJSONSchema(createPrincipalBody, { io: "input" });
    const { idempotencyKey, ...fields } = issue.inputSchema.properties ?? {};
    assert.deepEqual(fields, body.properties);
    assert.deepEqual(issue.inputSchema.required, body.required);
    assert.equal((idempotencyKey as { type: string }).type, "string");
    // The route validates with that very schema, loaded on its first body.
    assert.equal(await createPrincipalSchema.load(), createPrincipalBody);
  });
});
