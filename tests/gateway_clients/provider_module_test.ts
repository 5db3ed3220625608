/**
 * The `runtime-service` provider module: a `RuntimeClient` over the gateway, filed in a
 * `ProviderRegistry`, advertising only what works.
 */
import assert from "node:assert/strict";
import {
  ProviderAbortError,
  ProviderRegistry,
  ProviderUnsupportedError,
  RUNTIME_CAPABILITY_NAMES,
  type RuntimeClient,
} from "../../client/mod.ts";
import {
  createRuntimeServiceProviderModule,
  RuntimeServiceError,
  RuntimeServiceRunClient,
} from "../../sdk/mod.ts";
import { FakeGateway } from "./_fake_gateway.ts";

Deno.test("the module is kind runtime-service, runtime-only, and advertises runs alone", () => {
  const module = createRuntimeServiceProviderModule({
    baseUrl: "http://127.0.0.1:7777",
    token: "art_" + "x".repeat(43),
  });
  assert.equal(module.kind, "runtime-service");
  assert.equal(module.runtimeOnly, true);
  const advertised = RUNTIME_CAPABILITY_NAMES.filter((name) => module.capabilities[name]);
  assert.deepEqual(advertised, ["runs", "streaming"], "streamRun follows the event stream");
  assert.ok(Object.isFrozen(module.capabilities));
  const client = module.createClient();
  assert.ok(client instanceof RuntimeServiceRunClient);
  assert.equal(client.getRuntimeCapabilities(), module.capabilities);

  const registry = new ProviderRegistry().register(module);
  assert.deepEqual(registry.list().map((info) => info.kind), ["runtime-service"]);
  assert.equal(registry.supports("runtime-service", "runs"), true);
  assert.equal(registry.supports("runtime-service", "streaming"), true);
  assert.equal(registry.supports("runtime-service", "batch"), false);
});

Deno.test("the module checks its options when created", () => {
  assert.throws(() => createRuntimeServiceProviderModule({ baseUrl: "", token: "t" }), TypeError);
  assert.throws(
    () => createRuntimeServiceProviderModule({ baseUrl: "http://127.0.0.1:7777", token: "" }),
    TypeError,
  );
  assert.throws(
    () =>
      createRuntimeServiceProviderModule({
        baseUrl: "http://user:pw@127.0.0.1:7777",
        token: "t",
      }),
    TypeError,
  );
});

Deno.test("startRun, getRun and cancelRun go through the gateway with the principal's bearer", async () => {
  const gateway = FakeGateway.start();
  try {
    // The registry's baseUrl replaces the module's: code written for a provider runs unchanged.
    const module = createRuntimeServiceProviderModule({
      baseUrl: "http://127.0.0.1:9",
      token: gateway.writer.token,
    });
    const registry = new ProviderRegistry({ baseUrl: gateway.url }).register(module);
    const client: RuntimeClient = registry.createClient("runtime-service");

    const started = await client.startRun({
      input: "Triage the inbox",
      model: "ignored-model",
      instructions: "ignored",
      metadata: { agent_id: "agent_ok", environment_id: "env_1", team: "not sent" },
    });
    assert.equal(started.status, "started");
    const [sent] = gateway.requestsTo("POST", "/v1/runs");
    assert.deepEqual(JSON.parse(sent.body), {
      input: "Triage the inbox",
      metadata: { agent_id: "agent_ok", environment_id: "env_1" },
    });
    assert.equal(sent.headers.get("authorization"), `Bearer ${gateway.writer.token}`);
    assert.ok(sent.headers.get("idempotency-key"), "startRun is retry-safe");

    const stored = gateway.runs.get(started.runId)!;
    stored.state = "completed";
    stored.stopReason = "end_turn";
    stored.usage = { input_tokens: 10, output_tokens: 4 };
    assert.deepEqual(await client.getRun(started.runId), {
      runId: started.runId,
      status: "completed",
      stopReason: "end_turn",
      usage: { input_tokens: 10, output_tokens: 4 },
    });

    const cancelled = await client.cancelRun(started.runId);
    assert.deepEqual(cancelled, {
      runId: started.runId,
      status: "cancelled",
      stopReason: "end_turn",
      usage: { input_tokens: 10, output_tokens: 4 },
    });
    assert.equal(gateway.requestsTo("POST", `/v1/runs/${started.runId}/cancel`).length, 1);
  } finally {
    await gateway.close();
  }
});

Deno.test("service refusals reject as RuntimeServiceError; an abort as ProviderAbortError", async () => {
  const gateway = FakeGateway.start();
  try {
    const client = createRuntimeServiceProviderModule({
      baseUrl: gateway.url,
      token: gateway.writer.token,
    }).createClient();
    await assert.rejects(
      client.startRun({ input: "x", metadata: { agent_id: "agent_elsewhere" } }),
      (error: unknown) => error instanceof RuntimeServiceError && error.code === "agentNotAllowed",
    );
    await assert.rejects(
      client.getRun("sesn_missing"),
      (error: unknown) => error instanceof RuntimeServiceError && error.code === "runNotFound",
    );
    const requestsBefore = gateway.requests.length;
    const controller = new AbortController();
    controller.abort("stop");
    await assert.rejects(
      client.getRun("sesn_0001", { signal: controller.signal }),
      (error: unknown) => error instanceof ProviderAbortError && error.cause === "stop",
    );
    assert.equal(gateway.requests.length, requestsBefore);
  } finally {
    await gateway.close();
  }
});

Deno.test("the batch operations are unsupported, and say so with a typed error", async () => {
  const gateway = FakeGateway.start();
  try {
    const client = createRuntimeServiceProviderModule({
      baseUrl: gateway.url,
      token: gateway.admin.token,
    }).createClient();
    await assert.rejects(client.submitBatch([]), ProviderUnsupportedError);
    await assert.rejects(client.getBatch("b"), ProviderUnsupportedError);
    await assert.rejects(client.cancelBatch("b"), ProviderUnsupportedError);
    assert.throws(() => client.getBatchResults("b"), ProviderUnsupportedError);
    assert.equal(gateway.requests.length, 0, "nothing unsupported reaches the service");
    assert.equal(gateway.runs.size, 0);
  } finally {
    await gateway.close();
  }
});
