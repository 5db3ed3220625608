/**
 * Test helpers for the event hub on its own: a Deno KV store in memory whose calls are counted (and
 * may be replaced), a hub over it, log entries and turns, and a stream reader that keeps every
 * chunk.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Authenticator } from "../../server/authenticator.ts";
import {
  type EventStreamBody,
  type EventStreamOptions,
  RunEventHub,
  type RunEventHubOptions,
} from "../../server/runs/events.ts";
import { openKvStore, wrapStore } from "../../server/store/mod.ts";
import type {
  RunEventInput,
  RuntimeRunState as RunState,
  Store,
  StoredRunRecord as RunRecord,
} from "../../server/store/types.ts";

// deno-lint-ignore no-explicit-any
export type Json = any;

/** Store calls by `part.method`, and replacements for some methods. */
export interface Instrumented {
  /** The store the hub gets. */
  store: Store;
  /** The store underneath (its calls are not counted). */
  raw: Store;
  calls: Record<string, number>;
  // deno-lint-ignore no-explicit-any
  replace: Partial<Record<string, (...args: any[]) => unknown>>;
}

export async function instrumented(): Promise<Instrumented> {
  const raw = await openKvStore({ path: ":memory:", namespace: "hub-test" });
  const calls: Record<string, number> = {};
  const replace: Instrumented["replace"] = {};
  const store = wrapStore(raw, (part, method, call) => {
    const name = `${part}.${method}`;
    return (...args) => {
      calls[name] = (calls[name] ?? 0) + 1;
      const replacement = replace[name];
      return replacement !== undefined ? replacement(...args) : call(...args);
    };
  });
  return { store, raw, calls, replace };
}

/** A hub whose authenticator accepts every credential. */
export function hubOver(store: Store, options: Partial<RunEventHubOptions> = {}): RunEventHub {
  const authenticator = { authenticate: () => Promise.resolve({}) } as unknown as Authenticator;
  return new RunEventHub({ store, authenticator, ...options });
}

export function record(runId: string, state: RunState): RunRecord {
  return {
    runId,
    principalId: "p",
    agentId: "a",
    environmentId: "e",
    state,
    lastEventSeq: 0,
    createdAt: "2026-01-01T00:00:00Z",
    updatedAt: "2026-01-01T00:00:00Z",
  };
}

let sources = 0;
export function input(
  runId: string,
  type: string,
  extra: Record<string, unknown> = {},
): RunEventInput {
  return {
    sourceId: `sevt_${++sources}`,
    at: new Date().toISOString(),
    event: { type, runId, ...extra } as RunEventInput["event"],
  };
}

/** A turn: started (first turn only), running, a message, and its end. */
export function turn(runId: string, first: boolean, end = "run.completed"): RunEventInput[] {
  return [
    ...(first ? [input(runId, "run.started")] : []),
    input(runId, "run.status", { state: "running" }),
    input(runId, "message.completed", { text: 'héllo ✓ "quoted"' }),
    input(runId, end, end === "run.completed" ? { stopReason: "end_turn" } : {}),
  ];
}

export function ids(body: Uint8Array | string): number[] {
  const text = typeof body === "string" ? body : new TextDecoder().decode(body);
  return [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
}

export function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/** A stream read chunk by chunk, everything kept. */
export class Collector {
  readonly chunks: Uint8Array[] = [];
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  ended = false;

  constructor(body: EventStreamBody) {
    assert.ok(body instanceof ReadableStream, "a stream, not a complete answer");
    this.#reader = body.getReader();
  }

  get bytes(): Uint8Array {
    return concat(this.chunks);
  }

  /** Reads until the frame `seq` came (or the stream ended); fails after `ms`. */
  async until(seq: number, ms = 3_000): Promise<number[]> {
    const deadline = Date.now() + ms;
    while (!ids(this.bytes).includes(seq) && !this.ended) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), Math.max(deadline - Date.now(), 0));
      });
      const read = await Promise.race([this.#reader.read(), timeout]);
      clearTimeout(timer);
      if (read === "timeout") assert.fail(`frame ${seq} did not come within ${ms} ms`);
      if (read.done) this.ended = true;
      else this.chunks.push(read.value);
    }
    return ids(this.bytes);
  }

  async rest(): Promise<Uint8Array> {
    for (;;) {
      const read = await this.#reader.read();
      if (read.done) break;
      this.chunks.push(read.value);
    }
    this.ended = true;
    return this.bytes;
  }

  cancel(): Promise<void> {
    return this.#reader.cancel();
  }
}

export function options(runId: string, state: RunState, after = 0): EventStreamOptions {
  return { runId, after, authorization: null, record: record(runId, state) };
}

/** A pending store read the test settles. */
export function deferred<T>(): PromiseWithResolvers<T> {
  return Promise.withResolvers<T>();
}
