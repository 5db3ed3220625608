import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import {
  ProviderAbortError,
  ProviderBatchLineError,
  ProviderBatchResultsError,
  readProviderBatchResults,
  type RuntimeBatchResult,
} from "../../client/mod.ts";
import {
  generatedLines,
  messageRecord,
  type MessagesFakeTest,
  withMessagesFake,
} from "../support/fake_messages.ts";

function withFake(test: MessagesFakeTest): Promise<void> {
  return withMessagesFake(test, { defaultMaxTokens: 64 });
}

// A ~330-byte succeeded line; built from a template so generating 200,000 of them is cheap.
const TEMPLATE = JSON.stringify({
  custom_id: "req-@",
  result: {
    type: "succeeded",
    message: messageRecord("msg_@", "model-small", "answer number @ ".padEnd(40, ".")),
  },
}).split("@");

function succeededLine(i: number): string {
  return TEMPLATE.join(String(i));
}

Deno.test("submitBatch, getBatch and cancelBatch use the message batches API", async () => {
  await withFake(async (fake, state, client) => {
    const submitted = await client.submitBatch([
      { customId: "a", body: { input: "first" } },
      { customId: "b", body: { input: "second", model: "model-large", maxTokens: 9 } },
    ]);
    assert.equal(submitted.status, "in_progress");
    assert.equal(submitted.counts.processing, 2);
    assert.equal(submitted.resultsUrl, null);
    assert.deepEqual(fake.requests[0].body, {
      requests: [
        {
          custom_id: "a",
          params: {
            model: "model-small",
            max_tokens: 64,
            messages: [{ role: "user", content: "first" }],
          },
        },
        {
          custom_id: "b",
          params: {
            model: "model-large",
            max_tokens: 9,
            messages: [{ role: "user", content: "second" }],
          },
        },
      ],
    });

    const read = await client.getBatch(submitted.batchId);
    assert.deepEqual(read, submitted);

    const cancelled = await client.cancelBatch(submitted.batchId);
    assert.equal(cancelled.status, "canceling");
    const last = fake.requests.at(-1)!;
    assert.equal(last.method, "POST");
    assert.equal(last.path, `/v1/messages/batches/${submitted.batchId}/cancel`);
    assert.equal(last.body, undefined, "cancel sends no body");
    assert.equal(last.headers["content-type"], undefined);
    assert.ok(state.batches.has(submitted.batchId));
  });
});

Deno.test("submitBatch checks every request before sending anything", async () => {
  await withFake(async (fake, _state, client) => {
    await assert.rejects(client.submitBatch([]), /at least one request/);
    await assert.rejects(
      client.submitBatch([
        { customId: "a", body: { input: "x" } },
        { customId: "a", body: { input: "y" } },
      ]),
      /repeats customId a/,
    );
    assert.equal(fake.requests.length, 0);
  });
});

Deno.test("getBatchResults streams an ended batch's results as contract results", async () => {
  await withFake(async (fake, state, client) => {
    const batch = await client.submitBatch([
      { customId: "one", body: { input: "1" } },
      { customId: "two", body: { input: "2" } },
    ]);
    await assert.rejects(
      (async () => {
        for await (const _ of client.getBatchResults(batch.batchId)) { /* none */ }
      })(),
      (error: unknown) =>
        error instanceof ProviderBatchResultsError && error.problem === "notReady",
    );
    state.endBatch(batch.batchId);
    const results: RuntimeBatchResult[] = [];
    for await (const result of client.getBatchResults(batch.batchId)) results.push(result);
    assert.deepEqual(results.map((r) => [r.customId, r.type]), [
      ["one", "succeeded"],
      ["two", "succeeded"],
    ]);
    const first = results[0];
    assert.equal(first.type === "succeeded" && first.run.output, "echo: 1");
    assert.equal(first.type === "succeeded" && first.run.status, "completed");
    const download = fake.requests.at(-1)!;
    assert.equal(download.path, `/v1/messages/batches/${batch.batchId}/results`);
    assert.equal(download.headers.accept, "application/binary");
  });
});

