/**
 * Rule 11: the body may not exceed the limit (1 MiB by default). A declared `content-length`
 * over the limit is refused unread; otherwise bytes are counted while they stream in (chunked
 * bodies too) and reading stops at the first byte over. Either answers 413 `payloadTooLarge`.
 * A body still arriving when the deadline passes answers 408 `deadlineExceeded`.
 *
 * @module
 */
import type { Next, Rule } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import { deadlineExceeded } from "./deadline.ts";

/** Default body limit: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1_048_576;

function tooLarge(maxBytes: number): InterfaceError {
  return new InterfaceError("payloadTooLarge", `Request body exceeds ${maxBytes} bytes`, {
    extra: { maxBytes },
  });
}

/** Options of {@linkcode readLimitedBody}. */
export interface ReadLimitedBodyOptions {
  /** Most bytes accepted. */
  maxBytes: number;
  /** Stop reading after this many ms with 408 `deadlineExceeded` (default: no limit). */
  timeoutMs?: number;
}

/**
 * Reads a request body, counting bytes as they arrive and cancelling the stream at the first
 * byte over the limit.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readLimitedBody } from "./body.ts";
 * const bytes = await readLimitedBody(new Request("http://x/", { method: "POST", body: "{}" }), {
 *   maxBytes: 1024,
 * });
 * assert.equal(bytes.length, 2);
 * ```
 */
export async function readLimitedBody(
  request: Request,
  options: ReadLimitedBodyOptions,
): Promise<Uint8Array> {
  const { maxBytes } = options;
  const declared = request.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > maxBytes) {
    throw tooLarge(maxBytes);
  }
  const stream = request.body;
  if (stream === null) return new Uint8Array(0);
  const reader = stream.getReader();
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (options.timeoutMs !== undefined) {
    timer = setTimeout(() => {
      timedOut = true;
      reader.cancel().catch(() => {});
    }, Math.max(0, options.timeoutMs));
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => {});
        throw tooLarge(maxBytes);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof InterfaceError) throw error;
    if (timedOut) throw deadlineExceeded();
    throw new InterfaceError("invalidJson", "The request body could not be read", {
      cause: error,
    });
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
  if (timedOut) throw deadlineExceeded();
  if (chunks.length === 1) return chunks[0];
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/**
 * The body rule; sets `context.bodyBytes`. It runs after authentication, so no byte of an
 * unauthenticated body is read.
 */
export function bodyRule(options: { maxBytes: number; maxMs?: number }): Rule<RequestContext> {
  const { maxBytes, maxMs } = options;
  return async function body(context: RequestContext, next: Next): Promise<Response> {
    const elapsed = performance.now() - context.startedAt;
    const left = context.deadline > 0 ? context.deadline - context.receivedAt - elapsed : undefined;
    const timeoutMs = maxMs === undefined ? left : Math.min(left ?? maxMs, maxMs - elapsed);
    context.bodyBytes = await readLimitedBody(context.request, { maxBytes, timeoutMs });
    return next();
  };
}
