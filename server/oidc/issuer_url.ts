/**
 * The rules an OIDC issuer URL (and the JWKS URL its discovery document names) must follow. An
 * issuer is `https:`; `http:` is admitted only when the caller allows loopback HTTP issuers
 * (tests and local use), and then only on `127.0.0.1`, `[::1]` and `localhost`. The issuer is
 * compared with the token's `iss` and the discovery document's `issuer` as a string, so it must
 * be written in the canonical form a URL parser gives back: lowercase scheme and host, no
 * default port, no credentials, no query, no fragment.
 *
 * @module
 */

/** The longest issuer URL admitted, in characters. */
export const MAX_ISSUER_LENGTH = 1_024;

/** The longest `jwks_uri` admitted, in characters. */
export const MAX_JWKS_URI_LENGTH = 2_048;

/** The path the discovery document is served at, below the issuer. */
export const DISCOVERY_PATH = "/.well-known/openid-configuration";

/** The only host names an `http:` issuer may have, and only when loopback HTTP is allowed. */
const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(["127.0.0.1", "[::1]", "localhost"]);

/** Options of {@linkcode issuerUrlProblem} and {@linkcode jwksUriProblem}. */
export interface IssuerUrlOptions {
  /**
   * Admit `http:` URLs on `127.0.0.1`, `[::1]` and `localhost`, for tests and local use
   * (default false: HTTPS only). Other `http:` hosts are refused either way.
   */
  allowLoopbackHttp?: boolean;
}

/**
 * Why `issuer` cannot be a trusted OIDC issuer, or null when it can. The answer is a sentence
 * for the admin who configured it; it repeats no part of the URL.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { issuerUrlProblem } from "./issuer_url.ts";
 * assert.equal(issuerUrlProblem("https://token.actions.githubusercontent.com"), null);
 * assert.equal(issuerUrlProblem("https://gitlab.example.com/"), null);
 * assert.match(issuerUrlProblem("http://127.0.0.1:8080")!, /https/);
 * assert.equal(issuerUrlProblem("http://127.0.0.1:8080", { allowLoopbackHttp: true }), null);
 * assert.notEqual(issuerUrlProblem("http://ci.example", { allowLoopbackHttp: true }), null);
 * assert.notEqual(issuerUrlProblem("https://Issuer.Example"), null);
 * ```
 */
export function issuerUrlProblem(issuer: string, options: IssuerUrlOptions = {}): string | null {
  const parsed = parseFetchable(issuer, "issuer", MAX_ISSUER_LENGTH, options);
  if (typeof parsed === "string") return parsed;
  if (issuer.includes("?") || issuer.includes("#")) {
    return "The issuer has a query or a fragment";
  }
  const canonical = parsed.origin + parsed.pathname;
  if (issuer !== canonical && !(parsed.pathname === "/" && issuer === parsed.origin)) {
    return "The issuer is not in canonical form (lowercase scheme and host, no default port, no escapes a parser rewrites)";
  }
  return null;
}

/**
 * Why `jwksUri` (a discovery document's `jwks_uri`) cannot be fetched, or null when it can: the
 * same scheme rules as the issuer, no credentials, no fragment. It may be on another host than
 * the issuer (Google's is).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jwksUriProblem } from "./issuer_url.ts";
 * assert.equal(jwksUriProblem("https://keys.example/.well-known/jwks"), null);
 * assert.notEqual(jwksUriProblem("http://keys.example/jwks", { allowLoopbackHttp: true }), null);
 * ```
 */
export function jwksUriProblem(jwksUri: string, options: IssuerUrlOptions = {}): string | null {
  const parsed = parseFetchable(jwksUri, "jwks_uri", MAX_JWKS_URI_LENGTH, options);
  if (typeof parsed === "string") return parsed;
  if (jwksUri.includes("#")) return "The jwks_uri has a fragment";
  return null;
}

/**
 * The URL of an issuer's discovery document: the issuer without its trailing `/`, then
 * {@linkcode DISCOVERY_PATH} (OpenID Connect Discovery 1.0, section 4).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { discoveryUrl } from "./issuer_url.ts";
 * assert.equal(
 *   discoveryUrl("https://gitlab.example.com/"),
 *   "https://gitlab.example.com/.well-known/openid-configuration",
 * );
 * ```
 */
export function discoveryUrl(issuer: string): string {
  return (issuer.endsWith("/") ? issuer.slice(0, -1) : issuer) + DISCOVERY_PATH;
}

/** `text` as a URL the verifier may fetch (scheme rules, no credentials), or the problem. */
function parseFetchable(
  text: string,
  what: string,
  maxLength: number,
  options: IssuerUrlOptions,
): URL | string {
  if (text.length === 0) return `The ${what} is empty`;
  if (text.length > maxLength) return `The ${what} is longer than ${maxLength} characters`;
  const url = URL.parse(text);
  if (url === null) return `The ${what} is not an absolute URL`;
  const scheme = schemeProblem(url, options);
  if (scheme !== null) return scheme;
  if (url.username !== "" || url.password !== "") return `The ${what} has credentials`;
  return url;
}

function schemeProblem(url: URL, options: IssuerUrlOptions): string | null {
  if (url.protocol === "https:") return null;
  if (url.protocol !== "http:") return "The URL must use https";
  if (options.allowLoopbackHttp !== true) {
    return "The URL must use https (loopback http is not allowed here)";
  }
  if (!LOOPBACK_HOSTS.has(url.hostname)) {
    return "An http URL must be on 127.0.0.1, [::1] or localhost";
  }
  return null;
}
