/**
 * Response bodies the MCP endpoint follows to their end: a session is busy while an answer to it
 * streams, an open GET stream is counted (and re-checked) until it ends, and the endpoint ends such
 * a stream itself when its principal is refused.
 *
 * @module
 */

/** A response whose body the endpoint follows, and can end from its side. */
export interface TrackedBody {
  /** The response to answer with. */
  readonly response: Response;
  /** Ends the body now (the client sees the stream end) and calls `done`. */
  end(): void;
}

/**
 * Calls `done` once the response body has been sent, failed or been cancelled, or was ended
 * with the returned `end` (once, whichever comes first).
 */
export function trackBody(response: Response, done: () => void): TrackedBody {
  const body = response.body;
  if (body === null) {
    done();
    return { response, end() {} };
  }
  let finished = false;
  const finish = (): void => {
    if (finished) return;
    finished = true;
    done();
  };
  const reader = body.getReader();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({
    start(given) {
      controller = given;
    },
    async pull(controller) {
      try {
        const { done: end, value } = await reader.read();
        if (finished) return;
        if (end) {
          controller.close();
          finish();
        } else {
          controller.enqueue(value);
        }
      } catch (error) {
        if (!finished) controller.error(error);
        finish();
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  });
  return {
    response: new Response(stream, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    }),
    end(): void {
      if (finished) return;
      finish();
      try {
        controller.close();
      } catch {
        // Already closed or errored.
      }
      reader.cancel().catch(() => {});
    },
  };
}

/** Calls `done` once the response body has been sent, failed or been cancelled. */
export function onBodyEnd(response: Response, done: () => void): Response {
  return trackBody(response, done).response;
}
