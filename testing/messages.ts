/**
 * The stateless messages API and message batches on the provider simulator:
 * {@linkcode installMessagesRoutes} adds `POST /v1/messages` (JSON or SSE), the batch routes and
 * the batch results download to a {@linkcode ProviderSimulator} (start it `bare` to serve only
 * these). Streams can be scripted frame by frame, and a results file replaced by a generated
 * body, so a 200,000-line file is never held in memory by the simulator either.
 *
 * @module
 */
import { type Json, jsonResponse, SimulatorHttpError, sseFrame } from "./http.ts";
import type { ProviderSimulator } from "./simulator.ts";

/** A scripted stream: frames (event objects, or raw text written as is), then close or hold. */
export interface ScriptedStream {
  /** Frames in order. An object is written as `event: <type>` + `data: <json>`. */
  frames: (Json | string)[];
  /** Keep the stream open after the last frame (until the caller cancels it). */
  hold?: boolean;
}

/** A stored batch. */
export interface SimulatedBatch {
  /** The wire record. */
  record: Json & { id: string; processing_status: string };
  /** The submitted requests. */
  requests: { custom_id: string; params: Json }[];
  /** A results body factory that replaces the default results. */
  results?: () => ReadableStream<Uint8Array>;
}

/** What the messages routes hold; tests script and inspect it. */
export class MessagesState {
  /** Streams served to the next streaming creates, first in first out. */
  readonly streams: ScriptedStream[] = [];
  /** Messages served to the next non-streaming creates, first in first out. */
  readonly messages: Json[] = [];
  /** Batches by id. */
  readonly batches: Map<string, SimulatedBatch> = new Map();
  #next = 0;

  /** Queues a scripted stream for the next `stream: true` create. */
  scriptStream(stream: ScriptedStream): void {
    this.streams.push(stream);
  }

  /** A fresh id with a prefix. */
  nextId(prefix: string): string {
    return `${prefix}${String(++this.#next).padStart(6, "0")}`;
  }

  /**
   * Ends a batch: every request succeeds (echo answers) unless `results` replaces the file;
   * `resultsUrl` sets `results_url` (default the batch's results path).
   */
  endBatch(
    batchId: string,
    options: { results?: () => ReadableStream<Uint8Array>; resultsUrl?: string } = {},
  ): void {
    const batch = this.batches.get(batchId);
    if (!batch) throw new Error(`no batch ${batchId}`);
    const n = batch.requests.length;
    batch.record.processing_status = "ended";
    batch.record.ended_at = new Date().toISOString();
    batch.record.request_counts = {
      processing: 0,
      succeeded: n,
      errored: 0,
      canceled: 0,
      expired: 0,
    };
    batch.record.results_url = options.resultsUrl ?? `/v1/messages/batches/${batchId}/results`;
    batch.results = options.results;
  }

  /** Adds an ended batch with no requests whose results file is `results`. */
  addEndedBatch(results: () => ReadableStream<Uint8Array>): string {
    const id = this.nextId("msgbatch_");
    this.batches.set(id, { record: batchRecord(id), requests: [] });
    this.endBatch(id, { results });
    return id;
  }
}

/**
 * A complete message answering `text` (the answer of a non-streaming create).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { messageRecord } from "./messages.ts";
 * assert.equal(messageRecord("msg_1", "model-small", "Hi").stop_reason, "end_turn");
 * ```
 */
export function messageRecord(id: string, model: string, text: string): Json {
  return {
    id,
    type: "message",
    role: "assistant",
    model,
    content: [{ type: "text", text, citations: null }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5 },
  };
}

