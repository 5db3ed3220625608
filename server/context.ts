/**
 * The per-request context: the request's path, the security-sensitive headers read once, and
 * what the rules establish on the way (principal, deadline, body, idempotency key).
 *
 * @module
 */
import type { Capability, IdempotencyKeyUsed } from "./store/types.ts";
import type { MonetaryAmount, PrincipalBudget } from "../wire/mod.ts";

/** The caller once authenticated. */
export interface AuthenticatedPrincipal {
  /** Lower-case UUID. */
  readonly principalId: string;
  /** Granted capabilities. */
  readonly capabilities: readonly Capability[];
  /** RFC 3339 expiry. */
  readonly expiresAt: string;
  /** Expiry in ms since the epoch. */
  readonly expiresAtMs: number;
  /** Whether this is the bootstrap principal. */
  readonly bootstrap: boolean;
  /** Agent ids it may start runs on; absent: any (see `runs/policy.ts`). */
  readonly agentIds?: readonly string[];
  /** Environment ids its runs may run in; absent: any (see `runs/policy.ts`). */
  readonly environmentIds?: readonly string[];
  /** Vault ids its runs may attach; absent: none for an issued principal (`runs/policy.ts`). */
  readonly vaultIds?: readonly string[];
  /** Memory store ids its runs may mount; absent: none for an issued principal. */
  readonly memoryStoreIds?: readonly string[];
  /** GitHub repositories (`owner/name`) its runs may mount; absent: none for an issued one. */
  readonly repositories?: readonly string[];
  /** File ids its runs may mount; absent: none for an issued principal. */
  readonly fileIds?: readonly string[];
  /** Its active-run limit; absent: the default (see `runs/policy.ts`). */
  readonly maxActiveRuns?: number;
  /** Whether its runs may override agents; absent: not (see `runs/policy.ts`). */
  readonly allowAgentOverrides?: boolean;
  /** Its budget; absent: none (see `runs/spend.ts`). */
  readonly budget?: Readonly<PrincipalBudget>;
  /** The most one of its runs may spend; absent: no cap. */
  readonly maxRunCost?: Readonly<MonetaryAmount>;
  /** The longest active stretch of one of its runs, in seconds; absent: no limit. */
  readonly maxRunSeconds?: number;
  /** Its name, when it was given one at issuance. */
  readonly name?: string;
  /** Its metadata, when it was given some at issuance. */
  readonly metadata?: Readonly<Record<string, string>>;
}

/**
 * The idempotency key of a mutating request, handed to its handler as `context.idempotency` by
 * the idempotency rule. A handler that records its answer in its own store write, together with
 * its effect, tells the rule how that write went through exactly one call: `recorded()` or
 * `used(held)`. A handler that writes no record ignores it, and the rule records its answer.
 */
export interface IdempotencyRecord {
  /** Scope key of the record (digest of principal, method, path and key). */
  readonly scope: string;
  /**
   * Token proving ownership of the claim (`claim` mode): complete it in the same write as the
   * effect (`store.principals.create` with an `IdempotencyCompletion`). Null in `atomic` mode, where
   * no claim was written: record the answer with an `IdempotencyRecording` instead, which
   * writes nothing when the key is used meanwhile.
   */
  readonly token: string | null;
  /** Lower-case hex SHA-256 of the raw request body. */
  readonly requestDigest: string;
  /** When the record may be purged, ms since the epoch. */
  readonly expiresAt: number;
  /** The handler's store write recorded its answer with its effect: the rule records nothing. */
  recorded(): void;
  /**
   * The handler is about to do what must not be done twice under this key (a provider call
   * that may take effect): marks the claim begun (`IdempotencyStore.begin`). From then on a
   * retry with the key never runs the handler again: should this request end without an answer
   * to record (a 5xx, a crash), the key answers 409 `idempotencyUnsettled` until it expires.
   * Throws 409 `idempotencyInFlight` when the claim was taken over meanwhile. A no-op in
   * `atomic` mode, which holds no claim.
   */
  begin(): Promise<void>;
  /**
   * What `begin()` announced did not happen after all (the provider refused it): a 5xx answer
   * releases the key as if it never began, so the request can be retried with it.
   */
  undone(): void;
  /**
   * The handler's store write found the key already used by another request and wrote nothing.
   * Answers for this request from what the key holds: the recorded answer again (with
   * `idempotent-replayed: true`), or a rejection with 409 `idempotencyInFlight` or 422
   * `idempotencyConflict`. The handler returns this answer as its own.
   */
  used(held: IdempotencyKeyUsed): Promise<Response>;
}

