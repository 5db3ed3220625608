/**
 * Requests of the managed-agents API passed on as they are: {@linkcode ManagedAgentRawApi} sends
 * a method, a path under `/v1/`, a query string and a JSON body with the client's credential,
 * version, betas, timeouts and retries, and answers the provider's status and body text
 * unchanged. A gateway that serves the provider's own API to its callers (the runtime's
 * `/provider` interface) forwards the requests it does not handle itself this way; everything
 * else should use the typed methods.
 *
 * @module
 */
import { ProviderConnectionError } from "../errors.ts";
import { callFields } from "../http.ts";
import { wire } from "./_resource.ts";
import type { ManagedAgentRequestOptions } from "./types.ts";

/** One request of {@linkcode ManagedAgentRawApi.rawRequest}. */
export interface ManagedAgentRawRequest extends ManagedAgentRequestOptions {
  /** The method. */
  method: "GET" | "POST" | "DELETE";
  /**
   * The path, `/v1/…`, as it goes on the wire (ids percent-encoded): segments of URL path
   * characters only, no `.` or `..` segment, no query.
   */
  path: string;
  /** The query string without `?`, sent as it is. */
  query?: string;
  /** The JSON body; absent: no body (and no `content-type`). */
  body?: unknown;
  /** A body of another type (a file upload), sent byte for byte with its content type. */
  rawBody?: { bytes: Uint8Array; contentType: string };
  /** The `accept` header (default `application/json`). */
  accept?: string;
}

/** What {@linkcode ManagedAgentRawApi.rawRequest} answers: the provider's own. */
export interface ManagedAgentRawResponse {
  /** The HTTP status (2xx; an error status is a `ProviderApiError`). */
  status: number;
  /** The body text (empty for 204). */
  body: string;
  /** The `content-type` of the answer, or null. */
  contentType: string | null;
}

const PATH = /^\/v1(?:\/[A-Za-z0-9\-._~!$&'()*+,;=:@%]+)+$/;

/**
 * Checks a path given to {@linkcode ManagedAgentRawApi.rawRequest}: `/v1/` and segments of URL
 * path characters, none of them `.` or `..` (also percent-encoded). A `TypeError` otherwise.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkRawPath } from "@automation/runtime/client";
 * assert.equal(checkRawPath("/v1/vaults/vlt_1"), "/v1/vaults/vlt_1");
 * assert.throws(() => checkRawPath("/v1/vaults/../sessions"), TypeError);
 * ```
 */
export function checkRawPath(path: string): string {
  if (typeof path !== "string" || path.length > 2048 || !PATH.test(path)) {
    throw new TypeError("path must be /v1/… with URL path characters only");
  }
  for (const segment of path.split("/")) {
    if (/^(?:\.|%2e){1,2}$/i.test(segment)) {
      throw new TypeError("path must not hold a . or .. segment");
    }
  }
  return path;
}

/**
 * Managed-agents requests passed on as they are, installed on `ProviderManagedAgentClient`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderManagedAgentClient } from "@automation/runtime/client";
 * const seen: string[] = [];
 * const client = new ProviderManagedAgentClient({
 *   baseUrl: "https://provider.example",
 *   apiKey: "<API_KEY>",
 *   fetchImpl: (input, init) => {
 *     seen.push(`${init?.method} ${input} ${new Headers(init?.headers).get("provider-version")}`);
 *     return Promise.resolve(Response.json({ id: "vlt_1", type: "vault" }));
 *   },
 * });
 * const answer = await client.rawRequest({
 *   method: "GET",
 *   path: "/v1/vaults/vlt_1",
 *   query: "include_archived=true",
 *   providerVersion: "2026-10-21",
 * });
 * assert.equal(answer.status, 200);
 * assert.deepEqual(JSON.parse(answer.body), { id: "vlt_1", type: "vault" });
 * assert.deepEqual(seen, [
 *   "GET https://provider.example/v1/vaults/vlt_1?include_archived=true 2026-10-21",
 * ]);
 * ```
 */
export interface ManagedAgentRawApi {
  /**
   * Sends one request as given (with the client's credential, version unless the request names
   * one, betas, timeout and retries) and answers the provider's status and body text. An error
   * status is a `ProviderApiError`, as for every other method.
   */
  rawRequest(request: ManagedAgentRawRequest): Promise<ManagedAgentRawResponse>;

  /**
   * Like {@linkcode ManagedAgentRawApi.rawRequest}, but answers the provider's response once its
   * headers arrived, body unread (a download, a JSONL file, an event stream: whatever it is);
   * the timeout covers only the wait for the headers, `signal` cancels the body.
   */
  rawResponse(request: ManagedAgentRawRequest): Promise<Response>;

  /**
   * Opens an SSE stream (`GET`) as given and returns its body once the headers arrived; the
   * timeout covers only the wait for them, `signal` cancels the body.
   */
  rawStream(
    request: Omit<ManagedAgentRawRequest, "method" | "body">,
  ): Promise<ReadableStream<Uint8Array>>;
}

/**
 * Sends a raw request; `stream`: the timeout covers only the wait for the headers (the body may
 * take as long as it takes), else the whole request, its body read by the caller at once.
 */
function sendRaw(
  client: unknown,
  request: ManagedAgentRawRequest,
  stream: boolean,
): Promise<Response> {
  return wire(client).send({
    method: request.method,
    path: checkRawPath(request.path),
    ...(request.query !== undefined ? { rawQuery: request.query } : {}),
    ...(request.rawBody !== undefined
      ? { rawBody: request.rawBody }
      : request.body !== undefined
      ? { body: request.body }
      : {}),
    ...(request.accept !== undefined ? { accept: request.accept } : {}),
    ...(stream ? { stream: true } : {}),
    ...callFields(request),
  });
}

/** The implementation of {@linkcode ManagedAgentRawApi}, installed on the client's prototype. */
export const rawApi: ManagedAgentRawApi & ThisType<ManagedAgentRawApi> = {
  async rawRequest(request: ManagedAgentRawRequest): Promise<ManagedAgentRawResponse> {
    const response = await sendRaw(this, request, false);
    let body: string;
    try {
      body = await response.text();
    } catch (cause) {
      throw new ProviderConnectionError("The provider response ended early", { cause });
    }
    return { status: response.status, body, contentType: response.headers.get("content-type") };
  },

  rawResponse(request: ManagedAgentRawRequest): Promise<Response> {
    return sendRaw(this, request, true);
  },

  async rawStream(
    request: Omit<ManagedAgentRawRequest, "method" | "body">,
  ): Promise<ReadableStream<Uint8Array>> {
    const response = await sendRaw(
      this,
      { ...request, method: "GET", accept: "text/event-stream" },
      true,
    );
    if (!response.body) throw new ProviderConnectionError("The event stream has no body");
    return response.body;
  },
};
