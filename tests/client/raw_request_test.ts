/**
 * Requests passed on as they are (`rawRequest`, `rawStream`) and the per-call version: what the
 * provider receives (method, path, query, body, version, betas), what comes back (status, body
 * text unchanged; an error status as `ProviderApiError` with the provider's own error object),
 * and paths that could climb out of `/v1/` refused before anything is sent.
 */
import assert from "node:assert/strict";
import { ProviderApiError, ProviderManagedAgentClient } from "../../client/mod.ts";

interface Seen {
  method: string;
  url: string;
  headers: Headers;
  body: string | undefined;
}

function clientAnswering(
  answer: () => Response,
): { client: ProviderManagedAgentClient; seen: Seen[] } {
  const seen: Seen[] = [];
  const client = new ProviderManagedAgentClient({
    baseUrl: "https://provider.example",
    apiKey: "sk-raw",
    fetchImpl: (input, init) => {
      seen.push({
        method: init?.method ?? "GET",
        url: String(input),
        headers: new Headers(init?.headers),
        body: init?.body === undefined ? undefined : String(init.body),
      });
      return Promise.resolve(answer());
    },
  });
  return { client, seen };
}

Deno.test("rawRequest sends the request as given and answers the provider's body text unchanged", async () => {
  const text = '{"z":1,"id":"vlt_1","a":[2,1]}';
  const { client, seen } = clientAnswering(() =>
    new Response(text, { status: 201, headers: { "content-type": "application/json" } })
  );
  const answer = await client.rawRequest({
    method: "POST",
    path: "/v1/vaults/vlt%2F1/archive",
    query: "a%5B%5D=1&a%5B%5D=2",
    body: { display_name: "v" },
    betas: ["extra-1"],
    providerVersion: "2099-01-01",
  });
  assert.deepEqual(answer, { status: 201, body: text, contentType: "application/json" });
  assert.equal(seen[0].method, "POST");
  assert.equal(
    seen[0].url,
    "https://provider.example/v1/vaults/vlt%2F1/archive?a%5B%5D=1&a%5B%5D=2",
  );
  assert.equal(seen[0].body, '{"display_name":"v"}');
  assert.equal(seen[0].headers.get("provider-version"), "2099-01-01");
  assert.equal(seen[0].headers.get("provider-beta"), "extra-1,managed-agents-2026-04-01");
  assert.equal(seen[0].headers.get("x-api-key"), "sk-raw");
  // Without a version of its own, the call sends the client's.
  await client.rawRequest({ method: "DELETE", path: "/v1/vaults/vlt_1" });
  assert.equal(seen[1].headers.get("provider-version"), "2026-10-21");
  assert.equal(seen[1].headers.get("content-type"), null);
});

Deno.test("rawRequest answers an error status as ProviderApiError with the provider's error", async () => {
  const { client } = clientAnswering(() =>
    Response.json(
      { type: "error", error: { type: "not_found_error", message: "no vault" }, request_id: "r1" },
      { status: 404 },
    )
  );
  const error = await client.rawRequest({ method: "GET", path: "/v1/vaults/x" }).catch((e) => e);
  assert.ok(error instanceof ProviderApiError);
  assert.equal(error.status, 404);
  assert.equal(error.type, "not_found_error");
  assert.equal(error.requestId, "r1");
});

Deno.test("rawRequest and rawStream refuse paths outside /v1 and malformed queries before sending", async () => {
  const { client, seen } = clientAnswering(() => new Response("{}"));
  for (
    const path of ["/v2/x", "/v1/../secrets", "/v1/a/%2e%2e/b", "/v1/a b", "v1/x", "/v1/x?y=1"]
  ) {
    await assert.rejects(client.rawRequest({ method: "GET", path }), TypeError, path);
  }
  await assert.rejects(
    client.rawRequest({ method: "GET", path: "/v1/x", query: "a=1#frag" }),
    TypeError,
  );
  await assert.rejects(
    client.rawRequest({ method: "GET", path: "/v1/x", providerVersion: "a b" }),
    TypeError,
  );
  await assert.rejects(client.rawStream({ path: "/v1/.." }), TypeError);
  assert.equal(seen.length, 0);
});

Deno.test("rawStream opens an event stream with the given query and hands back its body", async () => {
  const { client, seen } = clientAnswering(() =>
    new Response("event: x\ndata: {}\n\n", { headers: { "content-type": "text/event-stream" } })
  );
  const body = await client.rawStream({
    path: "/v1/sessions/sesn_1/events/stream",
    query: "event_deltas%5B%5D=agent.message",
  });
  assert.equal(await new Response(body).text(), "event: x\ndata: {}\n\n");
  assert.equal(seen[0].headers.get("accept"), "text/event-stream");
  assert.ok(seen[0].url.endsWith("/events/stream?event_deltas%5B%5D=agent.message"));
});
