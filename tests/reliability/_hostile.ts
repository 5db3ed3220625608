/**
 * Generators of hostile HTTP/1.1 requests (fast-check arbitraries) for the reliability suite,
 * their serialization to raw bytes, and the classification of what the HTTP parser itself
 * refuses before the service sees the request.
 *
 * Values are symbolic where they depend on the moment of sending: `{now+60}` in a header value or
 * body becomes an RFC 3339 time 60 s from the send, and `{bearer}` the server's bootstrap bearer.
 *
 * @module
 */
import fc from "fast-check";

/** A body and how it is framed. */
export interface HostileBody {
  /** Which generator made it (for reports). */
  kind: string;
  /** The body text (latin1: each char one byte); `{now+N}` is substituted. */
  text: string;
  /** `length`: `content-length`; `chunked`: `transfer-encoding: chunked` in chunks of `chunk`. */
  framing: "length" | "chunked";
  /** Chunk size when chunked. */
  chunk: number;
}

/** One generated request. */
export interface HostileRequest {
  /** Request method token (possibly odd). */
  method: string;
  /** Request target. */
  target: string;
  /** Header lines in order; values are latin1 text with `{now+N}` / `{bearer}` placeholders. */
  headers: [string, string][];
  /** The body, or null. */
  body: HostileBody | null;
}

/** The largest head (request line and headers) the HTTP parser accepts, in bytes. */
export const PARSER_HEAD_LIMIT = 64 * 1024;
const SAFE_HEAD = 60_000;

const UUID_RE = /\{uuid\}/g;
const NOW_RE = /\{now([+-]\d+)\}/g;

function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * Replaces the placeholders of a value: `{now+N}`, `{bearer}`, `{uuid}`.
 *
 * @example
 * ```ts
 * import { substitute } from "./_hostile.ts";
 * console.log(substitute("Bearer {bearer}", { bearer: "art_x", now: 0 })); // "Bearer art_x"
 * ```
 */
export function substitute(value: string, context: { bearer: string; now: number }): string {
  if (!value.includes("{")) return value;
  return value.replaceAll("{bearer}", context.bearer)
    .replace(NOW_RE, (_, offset) => rfc3339(context.now + Number(offset) * 1000))
    .replace(UUID_RE, () => crypto.randomUUID());
}

function latin1(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i) & 0xff;
  return bytes;
}

/**
 * Serializes a request to the bytes sent on the wire (with `host` and the body framing).
 *
 * @example
 * ```ts
 * import { serialize } from "./_hostile.ts";
 * const bytes = serialize({ method: "GET", target: "/healthz", headers: [], body: null }, {
 *   bearer: "",
 *   now: Date.now(),
 * });
 * console.log(new TextDecoder().decode(bytes).split("\r\n")[0]); // "GET /healthz HTTP/1.1"
 * ```
 */
export function serialize(
  request: HostileRequest,
  context: { bearer: string; now: number },
): Uint8Array {
  let head = `${request.method} ${request.target} HTTP/1.1\r\nhost: 127.0.0.1\r\n`;
  for (const [name, value] of request.headers) head += `${name}: ${substitute(value, context)}\r\n`;
  let body = "";
  if (request.body !== null) {
    const text = substitute(request.body.text, context);
    if (request.body.framing === "length") {
      head += `content-length: ${text.length}\r\n`;
      body = text;
    } else {
      head += "transfer-encoding: chunked\r\n";
      const parts: string[] = [];
      for (let i = 0; i < text.length; i += request.body.chunk) {
        const piece = text.slice(i, i + request.body.chunk);
        parts.push(`${piece.length.toString(16)}\r\n${piece}\r\n`);
      }
      parts.push("0\r\n\r\n");
      body = parts.join("");
    }
  }
  return latin1(`${head}\r\n${body}`);
}

// deno-lint-ignore no-control-regex
const CTL = /[\x00-\x08\x0a-\x1f\x7f]/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// deno-lint-ignore no-control-regex
const TARGET_BAD = /[\x00-\x20\x7f]/;

/** How the HTTP parser in front of the service treats a request. */
export type WireVerdict = "valid" | "invalid" | "uncertain";

