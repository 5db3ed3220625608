/**
 * Caller betas and extra headers on both clients: per client and per call, joined into
 * `provider-beta` as caller betas first, then the API group's beta (always present for managed
 * agents); headers the client sets itself (credentials above all) are refused with a TypeError.
 */
import assert from "node:assert/strict";
import { ProviderApiClient, ProviderManagedAgentClient } from "../../client/mod.ts";
import { messageRecord } from "../support/fake_messages.ts";

interface Seen {
  method: string;
  path: string;
  headers: Headers;
}

function recordingFetch(seen: Seen[]) {
  return (input: Request | URL | string, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    seen.push({
      method: init?.method ?? "GET",
      path: url.pathname,
      headers: new Headers(init?.headers),
    });
    if (url.pathname.endsWith("/events/stream")) {
      const idle = { type: "session.status_idle", stop_reason: { type: "end_turn" } };
      return Promise.resolve(
        new Response(`event: session.status_idle\ndata: ${JSON.stringify(idle)}\n\n`),
      );
    }
    if (url.pathname === "/v1/messages") {
      return Promise.resolve(Response.json(messageRecord("msg_1", "m", "ok")));
    }
    if (url.pathname === "/v1/sessions") return Promise.resolve(Response.json({ id: "sesn_1" }));
    return Promise.resolve(Response.json({ id: "x", data: [] }));
  };
}

const SECRET = "sk-do-not-leak";

Deno.test("managed agents: caller betas come first, the managed-agents beta is always last", async () => {
  const seen: Seen[] = [];
  const client = new ProviderManagedAgentClient({
    baseUrl: "https://provider.test",
    apiKey: "k",
    betas: ["client-beta-1"],
    headers: { "X-Team": "blue" },
    fetchImpl: recordingFetch(seen),
  });
  await client.getAgent("agent_1");
  await client.getAgent("agent_1", { betas: ["call-beta-2"], headers: { "x-trace": "t1" } });
  assert.equal(seen[0].headers.get("provider-beta"), "client-beta-1,managed-agents-2026-04-01");
  assert.equal(seen[0].headers.get("x-team"), "blue");
  assert.equal(seen[0].headers.get("x-trace"), null);
  assert.equal(
    seen[1].headers.get("provider-beta"),
    "call-beta-2,client-beta-1,managed-agents-2026-04-01",
  );
  assert.equal(seen[1].headers.get("x-trace"), "t1");
  assert.equal(seen[1].headers.get("x-api-key"), "k");
});

Deno.test("managed agents: a run's betas and headers reach every request of the run", async () => {
  const seen: Seen[] = [];
  const client = new ProviderManagedAgentClient({
    baseUrl: "https://provider.test",
    apiKey: "k",
    agentId: "agent_1",
    environmentId: "env_1",
    fetchImpl: recordingFetch(seen),
  });
  const result = await client.streamRun({ input: "go" }, {}, {
    betas: ["run-beta"],
    headers: { "x-run": "r1" },
  });
  assert.equal(result.terminal?.type, "run.completed");
  assert.deepEqual(seen.map((s) => `${s.method} ${s.path}`), [
    "POST /v1/sessions",
    "GET /v1/sessions/sesn_1/events/stream",
    "POST /v1/sessions/sesn_1/events",
  ]);
  for (const request of seen) {
    assert.equal(request.headers.get("provider-beta"), "run-beta,managed-agents-2026-04-01");
    assert.equal(request.headers.get("x-run"), "r1");
  }
});

Deno.test("messages: caller betas are sent only when given; headers per client and per call", async () => {
  const seen: Seen[] = [];
  const plain = new ProviderApiClient({
    baseUrl: "https://provider.test",
    apiKey: "k",
    defaultModel: "m",
    defaultMaxTokens: 16,
    fetchImpl: recordingFetch(seen),
  });
  await plain.startRun({ input: "hi" });
  assert.equal(seen[0].headers.get("provider-beta"), null);
  const client = new ProviderApiClient({
    baseUrl: "https://provider.test",
    apiKey: "k",
    defaultModel: "m",
    defaultMaxTokens: 16,
    betas: ["client-beta-1"],
    headers: { "x-team": "blue" },
    fetchImpl: recordingFetch(seen),
  });
  await client.startRun({ input: "hi" }, { betas: ["call-beta-2"], headers: { "x-team": "red" } });
  assert.equal(seen[1].headers.get("provider-beta"), "call-beta-2,client-beta-1");
  assert.equal(seen[1].headers.get("x-team"), "red", "a call's header wins over the client's");
});

Deno.test("headers the client sets itself are refused, naming the header and never the value", async () => {
  const base = { baseUrl: "https://provider.test", apiKey: "k" };
  for (const name of ["X-Api-Key", "authorization", "Provider-Beta", "provider-version"]) {
    assert.throws(
      () => new ProviderManagedAgentClient({ ...base, headers: { [name]: SECRET } }),
      (error: unknown) =>
        error instanceof TypeError && error.message.includes(name.toLowerCase()) &&
        !error.message.includes(SECRET),
      name,
    );
    assert.throws(
      () => new ProviderApiClient({ ...base, headers: { [name]: SECRET } }),
      TypeError,
      name,
    );
  }
  const seen: Seen[] = [];
  const client = new ProviderManagedAgentClient({ ...base, fetchImpl: recordingFetch(seen) });
  await assert.rejects(
    client.getAgent("agent_1", { headers: { Authorization: `Bearer ${SECRET}` } }),
    (error: unknown) => error instanceof TypeError && !error.message.includes(SECRET),
  );
  await assert.rejects(client.getAgent("agent_1", { betas: ["a,b"] }), TypeError);
  await assert.rejects(client.getAgent("agent_1", { headers: { "bad name": "v" } }), TypeError);
  await assert.rejects(
    client.getAgent("agent_1", { headers: { "x-a": "v\r\nx-b: w" } }),
    TypeError,
  );
  assert.equal(seen.length, 0, "nothing was sent");
  assert.throws(() => new ProviderManagedAgentClient({ ...base, betas: ["has space"] }), TypeError);
});
