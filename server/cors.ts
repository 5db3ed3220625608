/**
 * Cross-origin requests from browsers to `/v1/*`, for listed origins only (none by default).
 *
 * - A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from a listed origin
 *   is answered 204 here, before any rule runs: it carries no bearer. It allows exactly the
 *   request headers the shared rules read (authorization, content-type, x-interface-version,
 *   x-correlation-id, x-deadline, idempotency-key) and the methods the API has.
 * - Any other answer to a listed origin gets `Access-Control-Allow-Origin: <origin>` and exposes
 *   the response headers the SDK reads (x-correlation-id, x-interface-version, retry-after,
 *   idempotent-replayed, www-authenticate).
 * - A request from an unlisted origin is served as if CORS were off: no allow header, so the
 *   browser withholds the answer from the page. Every answer under `/v1/` says `Vary: Origin`.
 *
 * No credentials mode: the bearer travels in `Authorization`, never in a cookie.
 *
 * @module
 */

/** Options of {@linkcode withCors}. */
export interface CorsOptions {
  /** Exact origins (`scheme://host[:port]`) whose pages may call `/v1/*`. */
  allowedOrigins: readonly string[];
}

const ALLOW_HEADERS =
  "authorization, content-type, x-interface-version, x-correlation-id, x-deadline, idempotency-key";
const ALLOW_METHODS = "GET, POST, DELETE";
const EXPOSE_HEADERS =
  "x-correlation-id, x-interface-version, retry-after, idempotent-replayed, www-authenticate";
/** How long a browser may reuse a preflight answer, in seconds. */
const MAX_AGE = "600";

/**
 * Parses a comma-separated list of exact origins. Throws a `TypeError` naming the first entry
 * that is not an `http:` or `https:` origin written in its canonical form (no path, no trailing
 * slash, lower-case scheme and host, no default port).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseCorsOrigins } from "./cors.ts";
 * assert.deepEqual(parseCorsOrigins("https://app.example, http://localhost:5173"), [
 *   "https://app.example",
 *   "http://localhost:5173",
 * ]);
 * assert.throws(() => parseCorsOrigins("https://app.example/"), TypeError);
 * ```
 */
export function parseCorsOrigins(list: string): string[] {
  const origins: string[] = [];
  for (const raw of list.split(",")) {
    const entry = raw.trim();
    if (entry === "") continue;
    let origin: string | null = null;
    try {
      const url = new URL(entry);
      if (url.protocol === "http:" || url.protocol === "https:") origin = url.origin;
    } catch {
      // Reported below.
    }
    if (origin === null || origin !== entry) {
      throw new TypeError(
        `"${entry.slice(0, 80)}" is not an origin (scheme://host[:port], http or https)`,
      );
    }
    if (!origins.includes(origin)) origins.push(origin);
  }
  return origins;
}

/**
 * Wraps a fetch-style handler with the CORS answers of the module doc.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withCors } from "./cors.ts";
 * const handler = withCors(
 *   { allowedOrigins: ["https://app.example"] },
 *   () => Promise.resolve(new Response("{}")),
 * );
 * const preflight = await handler(
 *   new Request("http://127.0.0.1:7777/v1/principals", {
 *     method: "OPTIONS",
 *     headers: { origin: "https://app.example", "access-control-request-method": "POST" },
 *   }),
 * );
 * assert.equal(preflight.status, 204);
 * assert.equal(preflight.headers.get("access-control-allow-origin"), "https://app.example");
 * ```
 */
export function withCors<Info>(
  options: CorsOptions,
  handler: (request: Request, info?: Info) => Promise<Response>,
): (request: Request, info?: Info) => Promise<Response> {
  const allowed = new Set(options.allowedOrigins);
  if (allowed.size === 0) return handler;
  return async (request: Request, info?: Info): Promise<Response> => {
    const origin = request.headers.get("origin");
    const underV1 = isUnderV1(request.url);
    const listed = underV1 && origin !== null && allowed.has(origin);
    if (
      listed && request.method === "OPTIONS" &&
      request.headers.has("access-control-request-method")
    ) {
      return new Response(null, {
        status: 204,
        headers: {
          "access-control-allow-origin": origin!,
          "access-control-allow-methods": ALLOW_METHODS,
          "access-control-allow-headers": ALLOW_HEADERS,
          "access-control-max-age": MAX_AGE,
          "vary": "origin, access-control-request-method, access-control-request-headers",
        },
      });
    }
    let response = await handler(request, info);
    if (!underV1) return response;
    try {
      decorate(response.headers, listed ? origin! : null);
    } catch {
      // Immutable headers (a Response.error() or a fetched response): copy once.
      response = new Response(response.body, response);
      decorate(response.headers, listed ? origin! : null);
    }
    return response;
  };
}

/** Whether the path of an absolute URL starts with `/v1/`, without parsing the URL. */
function isUnderV1(url: string): boolean {
  const path = url.indexOf("/", url.indexOf("//") + 2);
  return path !== -1 && url.startsWith("/v1/", path);
}

function decorate(headers: Headers, origin: string | null): void {
  headers.append("vary", "origin");
  if (origin === null) return;
  headers.set("access-control-allow-origin", origin);
  headers.set("access-control-expose-headers", EXPOSE_HEADERS);
}
