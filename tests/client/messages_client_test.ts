import assert from "node:assert/strict";
import {
  PROVIDER_RUNTIME_SUPPORT,
  ProviderApiClient,
  ProviderApiError,
  type ProviderTrace,
  ProviderUnsupportedError,
} from "../../client/mod.ts";
import { withMessagesFake } from "../support/fake_messages.ts";

Deno.test("startRun sends a non-streaming create and returns the completed run", async () => {
  await withMessagesFake(async (fake) => {
    const client = new ProviderApiClient({ apiKey: fake.apiKey, baseUrl: fake.baseUrl });
    const run = await client.startRun({
      input: [
        { role: "user", content: "first" },
        { role: "assistant", content: "reply" },
        { role: "user", content: "second" },
      ],
      model: "model-large",
      maxTokens: 100,
      instructions: "Be brief",
      metadata: { user_id: "u-1", params: { stop_sequences: ["END"], temperature: undefined } },
    });
    assert.equal(run.status, "completed");
    assert.equal(run.output, "echo: second");
    assert.equal(run.stopReason, "end_turn");
    assert.deepEqual(run.usage, { input_tokens: 10, output_tokens: 5 });
    assert.equal(run.runId, run.message.id);
    assert.deepEqual(fake.requests[0].body, {
      model: "model-large",
      max_tokens: 100,
      system: "Be brief",
      messages: [
        { role: "user", content: "first" },
        { role: "assistant", content: "reply" },
        { role: "user", content: "second" },
      ],
      metadata: { user_id: "u-1" },
      stop_sequences: ["END"],
    });
  });
});

Deno.test("startRun reports requires_action when the model stopped to call a tool", async () => {
  await withMessagesFake(async (fake, state) => {
    state.messages.push({
      id: "msg_tool",
      type: "message",
      role: "assistant",
      model: "model-small",
      content: [
        { type: "text", text: "Let me look." },
        { type: "tool_use", id: "toolu_1", name: "lookup", input: { q: "x" } },
      ],
      stop_reason: "tool_use",
      usage: { input_tokens: 3, output_tokens: 4 },
    });
    const client = new ProviderApiClient({
      apiKey: fake.apiKey,
      baseUrl: fake.baseUrl,
      defaultModel: "model-small",
      defaultMaxTokens: 50,
    });
    const run = await client.startRun({ input: "look it up" });
    assert.equal(run.status, "requires_action");
    assert.equal(run.output, "Let me look.");
    assert.deepEqual(run.message.content[1].input, { q: "x" });
  });
});

Deno.test("a run uses the client defaults and fails before any request without them", async () => {
  await withMessagesFake(async (fake) => {
    const withDefaults = new ProviderApiClient({
      apiKey: fake.apiKey,
      baseUrl: fake.baseUrl,
      defaultModel: "model-default",
      defaultMaxTokens: 321,
    });
    await withDefaults.startRun({ input: "a" });
    const body = fake.requests[0].body as Record<string, unknown>;
    assert.equal(body.model, "model-default");
    assert.equal(body.max_tokens, 321);

    const bare = new ProviderApiClient({ apiKey: fake.apiKey, baseUrl: fake.baseUrl });
    const before = fake.requests.length;
    await assert.rejects(bare.startRun({ input: "a", maxTokens: 5 }), /No model for the run/);
    await assert.rejects(bare.startRun({ input: "a", model: "m" }), /No max tokens for the run/);
    await assert.rejects(bare.streamRun({ input: "a" }, {}), TypeError);
    await assert.rejects(
      bare.submitBatch([{ customId: "1", body: { input: "a", model: "m" } }]),
      /No max tokens/,
    );
    assert.equal(fake.requests.length, before, "nothing was sent");
  });
});

Deno.test("metadata.params cannot override the fields the run body owns", async () => {
  const client = new ProviderApiClient({ apiKey: "k", baseUrl: "http://127.0.0.1:9" });
  await assert.rejects(
    client.startRun({ input: "a", model: "m", maxTokens: 5, metadata: { params: { model: "x" } } }),
    /cannot set model/,
  );
  await assert.rejects(client.startRun({ input: "", model: "m", maxTokens: 5 }), /input is empty/);
  await assert.rejects(client.startRun({ input: "a", model: "m", maxTokens: 0 }), /positive/);
});

Deno.test("getRun and cancelRun reject with a typed unsupported error", async () => {
  const client = new ProviderApiClient({ apiKey: "k", baseUrl: "http://127.0.0.1:9" });
  for (const call of [() => client.getRun("msg_1"), () => client.cancelRun("msg_1")]) {
    await assert.rejects(call(), (error: unknown) => {
      assert.ok(error instanceof ProviderUnsupportedError);
      assert.equal(error.code, "providerUnsupported");
      assert.match(error.message, /stateless/);
      return true;
    });
  }
});

Deno.test("getRuntimeCapabilities is the frozen support map of the declaration", () => {
  const client = new ProviderApiClient({ apiKey: "k", baseUrl: "http://127.0.0.1:9" });
  const capabilities = client.getRuntimeCapabilities();
  assert.equal(capabilities, PROVIDER_RUNTIME_SUPPORT);
  assert.equal(capabilities.runs && capabilities.streaming && capabilities.batch, true);
  assert.equal(capabilities.teams || capabilities.kanban || capabilities.workspace, false);
});

Deno.test("the constructor requires apiKey and a valid baseUrl", () => {
  assert.throws(() => new ProviderApiClient({ apiKey: "", baseUrl: "http://x" }), /apiKey/);
  assert.throws(() => new ProviderApiClient({ apiKey: "k" }), /baseUrl is required/);
  assert.throws(() => new ProviderApiClient({ apiKey: "k", baseUrl: "nope" }), /baseUrl/);
  assert.throws(
    () => new ProviderApiClient({ apiKey: "k", baseUrl: "http://x", defaultMaxTokens: 1.5 }),
    /defaultMaxTokens/,
  );
});

Deno.test("onTrace and fetchImpl are used, and the key never reaches a trace", async () => {
  await withMessagesFake(async (fake) => {
    const traces: ProviderTrace[] = [];
    let fetched = 0;
    const client = new ProviderApiClient({
      apiKey: fake.apiKey,
      baseUrl: fake.baseUrl,
      defaultModel: "m",
      defaultMaxTokens: 5,
      fetchImpl: (input, init) => {
        fetched++;
        return fetch(input, init);
      },
      onTrace: (trace) => traces.push(trace),
    });
    await client.startRun({ input: "x" });
    assert.equal(fetched, 1);
    assert.equal(traces.length, 1);
    assert.equal(traces[0].path, "/v1/messages");
    assert.equal(traces[0].status, 200);
    assert.ok(!JSON.stringify(traces).includes(fake.apiKey));
  });
});

Deno.test("a streamed run answered with JSON instead of an event stream is an error", async () => {
  let cancelled = false;
  const client = new ProviderApiClient({
    apiKey: "k",
    baseUrl: "http://127.0.0.1:9",
    defaultModel: "m",
    defaultMaxTokens: 5,
    fetchImpl: () =>
      Promise.resolve(
        new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode('{"id":"msg_1"}'));
            },
            cancel() {
              cancelled = true;
            },
          }),
          { headers: { "content-type": "application/json" } },
        ),
      ),
  });
  await assert.rejects(
    client.streamRun({ input: "x" }, {}),
    (error: unknown) =>
      error instanceof ProviderApiError && error.type === "invalid_response" &&
      /instead of an event stream/.test(error.message),
  );
  assert.ok(cancelled, "the unexpected body was released");
});