Deno.test("every result type maps: succeeded, errored, canceled, expired", async () => {
  const lines = [
    succeededLine(1),
    JSON.stringify({
      custom_id: "e",
      result: {
        type: "errored",
        error: {
          type: "error",
          error: { type: "invalid_request_error", message: "bad" },
          request_id: "r",
        },
      },
    }),
    JSON.stringify({ custom_id: "c", result: { type: "canceled" } }),
    JSON.stringify({ custom_id: "x", result: { type: "expired" } }),
  ];
  const results: RuntimeBatchResult[] = [];
  for await (const result of readProviderBatchResults(new Response(lines.join("\n")).body!)) {
    results.push(result);
  }
  assert.equal(results[0].type, "succeeded");
  assert.deepEqual(results.slice(1), [
    { customId: "e", type: "errored", error: { type: "invalid_request_error", message: "bad" } },
    { customId: "c", type: "canceled" },
    { customId: "x", type: "expired" },
  ]);
});

Deno.test("an absolute results_url on the base URL is followed; a foreign one is refused", async () => {
  await withFake(async (fake, state, client) => {
    const local = state.addEndedBatch(generatedLines(3, succeededLine));
    state.endBatch(local, {
      results: generatedLines(3, succeededLine),
      resultsUrl: `${fake.baseUrl}/v1/messages/batches/${local}/results`,
    });
    let count = 0;
    for await (const _ of client.getBatchResults(local)) count++;
    assert.equal(count, 3);

    const foreign = state.addEndedBatch(generatedLines(1, succeededLine));
    state.endBatch(foreign, { resultsUrl: "http://127.0.0.2:1/steal" });
    const before = fake.requests.length;
    await assert.rejects(
      (async () => {
        for await (const _ of client.getBatchResults(foreign)) { /* none */ }
      })(),
      (error: unknown) =>
        error instanceof ProviderBatchResultsError && error.problem === "foreignResultsUrl",
    );
    assert.equal(fake.requests.length, before + 1, "only the batch was read");
  });
});

Deno.test("malformed lines are typed errors with their line number; the rest still arrive", async () => {
  const encoder = new TextEncoder();
  const lines: (string | Uint8Array)[] = [
    succeededLine(1), // 1
    "not json", // 2
    succeededLine(3), // 3
    '{"custom_id":"no-result"}', // 4
    "", // 5 (blank: skipped, still counted)
    JSON.stringify({ custom_id: "odd", result: { type: "weird" } }), // 6
    new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), // 7 (not UTF-8)
    JSON.stringify({ custom_id: "big", pad: "z".repeat(5_000) }), // 8 (over the limit)
    succeededLine(9), // 9
    "[1,2]", // 10
  ];
  const body = (chunkSize: number): ReadableStream<Uint8Array> => {
    const parts = lines.flatMap((line) => [
      typeof line === "string" ? encoder.encode(line) : line,
      encoder.encode("\r\n"),
    ]);
    const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let offset = 0;
    for (const part of parts) {
      all.set(part, offset);
      offset += part.length;
    }
    let at = 0;
    return new ReadableStream({
      pull(controller) {
        if (at >= all.length) return controller.close();
        controller.enqueue(all.slice(at, at + chunkSize));
        at += chunkSize;
      },
    });
  };

  // 7-byte chunks make lines straddle chunk boundaries; one big chunk holds every line (and,
  // with the default limit, takes the one-decode-per-chunk path until the bad UTF-8 line).
  for (
    const [chunkSize, maxLineBytes] of [[7, 4_096], [1 << 20, 4_096], [1 << 20, undefined]]
  ) {
    const seen: ProviderBatchLineError[] = [];
    const good: string[] = [];
    for await (
      const result of readProviderBatchResults(body(chunkSize!), {
        maxLineBytes,
        onInvalidLine: (error) => void seen.push(error),
      })
    ) good.push(result.customId);
    assert.deepEqual(good, ["req-1", "req-3", "req-9"]);
    assert.deepEqual(seen.map((e) => [e.lineNumber, e.problem, e.customId]), [
      [2, "invalidJson", undefined],
      [4, "invalidShape", "no-result"],
      [6, "invalidShape", "odd"],
      [7, "invalidUtf8", undefined],
      maxLineBytes ? [8, "lineTooLong", undefined] : [8, "invalidShape", "big"],
      [10, "invalidShape", undefined],
    ]);
    assert.ok(seen.every((e) => e instanceof ProviderBatchLineError));
    assert.match(seen[0].message, /line 2 /);
    assert.ok(!seen[4].message.includes("zzz"), "line content is never quoted");

    // Without a handler: every good line first, then one error listing the bad ones.
    const good2: string[] = [];
    await assert.rejects(
      (async () => {
        for await (
          const result of readProviderBatchResults(body(chunkSize!), { maxLineBytes })
        ) {
          good2.push(result.customId);
        }
      })(),
      (error: unknown) => {
        assert.ok(error instanceof ProviderBatchResultsError);
        assert.equal(error.problem, "invalidLines");
        assert.equal(error.invalidLineCount, 6);
        assert.deepEqual(error.lineErrors.map((e) => e.lineNumber), [2, 4, 6, 7, 8, 10]);
        return true;
      },
    );
    assert.deepEqual(good2, good);
  }
});

