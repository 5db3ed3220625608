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
  // Large bodies carry no placeholders; scanning megabytes of them would cost the run its pace.
  if (value.length > 10_000 || !value.includes("{")) return value;
  return value.replaceAll("{bearer}", context.bearer)
    .replace(NOW_RE, (_, offset) => rfc3339(context.now + Number(offset) * 1000))
    .replace(UUID_RE, () => crypto.randomUUID());
}

const encoder = new TextEncoder();
// deno-lint-ignore no-control-regex
const ASCII = /^[\x00-\x7f]*$/;

function latin1(text: string): Uint8Array {
  if (ASCII.test(text)) return encoder.encode(text);
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
    // Large bodies are ASCII: serialize them without building one more megabyte string.
    if (request.body.text.length > 10_000) return serializeLarge(head, request.body);
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

function serializeLarge(head: string, body: HostileBody): Uint8Array {
  const parts: Uint8Array[] = [];
  if (body.framing === "length") {
    parts.push(
      latin1(`${head}content-length: ${body.text.length}\r\n\r\n`),
      encoder.encode(body.text),
    );
  } else {
    parts.push(latin1(`${head}transfer-encoding: chunked\r\n\r\n`));
    for (let i = 0; i < body.text.length; i += body.chunk) {
      const piece = body.text.slice(i, i + body.chunk);
      parts.push(encoder.encode(`${piece.length.toString(16)}\r\n${piece}\r\n`));
    }
    parts.push(encoder.encode("0\r\n\r\n"));
  }
  const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.length;
  }
  return bytes;
}

// deno-lint-ignore no-control-regex
const CTL = /[\x00-\x08\x0a-\x1f\x7f]/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// deno-lint-ignore no-control-regex
const TARGET_BAD = /[\x00-\x20\x7f]/;

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

function isUtf8(latin1Text: string): boolean {
  try {
    strictUtf8.decode(latin1(latin1Text));
    return true;
  } catch {
    return false;
  }
}

/** How the HTTP parser in front of the service treats a request. */
export type WireVerdict = "valid" | "invalid" | "uncertain";

/**
 * Whether the HTTP parser (hyper, in front of `Deno.serve`) lets the request through to the
 * service: a control character other than HTAB in a header value, a method that is not a token,
 * a space or control character or bytes that are not UTF-8 in the target, more than 128 header lines or a head over 64 KiB
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
  if (!isUtf8(request.target)) return "invalid";
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
// Any ASCII but CR and LF: those end the header line and make a different request, not an odd value.
const anyAscii = fc.string({
  unit: fc.integer({ min: 0, max: 0x7f }).filter((code) => code !== 10 && code !== 13)
    .map((code) => String.fromCharCode(code)),
  maxLength: 40,
});
const obsText = fc.string({
  unit: fc.integer({ min: 0x80, max: 0xff }).map((code) => String.fromCharCode(code)),
  minLength: 1,
  maxLength: 20,
});
const controls = fc.tuple(
  printable,
  fromChars("\x00\x01\x07\x08\x0b\x0c\x0e\x1b\x1f\x7f\t"),
  printable,
)
  .map(([a, c, b]) => a + c + b);
const huge = fc.constantFrom(4_096, 20_000, 70_000).chain((size) =>
  fc.constantFrom("a", "=", "\t", "z9").map((unit) => unit.repeat(Math.ceil(size / unit.length)))
);

/** Odd values every header may take. */
const oddValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 2, arbitrary: fc.constant("") },
  {
    weight: 2,
    arbitrary: fc.constantFrom(" ", "\t", "  x  ", ",", ", ,", "null", "undefined", "\u00ff"),
  },
  { weight: 6, arbitrary: printable },
  { weight: 1, arbitrary: anyAscii },
  { weight: 2, arbitrary: obsText },
  { weight: 1, arbitrary: controls },
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
    wrong: fc.constantFrom(
      "2026-07-24",
      "2025-01-01",
      "2026-07-23 ",
      "v1",
      "2026-07-23, 2026-07-23",
    ),
    absent: 1,
  },
  {
    name: "x-correlation-id",
    valid: fc.uuid(),
    wrong: fc.oneof(
      UUID_UPPER,
      fc.constantFrom(
        "abc",
        "{uuid}{uuid}",
        "00000000-0000-0000-0000-00000000000g",
        "{uuid}, {uuid}",
      ),
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
    { weight: 30, arbitrary: spec.valid },
    { weight: 1, arbitrary: spec.wrong },
    { weight: 1, arbitrary: oddValue },
  );
  const name = fc.constantFrom(
    spec.name,
    spec.name.toUpperCase(),
    spec.name[0].toUpperCase() + spec.name.slice(1),
  );
  return fc.oneof(
    { weight: spec.absent, arbitrary: fc.constant([] as [string, string][]) },
    { weight: 40, arbitrary: fc.tuple(name, one).map(([n, v]) => [[n, v]] as [string, string][]) },
    {
      weight: 1,
      arbitrary: fc.tuple(name, one, one).map(([n, a, b]) =>
        [[n, a], [n, b]] as [string, string][]
      ),
    },
  );
}

