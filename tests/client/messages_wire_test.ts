/**
 * Wire conformance with the vendor's SDK (`tests/support/recorder.ts`): the same operations sent
 * by the SDK and by ProviderApiClient against the fake provider must agree on method, path,
 * query, the relevant headers and the body. The one allowed difference: the SDK sends its key as
 * `Authorization: Bearer`, this client as `x-api-key` (the spec's rule). The SDK names its
 * headers with the vendor's prefix; they are compared under the neutral `provider-` prefix.
 */
import assert from "node:assert/strict";
import Vendor from "@anthropic-ai/sdk";
import { ProviderApiClient, type RunStreamEvent } from "../../client/mod.ts";
import { textStreamFrames, withMessagesFake } from "../support/fake_messages.ts";
import type { FakeProvider, FakeRequestLog } from "../support/fake_provider.ts";

const VENDOR_PREFIX = /^anthropic-/;

interface Comparable {
  method: string;
  path: string;
  query: string[];
  version: string | undefined;
  beta: string | undefined;
  contentType: boolean;
  accept: string | undefined;
  body: unknown;
}

function comparable(log: FakeRequestLog): Comparable {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(log.headers)) {
    headers[name.replace(VENDOR_PREFIX, "provider-")] = value;
  }
  return {
    method: log.method,
    path: log.path,
    query: [...new URLSearchParams(log.query)].map(([k, v]) => `${k}=${v}`).sort(),
    version: headers["provider-version"],
    beta: headers["provider-beta"],
    contentType: "content-type" in headers,
    accept: headers.accept,
    body: log.body,
  };
}

function clients(fake: FakeProvider): { vendor: Vendor; ours: ProviderApiClient } {
  return {
    vendor: new Vendor({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 }),
    ours: new ProviderApiClient({
      apiKey: fake.apiKey,
      baseUrl: fake.baseUrl,
      maxRetries: 0,
    }),
  };
}

/** Runs `vendorCall` then `ourCall`, and compares what each sent. */
async function sameWire(
  fake: FakeProvider,
  vendorCall: () => Promise<unknown>,
  ourCall: () => Promise<unknown>,
): Promise<{ vendor: FakeRequestLog[]; ours: FakeRequestLog[] }> {
  const start = fake.requests.length;
  await vendorCall();
  const middle = fake.requests.length;
  await ourCall();
  const vendor = fake.requests.slice(start, middle);
  const ours = fake.requests.slice(middle);
  assert.equal(ours.length, vendor.length, "same number of requests");
  assert.deepEqual(ours.map(comparable), vendor.map(comparable));
  assert.ok(vendor.every((log) => log.auth === "bearer"));
  assert.ok(ours.every((log) => log.auth === "x-api-key"), "allowed difference: x-api-key");
  assert.ok(vendor.length > 0);
  return { vendor, ours };
}

const PARAMS = {
  model: "model-small",
  max_tokens: 64,
  system: "Be brief",
  messages: [
    { role: "user" as const, content: "Hello" },
    { role: "assistant" as const, content: "Hi" },
    { role: "user" as const, content: "Weather?" },
  ],
  metadata: { user_id: "user-7" },
  stop_sequences: ["END"],
};

const BODY = {
  input: PARAMS.messages,
  model: PARAMS.model,
  maxTokens: PARAMS.max_tokens,
  instructions: PARAMS.system,
  metadata: { user_id: "user-7", params: { stop_sequences: ["END"] } },
};

Deno.test("create: startRun sends what the SDK's messages.create sends", async () => {
  await withMessagesFake(async (fake) => {
    const { vendor, ours } = clients(fake);
    const sent = await sameWire(
      fake,
      () => vendor.messages.create(PARAMS),
      () => ours.startRun(BODY),
    );
    assert.equal(sent.ours[0].headers["provider-version"], "2026-10-21");
    assert.equal(sent.ours[0].headers["provider-beta"], undefined);
  });
});

Deno.test("stream: streamRun sends what the SDK's messages.stream sends", async () => {
  await withMessagesFake(async (fake, state) => {
    const { vendor, ours } = clients(fake);
    await sameWire(
      fake,
      () => vendor.messages.stream(PARAMS).finalMessage(),
      () => ours.streamRun(BODY, {}),
    );
    await sameWire(
      fake,
      async () => {
        for await (const _ of await vendor.messages.create({ ...PARAMS, stream: true })) {
          // Drain.
        }
      },
      () => ours.streamRun(BODY, {}),
    );
    assert.equal(state.streams.length, 0);
  });
});