/**
 * Whether the HTTP parser (hyper, in front of `Deno.serve`) lets the request through to the
 * service: a control character other than HTAB in a header value, a method that is not a token,
 * a space or control character in the target, more than 128 header lines or a head over 64 KiB
 * are refused by the parser with an empty 400; requests near those limits are `uncertain`.
 *
 * @example
 * ```ts
 * import { wireVerdict } from "./_hostile.ts";
 * console.log(wireVerdict({ method: "GET", target: "/", headers: [["x", "a\u0001"]], body: null })); // "invalid"
 * ```
 */
export function wireVerdict(request: HostileRequest): WireVerdict {
  if (!TOKEN.test(request.method)) return "invalid";
  if (request.target === "" || TARGET_BAD.test(request.target)) return "invalid";
  if (request.target === "*" && request.method !== "OPTIONS") return "invalid";
  const lines = request.headers.length + 2;
  if (lines > 128) return "invalid";
  let head = request.method.length + request.target.length + 40;
  for (const [name, value] of request.headers) {
    if (!TOKEN.test(name) || CTL.test(value)) return "invalid";
    head += name.length + value.length + 4;
  }
  if (head > PARSER_HEAD_LIMIT + 200) return "invalid";
  if (head > SAFE_HEAD || lines > 100) return "uncertain";
  return "valid";
}

const fromChars = (chars: string) => fc.constantFrom(...chars.split(""));
const printable = fc.string({ unit: "grapheme-ascii", maxLength: 40 });
const anyAscii = fc.string({ unit: "binary-ascii", maxLength: 40 });
const obsText = fc.string({
  unit: fc.integer({ min: 0x80, max: 0xff }).map((code) => String.fromCharCode(code)),
  minLength: 1,
  maxLength: 20,
});
const controls = fc.tuple(printable, fromChars("\x00\x01\x07\x08\x0b\x0c\x0e\x1b\x1f\x7f\t"), printable)
  .map(([a, c, b]) => a + c + b);
const huge = fc.constantFrom(4_096, 20_000, 70_000).chain((size) =>
  fc.constantFrom("a", "=", "\t", "z9").map((unit) => unit.repeat(Math.ceil(size / unit.length)))
);

/** Odd values every header may take. */
const oddValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 2, arbitrary: fc.constant("") },
  { weight: 2, arbitrary: fc.constantFrom(" ", "\t", "  x  ", ",", ", ,", "null", "undefined", "\u00ff") },
  { weight: 4, arbitrary: printable },
  { weight: 3, arbitrary: anyAscii },
  { weight: 2, arbitrary: obsText },
  { weight: 3, arbitrary: controls },
  { weight: 1, arbitrary: huge },
);

interface HeaderSpec {
  name: string;
  /** Valid values (placeholders allowed). */
  valid: fc.Arbitrary<string>;
  /** Plausible but wrong values for this header. */
  wrong: fc.Arbitrary<string>;
  /** Probability weight of leaving the header out. */
  absent: number;
}

const UUID_UPPER = fc.uuid().map((id) => id.toUpperCase());

const HEADERS: readonly HeaderSpec[] = [
  {
    name: "authorization",
    valid: fc.constant("Bearer {bearer}"),
    wrong: fc.oneof(
      fc.constantFrom(
        "Bearer",
        "Bearer ",
        "bearer {bearer}",
        "Bearer  {bearer}",
        "Bearer {bearer}x",
        "Bearer {bearer}, Bearer {bearer}",
        "Basic dXNlcjpwYXNz",
        "Bearer art_",
        "{bearer}",
      ),
      printable.map((token) => `Bearer ${token}`),
      fc.base64String({ minLength: 4, maxLength: 600 }).map((token) => `Bearer art_${token}`),
    ),
    absent: 1,
  },
  {
    name: "x-interface-version",
    valid: fc.constant("2026-07-23"),
    wrong: fc.constantFrom("2026-07-24", "2025-01-01", "2026-07-23 ", "v1", "2026-07-23, 2026-07-23"),
    absent: 1,
  },
  {
    name: "x-correlation-id",
    valid: fc.uuid(),
    wrong: fc.oneof(
      UUID_UPPER,
      fc.constantFrom("abc", "{uuid}{uuid}", "00000000-0000-0000-0000-00000000000g", "{uuid}, {uuid}"),
      fc.string({ unit: "grapheme-ascii", minLength: 65, maxLength: 80 }),
    ),
    absent: 1,
  },
  {
    name: "x-deadline",
    valid: fc.constantFrom("{now+60}", "{now+5}", "{now+290}"),
    wrong: fc.constantFrom(
      "{now-5}",
      "{now+400}",
      "{now+86400}",
      "tomorrow",
      "2026-13-45T99:99:99Z",
      "1700000000",
      "{now+60}, {now+60}",
      "0000-01-01T00:00:00Z",
      "9999-12-31T23:59:59Z",
    ),
    absent: 1,
  },
  {
    name: "idempotency-key",
    valid: fc.oneof(fc.uuid(), fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 128 })),
    wrong: fc.oneof(
      fc.constant(""),
      fc.string({ unit: "grapheme-ascii", minLength: 129, maxLength: 200 }),
      fc.constant("{uuid}, {uuid}"),
    ),
    absent: 2,
  },
  {
    name: "content-type",
    valid: fc.constantFrom("application/json", "application/json; charset=utf-8"),
    wrong: fc.constantFrom(
      "text/plain",
      "APPLICATION/JSON",
      "application/jsonx",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/json, text/plain",
      "*/*",
    ),
    absent: 2,
  },
];

