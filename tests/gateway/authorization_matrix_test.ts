/**
 * The authorization matrix: a scoped principal reaches nothing outside its capabilities and its
 * policy, on every interface, derived from the tables that make the interfaces so that a new route,
 * operation or tool cannot escape it.
 *
 * - `/v1` (the route table, `defaultRouteTable()`): every gated route refuses a principal without
 *   its capability with 403 `missingCapability` naming it, and nothing happens; every route taking
 *   an id answers a principal that holds the capability but does not own the resource exactly as
 *   it answers an id that does not exist; no list, count, message or notification shows a
 *   stranger another principal's runs, requests, subscriptions, deliveries or usage.
 * - `/provider` (the operation table): the same for each operation, in the provider's error shape;
 *   agents and environments outside the policy are not found and not listed.
 * - MCP (the tool catalogue): each principal is listed exactly the tools of its capabilities, a
 *   tool it lacks is refused, and a stranger's run is `runNotFound` like one that does not exist.
 *
 * One gateway serves all three; the principals are shared. One concept (the matrix) over one
 * setup, so one file, though it is longer than most.
 */
import assert from "node:assert/strict";
import { ProviderManagedAgentClient } from "../../client/mod.ts";
import { TOOL_CATALOG } from "../../server/mcp/tool_catalog.ts";
import { NATIVE_OPERATIONS, NATIVE_PREFIX, NATIVE_RULES } from "../../server/native/operations.ts";
import { defaultRouteTable } from "../../server/openapi/table.ts";
import type { RouteDefinition } from "../../server/router.ts";
import type { Capability } from "../../server/store/types.ts";
import { answerOf, mcpFetch, openSession, rpc } from "../mcp/_mcp.ts";
import { sharedHeaders } from "../support/server.ts";
import { type Answer, waitFor } from "./_harness.ts";
import { gatewayWith, receiver, subscribe } from "./_notifications.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const READ: Capability = "session:read";
const WRITE: Capability = "session:write";
const APPROVE: Capability = "session:approve";
const ADMIN: Capability = "authority:admin";

/**
 * Routes without a capability, each with the reason; any other route must name one, so a new
 * route that names none fails here until it is added with its reason.
 */
const UNGATED: Readonly<Record<string, string>> = {
  "GET /healthz": "public health",
  "HEAD /healthz": "public health",
  "GET /openapi.json": "public document",
  "GET /console": "the console's static page",
  "GET /console/": "the console's static page",
  "GET /console/:version/:file": "the console's static files",
  "POST /webhooks/provider": "signed by the provider",
  "POST /v1/token-exchange": "the body's ID token is the credential",
  "GET /v1/mcp": "per tool: the MCP section below",
  "POST /v1/mcp": "per tool: the MCP section below",
  "DELETE /v1/mcp": "per tool: the MCP section below",
  "OPTIONS /v1/mcp": "preflight or 405",
  "PUT /v1/mcp": "405",
  "PATCH /v1/mcp": "405",
  "HEAD /v1/mcp": "405",
};

/**
 * Who besides its owner may act on a resource a route names by id, as the docs grant it: `read`
 * (approvers and admins too), `approve` (any holder of the capability: tool confirmations answer
 * any run's), `own` (its owner and admins), `admin` (the capability is admin-only).
 */
const ACCESS: Readonly<Record<string, "read" | "own" | "approve" | "admin">> = {
  "DELETE /v1/principals/:principalId": "admin",
  "GET /v1/runs/:runId": "read",
  "POST /v1/runs/:runId/cancel": "own",
  "POST /v1/runs/:runId/messages": "own",
  "GET /v1/runs/:runId/events": "read",
  "GET /v1/runs/:runId/pending": "read",
  "GET /v1/runs/:runId/answers": "read",
  "POST /v1/runs/:runId/tool-confirmations": "approve",
  "POST /v1/runs/:runId/custom-tool-results": "own",
  "GET /v1/webhook-subscriptions/:subscriptionId": "own",
  "DELETE /v1/webhook-subscriptions/:subscriptionId": "own",
  "POST /v1/webhook-subscriptions/:subscriptionId/rotate-secret": "own",
  "GET /v1/webhook-subscriptions/:subscriptionId/deliveries": "own",
  "POST /v1/webhook-subscriptions/:subscriptionId/deliveries/:deliveryId/redeliver": "own",
  "DELETE /v1/trust-policies/:name": "admin",
};

