/**
 * One SSE answer of the provider simulator: a `ReadableStream` fed by a
 * {@linkcode SimulatorStreamSubscriber}, with the stream faults applied as frames are written (a
 * stream cut after N bytes or frames, every frame written twice).
 *
 * @module
 */
import type { StreamDrop } from "./faults.ts";
import type { SimulatorStreamSubscriber } from "./http.ts";

/** Where a stream registers itself, so the simulator can count and close open streams. */
export interface StreamRegistry {
  /** The open streams. */
  readonly subscribers: Set<SimulatorStreamSubscriber>;
  /** Cleanups run when the simulator closes. */
  readonly closers: Set<() => void>;
}

/** Options of {@linkcode eventStreamResponse}. */
export interface EventStreamOptions {
  /** Cut the stream as this says. */
  drop?: StreamDrop;
  /** Write every frame twice. */
  duplicate: boolean;
  /** Where the stream registers itself. */
  registry: StreamRegistry;
  /** Receives the subscriber before the answer is returned; returns its detach. */
  attach(subscriber: SimulatorStreamSubscriber): () => void;
}

const encoder = new TextEncoder();

/**
 * The SSE answer. `attach` receives the subscriber before the response exists, so nothing written
 * after the caller's fetch resolves can be missed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { eventStreamResponse } from "./_event_stream.ts";
 * const response = eventStreamResponse({
 *   duplicate: false,
 *   registry: { subscribers: new Set(), closers: new Set() },
 *   attach(subscriber) {
 *     subscriber.write("data: 1\n\n");
 *     subscriber.close();
 *     return () => {};
 *   },
 * });
 * assert.equal(await response.text(), "data: 1\n\n");
 * ```
 */
export function eventStreamResponse(options: EventStreamOptions): Response {
  const { registry, duplicate } = options;
  let dropAfter = options.drop !== undefined && "afterBytes" in options.drop
    ? options.drop.afterBytes
    : undefined;
  let framesLeft = options.drop !== undefined && "afterFrames" in options.drop
    ? options.drop.afterFrames
    : undefined;
  let detach: (() => void) | undefined;
  let closed = false;
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;
  const finish = (): void => {
    closed = true;
    registry.subscribers.delete(subscriber);
    detach?.();
    detach = undefined;
  };
  // Erroring a stream discards what is still queued, so wait until the server took every chunk.
  const dropWhenFlushed = (controller: ReadableStreamDefaultController<Uint8Array>): void => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stop = (): void => {
      clearTimeout(timer);
      registry.closers.delete(stop);
      try {
        controller.error(new Error("provider simulator: stream dropped (fault switch)"));
      } catch {
        // Already cancelled by the client.
      }
    };
    const check = (): void => {
      if ((controller.desiredSize ?? 1) >= 1) stop();
      else timer = setTimeout(check, 2);
    };
    registry.closers.add(stop);
    timer = setTimeout(check, 2);
  };
  const subscriber: SimulatorStreamSubscriber = {
    get closed(): boolean {
      return closed;
    },
    write(frame: string): void {
      if (closed || !controllerRef) return;
      let bytes = encoder.encode(duplicate ? frame + frame : frame);
      if (framesLeft !== undefined) {
        if (framesLeft === 0) dropAfter = Math.max(1, Math.floor(bytes.length / 2));
        framesLeft -= 1;
      }
      if (dropAfter !== undefined) {
        if (bytes.length >= dropAfter) {
          bytes = bytes.subarray(0, dropAfter);
          if (bytes.length > 0) controllerRef.enqueue(bytes);
          finish();
          dropWhenFlushed(controllerRef);
          return;
        }
        dropAfter -= bytes.length;
      }
      controllerRef.enqueue(bytes);
    },
    close(): void {
      if (closed) return;
      finish();
      try {
        controllerRef?.close();
      } catch {
        // Already errored or closed.
      }
    },
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controllerRef = controller;
    },
    cancel() {
      finish();
    },
  });
  registry.subscribers.add(subscriber);
  detach = options.attach(subscriber);
  return new Response(body, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
  });
}