/**
 * One header of the spec: absent, once valid, once wrong or odd, or twice (the runtime sees the
 * values joined with `, `).
 */
function headerLines(spec: HeaderSpec): fc.Arbitrary<[string, string][]> {
  const one = fc.oneof(
    { weight: 16, arbitrary: spec.valid },
    { weight: 1, arbitrary: spec.wrong },
    { weight: 1, arbitrary: oddValue },
  );
  const name = fc.constantFrom(spec.name, spec.name.toUpperCase(), spec.name[0].toUpperCase() + spec.name.slice(1));
  return fc.oneof(
    { weight: spec.absent, arbitrary: fc.constant([] as [string, string][]) },
    { weight: 10, arbitrary: fc.tuple(name, one).map(([n, v]) => [[n, v]] as [string, string][]) },
    {
      weight: 1,
      arbitrary: fc.tuple(name, one, one).map(([n, a, b]) => [[n, a], [n, b]] as [string, string][]),
    },
  );
}

const extraHeaders: fc.Arbitrary<[string, string][]> = fc.array(
  fc.oneof(
    fc.tuple(fc.constant("cookie"), fc.constantFrom("access_token={bearer}", "a=b", "access_token=x; a=b")),
    fc.tuple(fc.constantFrom("accept", "origin", "mcp-session-id", "mcp-protocol-version"), oddValue),
    fc.tuple(fc.constant("connection"), fc.constantFrom("keep-alive", "upgrade", "te")),
    fc.tuple(fc.stringMatching(/^x-[a-z0-9-]{1,20}$/), oddValue),
  ),
  { maxLength: 3 },
);

const manyHeaders: fc.Arbitrary<[string, string][]> = fc.integer({ min: 130, max: 180 }).map((count) =>
  Array.from({ length: count }, (_, i) => [`x-many-${i}`, "1"] as [string, string])
);

const principalBody = fc.record({
  principalId: fc.oneof(fc.uuid(), fc.constant("{uuid}"), UUID_UPPER, printable),
  capabilities: fc.oneof(
    fc.constant(["session:read"]),
    fc.subarray(["session:read", "session:write", "authority:admin", "x"]),
    fc.array(fc.constantFrom("session:read", "session:write"), { maxLength: 4 }),
  ),
  expiresAt: fc.constantFrom("{now+86400}", "{now-10}", "{now+9000000}", "soon", "{now+3600}"),
}).map((value) => JSON.stringify(value));

function deep(depth: number, open: string, close: string): string {
  return open.repeat(depth) + close.repeat(depth);
}

const LIMIT = 1_048_576;

