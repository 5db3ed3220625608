/**
 * `POST /webhooks/provider`: a verified delivery updates its run and wakes its tail, a repeat
 * changes nothing, anything unverifiable (bad signature, stale timestamp, re-serialized body,
 * missing header) is 401 `webhookVerificationFailed` without detail, two secrets during a rotation
 * are both accepted, and without secrets the route does not exist.
 */
import assert from "node:assert/strict";
import { signManagedAgentWebhook } from "../../client/mod.ts";
import { assertCode, type Gateway, startGateway } from "./_harness.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

function secret(): string {
  return `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(24))))}`;
}

function delivery(runId: string, type = "session.status_idled"): string {
  return JSON.stringify({
    type: "event",
    id: `wevt_${crypto.randomUUID()}`,
    created_at: new Date().toISOString(),
    data: { type, id: runId, organization_id: "org_1", workspace_id: "wrkspc_1" },
  });
}

async function post(
  gateway: Gateway,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; json: Json; text: string; headers: Headers }> {
  const response = await gateway.server.handler(
    new Request("http://127.0.0.1/webhooks/provider", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    }),
  );
  const text = await response.text();
  let json: Json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text, headers: response.headers };
}

/**
 * Holds the provider's event streams until the fake closes. A tail opens its stream before it
 * reads the history, so the run's tail learns nothing and only a delivery changes the run record.
 */
function holdTail(gateway: Gateway): void {
  gateway.fake.delayNext({ path: /\/events\/stream$/, ms: 600_000, times: 1_000 });
}

async function auditCount(gateway: Gateway): Promise<number> {
  const page = await gateway.request("GET", "/v1/audit?action=webhook.accepted&limit=100");
  return page.json.entries.length;
}

Deno.test("webhooks: a verified delivery updates the run once; a repeat changes nothing", async () => {
  const signing = secret();
  const gateway = await startGateway({ webhookSecrets: [signing] });
  try {
    const woken: string[] = [];
    holdTail(gateway);
    const started = await gateway.request("POST", "/v1/runs", { body: { input: "hi" } });
    assert.equal(started.status, 201, started.text);
    const runId = started.json.runId;
    // The fake's echo turn ended at the provider; with its tail held, the record says running.
    assert.equal((await gateway.store.runs.get(runId))?.state, "running");
    const body = delivery(runId);
    const headers = await signManagedAgentWebhook(body, signing);
    const accepted = await post(gateway, body, headers);
    assert.equal(accepted.status, 204, accepted.text);
    assert.equal(accepted.text, "");
    const record = await gateway.store.runs.get(runId);
    assert.equal(record?.state, "completed");
    assert.equal(await auditCount(gateway), 1);
    const entry = (await gateway.request("GET", "/v1/audit?action=webhook.accepted")).json
      .entries[0];
    assert.equal(entry.runId, runId);
    assert.equal(entry.actorId, "provider");

    // A repeat of the delivery: 204, no audit entry, the run untouched.
    const before = JSON.stringify(await gateway.store.runs.get(runId));
    const calls = gateway.fake.requests.length;
    const unsubscribe = gateway.server.runActivity.subscribe((id) => woken.push(id));
    const repeat = await post(gateway, body, headers);
    unsubscribe();
    assert.equal(repeat.status, 204);
    assert.equal(JSON.stringify(await gateway.store.runs.get(runId)), before);
    // The run's tail may still be reading the session's events in the background; the repeat
    // itself asks the provider nothing (a refresh would read the session).
    const asked = gateway.fake.requests.slice(calls)
      .filter((request) => !/\/events(\/stream)?$/.test(request.path));
    assert.deepEqual(asked, []);
    assert.equal(await auditCount(gateway), 1);
    assert.deepEqual(woken, []);
  } finally {
    await gateway.close();
  }
});

Deno.test("webhooks: a delivery for a known run wakes its tail", async () => {
  const signing = secret();
  const gateway = await startGateway({ webhookSecrets: [signing] });
  try {
    const started = await gateway.request("POST", "/v1/runs", { body: { input: "hi" } });
    const runId = started.json.runId;
    const body = delivery(runId, "session.status_run_started");
    const seen: string[] = [];
    // The run activity is what tails subscribe to.
    const unsubscribe = gateway.server.runActivity.subscribe((id) => seen.push(id));
    try {
      const accepted = await post(gateway, body, await signManagedAgentWebhook(body, signing));
      assert.equal(accepted.status, 204);
      assert.deepEqual(seen, [runId]);
      // A delivery about something else (no run) is accepted and wakes nothing.
      const other = delivery("agent_1", "agent.updated");
      const done = await post(gateway, other, await signManagedAgentWebhook(other, signing));
      assert.equal(done.status, 204);
      assert.deepEqual(seen, [runId]);
    } finally {
      unsubscribe();
    }
  } finally {
    await gateway.close();
  }
});

