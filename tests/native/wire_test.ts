/**
 * The wire of the provider's own API through the gateway: the version and betas the vendor SDK
 * sends (under its own brand's header names) reach the provider as the gateway's client sends
 * them; every answer carries a `request-id`; an `idempotency-key` replays a create as `/v1`
 * does; a timeout bounds the wait on the provider; threads of the caller's sessions are read;
 * and a stream that asks for `event_deltas[]` carries the provider's previews before the event
 * they preview.
 */
import assert from "node:assert/strict";
import Vendor from "@anthropic-ai/sdk";
import { readSse } from "../../client/sse.ts";
import { isA, startNative, until, userMessage, writerSession } from "./_native.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

Deno.test("provider API: the SDK's version and betas reach the provider; every answer has a request-id", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const { bearer, sdk, session } = await writerSession(native, {
      betas: ["extra-feature-2026-01-01"],
    });
    const created = gateway.fake.requests.find((r) =>
      r.method === "POST" && r.path === "/v1/sessions"
    )!;
    assert.equal(created.headers["provider-version"], "2026-10-21");
    assert.deepEqual(
      created.headers["provider-beta"].split(",").sort(),
      ["extra-feature-2026-01-01", "managed-agents-2026-04-01"],
    );
    await sdk.beta.sessions.retrieve(session.id, { betas: ["other-2026-02-02"] } as never);
    const retrieved = gateway.fake.requests.findLast((r) =>
      r.path === `/v1/sessions/${session.id}`
    )!;
    assert.ok(retrieved.headers["provider-beta"].includes("other-2026-02-02"));
    // No brand header of the SDK's own reaches the provider: only the client's provider-* ones.
    for (const request of gateway.fake.requests) {
      for (const name of Object.keys(request.headers)) {
        assert.ok(!/^(?!provider-)[a-z]+-(version|beta)$/.test(name), name);
      }
    }
    const { data, response } = await sdk.beta.sessions.list().withResponse();
    assert.equal(data.data.length, 1);
    assert.match(response.headers.get("request-id") ?? "", /^[0-9a-f-]{36}$/);
    const failed: Json = await sdk.beta.sessions.retrieve("sesn_missing").catch((error) => error);
    assert.ok(isA(failed, Vendor.NotFoundError));
    assert.equal(failed.requestID, failed.error.request_id);
    // Two different versions in one request are refused.
    const twice = await fetch(`${native.url}/provider/v1/sessions`, {
      headers: {
        "x-api-key": bearer,
        "acme-version": "2026-10-21",
        "provider-version": "2025-01-01",
      },
    });
    assert.equal(twice.status, 400);
    assert.equal((await twice.json()).error.type, "invalid_request_error");
  } finally {
    await native.close();
  }
});

Deno.test("provider API: an idempotency-key replays a create and never repeats a send; a timeout bounds the wait on the provider", async () => {
  const native = await startNative({ serverOptions: { providerTimeoutMs: 300 } });
  const { gateway } = native;
  try {
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const body = JSON.stringify({ agent: gateway.agentId, environment_id: gateway.environmentId });
    const post = (text: string) =>
      fetch(`${native.url}/provider/v1/sessions`, {
        method: "POST",
        headers: {
          "x-api-key": bearer,
          "content-type": "application/json",
          "idempotency-key": "k-1",
        },
        body: text,
      });
    const first = await post(body);
    assert.equal(first.status, 200);
    const again = await post(body);
    assert.equal(again.status, 200);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    const created = await first.json();
    assert.deepEqual(await again.json(), created, "the provider's session again");
    const creates = gateway.fake.requests.filter((r) =>
      r.method === "POST" && r.path === "/v1/sessions"
    );
    assert.equal(creates.length, 1, "one session at the provider");
    const other = await post(JSON.stringify({ agent: gateway.agentId, environment_id: "env_x" }));
    assert.equal(other.status, 422);
    assert.equal((await other.json()).error.details.error_code, "idempotencyConflict");

    // A send the provider did not answer in time may have taken effect: the key never sends it
    // again.
    const events = `/v1/sessions/${created.id}/events`;
    const send = () =>
      fetch(`${native.url}/provider${events}`, {
        method: "POST",
        headers: {
          "x-api-key": bearer,
          "content-type": "application/json",
          "idempotency-key": "k-2",
        },
        body: JSON.stringify({ events: [userMessage("go")] }),
      });
    gateway.fake.delayNext({ method: "POST", path: events, ms: 1_000 });
    const failed = await send();
    assert.equal(failed.status, 504);
    await failed.body?.cancel();
    const retried = await send();
    assert.equal(retried.status, 409);
    assert.equal(retried.headers.get("x-should-retry"), "false");
    assert.equal((await retried.json()).error.details.error_code, "idempotencyUnsettled");
    const sends = gateway.fake.requests.filter((r) => r.method === "POST" && r.path === events);
    assert.equal(sends.length, 1, "sent once");

    gateway.fake.delayNext({ method: "GET", path: /^\/v1\/agents/, ms: 2_000 });
    const began = Date.now();
    const slow = await native.sdk(bearer, { maxRetries: 0 }).beta.agents.list().catch((e) => e);
    assert.ok(Date.now() - began < 1_500, "answered at the timeout, not after the provider");
    assert.equal(slow.status, 504);
    assert.equal(slow.error.error.type, "timeout_error");
  } finally {
    await native.close();
  }
});