const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * Whether a value is a valid `x-correlation-id`: a UUID, at most 64 bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isValidCorrelationId } from "./context.ts";
 * assert.equal(isValidCorrelationId(crypto.randomUUID()), true);
 * assert.equal(isValidCorrelationId("abc"), false);
 * ```
 */
export function isValidCorrelationId(value: string): boolean {
  return isUuid(value);
}

/**
 * Whether a value is a UUID in its text form: 8-4-4-4-12 hexadecimal digits of either case
 * (any version and variant), nothing around it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isUuid } from "./context.ts";
 * assert.equal(isUuid("6F1C3D1E-8A6B-4A0E-9D7E-2F4B5C6D7E8F"), true);
 * assert.equal(isUuid("6f1c3d1e8a6b4a0e9d7e2f4b5c6d7e8f"), false);
 * ```
 */
export function isUuid(value: string): boolean {
  if (value.length !== 36) return false;
  for (let i = 0; i < 36; i++) {
    const code = value.charCodeAt(i);
    if (code > 127 || CHARACTER_KIND[code] !== UUID_SHAPE[i]) return false;
  }
  return true;
}

const HEX_DIGIT = 1;
const DASH = 2;
/** The kind of each ASCII character a UUID may hold (0: none). */
const CHARACTER_KIND = new Uint8Array(128);
for (const digit of "0123456789abcdefABCDEF") CHARACTER_KIND[digit.charCodeAt(0)] = HEX_DIGIT;
CHARACTER_KIND[45] = DASH;
/** The kind of character each position of a UUID holds. */
const UUID_SHAPE = Uint8Array.from(
  "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
  (character) => character === "-" ? DASH : HEX_DIGIT,
);

/**
 * Everything the rules of one request share. Headers are read once, here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RequestContext } from "./context.ts";
 * const context = new RequestContext(new Request("http://localhost/v1/runtime?x=1"), Date.now());
 * assert.equal(context.path, "/v1/runtime");
 * assert.equal(context.query, "?x=1");
 * ```
 */
export class RequestContext {
  /** The request. */
  readonly request: Request;
  /** Its method. */
  readonly method: string;
  /** Its path, without the query. */
  readonly path: string;
  /** Its query string including the `?`, or the empty string. */
  readonly query: string;
  /** Wall-clock time the request arrived, ms since the epoch. */
  readonly receivedAt: number;
  /** Monotonic start time for the duration in the log line. */
  readonly startedAt: number;
  /** Raw `authorization` header, or null. */
  readonly authorization: string | null;
  /** Raw `x-interface-version` header, or null. */
  readonly interfaceVersion: string | null;
  /** Raw `x-correlation-id` header, or null. */
  readonly correlationHeader: string | null;
  /** Raw `x-deadline` header, or null. */
  readonly deadlineHeader: string | null;
  /** Raw `idempotency-key` header, or null. */
  readonly idempotencyKey: string | null;
  /** Raw `cookie` header, or null. */
  readonly cookie: string | null;
  /** Path parameters of the matched route. */
  params: Readonly<Record<string, string>> = NO_PARAMS;
  /** The matched route's path pattern (`/v1/runs/:runId`), or null before or without a match. */
  route: string | null = null;
  /** The authenticated caller, once the authenticate rule ran. */
  principal: AuthenticatedPrincipal | null = null;
  /** The request's deadline in ms since the epoch, once the deadline rule ran. */
  deadline = 0;
  /** The raw request body, once the body rule ran. */
  bodyBytes: Uint8Array | null = null;
  /** The parsed and validated JSON body, once the JSON rule ran. */
  body: unknown = undefined;
  /** The idempotency key of a mutating request, once the idempotency rule ran. */
  idempotency: IdempotencyRecord | null = null;
  /** Set once {@linkcode RequestContext.json} built the answer with every common header. */
  finished = false;
  #correlationId: string | null | undefined = undefined;
  #generatedCorrelationId: string | undefined = undefined;