const extraHeaders: fc.Arbitrary<[string, string][]> = fc.array(
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc.constant(["accept", "application/json, text/event-stream"] as [string, string]),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(
        fc.constant("cookie"),
        fc.constantFrom("access_token={bearer}", "a=b", "access_token=x; a=b"),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(
        fc.constantFrom("accept", "origin", "mcp-session-id", "mcp-protocol-version"),
        oddValue,
      ),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(
        fc.constant("connection"),
        fc.constantFrom("keep-alive", "upgrade", "te"),
      ),
    },
    { weight: 2, arbitrary: fc.tuple(fc.stringMatching(/^x-[a-z0-9-]{1,20}$/), oddValue) },
  ),
  { maxLength: 2 },
);

const manyHeaders: fc.Arbitrary<[string, string][]> = fc.integer({ min: 130, max: 180 }).map((
  count,
) => Array.from({ length: count }, (_, i) => [`x-many-${i}`, "1"] as [string, string]));

const principalBody = fc.record({
  principalId: fc.oneof(fc.uuid(), fc.constant("{uuid}"), UUID_UPPER, printable),
  capabilities: fc.oneof(
    fc.constant(["session:read"]),
    fc.subarray(["session:read", "session:write", "authority:admin", "x"]),
    fc.array(fc.constantFrom("session:read", "session:write"), { maxLength: 4 }),
  ),
  expiresAt: fc.constantFrom("{now+86400}", "{now-10}", "{now+9000000}", "soon", "{now+3600}"),
}).map((value) => JSON.stringify(value));

/**
 * Bodies of the run routes: valid starts and follow-ups on the runtime's default agent and
 * environment (so an accepted one succeeds at the fake provider), and near misses.
 */
const runBody = fc.record({
  input: fc.oneof(
    printable,
    fc.constant(""),
    fc.array(
      fc.record({
        role: fc.constantFrom("user", "user", "assistant", "system"),
        content: fc.oneof(printable, fc.constant([{ type: "text", text: "hi" }]), fc.constant([])),
      }),
      { maxLength: 3 },
    ),
    fc.integer(),
  ),
  title: fc.oneof(printable, fc.constant(undefined), fc.constant(7)),
  metadata: fc.oneof(
    fc.constant(undefined),
    fc.constant({}),
    fc.record({
      agent_version: fc.constantFrom(0, -1, 1.5, "1"),
      vault_ids: fc.constantFrom("v", [""], [1]),
    }, { requiredKeys: [] }),
    fc.constant({ unknown_field: true }),
  ),
}, { requiredKeys: ["input"] }).map((value) => JSON.stringify(value));

/** Nesting `depth` levels deep, capped so the body stays under a megabyte. */
function deep(depth: number, open: string, close: string): string {
  const levels = Math.min(depth, Math.floor(1_000_000 / (open.length + close.length)));
  return open.repeat(levels) + close.repeat(levels);
}

const LIMIT = 1_048_576;