/** The list routes and what of the owner's a stranger must never find in them. */
const LISTS: readonly string[] = [
  "GET /v1/runtime",
  "GET /v1/runs",
  "GET /v1/pending",
  "GET /v1/activity",
  "GET /v1/usage",
  "GET /v1/webhook-subscriptions",
];

const TRUST_POLICY = {
  issuer: "https://token.actions.githubusercontent.com",
  audience: "https://runtime.example",
  claims: { repository: "acme/tools" },
  capabilities: [READ],
  ttlSeconds: 600,
};

const key = (route: { method: string; path: string }) => `${route.method} ${route.path}`;

/** A path with its `:name` parameters filled from `ids` (unknown names fail the test). */
function fill(path: string, ids: Readonly<Record<string, string>>): string {
  return path.replace(/:(\w+)/g, (_, name: string) => {
    assert.ok(name in ids, `no id for the parameter ${name} of ${path}`);
    return encodeURIComponent(ids[name]);
  });
}

/** Same shape, another value: an id that does not exist. */
function missing(id: string): string {
  const cut = id.lastIndexOf("_");
  const prefix = cut === -1 ? "" : id.slice(0, cut + 1);
  const tail = crypto.randomUUID().replaceAll("-", "");
  return prefix + tail.slice(0, Math.max(8, id.length - prefix.length));
}

/** A refusal's comparable shape: status and the error body without its correlation id. */
function refusal(answer: { status: number; json: Json }): Json {
  const error = answer.json?.error;
  if (typeof error !== "object" || error === null) return { status: answer.status, body: null };
  const { correlationId: _, ...rest } = error;
  return { status: answer.status, error: rest };
}

/** A native refusal's comparable shape: status, error type, message and code. */
function nativeRefusal(answer: { status: number; json: Json }): Json {
  return {
    status: answer.status,
    type: answer.json?.error?.type,
    message: answer.json?.error?.message,
    details: answer.json?.error?.details,
  };
}