function batchRecord(id: string): Json & { id: string; processing_status: string } {
  const created = new Date();
  return {
    id,
    type: "message_batch",
    processing_status: "in_progress",
    request_counts: { processing: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
    created_at: created.toISOString(),
    expires_at: new Date(created.getTime() + 86_400_000).toISOString(),
    ended_at: null,
    cancel_initiated_at: null,
    archived_at: null,
    results_url: null,
  };
}

/** Options of {@linkcode textStreamFrames}. */
export interface TextStreamOptions {
  /** Message id. */
  id?: string;
  /** Text chunks, one `text_delta` each. */
  chunks?: string[];
  /** A tool call after the text: its input JSON split into `input_json_delta` parts. */
  tool?: { id: string; name: string; parts: string[] };
  /** Stop reason in `message_delta` (default `end_turn`, or `tool_use` with a tool). */
  stopReason?: string;
  /** A `ping` frame before every Nth frame (0 = none). */
  pingEvery?: number;
}

/**
 * The frames of a complete streamed message (start, blocks, delta, stop).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { textStreamFrames } from "./messages.ts";
 * const frames = textStreamFrames({ chunks: ["a", "b"] });
 * assert.equal(frames[0].type, "message_start");
 * assert.equal(frames.at(-1)?.type, "message_stop");
 * ```
 */
export function textStreamFrames(options: TextStreamOptions = {}): Json[] {
  const id = options.id ?? "msg_stream";
  const frames: Json[] = [{
    type: "message_start",
    message: {
      id,
      type: "message",
      role: "assistant",
      model: "model-small",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 1 },
    },
  }];
  let index = 0;
  if (options.chunks) {
    frames.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
    for (const text of options.chunks) {
      frames.push({ type: "content_block_delta", index, delta: { type: "text_delta", text } });
    }
    frames.push({ type: "content_block_stop", index });
    index++;
  }
  if (options.tool) {
    frames.push({
      type: "content_block_start",
      index,
      content_block: { type: "tool_use", id: options.tool.id, name: options.tool.name, input: {} },
    });
    for (const partial_json of options.tool.parts) {
      frames.push({
        type: "content_block_delta",
        index,
        delta: { type: "input_json_delta", partial_json },
      });
    }
    frames.push({ type: "content_block_stop", index });
  }
  frames.push({
    type: "message_delta",
    delta: {
      stop_reason: options.stopReason ?? (options.tool ? "tool_use" : "end_turn"),
      stop_sequence: null,
    },
    usage: { output_tokens: 42 },
  });
  frames.push({ type: "message_stop" });
  if (!options.pingEvery) return frames;
  const withPings: Json[] = [];
  frames.forEach((frame, i) => {
    if (i % options.pingEvery! === 0) withPings.push({ type: "ping" });
    withPings.push(frame);
  });
  return withPings;
}

function requireCreateBody(body: Json): { model: string; text: string } {
  if (typeof body.model !== "string" || body.model === "") {
    throw new SimulatorHttpError(400, "invalid_request_error", "model: Field required");
  }
  if (typeof body.max_tokens !== "number") {
    throw new SimulatorHttpError(400, "invalid_request_error", "max_tokens: Field required");
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    throw new SimulatorHttpError(400, "invalid_request_error", "messages: Field required");
  }
  const last = body.messages[body.messages.length - 1] as { content?: unknown };
  const text = typeof last?.content === "string" ? last.content : "";
  return { model: body.model, text };
}

const encoder = new TextEncoder();

function defaultResults(batch: SimulatedBatch): ReadableStream<Uint8Array> {
  const lines = batch.requests.map((request, i) =>
    JSON.stringify({
      custom_id: request.custom_id,
      result: {
        type: "succeeded",
        message: messageRecord(
          `msg_batch_${i}`,
          String(request.params.model),
          `echo: ${(request.params.messages as { content?: unknown }[])?.[0]?.content}`,
        ),
      },
    }) + "\n"
  );
  return new Response(lines.join("")).body!;
}