const bodyText: fc.Arbitrary<{ kind: string; text: string }> = fc.oneof(
  { weight: 30, arbitrary: principalBody.map((text) => ({ kind: "principal", text })) },
  {
    weight: 10,
    arbitrary: fc.tuple(principalBody, fc.nat()).map(([text, cut]) => ({
      kind: "truncated",
      text: text.slice(0, cut % text.length),
    })),
  },
  { weight: 10, arbitrary: fc.json({ maxDepth: 3 }).map((text) => ({ kind: "json", text })) },
  {
    weight: 10,
    arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => ({
      kind: "bytes",
      text: String.fromCharCode(...bytes),
    })),
  },
  {
    weight: 3,
    arbitrary: fc.tuple(fc.constantFrom(1_000, 50_000, 400_000), fc.constantFrom(["[", "]"], ['{"a":', "}"], ['{"principalId":', "}"]))
      .map(([depth, [open, close]]) => ({ kind: `deep${depth}`, text: deep(depth, open, close) })),
  },
  { weight: 3, arbitrary: fc.constantFrom("", "null", "[]", "{}", '""', "1e999", "\ufeff{}").map((text) => ({ kind: "tiny", text })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(1, 100).map((over) => ({ kind: "overLimit", text: "x".repeat(LIMIT + over) })),
  },
  {
    weight: 1,
    arbitrary: fc.constant({ kind: "atLimit", text: `"${"a".repeat(LIMIT - 2)}"` }),
  },
);

const body: fc.Arbitrary<HostileBody | null> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(null) },
  {
    weight: 3,
    arbitrary: fc.tuple(bodyText, fc.constantFrom("length", "chunked") as fc.Arbitrary<"length" | "chunked">, fc.constantFrom(1, 7, 1024, 65_536))
      .map(([{ kind, text }, framing, chunk]) => ({
        kind,
        text,
        framing,
        // One-byte chunks of a megabyte would be a slow client, not a hostile one.
        chunk: text.length > 10_000 ? Math.max(chunk, 1024) : chunk,
      })),
  },
);

const PRINCIPAL_PATH = fc.oneof(fc.uuid(), UUID_UPPER, printable.map(encodeURIComponent), fc.constant("{uuid}"))
  .map((id) => `/v1/principals/${id}`);

const target: fc.Arbitrary<string> = fc.oneof(
  { weight: 20, arbitrary: fc.constantFrom("/v1/runtime", "/v1/principals", "/healthz", "/v1/mcp") },
  { weight: 6, arbitrary: PRINCIPAL_PATH },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      "/",
      "/v1",
      "/v1/",
      "//v1/runtime",
      "/v1/runtime/",
      "/v1//runtime",
      "/V1/RUNTIME",
      "/v1/principals/",
      "/v1/principals/..%2f..%2f",
      "/v1/principals/%00",
      "/v1/runtime?access_token={bearer}",
      "/v1/runtime?x=1&access_token=abc",
      "/healthz?x=%ff",
      "/v1/runtime#frag",
      "/%2e%2e/%2e%2e/etc/passwd",
      "/v1/runtime;a=b",
      `/v1/${"a".repeat(8_000)}`,
      "http://127.0.0.1/v1/runtime",
      "/v1/runtime\u00e9",
    ),
  },
  { weight: 3, arbitrary: fc.webPath() },
  { weight: 1, arbitrary: fc.constantFrom("/a b", "/v1/\u0001", "", "*") },
);

const method: fc.Arbitrary<string> = fc.oneof(
  { weight: 20, arbitrary: fc.constantFrom("GET", "POST", "DELETE", "HEAD") },
  {
    weight: 5,
    arbitrary: fc.constantFrom("PUT", "PATCH", "OPTIONS", "TRACE", "PROPFIND", "CONNECT", "get", "post", "M-SEARCH", "X".repeat(60)),
  },
  { weight: 1, arbitrary: fc.constantFrom("G T", "GE\u0001T", "G(T") },
);

/**
 * Arbitrary of hostile requests across every route.
 *
 * @example
 * ```ts
 * import fc from "fast-check";
 * import { hostileRequest } from "./_hostile.ts";
 * const [request] = fc.sample(hostileRequest, { numRuns: 1, seed: 1 });
 * console.log(typeof request.method); // "string"
 * ```
 */
export const hostileRequest: fc.Arbitrary<HostileRequest> = fc.tuple(
  method,
  target,
  fc.tuple(...HEADERS.map(headerLines)),
  extraHeaders,
  fc.oneof({ weight: 200, arbitrary: fc.constant([] as [string, string][]) }, { weight: 1, arbitrary: manyHeaders }),
  body,
  fc.boolean(),
).map(([m, t, specHeaders, extra, many, b, shuffle]) => {
  const headers = [...specHeaders.flat(), ...extra, ...many];
  if (shuffle) headers.reverse();
  // A CONNECT target must be an authority; keep the odd method, fix the target.
  return { method: m, target: m === "CONNECT" ? "127.0.0.1:1" : t, headers, body: b };
});