Deno.test("authorization matrix: every route, operation and tool keeps a scoped principal inside its policy", async (t) => {
  const ownerHook = receiver();
  const strangerHook = receiver();
  const gateway = await gatewayWith({
    webhookSecrets: ["whsec_" + btoa(crypto.randomUUID())],
    maxActiveRuns: 50,
  });
  try {
    const table = await defaultRouteTable();
    const shared = table.filter((route) => route.kind !== "provider");

    // The principals, shared by every section.
    const policy = { agentIds: [gateway.agentId], environmentIds: [gateway.environmentId] };
    const owner = await gateway.issue([READ, WRITE], policy);
    const stranger = await gateway.issue([READ, WRITE], policy);
    const approver = await gateway.issue([READ, WRITE, APPROVE], policy);
    const reader = await gateway.issue([READ], policy);
    const writer = await gateway.issue([WRITE], policy);
    /** A principal without the capability (issued principals never hold admin). */
    const lacking: Record<Capability, { bearer: string; principalId: string }> = {
      [READ]: writer,
      [WRITE]: reader,
      [APPROVE]: stranger,
      [ADMIN]: approver,
    };

    // The owner's resources: a subscription (and the stranger's), a run waiting on a tool
    // confirmation (a session on /provider, too), and a delivery of its event.
    const ownerSub = await subscribe(gateway, owner.bearer, {
      url: ownerHook.url,
      events: ["run.requires_action", "run.completed"],
    });
    const strangerSub = await subscribe(gateway, stranger.bearer, {
      url: strangerHook.url,
      events: ["run.requires_action", "run.completed"],
    });
    gateway.fake.managedAgents!.script = () => [
      { type: "agent.tool_use", name: "bash", input: {}, evaluated_permission: "ask" },
    ];
    const started = await gateway.request("POST", "/v1/runs", {
      bearer: owner.bearer,
      body: { input: "go", title: "owner's run" },
    });
    assert.equal(started.status, 201, started.text);
    const runId: string = started.json.runId;
    const toolUseId = gateway.fake.managedAgents!.sessions.get(runId)!.events
      .find((event) => event.type === "agent.tool_use")!.id as string;
    const delivery = await waitFor(async () => {
      const page = await gateway.request(
        "GET",
        `/v1/webhook-subscriptions/${ownerSub.subscriptionId}/deliveries`,
        { bearer: owner.bearer },
      );
      return page.json.deliveries.find((d: Json) => d.state === "delivered");
    });
    const deliveryId: string = delivery.deliveryId;
    const trust = await gateway.request("POST", "/v1/trust-policies", {
      body: { ...TRUST_POLICY, name: "matrix" },
    });
    assert.equal(trust.status, 201, trust.text);

    /** The owner's ids by parameter name; `missing(...)` of each does not exist. */
    const ids: Record<string, string> = {
      runId,
      subscriptionId: ownerSub.subscriptionId,
      deliveryId,
      principalId: owner.principalId,
      name: "matrix",
    };
    const absent: Record<string, string> = Object.fromEntries(
      Object.entries(ids).map(([name, id]) => [name, missing(id)]),
    );
    /** Every text a stranger must never be shown. */
    const secrets = [runId, owner.principalId, ownerSub.subscriptionId, deliveryId, toolUseId];
    /** A valid body per POST route, so that authorization, not the body, decides. */
    const bodies: Record<string, unknown> = {
      "POST /v1/principals": {
        principalId: crypto.randomUUID(),
        capabilities: [READ],
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      },
      "POST /v1/runs": { input: "x" },
      "POST /v1/runs/:runId/cancel": undefined,
      "POST /v1/runs/:runId/messages": { input: "more" },
      "POST /v1/runs/:runId/tool-confirmations": { toolUseId, result: "allow" },
      "POST /v1/runs/:runId/custom-tool-results": {
        toolUseId,
        content: [{ type: "text", text: "ok" }],
      },
      "POST /v1/webhook-subscriptions": { url: strangerHook.url, events: ["run.completed"] },
      "POST /v1/webhook-subscriptions/:subscriptionId/rotate-secret": undefined,
      "POST /v1/webhook-subscriptions/:subscriptionId/deliveries/:deliveryId/redeliver": undefined,
      "POST /v1/trust-policies": { ...TRUST_POLICY, name: "other" },
    };

    /** What a refused request must not have changed. */
    const effects = async () => ({
      // The run's tail reads its events in the background; anything else is a request's doing.
      provider: gateway.fake.requests.filter((r) =>
        !(r.method === "GET" && /^\/v1\/sessions\/[^/]+\/(events|stream)/.test(r.path))
      ).map((r) => `${r.method} ${r.path}`),
      audit: (await gateway.store.audit.list({ limit: 500 })).entries.length,
      run: JSON.stringify(await gateway.store.runs.get(runId)),
      subscriptions: JSON.stringify(
        (await gateway.request("GET", "/v1/webhook-subscriptions")).json.subscriptions,
      ),
    });
    const call = (route: RouteDefinition, bearer: string, values: Record<string, string>) =>
      gateway.request(route.method, fill(route.path, values), {
        bearer,
        body: bodies[key(route)],
      });
    /** What each principal other than the owner holds. */
    const holds = new Map<string, readonly Capability[]>([
      [stranger.bearer, [READ, WRITE]],
      [approver.bearer, [READ, WRITE, APPROVE]],
      [reader.bearer, [READ]],
      [writer.bearer, [WRITE]],
    ]);
    /** Answers given to principals other than the owner and the admin, for the leak check. */
    const seen: { where: string; text: string }[] = [];
    const watch = (where: string, answer: Answer) => {
      seen.push({ where, text: answer.text });
      return answer;
    };

    /** A request under `/provider` (a stream's body is dropped unread). */
    const native = async (
      method: string,
      path: string,
      bearer: string,
      body?: unknown,
      headers: Record<string, string> = {},
    ): Promise<{ status: number; json: Json; text: string }> => {
      const response = await gateway.server.handler(
        new Request(`http://127.0.0.1${NATIVE_PREFIX}${path}`, {
          method,
          headers: {
            "x-api-key": bearer,
            ...(body === undefined ? {} : { "content-type": "application/json" }),
            ...headers,
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      );
      if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
        await response.body?.cancel();
        return { status: response.status, json: undefined, text: "" };
      }
      const text = await response.text();
      if (holds.has(bearer)) seen.push({ where: `${method} ${path}`, text });
      return { status: response.status, json: text === "" ? undefined : JSON.parse(text), text };
    };

    await t.step("the harness serves exactly the default route table", () => {
      assert.deepEqual(
        gateway.server.routes.map(key).sort(),
        table.map(key).sort(),
      );
    });

    await t.step("/v1: every route names a capability or a reason not to", () => {
      for (const route of shared) {
        const name = key(route);
        if (route.capability === undefined) {
          assert.ok(name in UNGATED, `${name} names no capability and no reason`);
        } else {
          assert.ok(!(name in UNGATED), `${name} is gated; drop it from UNGATED`);
          if (route.path.includes("/:")) assert.ok(name in ACCESS, `${name}: who may act on it?`);
          if (route.method === "POST") assert.ok(name in bodies, `${name}: no body given`);
          if (
            route.method === "GET" && !route.path.includes("/:") && route.capability !== ADMIN
          ) assert.ok(LISTS.includes(name), `${name}: a list a stranger reads, not checked`);
        }
      }
      for (const name of [...Object.keys(UNGATED), ...Object.keys(ACCESS), ...LISTS]) {
        assert.ok(shared.some((route) => key(route) === name), `${name} is no route any more`);
      }
    });

    await t.step(
      "/v1: without the capability, 403 missingCapability and nothing happens",
      async () => {
        for (const route of shared) {
          if (route.capability === undefined) continue;
          const caller = lacking[route.capability];
          const before = await effects();
          const real = watch(key(route), await call(route, caller.bearer, ids));
          const none = watch(key(route), await call(route, caller.bearer, absent));
          assert.equal(real.status, 403, `${key(route)}: ${real.text}`);
          assert.equal(real.json.error.code, "missingCapability", key(route));
          assert.equal(real.json.error.requiredCapability, route.capability, key(route));
          assert.deepEqual(refusal(real), refusal(none), `${key(route)}: an id's existence shows`);
          assert.deepEqual(await effects(), before, `${key(route)} had an effect`);
        }
      },
    );

    await t.step(
      "/v1: another principal's resource answers as one that does not exist",
      async () => {
        for (const route of shared) {
          const access = ACCESS[key(route)];
          if (
            route.capability === undefined || access === undefined || access === "admin"
          ) continue;
          const callers = access === "own" ? [stranger, approver] : [stranger];
          for (const caller of callers) {
            if (access === "approve") continue; // any approver answers any run's confirmations
            const before = await effects();
            const real = watch(key(route), await call(route, caller.bearer, ids));
            const none = watch(key(route), await call(route, caller.bearer, absent));
            assert.equal(real.status, 404, `${key(route)}: ${real.text}`);
            assert.deepEqual(refusal(real), refusal(none), `${key(route)}: the resource shows`);
            assert.deepEqual(await effects(), before, `${key(route)} had an effect`);
          }
        }
        // A delivery of another's subscription, named under the caller's own subscription.
        const crossed = watch(
          "redeliver",
          await gateway.request(
            "POST",
            `/v1/webhook-subscriptions/${strangerSub.subscriptionId}/deliveries/${deliveryId}/redeliver`,
            { bearer: stranger.bearer },
          ),
        );
        const nowhere = await gateway.request(
          "POST",
          `/v1/webhook-subscriptions/${strangerSub.subscriptionId}/deliveries/${
            missing(deliveryId)
          }/redeliver`,
          { bearer: stranger.bearer },
        );
        assert.deepEqual(refusal(crossed), refusal(nowhere), crossed.text);
        assert.equal(crossed.status, 404);
        // The run's event stream, too.
        const stream = (id: string) =>
          gateway.request("GET", `/v1/runs/${id}/events`, {
            bearer: stranger.bearer,
            headers: { accept: "text/event-stream" },
          });
        const streamed = watch("events stream", await stream(runId));
        assert.equal(streamed.status, 404, streamed.text);
        assert.deepEqual(refusal(streamed), refusal(await stream(missing(runId))));
        // Where the docs grant it, approvers read another's run.
        for (const path of ["", "/pending", "/answers", "/events"]) {
          const read = await gateway.request("GET", `/v1/runs/${runId}${path}`, {
            bearer: approver.bearer,
          });
          assert.equal(read.status, 200, `approver reads ${path}: ${read.text}`);
        }
      },
    );

    await t.step(
      "/v1: lists, counts and filters show a stranger nothing of the owner's",
      async () => {
        for (const name of LISTS) {
          const path = name.split(" ")[1];
          const listed = watch(
            name,
            await gateway.request("GET", path, { bearer: stranger.bearer }),
          );
          assert.equal(listed.status, 200, `${name}: ${listed.text}`);
        }
        // An approver reads every run, but another's subscriptions and usage are not its.
        for (const path of ["/v1/webhook-subscriptions", "/v1/usage"]) {
          const listed = await gateway.request("GET", path, { bearer: approver.bearer });
          assert.equal(listed.status, 200, listed.text);
          for (const id of [owner.principalId, ownerSub.subscriptionId]) {
            assert.ok(!listed.text.includes(id), `${path} shows an approver ${id}`);
          }
        }
        // The owner sees its own in the same lists, so the lists are not empty by accident.
        const own = await gateway.request("GET", "/v1/pending", { bearer: owner.bearer });
        assert.ok(own.text.includes(toolUseId), own.text);
        const ownRuns = await gateway.request("GET", "/v1/runs", { bearer: owner.bearer });
        assert.ok(ownRuns.text.includes(runId), ownRuns.text);
        const ownActivity = await gateway.request("GET", "/v1/activity", { bearer: owner.bearer });
        assert.ok(ownActivity.text.includes(runId), ownActivity.text);
        // Naming the owner in a filter answers as naming nobody.
        for (const path of ["/v1/runs", "/v1/usage"]) {
          const named = watch(
            path,
            await gateway.request("GET", `${path}?principalId=${owner.principalId}`, {
              bearer: stranger.bearer,
            }),
          );
          const nobody = await gateway.request(
            "GET",
            `${path}?principalId=${crypto.randomUUID()}`,
            { bearer: stranger.bearer },
          );
          assert.deepEqual(refusal(named), refusal(nobody), `${path}: ${named.text}`);
          if (named.status === 200) assert.deepEqual(named.json, nobody.json, path);
        }
        // The same idempotency key as the owner's never replays the owner's answer.
        const shareKey = crypto.randomUUID();
        for (
          const [path, body] of [["/v1/runs", { input: "k" }], ["/v1/webhook-subscriptions", {
            url: strangerHook.url,
            events: ["run.failed"],
          }]] as const
        ) {
          const first = await gateway.request("POST", path, {
            bearer: owner.bearer,
            key: shareKey,
            body,
          });
          assert.equal(first.status, 201, first.text);
          const again = watch(
            path,
            await gateway.request("POST", path, {
              bearer: stranger.bearer,
              key: shareKey,
              body,
            }),
          );
          assert.equal(again.status, 201, again.text);
          assert.equal(again.headers.get("idempotent-replayed"), null, path);
          assert.equal(again.json.principalId, stranger.principalId, path);
          secrets.push(first.json.runId ?? first.json.subscriptionId);
        }
        // The activity stream from the start: the stranger's own run comes, the owner's never.
        const response = await gateway.server.handler(
          new Request("http://127.0.0.1/v1/activity?after=0", {
            headers: sharedHeaders(stranger.bearer, { accept: "text/event-stream" }),
          }),
        );
        assert.equal(response.status, 200);
        const ownRun = (await gateway.request("GET", "/v1/runs", { bearer: stranger.bearer })).json
          .runs[0].runId;
        const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
        let frames = "";
        try {
          while (!frames.includes(ownRun)) {
            const { done, value } = await reader.read();
            if (done) break;
            frames += value;
          }
        } finally {
          await reader.cancel();
        }
        assert.ok(frames.includes(ownRun), "the stranger's own run reached its stream");
        seen.push({ where: "activity stream", text: frames });
        // The stranger's subscription got nothing of the owner's run; the owner's did.
        assert.ok(ownerHook.requests.some((r) => r.body.includes(runId)));
        watch(
          "deliveries",
          await gateway.request(
            "GET",
            `/v1/webhook-subscriptions/${strangerSub.subscriptionId}/deliveries`,
            { bearer: stranger.bearer },
          ),
        );
      },
    );

    await t.step("/provider: every operation by capability and by owner", async () => {
      const nativeIds: Record<string, string> = {
        sessionId: runId,
        threadId: "sthr_01matrix",
        agentId: gateway.agentId,
        environmentId: gateway.environmentId,
      };
      const other = (name: string) => `${name.replace(/Id$/, "")}_01matrix`;
      const idsOf = (path: string, values: Record<string, string>) =>
        Object.fromEntries(
          [...path.matchAll(/:(\w+)/g)].map(([, name]) => [name, values[name] ?? other(name)]),
        );
      const bodyOf = (access: string) =>
        access === "createSession"
          ? { agent: gateway.agentId, environment_id: gateway.environmentId }
          : access === "sendEvents"
          ? { events: [{ type: "user.message", content: [{ type: "text", text: "x" }] }] }
          : undefined;

      const providerRoutes = table.filter((route) => route.kind === "provider").map(key).sort();
      assert.deepEqual(
        providerRoutes,
        NATIVE_OPERATIONS.map((op) => `${op.method} ${NATIVE_PREFIX}${op.path}`).sort(),
      );

      for (const op of NATIVE_OPERATIONS) {
        const name = `${op.method} ${op.path}`;
        const capability = NATIVE_RULES[op.access].capability;
        const body = bodyOf(op.access) ?? (op.method === "POST" ? {} : undefined);
        if (capability !== undefined) {
          const before = await effects();
          const refused = await native(
            op.method,
            fill(op.path, idsOf(op.path, nativeIds)),
            lacking[capability].bearer,
            body,
          );
          assert.equal(refused.status, 403, `${name}: ${refused.text}`);
          assert.equal(refused.json.error.type, "permission_error", name);
          assert.deepEqual(await effects(), before, `${name} had an effect`);
        }
        if (!op.path.includes(":sessionId")) continue;
        // A session of another principal is not found, exactly as one that does not exist.
        const own = op.access === "getSession" || op.access === "listEvents" ||
            op.access === "streamEvents" || op.access === "thread" ||
            op.access === "threadStream"
          ? [stranger]
          : [stranger, approver];
        for (const caller of own) {
          if (capability !== undefined && !holds.get(caller.bearer)!.includes(capability)) continue;
          const before = await effects();
          const real = await native(
            op.method,
            fill(op.path, idsOf(op.path, nativeIds)),
            caller.bearer,
            body,
          );
          const none = await native(
            op.method,
            fill(op.path, idsOf(op.path, { ...nativeIds, sessionId: missing(runId) })),
            caller.bearer,
            body,
          );
          assert.equal(real.status, 404, `${name}: ${real.text}`);
          assert.deepEqual(nativeRefusal(real), nativeRefusal(none), `${name}: the session shows`);
          assert.deepEqual(await effects(), before, `${name} had an effect`);
        }
      }

      const setup = new ProviderManagedAgentClient({
        baseUrl: gateway.fake.baseUrl,
        apiKey: gateway.providerKey,
      });
      const outsideEnvironment = (await setup.createEnvironment({ name: "outside" })).id as string;
      // Agents and environments outside the policy: not found like ones that do not exist, and
      // not listed.
      for (
        const [path, allowed, outside] of [
          ["/v1/agents/:id", gateway.agentId, gateway.otherAgentId],
          ["/v1/agents/:id/versions", gateway.agentId, gateway.otherAgentId],
          ["/v1/environments/:id", gateway.environmentId, outsideEnvironment],
        ] as const
      ) {
        const ok = await native("GET", fill(path, { id: allowed }), stranger.bearer);
        assert.equal(ok.status, 200, `${path}: ${ok.text}`);
        const before = await effects();
        const real = await native("GET", fill(path, { id: outside }), stranger.bearer);
        const none = await native("GET", fill(path, { id: missing(outside) }), stranger.bearer);
        assert.equal(real.status, 404, `${path}: ${real.text}`);
        assert.deepEqual(nativeRefusal(real), nativeRefusal(none), path);
        assert.deepEqual(await effects(), before, `${path} asked the provider`);
      }
      const agents = await native("GET", "/v1/agents", stranger.bearer);
      assert.deepEqual(agents.json.data.map((a: Json) => a.id), [gateway.agentId]);
      const environments = await native("GET", "/v1/environments", stranger.bearer);
      assert.deepEqual(environments.json.data.map((e: Json) => e.id), [gateway.environmentId]);
      // The owner's idempotency key opens a session of the stranger's own.
      const sharedKey = crypto.randomUUID();
      const create = async (bearer: string) => {
        const created = await native("POST", "/v1/sessions", bearer, bodyOf("createSession"), {
          "idempotency-key": sharedKey,
        });
        assert.equal(created.status, 200, created.text);
        return created.json.id as string;
      };
      const ownerSession = await create(owner.bearer);
      secrets.push(ownerSession);
      const strangerSession = await create(stranger.bearer);
      assert.notEqual(strangerSession, ownerSession);
      const sessions = await native("GET", "/v1/sessions", stranger.bearer);
      assert.equal(sessions.status, 200, sessions.text);
      const mine = await native("GET", "/v1/sessions", owner.bearer);
      assert.ok(mine.text.includes(runId), "the owner lists its session");
    });

    await t.step(
      "MCP: each principal sees exactly its tools; a stranger's run is not found",
      async () => {
        const handler = (request: Request) => gateway.server.handler(request);
        const capabilityOf = new Map(
          TOOL_CATALOG.map((tool) => [
            tool.name,
            shared.find((route) => route.method === tool.method && route.path === tool.path)
              ?.capability,
          ]),
        );
        let id = 1;
        const tools = async (bearer: string, sessionId: string, method: string, params = {}) => {
          const response = await mcpFetch(handler, {
            bearer,
            sessionId,
            body: rpc(++id, method, params),
          });
          assert.equal(response.status, 200);
          const answer = await answerOf(response, id);
          if (holds.has(bearer)) {
            seen.push({ where: `mcp ${method}`, text: JSON.stringify(answer) });
          }
          return answer;
        };
        const sessions = new Map<string, string>();
        const sessionOf = async (bearer: string) => {
          if (!sessions.has(bearer)) {
            sessions.set(bearer, await openSession(handler, bearer));
          }
          return sessions.get(bearer)!;
        };
        const caps: [{ bearer: string }, Capability[]][] = [
          [reader, [READ]],
          [writer, [WRITE]],
          [stranger, [READ, WRITE]],
          [approver, [READ, WRITE, APPROVE]],
          [{ bearer: gateway.admin }, [READ, WRITE, APPROVE, ADMIN]],
        ];
        for (const [caller, held] of caps) {
          const listed = await tools(caller.bearer, await sessionOf(caller.bearer), "tools/list");
          const expected = TOOL_CATALOG.filter((tool) => {
            const capability = capabilityOf.get(tool.name);
            return capability !== undefined && held.includes(capability);
          }).map((tool) => tool.name);
          assert.deepEqual(
            listed.result.tools.map((tool: Json) => tool.name).sort(),
            expected.sort(),
          );
        }
        // An MCP session is its principal's: another's id answers as an unknown one, unharmed.
        const ownerSession = await sessionOf(owner.bearer);
        for (const method of ["POST", "GET", "DELETE"]) {
          const answer = async (sessionId: string) => {
            const response = await mcpFetch(handler, {
              method,
              bearer: stranger.bearer,
              sessionId,
              body: method === "POST" ? rpc(1, "tools/list") : undefined,
            });
            const text = response.status === 200 ? "" : await response.text();
            if (response.status === 200) await response.body?.cancel();
            return { status: response.status, text };
          };
          const real = await answer(ownerSession);
          assert.equal(real.status, 404, `${method}: ${real.text}`);
          assert.deepEqual(real, await answer(crypto.randomUUID()), method);
        }
        const still = await tools(owner.bearer, ownerSession, "tools/list");
        assert.ok(still.result.tools.length > 0, "the owner's session is intact");
        const argsOf = (tool: (typeof TOOL_CATALOG)[number], values: Record<string, string>) => {
          const body = bodies[`${tool.method} ${tool.path}`];
          return {
            ...(typeof body === "object" && body !== null ? body : {}),
            ...Object.fromEntries((tool.params ?? []).map((name) => [name, values[name]])),
          };
        };
        for (const tool of TOOL_CATALOG) {
          const capability = capabilityOf.get(tool.name);
          assert.ok(capability !== undefined, `${tool.name} has no served twin`);
          const caller = lacking[capability];
          const before = await effects();
          const refused = await tools(caller.bearer, await sessionOf(caller.bearer), "tools/call", {
            name: tool.name,
            arguments: argsOf(tool, ids),
          });
          assert.equal(refused.result?.isError, true, `${tool.name}: ${JSON.stringify(refused)}`);
          const error = JSON.parse(refused.result.content[0].text).error;
          assert.equal(error.code, "missingCapability", tool.name);
          assert.equal(error.requiredCapability, capability, tool.name);
          assert.deepEqual(await effects(), before, `${tool.name} had an effect`);

          const access = ACCESS[`${tool.method} ${tool.path}`];
          if (!(tool.params ?? []).includes("runId") || access === "approve") continue;
          const shape = (answer: Json) => {
            const { correlationId: _, ...rest } = JSON.parse(answer.result.content[0].text).error;
            return rest;
          };
          for (const caller of access === "own" ? [stranger, approver] : [stranger]) {
            const session = await sessionOf(caller.bearer);
            const before = await effects();
            const real = await tools(caller.bearer, session, "tools/call", {
              name: tool.name,
              arguments: argsOf(tool, ids),
            });
            const none = await tools(caller.bearer, session, "tools/call", {
              name: tool.name,
              arguments: argsOf(tool, absent),
            });
            assert.equal(real.result?.isError, true, `${tool.name}: ${JSON.stringify(real)}`);
            assert.equal(shape(real).code, "runNotFound", tool.name);
            assert.deepEqual(shape(real), shape(none), `${tool.name}: the run shows`);
            assert.deepEqual(await effects(), before, `${tool.name} had an effect`);
          }
        }
      },
    );

    await t.step(
      "policy: a start outside it is refused on every interface, before the provider",
      async () => {
        // Each case as the run's fields; `null` where an interface cannot express it.
        const cases: [string, string, Json][] = [
          ["another agent", "agentNotAllowed", { agent_id: gateway.otherAgentId }],
          ["another environment", "resourceNotAllowed", { environment_id: "env_01outside" }],
          ["an unnamed vault", "resourceNotAllowed", { vault_ids: ["vlt_01outside"] }],
          ["an unnamed memory store", "resourceNotAllowed", {
            resources: [{ type: "memory_store", memory_store_id: "memstore_01outside" }],
          }],
          ["an unnamed repository", "resourceNotAllowed", {
            resources: [{ type: "github_repository", url: "https://github.com/acme/tools" }],
          }],
          ["an unnamed file", "resourceNotAllowed", {
            resources: [{ type: "file", file_id: "file_01outside" }],
          }],
        ];
        const creations = () =>
          gateway.fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/sessions")
            .length;
        const handler = (request: Request) => gateway.server.handler(request);
        const session = await openSession(handler, stranger.bearer);
        for (const [what, code, fields] of cases) {
          const { agent_id: agent = gateway.agentId, ...rest } = fields;
          const before = creations();
          const http = await gateway.request("POST", "/v1/runs", {
            bearer: stranger.bearer,
            body: { input: "x", metadata: fields },
          });
          assert.equal(http.status, 403, `${what}: ${http.text}`);
          assert.equal(http.json.error.code, code, what);
          const refused = await native("POST", "/v1/sessions", stranger.bearer, {
            agent,
            environment_id: gateway.environmentId,
            ...rest,
          });
          assert.equal(refused.status, 403, `${what}: ${refused.text}`);
          assert.equal(refused.json.error.type, "permission_error", what);
          assert.equal(refused.json.error.details.error_code, code, what);
          const mcp = await answerOf(
            await mcpFetch(handler, {
              bearer: stranger.bearer,
              sessionId: session,
              body: rpc(9_000, "tools/call", {
                name: "run_start",
                arguments: { input: "x", metadata: fields },
              }),
            }),
            9_000,
          );
          assert.equal(mcp.result.isError, true, what);
          assert.equal(JSON.parse(mcp.result.content[0].text).error.code, code, what);
          assert.equal(creations(), before, `${what}: the provider saw a start`);
        }
        // An agent override needs allowAgentOverrides (the provider's own API only).
        const before = creations();
        const override = await native("POST", "/v1/sessions", stranger.bearer, {
          agent: { type: "agent_with_overrides", id: gateway.agentId, system: "x" },
          environment_id: gateway.environmentId,
        });
        assert.equal(override.status, 403, override.text);
        assert.equal(override.json.error.details.error_code, "agentOverrideNotAllowed");
        assert.equal(creations(), before);
      },
    );

    await t.step("nothing a stranger was answered names the owner's resources", () => {
      for (const r of strangerHook.requests) seen.push({ where: "a notification", text: r.body });
      assert.ok(seen.length > 100, `${seen.length} answers checked`);
      for (const { where, text } of seen) {
        for (const secret of secrets) {
          assert.ok(!text.includes(secret), `${where} shows ${secret}: ${text.slice(0, 400)}`);
        }
      }
    });
  } finally {
    await gateway.close();
    await ownerHook.close();
    await strangerHook.close();
  }
});
