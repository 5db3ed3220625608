/**
 * Secrets through the provider's own API: the provider key is in no answer (headers, bodies,
 * provider errors passed on), no log line and no audit entry; the principal's bearer never
 * reaches the provider (its key, its headers, its queries, its bodies).
 */
import assert from "node:assert/strict";
import Vendor from "@anthropic-ai/sdk";
import { isA, startNative, userMessage } from "./_native.ts";

Deno.test("provider API: the provider key never leaves the service; the bearer never reaches the provider", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const { bearer } = await gateway.issue(["session:read", "session:write", "session:approve"]);
    const sdk = native.sdk(bearer, { maxRetries: 0 });
    const admin = native.sdk(gateway.admin, { maxRetries: 0 });
    const session = await sdk.beta.sessions.create({
      agent: gateway.agentId,
      environment_id: gateway.environmentId,
      initial_events: [userMessage("hello")],
    } as never);
    const stream = await sdk.beta.sessions.events.stream(session.id);
    for await (const event of stream) {
      if ((event as { type: string }).type === "session.status_idle") break;
    }
    for await (const _ of sdk.beta.sessions.events.list(session.id)) {
      // read every page
    }
    await sdk.beta.sessions.retrieve(session.id);
    await sdk.beta.sessions.events.send(session.id, { events: [userMessage("more")] } as never);
    await admin.beta.vaults.create({ display_name: "v" } as never);
    // A provider error that quotes the key, on a passed-on call and on a session call.
    gateway.fake.failNext({
      path: "/v1/vaults",
      status: 400,
      message: `bad key ${gateway.providerKey}`,
    });
    const echoed = await admin.beta.vaults.list().catch((error) => error);
    assert.ok(isA(echoed, Vendor.BadRequestError));
    gateway.fake.failNext({
      path: `/v1/sessions/${session.id}`,
      status: 403,
      message: `${gateway.providerKey} is not allowed`,
    });
    const refused = await sdk.beta.sessions.update(session.id, { title: "t" } as never).catch((
      error,
    ) => error);
    assert.ok(isA(refused, Vendor.PermissionDeniedError));
    assert.match(String(refused.message), /\[redacted\]/);

    const key = gateway.providerKey;
    for (const answer of native.answered) {
      assert.ok(!answer.headers.includes(key), answer.headers);
      assert.ok(!answer.text.includes(key), answer.text);
    }
    for (const line of gateway.logs) assert.ok(!line.includes(key), line);
    const audit = await gateway.request("GET", "/v1/audit?limit=100");
    assert.ok(!audit.text.includes(key));

    // The provider saw its key on every request, and never a principal's bearer.
    assert.ok(gateway.fake.requests.length > 5);
    for (const request of gateway.fake.requests) {
      const seen = JSON.stringify([request.headers, request.query, request.body ?? null]);
      for (const secret of [bearer, gateway.admin]) assert.ok(!seen.includes(secret), seen);
      assert.ok(!seen.includes("art_"), seen);
      assert.equal(request.auth, "x-api-key");
    }
  } finally {
    await native.close();
  }
});
