/**
 * Passing a request on to the provider and its answer back, unchanged: the one way the
 * `/provider` interface forwards what it does not answer itself (admins' operations, reads of
 * agents, environments, sessions and threads). The provider is called through the gateway's one
 * client (its credential, retries and timeouts), with the caller's version and betas; the wait
 * for the answer's headers is bounded by the call's deadline, and the body (a JSON record, a
 * download, an event stream) is relayed as it comes. A failure of the provider is the gateway's
 * `ProviderFailure`, rendered in the provider's shape with its text scrubbed.
 *
 * @module
 */
import type { ManagedAgentRawRequest, ProviderManagedAgentClient } from "../../client/mod.ts";
import { ProviderConnectionError } from "../../client/errors.ts";
import type { RunGateway } from "../runs/runs.ts";
import type { NativeCall } from "./_chain.ts";

/** What relaying needs: the gateway (its one client and failures) and the server's clock. */
export interface RelayParts {
  /** The run gateway. */
  readonly gateway: RunGateway;
  /** The server's clock, ms since the epoch. */
  readonly now: () => number;
}

/** A request to pass on. */
export type RelayRequest = Omit<ManagedAgentRawRequest, "signal" | "betas" | "providerVersion">;

/**
 * Sends `request` to the provider for `call` and answers the provider's response once its
 * headers arrived, body unread. A provider refusal or failure is thrown as the gateway's refusal
 * (with the `ProviderFailure` as its cause).
 */
export async function send(
  parts: RelayParts,
  call: NativeCall,
  request: RelayRequest,
  signal?: AbortSignal,
): Promise<Response> {
  const { gateway } = parts;
  const client: ProviderManagedAgentClient = await gateway.providerClient();
  // The deadline bounds the wait for the headers only: a body (a stream) goes on past it.
  const waiting = new AbortController();
  const timer = setTimeout(
    () => waiting.abort(new Error("deadline")),
    Math.max(call.run.deadline - parts.now(), 1),
  );
  const stop = () => waiting.abort(signal?.reason);
  signal?.addEventListener("abort", stop, { once: true });
  try {
    return await client.rawResponse({
      ...request,
      ...call.upstream,
      signal: waiting.signal,
    });
  } catch (error) {
    throw gateway.failures.refusal(error);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", stop);
  }
}

/**
 * The provider's response as this interface's answer: its status, its body as it comes and its
 * `content-type` (`onStream` may take over an event stream's body: the open streams count it).
 */
export function relayed(
  response: Response,
  onStream?: (body: ReadableStream<Uint8Array>) => ReadableStream<Uint8Array>,
): Response {
  const type = response.headers.get("content-type");
  const headers: Record<string, string> = {};
  if (type !== null) headers["content-type"] = type;
  let body: ReadableStream<Uint8Array> | null = response.body;
  if (body !== null && type !== null && type.toLowerCase().startsWith("text/event-stream")) {
    headers["cache-control"] = "no-store";
    headers["x-accel-buffering"] = "no";
    if (onStream !== undefined) body = onStream(body);
  }
  return new Response(response.status === 204 ? null : body, {
    status: response.status,
    headers,
  });
}

/**
 * Reads the provider's JSON answer to `request` for `call` (within its deadline): its status and
 * body text.
 */
export async function sendForText(
  parts: RelayParts,
  call: NativeCall,
  request: RelayRequest,
): Promise<{ status: number; text: string }> {
  const response = await send(parts, call, request);
  try {
    return { status: response.status, text: await response.text() };
  } catch (cause) {
    throw parts.gateway.failures.refusal(
      new ProviderConnectionError("The provider response ended early", { cause }),
    );
  }
}
