/**
 * Where MCP requests may come from. Browsers send `Origin`; a page on a foreign origin (or one
 * that re-pointed its own name at this machine, DNS rebinding) must not drive the runtime, so
 * an `Origin` outside the allow-list and a `Host` outside the allowed host names are refused
 * with 403 before anything else runs. Clients that are not browsers (IDEs, agents, the SDK)
 * send no `Origin` and pass this check; they still need a bearer.
 *
 * Allow-list entries are exact origins (`https://ide.example.com`, `http://localhost:6274`) or
 * the word `loopback`, which admits `http`/`https` origins on `localhost`, `127.0.0.0/8` and
 * `[::1]` at any port. Host entries are host names (`mcp.example.com`), `loopback`, or `*` to
 * turn the host check off (for a server bound to a public address behind its own name).
 *
 * @module
 */
import { InterfaceError } from "../errors.ts";

/** The allow-list keyword for every loopback origin or host. */
export const LOOPBACK = "loopback";

/** The host-list keyword that admits any `Host`. */
export const ANY_HOST = "*";

/** Default allowed origins: loopback ones only. */
export const DEFAULT_ALLOWED_ORIGINS: readonly string[] = Object.freeze([LOOPBACK]);

/** Default allowed hosts: loopback names only. */
export const DEFAULT_ALLOWED_HOSTS: readonly string[] = Object.freeze([LOOPBACK]);

const IPV4_LOOPBACK = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/**
 * Whether a host name (no port; IPv6 in brackets or bare) names this machine's loopback
 * interface: `localhost`, `127.0.0.0/8` or `::1`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isLoopbackHostname } from "./origin.ts";
 * assert.equal(isLoopbackHostname("127.0.0.1"), true);
 * assert.equal(isLoopbackHostname("[::1]"), true);
 * assert.equal(isLoopbackHostname("attacker.example"), false);
 * ```
 */
export function isLoopbackHostname(hostname: string): boolean {
  const name = hostname.toLowerCase();
  if (name === "localhost" || name === "[::1]" || name === "::1") return true;
  const match = IPV4_LOOPBACK.exec(name);
  return match !== null && match.slice(1).every((octet) => Number(octet) <= 255);
}

/**
 * Parses a comma-separated allow-list (from a flag or an environment variable) into entries.
 * Blank entries are dropped; an entry that is neither a keyword nor a bare origin throws a
 * `TypeError`, so a typo fails closed at start-up instead of admitting nothing silently.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseAllowedOrigins } from "./origin.ts";
 * assert.deepEqual(parseAllowedOrigins("loopback, https://ide.example.com"), [
 *   "loopback",
 *   "https://ide.example.com",
 * ]);
 * ```
 */
export function parseAllowedOrigins(list: string): string[] {
  const entries = list.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "");
  return normalizeOrigins(entries);
}

/**
 * The allowed hosts to use when none are configured, from the address the server binds:
 * a loopback bind admits loopback names only (a foreign `Host` there means DNS rebinding);
 * any other bind admits every `Host`, since the names a public server is reached by are not
 * known in advance (pin them with `allowedHosts`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultAllowedHosts } from "./origin.ts";
 * assert.deepEqual(defaultAllowedHosts("127.0.0.1"), ["loopback"]);
 * assert.deepEqual(defaultAllowedHosts("0.0.0.0"), ["*"]);
 * ```
 */
export function defaultAllowedHosts(bindHostname: string): string[] {
  return isLoopbackHostname(bindHostname) ? [LOOPBACK] : [ANY_HOST];
}

/**
 * Parses a comma-separated list of allowed hosts (`loopback`, `*` or host names); throws a
 * `TypeError` for an entry that is not one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseAllowedHosts } from "./origin.ts";
 * assert.deepEqual(parseAllowedHosts("loopback,mcp.example.com"), ["loopback", "mcp.example.com"]);
 * ```
 */
export function parseAllowedHosts(list: string): string[] {
  const entries = list.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "");
  return normalizeHosts(entries);
}

function normalizeOrigins(entries: readonly string[]): string[] {
  return entries.map((entry) => {
    if (entry.toLowerCase() === LOOPBACK) return LOOPBACK;
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw new TypeError(`MCP allowed origin ${JSON.stringify(entry)} is not an origin`);
    }
    const origin = url.origin;
    if (origin === "null" || origin !== entry.replace(/\/$/, "").toLowerCase()) {
      throw new TypeError(
        `MCP allowed origin ${JSON.stringify(entry)} must be scheme://host[:port] only`,
      );
    }
    return origin;
  });
}

function normalizeHosts(entries: readonly string[]): string[] {
  return entries.map((entry) => {
    const name = entry.trim().toLowerCase();
    if (name === LOOPBACK || name === ANY_HOST) return name;
    if (!/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)$/.test(name)) {
      throw new TypeError(`MCP allowed host ${JSON.stringify(entry)} is not a host name`);
    }
    return name;
  });
}

/** Options of {@linkcode OriginPolicy}. */
export interface OriginPolicyOptions {
  /** Allowed browser origins (default `["loopback"]`); an empty list admits none. */
  allowedOrigins?: readonly string[];
  /** Allowed `Host` names (default `["loopback"]`); `["*"]` turns the check off. */
  allowedHosts?: readonly string[];
}