const DEEP_SHAPES: readonly [string, string][] = [["[", "]"], ['{"a":', "}"], [
  '{"principalId":',
  "}",
]];
/** Large bodies, built once: deep nesting up to a megabyte, and bodies at and just over 1 MiB. */
const LARGE: readonly { kind: string; text: string }[] = [
  ...DEEP_SHAPES.flatMap(([open, close]) =>
    [50_000, 400_000].map((depth) => ({ kind: `deep${depth}`, text: deep(depth, open, close) }))
  ),
  { kind: "overLimit", text: "x".repeat(LIMIT + 1) },
  { kind: "overLimit", text: `{"principalId":"${"x".repeat(LIMIT)}"}` },
  { kind: "atLimit", text: `"${"a".repeat(LIMIT - 2)}"` },
];

const bodyText: fc.Arbitrary<{ kind: string; text: string }> = fc.oneof(
  { weight: 300, arbitrary: principalBody.map((text) => ({ kind: "principal", text })) },
  { weight: 200, arbitrary: runBody.map((text) => ({ kind: "run", text })) },
  {
    weight: 100,
    arbitrary: fc.tuple(principalBody, fc.nat()).map(([text, cut]) => ({
      kind: "truncated",
      text: text.slice(0, cut % text.length),
    })),
  },
  { weight: 100, arbitrary: fc.json({ maxDepth: 3 }).map((text) => ({ kind: "json", text })) },
  {
    weight: 100,
    arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => ({
      kind: "bytes",
      text: String.fromCharCode(...bytes),
    })),
  },
  {
    weight: 20,
    arbitrary: fc.constantFrom(...DEEP_SHAPES).map(([open, close]) => ({
      kind: "deep1000",
      text: deep(1000, open, close),
    })),
  },
  {
    weight: 30,
    arbitrary: fc.constantFrom("", "null", "[]", "{}", '""', "1e999", "\ufeff{}", "{}{}", "[1,]")
      .map((text) => ({ kind: "tiny", text })),
  },
  // About one request in 250 carries a large body: enough to hit every limit many times over.
  { weight: 4, arbitrary: fc.constantFrom(...LARGE) },
);

const body: fc.Arbitrary<HostileBody | null> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(null) },
  {
    weight: 3,
    arbitrary: fc.tuple(
      bodyText,
      fc.constantFrom("length", "chunked") as fc.Arbitrary<"length" | "chunked">,
      fc.constantFrom(1, 7, 1024, 65_536),
    )
      .map(([{ kind, text }, framing, chunk]) => ({
        kind,
        text,
        framing,
        // One-byte chunks of a megabyte would be a slow client, not a hostile one.
        chunk: text.length > 10_000 ? Math.max(chunk, 1024) : chunk,
      })),
  },
);

const PRINCIPAL_PATH = fc.oneof(
  fc.uuid(),
  UUID_UPPER,
  printable.map(encodeURIComponent),
  fc.constant("{uuid}"),
)
  .map((id) => `/v1/principals/${id}`);

const RUN_PATH = fc.oneof(
  fc.constant("sesn_0000"),
  printable.map(encodeURIComponent),
  fc.constant("%00"),
  fc.constant("x".repeat(300)),
)
  .map((id) => `/v1/runs/${id}`);

/**
 * Cursors no list answered: `[]` (`W10`), `[0]`, `[null]`, `{}`, `["a"]`, `[1,2,3]`, `[1.5]`,
 * `["",""]`, undecodable text and one over the length limit. Each is 422, never 503 or a first
 * page.
 */
const FORGED_CURSORS = [
  "W10",
  "WzBd",
  "W251bGxd",
  "e30",
  "WyJhIl0",
  "WzEsMiwzXQ",
  "WzEuNV0",
  "WyIiLCIiXQ",
  "%E2%82%AC",
  "not-base64!",
  "A".repeat(600),
];

const RUNS_QUERY = fc.constantFrom(
  "",
  "?limit=5",
  "?limit=0",
  "?limit=101",
  "?limit=abc",
  "?state=running",
  "?state=nope",
  "?cursor=%00",
  "?cursor=WyJhIiwiYiJd",
  ...FORGED_CURSORS.map((cursor) => `?cursor=${cursor}`),
  "?state=running&cursor=W10",
  "?principalId=6f1c3d1e-8a6b-4a0e-9d7e-2f4b5c6d7e8f",
  "?limit=1&limit=2",
);