Deno.test("webhooks: unverifiable deliveries get 401 webhookVerificationFailed, no detail", async () => {
  const signing = secret();
  const gateway = await startGateway({ webhookSecrets: [signing] });
  try {
    holdTail(gateway);
    const started = await gateway.request("POST", "/v1/runs", { body: { input: "hi" } });
    const runId = started.json.runId;
    const body = delivery(runId);
    const good = await signManagedAgentWebhook(body, signing);
    const cases: [string, string, Record<string, string>][] = [
      ["bad signature", body, await signManagedAgentWebhook(body, secret())],
      [
        "stale timestamp",
        body,
        await signManagedAgentWebhook(body, signing, {
          timestampSeconds: Math.floor(Date.now() / 1000) - 3600,
        }),
      ],
      ["re-serialized body", JSON.stringify(JSON.parse(body), null, 2), good],
      ["missing header", body, { ...good, "webhook-signature": "" }],
      [
        "no signature header",
        body,
        { "webhook-id": good["webhook-id"], "webhook-timestamp": good["webhook-timestamp"] },
      ],
    ];
    for (const [name, text, headers] of cases) {
      const clean = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== ""));
      const answer = await post(gateway, text, clean);
      assert.equal(answer.status, 401, `${name}: ${answer.text}`);
      assert.equal(answer.json.error.code, "webhookVerificationFailed", name);
      assert.equal(answer.json.error.message, "The webhook could not be verified", name);
      assert.ok(!answer.text.includes(signing), name);
    }
    assert.equal((await gateway.store.runs.get(runId))?.state, "running");
    assert.equal(await auditCount(gateway), 0);
    // The verified original is still new afterwards: refusals recorded nothing.
    assert.equal((await post(gateway, body, good)).status, 204);
    assert.equal(await auditCount(gateway), 1);
  } finally {
    await gateway.close();
  }
});

Deno.test("webhooks: during a rotation both secrets are accepted", async () => {
  const [old, current] = [secret(), secret()];
  const gateway = await startGateway({ webhookSecrets: [current, old] });
  try {
    const started = await gateway.request("POST", "/v1/runs", { body: { input: "hi" } });
    for (const key of [old, current]) {
      const body = delivery(started.json.runId);
      const answer = await post(gateway, body, await signManagedAgentWebhook(body, key));
      assert.equal(answer.status, 204, answer.text);
    }
    assert.equal(await auditCount(gateway), 2);
  } finally {
    await gateway.close();
  }
});

Deno.test("webhooks: without signing secrets the route does not exist", async () => {
  const gateway = await startGateway();
  try {
    const body = delivery("sesn_1");
    const answer = await post(gateway, body, await signManagedAgentWebhook(body, secret()));
    assertCode(answer as Json, 404, "notFound");
  } finally {
    await gateway.close();
  }
});

Deno.test("webhooks: a body over 64 KiB is refused before verification", async () => {
  const signing = secret();
  const gateway = await startGateway({ webhookSecrets: [signing] });
  try {
    const body = JSON.stringify({ pad: "x".repeat(64 * 1024) });
    const answer = await post(gateway, body, await signManagedAgentWebhook(body, signing));
    assertCode(answer as Json, 413, "payloadTooLarge");
    assert.equal(answer.json.error.maxBytes, 64 * 1024);
  } finally {
    await gateway.close();
  }
});

Deno.test("webhooks: unverified intake is capped; one more answers 429 until a slot frees", async () => {
  const signing = secret();
  const gateway = await startGateway({
    webhookSecrets: [signing],
    serverOptions: { webhookIntake: { maxUnverified: 2 } },
  });
  const held: ReadableStreamDefaultController<Uint8Array>[] = [];
  try {
    // Two deliveries whose bodies trickle: they hold both unverified slots.
    const slow = [0, 1].map(() =>
      gateway.server.handler(
        new Request("http://127.0.0.1/webhooks/provider", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: new ReadableStream<Uint8Array>({
            start(controller) {
              controller.enqueue(new TextEncoder().encode('{"pad":"'));
              held.push(controller);
            },
          }),
          duplex: "half",
        } as RequestInit),
      )
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    const body = delivery("sesn_unknown");
    const refused = await post(gateway, body, await signManagedAgentWebhook(body, signing));
    assertCode(refused as Json, 429, "resourceExhausted");
    assert.equal(refused.headers.get("retry-after"), "1");
    // The slow bodies end (unverifiable): their slots free, and a delivery is taken again.
    for (const controller of held) {
      controller.enqueue(new TextEncoder().encode('"}'));
      controller.close();
    }
    for (const answer of await Promise.all(slow)) {
      const json = await answer.json();
      assertCode(
        { status: answer.status, headers: answer.headers, json, text: JSON.stringify(json) },
        401,
        "webhookVerificationFailed",
      );
    }
    const accepted = await post(gateway, body, await signManagedAgentWebhook(body, signing));
    assert.equal(accepted.status, 204, accepted.text);
  } finally {
    await gateway.close();
  }
});
