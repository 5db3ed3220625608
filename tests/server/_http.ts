/**
 * HTTP helpers of the black-box server tests: one call with the shared headers, a raw HTTP/1.1
 * request for header lines `fetch` would merge, and the assertion on error bodies.
 *
 * @module
 */
import assert from "node:assert/strict";
import { assertKeepsContract } from "../support/contract.ts";
import { sharedHeaders } from "../support/server.ts";

/** An answered request. */
export interface CallResult {
  /** HTTP status. */
  status: number;
  /** Response headers. */
  headers: Headers;
  /** Body text. */
  text: string;
  /** Body parsed as JSON, or undefined. */
  // deno-lint-ignore no-explicit-any
  json: any;
  /** The headers that were sent. */
  sent: Headers;
}

/** Options of {@linkcode call}. */
export interface CallOptions {
  /** Bearer to send (`null`: no `Authorization`). */
  bearer: string | null;
  /** Header overrides; `null` drops a header. */
  headers?: Record<string, string | null>;
  /** Body: objects are sent as JSON with `content-type: application/json`. */
  body?: unknown;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Sends one request with the shared headers.
 *
 * @example
 * ```ts ignore
 * const result = await call(server.url, "GET", "/v1/runtime", { bearer: server.bearer });
 * ```
 */
export async function call(
  base: string,
  method: string,
  path: string,
  options: CallOptions,
): Promise<CallResult> {
  const overrides = { ...options.headers };
  let body: BodyInit | undefined;
  const raw = options.body;
  if (raw === undefined) {
    body = undefined;
  } else if (
    typeof raw === "string" || raw instanceof Uint8Array || raw instanceof ReadableStream
  ) {
    body = raw as BodyInit;
  } else {
    body = JSON.stringify(raw);
    if (!("content-type" in overrides)) overrides["content-type"] = "application/json";
  }
  const sent = sharedHeaders(options.bearer, overrides);
  const response = await fetch(`${base}${path}`, { method, headers: sent, body });
  const text = await response.text();
  const result = { status: response.status, headers: response.headers, text };
  await assertKeepsContract(method, path, result);
  return { ...result, json: parseJson(text), sent };
}

/** A raw HTTP answer. */
export interface RawResult {
  /** HTTP status. */
  status: number;
  /** Response headers. */
  headers: Headers;
  /** Body text. */
  text: string;
  // deno-lint-ignore no-explicit-any
  json: any;
}

/**
 * Sends a request as raw HTTP/1.1, so header lines are sent exactly as given (twice, if listed
 * twice). The connection is closed after the answer.
 *
 * @example
 * ```ts ignore
 * const result = await rawRequest(server.url, "GET /v1/runtime HTTP/1.1", [["x-deadline", "a"]]);
 * ```
 */
export async function rawRequest(
  base: string,
  requestLine: string,
  headers: readonly (readonly [string, string])[],
  body = "",
): Promise<RawResult> {
  const url = new URL(base);
  const connection = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
  try {
    let head = `${requestLine}\r\nhost: ${url.host}\r\nconnection: close\r\n`;
    for (const [name, value] of headers) head += `${name}: ${value}\r\n`;
    if (body !== "") head += `content-length: ${new TextEncoder().encode(body).length}\r\n`;
    const bytes = new TextEncoder().encode(`${head}\r\n${body}`);
    let written = 0;
    while (written < bytes.length) written += await connection.write(bytes.subarray(written));
    const chunks: Uint8Array[] = [];
    const buffer = new Uint8Array(16_384);
    while (true) {
      const read = await connection.read(buffer);
      if (read === null) break;
      chunks.push(buffer.slice(0, read));
    }
    const all = new TextDecoder().decode(
      chunks.reduce((joined, chunk) => {
        const next = new Uint8Array(joined.length + chunk.length);
        next.set(joined);
        next.set(chunk, joined.length);
        return next;
      }, new Uint8Array(0)),
    );
    const split = all.indexOf("\r\n\r\n");
    const [statusLine, ...headerLines] = all.slice(0, split).split("\r\n");
    const responseHeaders = new Headers();
    for (const line of headerLines) {
      const colon = line.indexOf(":");
      responseHeaders.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    let text = all.slice(split + 4);
    if (responseHeaders.get("transfer-encoding") === "chunked") text = dechunk(text);
    return {
      status: Number(statusLine.split(" ")[1]),
      headers: responseHeaders,
      text,
      json: parseJson(text),
    };
  } finally {
    try {
      connection.close();
    } catch {
      // Closed by the server already.
    }
  }
}

function dechunk(text: string): string {
  let out = "";
  let rest = text;
  while (rest.length > 0) {
    const newline = rest.indexOf("\r\n");
    const size = parseInt(rest.slice(0, newline), 16);
    if (!size) break;
    out += rest.slice(newline + 2, newline + 2 + size);
    rest = rest.slice(newline + 2 + size + 2);
  }
  return out;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What an error answer must look like. */
export interface ExpectedError {
  /** HTTP status. */
  status: number;
  /** `error.code`. */
  code: string;
  /** `error.layer`. */
  layer: string;
  /** Further fields of `error` that must match. */
  fields?: Record<string, unknown>;
}

/**
 * Asserts an error answer: status, code, layer, a correlation id (the request's when it sent a
 * valid one, else a generated UUID), `nosniff`, and the echoed request headers.
 *
 * @example
 * ```ts ignore
 * assertError(result, { status: 401, code: "authenticationFailed", layer: "auth" });
 * ```
 */
export function assertError(
  result: CallResult | (RawResult & { sent?: Headers }),
  expected: ExpectedError,
  sentOverride?: Headers,
): void {
  const context = `${result.status} ${result.text}`;
  assert.equal(result.status, expected.status, context);
  assert.equal(result.headers.get("content-type"), "application/json", context);
  assert.equal(result.headers.get("x-content-type-options"), "nosniff", context);
  const error = result.json?.error;
  assert.ok(error, `no error body: ${context}`);
  assert.equal(error.code, expected.code, context);
  assert.equal(error.layer, expected.layer, context);
  assert.equal(typeof error.message, "string");
  assert.ok(error.message.length > 0);
  const sent = sentOverride ?? ("sent" in result ? result.sent : undefined);
  const sentCorrelation = sent?.get("x-correlation-id") ?? null;
  assert.match(error.correlationId, UUID, context);
  if (sentCorrelation !== null && UUID.test(sentCorrelation) && sentCorrelation.length <= 64) {
    assert.equal(error.correlationId, sentCorrelation, context);
  } else if (sentCorrelation !== null) {
    assert.notEqual(error.correlationId, sentCorrelation, context);
  }
  if (sent !== undefined) assertEchoes(result.headers, sent);
  for (const [name, value] of Object.entries(expected.fields ?? {})) {
    assert.deepEqual(error[name], value, `${name}: ${context}`);
  }
}

/**
 * Asserts that a response echoes the request's `x-interface-version` and `x-correlation-id`
 * when it sent them (and not when it did not) and carries `nosniff`.
 *
 * @example
 * ```ts ignore
 * assertEchoes(result.headers, result.sent);
 * ```
 */
export function assertEchoes(headers: Headers, sent: Headers): void {
  assert.equal(headers.get("x-content-type-options"), "nosniff");
  for (const name of ["x-interface-version", "x-correlation-id"]) {
    assert.equal(headers.get(name), sent.get(name), `echo of ${name}`);
  }
}

/**
 * Body of a valid `POST /v1/principals`.
 *
 * @example
 * ```ts ignore
 * const body = principalBody({ capabilities: ["session:read"] });
 * ```
 */
export function principalBody(
  overrides: Partial<{ principalId: string; capabilities: string[]; expiresAt: string }> = {},
): { principalId: string; capabilities: string[]; expiresAt: string } {
  return {
    principalId: overrides.principalId ?? crypto.randomUUID(),
    capabilities: overrides.capabilities ?? ["session:read"],
    expiresAt: overrides.expiresAt ?? new Date(Date.now() + 86_400_000).toISOString(),
  };
}

/**
 * Issues a principal through the API and returns the 201 body.
 *
 * @example
 * ```ts ignore
 * const issued = await issuePrincipal(server.url, server.bearer, { capabilities: ["session:read"] });
 * ```
 */
export async function issuePrincipal(
  base: string,
  bearer: string,
  overrides: Partial<{ principalId: string; capabilities: string[]; expiresAt: string }> = {},
): Promise<{ principalId: string; capabilities: string[]; expiresAt: string; bearer: string }> {
  const result = await call(base, "POST", "/v1/principals", {
    bearer,
    headers: { "idempotency-key": crypto.randomUUID() },
    body: principalBody(overrides),
  });
  assert.equal(result.status, 201, result.text);
  return result.json;
}