const PRINCIPALS_QUERY = fc.constantFrom(
  "",
  "?limit=2",
  ...FORGED_CURSORS.map((cursor) => `?cursor=${cursor}`),
);

const target: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 20,
    arbitrary: fc.constantFrom("/v1/runtime", "/v1/principals", "/healthz", "/v1/mcp"),
  },
  { weight: 6, arbitrary: PRINCIPAL_PATH },
  {
    weight: 6,
    arbitrary: fc.oneof(
      RUN_PATH,
      RUN_PATH.map((path) => `${path}/cancel`),
      RUN_PATH.map((path) => `${path}/messages`),
      RUNS_QUERY.map((query) => `/v1/runs${query}`),
      RUNS_QUERY.map((query) => `/v1/audit${query.replace("state", "action")}`),
    ),
  },
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
      "/v1/runtime\u00c3\u00a9",
    ),
  },
  { weight: 3, arbitrary: fc.webPath() },
  { weight: 1, arbitrary: fc.constantFrom("/a b", "/v1/\u0001", "", "*") },
);

const method: fc.Arbitrary<string> = fc.oneof(
  { weight: 20, arbitrary: fc.constantFrom("GET", "POST", "DELETE", "HEAD") },
  {
    weight: 5,
    arbitrary: fc.constantFrom(
      "PUT",
      "PATCH",
      "OPTIONS",
      "TRACE",
      "PROPFIND",
      "CONNECT",
      "get",
      "post",
      "M-SEARCH",
      "X".repeat(60),
    ),
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
/** The routes as they are meant to be called, so most requests get past routing. */
const ROUTES: readonly [string, fc.Arbitrary<string>][] = [
  ["GET", fc.constant("/healthz")],
  ["HEAD", fc.constant("/healthz")],
  ["GET", fc.constant("/v1/runtime")],
  ["POST", fc.constant("/v1/principals")],
  ["POST", fc.constant("/v1/principals")],
  ["POST", fc.constant("/v1/principals")],
  ["GET", PRINCIPALS_QUERY.map((query) => `/v1/principals${query}`)],
  ["DELETE", PRINCIPAL_PATH],
  ["POST", fc.constant("/v1/runs")],
  ["POST", fc.constant("/v1/runs")],
  ["GET", RUNS_QUERY.map((query) => `/v1/runs${query}`)],
  ["GET", RUN_PATH],
  ["POST", RUN_PATH.map((path) => `${path}/cancel`)],
  ["POST", RUN_PATH.map((path) => `${path}/messages`)],
  ["GET", RUNS_QUERY.map((query) => `/v1/audit${query.replace("state", "action")}`)],
  ["POST", fc.constant("/v1/mcp")],
  ["GET", fc.constant("/v1/mcp")],
  ["DELETE", fc.constant("/v1/mcp")],
];

const methodAndTarget: fc.Arbitrary<[string, string]> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(...ROUTES).chain(([m, t]) =>
      t.map((path) => [m, path] as [string, string])
    ),
  },
  { weight: 2, arbitrary: fc.tuple(method, target) },
);

export const hostileRequest: fc.Arbitrary<HostileRequest> = fc.tuple(
  methodAndTarget,
  fc.tuple(...HEADERS.map(headerLines)),
  extraHeaders,
  fc.oneof({ weight: 200, arbitrary: fc.constant([] as [string, string][]) }, {
    weight: 1,
    arbitrary: manyHeaders,
  }),
  body,
  fc.boolean(),
).map(([[m, t], specHeaders, extra, many, b, shuffle]) => {
  const headers = [...specHeaders.flat(), ...extra, ...many];
  if (shuffle) headers.reverse();
  // CONNECT takes an authority as its target and, on the wire, no body (bytes after its head
  // would start the next request): keep the odd method, fix the rest.
  if (m === "CONNECT") return { method: m, target: "127.0.0.1:1", headers, body: null };
  return { method: m, target: t, headers, body: b };
});