Deno.test("blank lines, CRLF and a last line without a newline keep line numbers right", async () => {
  const text = [succeededLine(1), "", "  \t", succeededLine(4), "oops", succeededLine(6)].join(
    "\r\n",
  );
  for (const chunks of [[text], [text.slice(0, 500), text.slice(500)]]) {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
        controller.close();
      },
    });
    const bad: number[] = [];
    const good: string[] = [];
    for await (
      const result of readProviderBatchResults(body, {
        onInvalidLine: (error) => void bad.push(error.lineNumber),
      })
    ) good.push(result.customId);
    assert.deepEqual(good, ["req-1", "req-4", "req-6"]);
    assert.deepEqual(bad, [5]);
  }
});

Deno.test("breaking out early or aborting releases the results download", async () => {
  await withFake(async (_fake, state, client) => {
    const id = state.addEndedBatch(generatedLines(50_000, succeededLine));
    let count = 0;
    for await (const _ of client.getBatchResults(id)) {
      if (++count === 10) break;
    }
    assert.equal(count, 10);

    const controller = new AbortController();
    await assert.rejects(
      (async () => {
        let n = 0;
        for await (const _ of client.getBatchResults(id, { signal: controller.signal })) {
          if (++n === 100) controller.abort();
        }
      })(),
      ProviderAbortError,
    );
  });
});

Deno.test("a 200,000-line results file streams with flat memory", async () => {
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as () => void;
  await withFake(async (_fake, state, client) => {
    const lines = 200_000;
    const lineBytes = new TextEncoder().encode(succeededLine(lines)).length + 1;
    const id = state.addEndedBatch(generatedLines(lines, succeededLine));
    gc();
    const baseline = Deno.memoryUsage().heapUsed;
    let growth = 0;
    let count = 0;
    let lastId = "";
    for await (const result of client.getBatchResults(id)) {
      count++;
      lastId = result.customId;
      if (count % 20_000 === 0) {
        gc();
        growth = Math.max(growth, Deno.memoryUsage().heapUsed - baseline);
      }
    }
    assert.equal(count, lines);
    assert.equal(lastId, `req-${lines}`);
    const fileBytes = lines * lineBytes;
    assert.ok(fileBytes > 50e6, `file is ${fileBytes} bytes`);
    // Holding the file, or the parsed results, would grow the heap by far more than this.
    assert.ok(
      growth < 12e6,
      `heap grew by ${(growth / 1e6).toFixed(1)} MB over a ${(fileBytes / 1e6).toFixed(0)} MB file`,
    );
  });
});