Deno.test("provider API: threads of the caller's sessions are read; another's are not found", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const owner = await gateway.issue(["session:read", "session:write"]);
    const other = await gateway.issue(["session:read", "session:write"]);
    const session = await native.sdk(owner.bearer).beta.sessions.create({
      agent: gateway.agentId,
      environment_id: gateway.environmentId,
    } as never);
    const threads = await native.sdk(owner.bearer).beta.sessions.threads.list(session.id);
    const primary = threads.data[0];
    assert.equal(primary.session_id, session.id);
    const thread = await native.sdk(owner.bearer).beta.sessions.threads.retrieve(primary.id, {
      session_id: session.id,
    } as never);
    assert.equal(thread.id, primary.id);
    const hidden = await native.sdk(other.bearer).beta.sessions.threads.list(session.id)
      .catch((error) => error);
    assert.ok(isA(hidden, Vendor.NotFoundError), String(hidden));

    // A thread id that decodes to a path of its own (another session's thread, were the
    // provider to decode %2F and resolve dot segments) is not found, and never passed on.
    const own = await native.sdk(other.bearer).beta.sessions.create({
      agent: gateway.agentId,
      environment_id: gateway.environmentId,
    } as never);
    const before = gateway.fake.requests.length;
    for (
      const tail of [
        `x%2F..%2F..%2F..%2Fsessions%2F${session.id}%2Fthreads%2F${primary.id}`,
        `${primary.id}%5C..%5C..`,
      ]
    ) {
      for (const suffix of ["", "/events", "/stream"]) {
        const answer = await fetch(
          `${native.url}/provider/v1/sessions/${own.id}/threads/${tail}${suffix}`,
          { headers: { "x-api-key": other.bearer } },
        );
        const text = await answer.text();
        assert.equal(answer.status, 404, `${tail}${suffix}: ${text}`);
        assert.equal(JSON.parse(text).error.type, "not_found_error");
      }
    }
    assert.equal(gateway.fake.requests.length, before, "the provider saw none of them");
  } finally {
    await native.close();
  }
});

Deno.test("provider API: event_deltas[] adds the provider's previews before the event they preview", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    gateway.fake.managedAgents!.script = () => [
      { delayMs: 300 },
      { type: "agent.message", content: [{ type: "text", text: "A previewed answer" }] },
    ];
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const session = await native.sdk(bearer).beta.sessions.create({
      agent: gateway.agentId,
      environment_id: gateway.environmentId,
    } as never);
    const controller = new AbortController();
    const response = await fetch(
      `${native.url}/provider/v1/sessions/${session.id}/events/stream?event_deltas%5B%5D=agent.message`,
      { headers: { "x-api-key": bearer }, signal: controller.signal },
    );
    assert.equal(response.status, 200);
    // The previews come from the provider's own stream of them: wait until it is open.
    await until(() => gateway.fake.openStreams >= 1, "the preview stream is open");
    await native.sdk(bearer).beta.sessions.events.send(session.id, {
      events: [userMessage("go")],
    } as never);
    const frames: { id?: string; event: string; data: Json }[] = [];
    for await (const frame of readSse(response.body!, { signal: controller.signal })) {
      frames.push({ id: frame.id, event: frame.event ?? "", data: JSON.parse(frame.data) });
      if (frame.event === "session.status_idle") break;
    }
    controller.abort();
    const message = frames.findIndex((frame) => frame.event === "agent.message");
    const start = frames.findIndex((frame) => frame.event === "event_start");
    assert.ok(start !== -1 && start < message, frames.map((f) => f.event).join(","));
    const deltas = frames.filter((frame) => frame.event === "event_delta");
    assert.equal(
      deltas.map((frame) => frame.data.delta.content.text).join(""),
      "A previewed answer",
    );
    assert.ok(deltas.every((frame) => frame.data.event_id === frames[message].data.id));
    // Previews carry no id: a reconnection resumes after the last logged event.
    assert.ok(frames.filter((f) => f.event.startsWith("event_")).every((f) => !f.id));
    assert.ok(frames.filter((f) => !f.event.startsWith("event_")).every((f) => Number(f.id) > 0));
  } finally {
    await native.close();
  }
});

Deno.test("provider API: a passed-on thread stream ends within 1 s of its principal's revocation", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const doomed = await gateway.issue(["session:read", "session:write"]);
    const session = await native.sdk(doomed.bearer).beta.sessions.create({
      agent: gateway.agentId,
      environment_id: gateway.environmentId,
    } as never);
    const thread = (await native.sdk(doomed.bearer).beta.sessions.threads.list(session.id)).data[0];
    const response = await fetch(
      `${native.url}/provider/v1/sessions/${session.id}/threads/${thread.id}/stream`,
      { headers: { "x-api-key": doomed.bearer } },
    );
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "text/event-stream");
    const ended = (async () => {
      await response.body!.pipeTo(new WritableStream());
      return Date.now();
    })();
    await until(() => gateway.fake.openStreams === 1, "the provider's thread stream is open");
    const revoked = await gateway.request("DELETE", `/v1/principals/${doomed.principalId}`);
    assert.equal(revoked.status, 204);
    const at = Date.now();
    assert.ok((await ended) - at <= 1_000, "the relayed stream ended within 1 s");
    await until(() => gateway.fake.openStreams === 0, "the provider's stream was cancelled");
  } finally {
    await native.close();
  }
});
