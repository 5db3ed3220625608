/**
 * The web console for approvers, at `/console/`: a page and a few static files (this folder's
 * `index.html`, JavaScript modules, style sheet and icon) that call the `/v1` API from the
 * browser like any other client, with the bearer the user signs in with. The service serves the
 * files and nothing else: no session, no cookie, no server-side rendering of data.
 *
 * | method and path | answer |
 * |---|---|
 * | `GET /console` | 308 to `console/` (relative, so a path prefix in front of the service holds) |
 * | `GET /console/` | the page; `cache-control: no-cache` with an `etag` (304 when it matches) |
 * | `GET /console/{version}/{file}` | a file of this version, `immutable` for a year; another version or file is 404 |
 *
 * Every answer under `/console` (404s and 405s too) carries {@linkcode CONSOLE_HEADERS}: a
 * Content Security Policy that allows the service's own scripts, styles, images and API calls
 * only (no inline script, no other origin, no framing, no form submission, Trusted Types for HTML
 * sinks), `no-referrer`, and `nosniff`. The files are loaded with the first console request, not
 * at startup.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { RouteDefinition } from "../router.ts";
import type { ConsoleAssets, ConsoleFile } from "./_assets.ts";

/** Where the console is served. */
export const CONSOLE_PATH = "/console/";

/** The Content Security Policy of every console answer. */
export const CONSOLE_CSP: string = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join("; ");

/** The security headers of every answer under `/console`. */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
});

/** How long a versioned file may be kept: its URL changes with its content. */
const IMMUTABLE = "public, max-age=31536000, immutable";

/**
 * Whether a request path is the console's (`/console` or under `/console/`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isConsolePath } from "./mod.ts";
 * assert.equal(isConsolePath("/console/"), true);
 * assert.equal(isConsolePath("/console"), true);
 * assert.equal(isConsolePath("/consoles"), false);
 * ```
 */
export function isConsolePath(path: string): boolean {
  return path.startsWith("/console") && (path.length === 8 || path.charCodeAt(8) === 47);
}

/**
 * Sets {@linkcode CONSOLE_HEADERS} on an answer's headers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { setConsoleHeaders } from "./mod.ts";
 * const headers = new Headers();
 * setConsoleHeaders(headers);
 * assert.match(headers.get("content-security-policy")!, /frame-ancestors 'none'/);
 * ```
 */
export function setConsoleHeaders(headers: Headers): void {
  for (const name in CONSOLE_HEADERS) headers.set(name, CONSOLE_HEADERS[name]);
}

let assets: Promise<ConsoleAssets> | null = null;

function loadAssets(): Promise<ConsoleAssets> {
  assets ??= import("./_assets.ts").then((module) => module.consoleAssets()).catch((error) => {
    assets = null;
    throw error;
  });
  return assets;
}

/** Whether `If-None-Match` names `etag` (or `*`). */
function matches(context: RequestContext, etag: string): boolean {
  const header = context.request.headers.get("if-none-match");
  if (header === null) return false;
  return header.split(",").some((tag) => {
    const value = tag.trim();
    return value === "*" || value === etag || value === `W/${etag}`;
  });
}

function answer(context: RequestContext, file: ConsoleFile, cacheControl: string): Response {
  const headers = new Headers({ etag: file.etag, "cache-control": cacheControl });
  setConsoleHeaders(headers);
  if (matches(context, file.etag)) return new Response(null, { status: 304, headers });
  headers.set("content-type", file.type);
  return new Response(file.body, { status: 200, headers });
}

function redirect(): Response {
  const headers = new Headers({ location: "console/", "cache-control": "no-cache" });
  setConsoleHeaders(headers);
  return new Response(null, { status: 308, headers });
}

async function page(context: RequestContext): Promise<Response> {
  return answer(context, (await loadAssets()).page, "no-cache");
}

async function file(context: RequestContext): Promise<Response> {
  const { version, files } = await loadAssets();
  const found = context.params.version === version ? files.get(context.params.file) : undefined;
  if (found === undefined) throw new InterfaceError("notFound", "No such console file");
  return answer(context, found, IMMUTABLE);
}

/**
 * The console's routes (kind `public`: no shared rule runs, the page holds nothing secret).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { consoleRoutes } from "./mod.ts";
 * assert.deepEqual(consoleRoutes().map((route) => route.path), [
 *   "/console",
 *   "/console/",
 *   "/console/:version/:file",
 * ]);
 * ```
 */
export function consoleRoutes(): RouteDefinition[] {
  return [
    { method: "GET", path: "/console", kind: "public", handle: redirect },
    { method: "GET", path: CONSOLE_PATH, kind: "public", handle: page },
    { method: "GET", path: "/console/:version/:file", kind: "public", handle: file },
  ];
}