  /**
   * Reads the request line and the security-sensitive headers.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RequestContext } from "./context.ts";
   * const context = new RequestContext(new Request("http://localhost/healthz"), Date.now());
   * assert.equal(context.method, "GET");
   * ```
   */
  constructor(request: Request, now: number) {
    this.request = request;
    this.method = request.method;
    this.receivedAt = now;
    this.startedAt = performance.now();
    const url = request.url;
    const scheme = url.indexOf("://");
    let start = url.indexOf("/", scheme === -1 ? 0 : scheme + 3);
    if (start === -1) start = url.length;
    const question = url.indexOf("?", start);
    if (question === -1) {
      this.path = start === url.length ? "/" : url.slice(start);
      this.query = "";
    } else {
      this.path = question === start ? "/" : url.slice(start, question);
      this.query = url.slice(question);
    }
    const headers = request.headers;
    // Under `Deno.serve` each `get` is a call into the runtime until the whole header list has
    // been fetched, which Deno does anyway once a handler has looked at the headers. Reading the
    // list first (any read of every header does it) makes the six `get`s below plain lookups.
    headers.getSetCookie();
    this.authorization = headers.get("authorization");
    this.interfaceVersion = headers.get("x-interface-version");
    this.correlationHeader = headers.get("x-correlation-id");
    this.deadlineHeader = headers.get("x-deadline");
    this.idempotencyKey = headers.get("idempotency-key");
    this.cookie = headers.get("cookie");
  }

  /** The request's correlation id when it is a valid one, else null. */
  get correlationId(): string | null {
    if (this.#correlationId === undefined) {
      const raw = this.correlationHeader;
      this.#correlationId = raw !== null && isValidCorrelationId(raw) ? raw : null;
    }
    return this.#correlationId;
  }

  /** The correlation id reported to the caller and the log: the request's, else a generated one. */
  get responseCorrelationId(): string {
    return this.correlationId ?? (this.#generatedCorrelationId ??= crypto.randomUUID());
  }

  /**
   * Builds a JSON response carrying the common response headers in one go (`nosniff`, the
   * echoed `x-interface-version` and `x-correlation-id`), so the server need not add them later.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RequestContext } from "./context.ts";
   * const context = new RequestContext(new Request("http://localhost/healthz"), Date.now());
   * const response = context.json('{"ok":true}', 200, { "cache-control": "no-store" });
   * assert.equal(response.headers.get("x-content-type-options"), "nosniff");
   * ```
   */
  json(body: string | null, status = 200, extra?: Record<string, string>): Response {
    const headers: Record<string, string> = body === null
      ? { "x-content-type-options": "nosniff" }
      : { "content-type": "application/json", "x-content-type-options": "nosniff" };
    if (this.interfaceVersion !== null) headers["x-interface-version"] = this.interfaceVersion;
    if (this.correlationHeader !== null) headers["x-correlation-id"] = this.correlationHeader;
    if (extra !== undefined) {
      for (const name in extra) headers[name] = extra[name];
    }
    this.finished = true;
    return new Response(body, { status, headers });
  }

  /** The correlation id for the log line: the request's when valid, any generated one, or null. */
  get loggedCorrelationId(): string | null {
    return this.correlationId ?? this.#generatedCorrelationId ?? null;
  }
}
