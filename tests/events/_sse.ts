/**
 * Test helpers for event streams: open a run's SSE stream (or the activity feed) on an in-process
 * server and read its frames (with `retry` and comment lines kept), or read it whole.
 *
 * @module
 */
import { sharedHeaders } from "../support/server.ts";

/** One frame of an event stream as the test sees it. */
export interface Frame {
  id?: string;
  event?: string;
  // deno-lint-ignore no-explicit-any
  data?: any;
  retry?: string;
  comment?: string;
}

/** Splits SSE text into frames (the runtime writes LF line ends only). */
export function parseFrames(text: string): { frames: Frame[]; rest: string } {
  const frames: Frame[] = [];
  let rest = text;
  for (;;) {
    const end = rest.indexOf("\n\n");
    if (end === -1) break;
    const block = rest.slice(0, end);
    rest = rest.slice(end + 2);
    const frame: Frame = {};
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) frame.comment = line.slice(1).trim();
      else if (line.startsWith("id: ")) frame.id = line.slice(4);
      else if (line.startsWith("event: ")) frame.event = line.slice(7);
      else if (line.startsWith("data: ")) frame.data = JSON.parse(line.slice(6));
      else if (line.startsWith("retry: ")) frame.retry = line.slice(7);
    }
    frames.push(frame);
  }
  return { frames, rest };
}

/** An open stream read frame by frame. */
export class EventReader {
  readonly response: Response;
  #reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  readonly #decoder = new TextDecoder();
  #buffer = "";
  #queue: Frame[] = [];
  ended = false;

  constructor(response: Response) {
    this.response = response;
  }

  get #body(): ReadableStreamDefaultReader<Uint8Array> {
    return this.#reader ??= this.response.body!.getReader();
  }

  /** The next frame, or null at the stream's end. */
  async next(): Promise<Frame | null> {
    while (this.#queue.length === 0) {
      if (this.ended) return null;
      const { done, value } = await this.#body.read();
      if (done) {
        this.ended = true;
        return null;
      }
      this.#buffer += this.#decoder.decode(value, { stream: true });
      const { frames, rest } = parseFrames(this.#buffer);
      this.#buffer = rest;
      this.#queue.push(...frames);
    }
    return this.#queue.shift()!;
  }

  /** The next event frame (skipping `retry` and comments), or null at the end. */
  async nextEvent(): Promise<Frame | null> {
    for (;;) {
      const frame = await this.next();
      if (frame === null || frame.id !== undefined) return frame;
    }
  }

  /** Every remaining event frame until the stream ends. */
  async rest(): Promise<Frame[]> {
    const out: Frame[] = [];
    for (;;) {
      const frame = await this.nextEvent();
      if (frame === null) return out;
      out.push(frame);
    }
  }

  /** Goes away (the client disconnects). */
  async cancel(): Promise<void> {
    await this.#body.cancel().catch(() => {});
  }
}

/** Anything that answers requests: an in-process server's handler, or fetch to a URL. */
export type Answerer = (request: Request) => Promise<Response>;

/** Opens `GET /v1/runs/{runId}/events` as SSE. */
export async function openEvents(
  answer: Answerer,
  base: string,
  bearer: string,
  runId: string,
  options: { lastEventId?: string; after?: number; signal?: AbortSignal } = {},
): Promise<EventReader> {
  const headers = sharedHeaders(bearer, {
    accept: "text/event-stream",
    ...(options.lastEventId !== undefined ? { "last-event-id": options.lastEventId } : {}),
  });
  const query = options.after !== undefined ? `?after=${options.after}` : "";
  const response = await answer(
    new Request(`${base}/v1/runs/${runId}/events${query}`, {
      headers,
      signal: options.signal,
    }),
  );
  return new EventReader(response);
}

/** Opens `GET /v1/activity` as SSE. */
export async function openActivity(
  answer: Answerer,
  base: string,
  bearer: string,
  options: { lastEventId?: string; after?: number } = {},
): Promise<EventReader> {
  const headers = sharedHeaders(bearer, {
    accept: "text/event-stream",
    ...(options.lastEventId !== undefined ? { "last-event-id": options.lastEventId } : {}),
  });
  const query = options.after !== undefined ? `?after=${options.after}` : "";
  return new EventReader(await answer(new Request(`${base}/v1/activity${query}`, { headers })));
}