Deno.test("every batch call sends what the SDK's batches API sends", async () => {
  await withMessagesFake(async (fake, state) => {
    const { vendor, ours } = clients(fake);
    const requests = [
      {
        custom_id: "one",
        params: { model: "model-small", max_tokens: 16, messages: PARAMS.messages },
      },
      { custom_id: "two", params: { ...PARAMS } },
    ];
    const created = await sameWire(
      fake,
      () => vendor.messages.batches.create({ requests }),
      () =>
        ours.submitBatch([
          {
            customId: "one",
            body: { input: PARAMS.messages, model: "model-small", maxTokens: 16 },
          },
          { customId: "two", body: BODY },
        ]),
    );
    assert.equal(created.vendor[0].path, "/v1/messages/batches");
    const [vendorId, ourId] = [...state.batches.keys()];
    // Both batches hold the same requests.
    assert.deepEqual(state.batches.get(ourId)!.requests, state.batches.get(vendorId)!.requests);

    // The SDK and this client each read the batch they created; paths differ only by the id.
    const swapId = (logs: FakeRequestLog[]): FakeRequestLog[] =>
      logs.map((log) => ({ ...log, path: log.path.replace(ourId, vendorId) }));
    const compareOn = async (
      vendorCall: () => Promise<unknown>,
      ourCall: () => Promise<unknown>,
    ): Promise<void> => {
      const start = fake.requests.length;
      await vendorCall();
      const middle = fake.requests.length;
      await ourCall();
      const v = fake.requests.slice(start, middle);
      const o = swapId(fake.requests.slice(middle));
      assert.ok(v.length > 0);
      assert.deepEqual(o.map(comparable), v.map(comparable));
    };
    await compareOn(
      () => vendor.messages.batches.retrieve(vendorId),
      () => ours.getBatch(ourId),
    );
    state.endBatch(vendorId);
    state.endBatch(ourId);
    const vendorResults: string[] = [];
    const ourResults: string[] = [];
    await compareOn(
      async () => {
        for await (const line of await vendor.messages.batches.results(vendorId)) {
          vendorResults.push(line.custom_id);
        }
      },
      async () => {
        for await (const result of ours.getBatchResults(ourId)) ourResults.push(result.customId);
      },
    );
    assert.deepEqual(ourResults, vendorResults);
    assert.deepEqual(ourResults, ["one", "two"]);
    // Results are fetched with Accept: application/binary after reading the batch.
    const download = fake.requests.at(-1)!;
    assert.equal(download.headers.accept, "application/binary");

    const v2 = await vendor.messages.batches.create({ requests });
    const o2 = await ours.submitBatch([{
      customId: "one",
      body: { input: "x", model: "m", maxTokens: 1 },
    }]);
    const start = fake.requests.length;
    await vendor.messages.batches.cancel(v2.id);
    await ours.cancelBatch(o2.batchId);
    const [vc, oc] = fake.requests.slice(start).map(comparable);
    assert.deepEqual({ ...oc, path: oc.path.replace(o2.batchId, v2.id) }, vc);
    assert.equal(oc.contentType, false, "cancel has no body");
  });
});

Deno.test("response side: the SDK and streamRun read the same stream the same way", async () => {
  await withMessagesFake(async (fake, state) => {
    const { vendor, ours } = clients(fake);
    const json = JSON.stringify({ city: "Oslo", units: "metric", days: [1, 2] });
    const script = () =>
      state.scriptStream({
        frames: textStreamFrames({
          id: "msg_same",
          chunks: ["It is ", "sunny."],
          tool: { id: "toolu_same", name: "forecast", parts: json.match(/.{1,3}/g)! },
          pingEvery: 2,
        }),
      });
    script();
    const message = await vendor.messages.stream(PARAMS).finalMessage();
    script();
    const events: RunStreamEvent[] = [];
    const { runId } = await ours.streamRun(BODY, { onEvent: (e) => void events.push(e) });
    assert.equal(runId, message.id);
    const text = message.content.flatMap((block) => block.type === "text" ? [block.text] : []);
    assert.deepEqual(
      events.flatMap((e) => e.type === "message.completed" ? [e.text] : []),
      text,
    );
    const tool = message.content.find((block) => block.type === "tool_use");
    const call = events.find((e) => e.type === "tool.call");
    assert.ok(tool && tool.type === "tool_use" && call && call.type === "tool.call");
    assert.equal(call.id, tool.id);
    assert.deepEqual(call.input, tool.input);
    const done = events.at(-1);
    assert.equal(done?.type === "run.completed" && done.stopReason, message.stop_reason);

    // An error frame: the SDK throws an API error of that type; streamRun fails the run with it.
    const failing = () =>
      state.scriptStream({
        frames: [
          ...textStreamFrames({ id: "msg_fail", chunks: ["a"] }).slice(0, 3),
          { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
        ],
      });
    failing();
    const thrown = await vendor.messages.stream(PARAMS).finalMessage().catch((e) => e);
    failing();
    const result = await ours.streamRun(BODY, {});
    assert.equal(thrown?.type ?? thrown?.error?.error?.type, "overloaded_error");
    assert.deepEqual(result.terminal, {
      type: "run.failed",
      runId: "msg_fail",
      error: { type: "overloaded_error", message: "Overloaded" },
    });
  });
});
