/**
 * An event stream relayed from the provider as it comes (the `/provider` interface's thread
 * streams and streamed messages), held like the hub's own streams: it counts among this
 * replica's open streams, its principal is re-checked twice a second, and it ends (the
 * provider's stream cancelled) when that principal is refused, when the replica drains or
 * closes, or when the client goes.
 *
 * @module
 */
import type { OpenStream, OpenStreams } from "./open_streams.ts";

/** Options of {@linkcode RelayedStream}. */
export interface RelayedStreamOptions {
  /** The provider's stream. */
  source: ReadableStream<Uint8Array>;
  /** The request's credential as an `Authorization` value, re-checked by `streams`. */
  authorization: string | null;
  /** The principal that opened it (counted against its own limit). */
  principalId?: string;
  /** This replica's open streams. */
  streams: OpenStreams;
  /** Ends the relay when it fires (in-process callers). */
  signal?: AbortSignal;
}

/** One relayed stream (see the module doc). */
export class RelayedStream implements OpenStream {
  readonly authorization: string | null;
  readonly principalId?: string;
  /** The stream's bytes, for a `Response` (cancelling it ends the stream). */
  readonly body: ReadableStream<Uint8Array>;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #streams: OpenStreams;
  readonly #signal: AbortSignal | undefined;
  readonly #end = (): void => this.end();
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #ended = false;

  /** Opens the relay: it counts among the open streams at once. */
  constructor(options: RelayedStreamOptions) {
    this.authorization = options.authorization;
    if (options.principalId !== undefined) this.principalId = options.principalId;
    this.#streams = options.streams;
    this.#reader = options.source.getReader();
    this.#signal = options.signal;
    this.#streams.add(this);
    this.#signal?.addEventListener("abort", this.#end, { once: true });
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      pull: async (controller) => {
        try {
          const { done, value } = await this.#reader.read();
          if (done) {
            this.end();
            return;
          }
          controller.enqueue(value);
        } catch (error) {
          this.#release();
          try {
            controller.error(error);
          } catch {
            // Already closed.
          }
        }
      },
      cancel: () => this.#release(),
    }, { highWaterMark: 1 });
    if (this.#signal?.aborted) this.end();
  }

  /** Ends the relay (revocation, drain, the provider's end) and cancels the provider's stream. */
  end(): void {
    if (this.#ended) return;
    this.#release();
    try {
      this.#controller.close();
    } catch {
      // Already closed or errored.
    }
  }

  #release(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#streams.delete(this);
    this.#signal?.removeEventListener("abort", this.#end);
    this.#reader.cancel().catch(() => {});
  }
}