function forbidden(message: string, header: string): InterfaceError {
  return new InterfaceError("originNotAllowed", message, { extra: { header } });
}

/**
 * The origin and host allow-lists of the MCP endpoint.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { OriginPolicy } from "./origin.ts";
 * const policy = new OriginPolicy();
 * const request = new Request("http://127.0.0.1:7777/v1/mcp", {
 *   headers: { origin: "https://attacker.example" },
 * });
 * assert.equal(policy.check(request)?.status, 403);
 * ```
 */
export class OriginPolicy {
  /** Normalized allowed origins. */
  readonly allowedOrigins: readonly string[];
  /** Normalized allowed hosts. */
  readonly allowedHosts: readonly string[];
  #loopbackOrigins: boolean;
  #exactOrigins: ReadonlySet<string>;
  #anyHost: boolean;
  #loopbackHosts: boolean;
  #exactHosts: ReadonlySet<string>;

  /**
   * Builds the policy; throws a `TypeError` for an entry that is not an origin or host name.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { OriginPolicy } from "./origin.ts";
   * const policy = new OriginPolicy({ allowedOrigins: ["loopback", "https://ide.example.com"] });
   * assert.equal(policy.isAllowedOrigin("https://ide.example.com"), true);
   * assert.throws(() => new OriginPolicy({ allowedOrigins: ["not an origin"] }), TypeError);
   * ```
   */
  constructor(options: OriginPolicyOptions = {}) {
    this.allowedOrigins = Object.freeze(
      normalizeOrigins(options.allowedOrigins ?? DEFAULT_ALLOWED_ORIGINS),
    );
    this.allowedHosts = Object.freeze(
      normalizeHosts(options.allowedHosts ?? DEFAULT_ALLOWED_HOSTS),
    );
    this.#loopbackOrigins = this.allowedOrigins.includes(LOOPBACK);
    this.#exactOrigins = new Set(this.allowedOrigins.filter((entry) => entry !== LOOPBACK));
    this.#anyHost = this.allowedHosts.includes(ANY_HOST);
    this.#loopbackHosts = this.allowedHosts.includes(LOOPBACK);
    this.#exactHosts = new Set(this.allowedHosts);
  }

  /**
   * Whether a browser origin (the `Origin` header's value) is allowed.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { OriginPolicy } from "./origin.ts";
   * const policy = new OriginPolicy();
   * assert.equal(policy.isAllowedOrigin("http://localhost:6274"), true);
   * assert.equal(policy.isAllowedOrigin("null"), false);
   * ```
   */
  isAllowedOrigin(origin: string): boolean {
    if (this.#exactOrigins.has(origin.toLowerCase())) return true;
    if (!this.#loopbackOrigins) return false;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return false;
    return url.origin === origin.toLowerCase() && isLoopbackHostname(url.hostname);
  }

  /**
   * Whether a `Host` header value (name and optional port) is allowed.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { OriginPolicy } from "./origin.ts";
   * const policy = new OriginPolicy();
   * assert.equal(policy.isAllowedHost("127.0.0.1:7777"), true);
   * assert.equal(policy.isAllowedHost("evil.test:7777"), false);
   * ```
   */
  isAllowedHost(host: string): boolean {
    if (this.#anyHost) return true;
    const name = hostname(host);
    if (name === null) return false;
    if (this.#exactHosts.has(name)) return true;
    return this.#loopbackHosts && isLoopbackHostname(name);
  }

  /**
   * Checks a request's `Origin` (when present) and `Host`; returns the 403 `originNotAllowed` error to
   * answer, or null when both are allowed.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { OriginPolicy } from "./origin.ts";
   * const request = new Request("http://localhost:7777/v1/mcp");
   * assert.equal(new OriginPolicy().check(request), null);
   * ```
   */
  check(request: Request): InterfaceError | null {
    const origin = request.headers.get("origin");
    if (origin !== null && !this.isAllowedOrigin(origin)) {
      return forbidden("Requests from this origin are not allowed", "origin");
    }
    const host = request.headers.get("host") ?? hostOfUrl(request.url);
    if (!this.isAllowedHost(host)) {
      return forbidden("Requests for this host name are not allowed", "host");
    }
    return null;
  }
}

function hostOfUrl(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "";
  }
}

/** The host name of a `Host` value without its port, lower case, or null when malformed. */
function hostname(host: string): string | null {
  const value = host.trim().toLowerCase();
  if (value.startsWith("[")) {
    const end = value.indexOf("]");
    if (end === -1) return null;
    const rest = value.slice(end + 1);
    if (rest !== "" && !/^:\d{1,5}$/.test(rest)) return null;
    return value.slice(0, end + 1);
  }
  const colon = value.indexOf(":");
  const name = colon === -1 ? value : value.slice(0, colon);
  if (colon !== -1 && !/^\d{1,5}$/.test(value.slice(colon + 1))) return null;
  if (!/^[a-z0-9.-]+$/.test(name)) return null;
  return name;
}