/**
 * Adds the messages and batch routes to a simulator and returns their state: a create answers
 * an echo of the last message (or the next scripted message or stream), a batch succeeds when
 * {@linkcode MessagesState.endBatch} ends it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderApiClient } from "@automation/runtime/client";
 * import { installMessagesRoutes, ProviderSimulator, textStreamFrames } from "@automation/runtime/testing";
 *
 * await using simulator = await ProviderSimulator.start({ bare: true });
 * const messages = installMessagesRoutes(simulator);
 * messages.scriptStream({ frames: textStreamFrames({ chunks: ["Hel", "lo"] }) });
 * const client = new ProviderApiClient({
 *   apiKey: simulator.apiKey,
 *   baseUrl: simulator.baseUrl,
 *   defaultModel: "model-small",
 *   defaultMaxTokens: 64,
 * });
 * const { terminal } = await client.streamRun({ input: "Hi" }, {});
 * assert.equal(terminal?.type, "run.completed");
 * ```
 */
export function installMessagesRoutes(simulator: ProviderSimulator): MessagesState {
  const state = new MessagesState();

  simulator.route("POST", "/v1/messages", async (context) => {
    const body = await context.body();
    const { model, text } = requireCreateBody(body);
    if (body.stream !== true) {
      const scripted = state.messages.shift();
      return jsonResponse(scripted ?? messageRecord(state.nextId("msg_"), model, `echo: ${text}`));
    }
    const script = state.streams.shift() ?? {
      frames: textStreamFrames({ id: state.nextId("msg_"), chunks: ["echo: ", text] }),
    };
    return simulator.sseResponse((subscriber) => {
      for (const frame of script.frames) {
        subscriber.write(typeof frame === "string" ? frame : sseFrame(frame));
      }
      if (!script.hold) subscriber.close();
      return () => {};
    });
  });

  simulator.route("POST", "/v1/messages/batches", async (context) => {
    const body = await context.body();
    if (!Array.isArray(body.requests) || body.requests.length === 0) {
      throw new SimulatorHttpError(400, "invalid_request_error", "requests: Field required");
    }
    const requests = body.requests as { custom_id: string; params: Json }[];
    for (const request of requests) requireCreateBody(request.params ?? {});
    const id = state.nextId("msgbatch_");
    const record = batchRecord(id);
    (record.request_counts as Json).processing = requests.length;
    state.batches.set(id, { record, requests });
    return jsonResponse(record);
  });

  const find = (id: string): SimulatedBatch => {
    const batch = state.batches.get(id);
    if (!batch) throw new SimulatorHttpError(404, "not_found_error", `No batch ${id}`);
    return batch;
  };

  simulator.route("GET", "/v1/messages/batches/:batch_id", (context) => {
    return jsonResponse(find(context.params.batch_id).record);
  });

  simulator.route("POST", "/v1/messages/batches/:batch_id/cancel", (context) => {
    const batch = find(context.params.batch_id);
    if (batch.record.processing_status === "in_progress") {
      batch.record.processing_status = "canceling";
      batch.record.cancel_initiated_at = new Date().toISOString();
    }
    return jsonResponse(batch.record);
  });

  simulator.route("GET", "/v1/messages/batches/:batch_id/results", (context) => {
    const batch = find(context.params.batch_id);
    if (batch.record.processing_status !== "ended") {
      throw new SimulatorHttpError(400, "invalid_request_error", "Batch has not ended");
    }
    const body = batch.results ? batch.results() : defaultResults(batch);
    return new Response(body, { headers: { "content-type": "application/binary" } });
  });

  return state;
}

/**
 * A generated JSONL body of `count` lines, produced on demand (`pull`), never held whole.
 * `line(i)` gives line i (1-based) without its newline.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { generatedLines } from "./messages.ts";
 * const body = generatedLines(3, (n) => `{"n":${n}}`)();
 * assert.equal(await new Response(body).text(), '{"n":1}\n{"n":2}\n{"n":3}\n');
 * ```
 */
export function generatedLines(
  count: number,
  line: (lineNumber: number) => string,
  linesPerChunk = 256,
): () => ReadableStream<Uint8Array> {
  return () => {
    let next = 1;
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        if (next > count) {
          controller.close();
          return;
        }
        let text = "";
        for (let i = 0; i < linesPerChunk && next <= count; i++, next++) {
          text += line(next) + "\n";
        }
        controller.enqueue(encoder.encode(text));
      },
    });
  };
}
