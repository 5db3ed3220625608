/**
 * {@linkcode RuntimeServiceClient}: the TypeScript client of the runtime service. Web standards
 * only (fetch, AbortSignal, WebCrypto), so it runs in Deno, Node 20+ and browsers.
 *
 * One file because it is one concept: the client's single request path (shared headers,
 * deadline, retries, idempotency keys) and the principal calls built directly on it; runs, audit
 * and trust policies live in their own files, and so does the one call made without a bearer
 * (`token_exchange.ts`).
 *
 * @module
 */
import { AuditApi } from "./audit.ts";
import { RuntimeServiceError } from "./errors.ts";
import { RunsApi } from "./runs.ts";
import {
  checkedLimit,
  environmentValue,
  idempotencyKeyOf,
  invalidAnswer,
  queryOf,
} from "./_request.ts";
import { checkBaseUrl, checkDeadline, checkMaxRetries, Transport } from "./_transport.ts";
import { TrustPoliciesApi } from "./trust_policies.ts";
import {
  type CallOptions,
  type CreatePrincipalParams,
  type MutatingCallOptions,
  REQUEST_METHODS,
  type RuntimeAnswer,
  type RuntimeRequest,
} from "./types.ts";
import {
  type CreatePrincipalBody,
  type HealthStatus,
  type IssuedPrincipal,
  type PrincipalPage,
  type PrincipalPageParams,
  type PrincipalSummary,
  RESOURCE_POLICY_FIELDS,
  type RuntimeInfo,
  USAGE_GROUPS,
  type UsagePage,
  type UsageParams,
} from "../wire/mod.ts";

/** Options of {@linkcode RuntimeServiceClient}. */
export interface RuntimeServiceClientOptions {
  /**
   * Base URL of the service, such as `http://127.0.0.1:7777`. No credentials, query or fragment.
   * Default: the `AUTOMATION_RUNTIME_URL` environment variable, when the runtime has one.
   */
  baseUrl?: string | URL;
  /**
   * The caller's bearer. Sent only in the `authorization` header. Default: the
   * `AUTOMATION_RUNTIME_TOKEN` environment variable, when the runtime has one.
   */
  token?: string;
  /** The fetch to use (default: the global `fetch`). */
  fetch?: typeof fetch;
  /** Default deadline of each call in ms, retries included; 1 to 300000 (default 60000). */
  deadlineMs?: number;
  /** Retries of a call after the first attempt (default 2, 0 to 10). */
  maxRetries?: number;
}

const TOKEN_VARIABLE = "AUTOMATION_RUNTIME_TOKEN";
const URL_VARIABLE = "AUTOMATION_RUNTIME_URL";

/**
 * Client of the runtime service. Every call sets `authorization`, `x-interface-version`
 * (`2026-07-23`), a fresh `x-correlation-id` and `x-deadline` (60 s ahead by default); mutating
 * calls send an `idempotency-key` (yours, or a random UUID kept identical across retries). Calls
 * are retried on connection errors, 408, 409 `idempotencyInFlight`, 429 and 503 (except 429
 * `runQuotaExceeded` and 503 `providerNotConfigured`, which last), honouring `Retry-After`,
 * within the call's deadline. Failures reject with {@linkcode RuntimeServiceError}.
 *
 * @example Issue and revoke a principal
 * ```ts
 * import assert from "node:assert/strict";
 * import { RuntimeServiceClient } from "./client.ts";
 * // A stand-in for the service, so that the example runs anywhere; leave `fetch` out for real.
 * const calls: string[] = [];
 * const service: typeof fetch = (input, init) => {
 *   const request = new Request(input, init);
 *   calls.push(`${request.method} ${new URL(request.url).pathname}`);
 *   if (request.method === "DELETE") return Promise.resolve(new Response(null, { status: 204 }));
 *   return request.json().then((body) =>
 *     Response.json({ ...body, bearer: "art_" + "n".repeat(43) }, { status: 201 })
 *   );
 * };
 * const client = new RuntimeServiceClient({
 *   baseUrl: "http://127.0.0.1:7777",
 *   token: "art_" + "x".repeat(43), // or leave it out: AUTOMATION_RUNTIME_TOKEN is read
 *   fetch: service,
 * });
 * const issued = await client.createPrincipal({
 *   capabilities: ["session:read"],
 *   expiresAt: new Date(Date.now() + 86_400_000),
 * });
 * assert.ok(issued.bearer.startsWith("art_")); // shown once: hand it over at once
 * await client.revokePrincipal(issued.principalId);
 * assert.deepEqual(calls, [
 *   "POST /v1/principals",
 *   `DELETE /v1/principals/${issued.principalId}`,
 * ]);
 * ```
 */
export class RuntimeServiceClient {
  #transport: Transport;

  /** Runs of managed agents: start, read, list, cancel, follow up (see {@linkcode RunsApi}). */
  readonly runs: RunsApi = new RunsApi(
    (spec) => this.#transport.request(spec),
    (path, lastEventId, options) => this.#transport.openStream(path, lastEventId, options),
  );
  /** The audit log, for `authority:admin` callers (see {@linkcode AuditApi}). */
  readonly audit: AuditApi = new AuditApi((spec) => this.#transport.request(spec));
  /**
   * Trust policies for CI jobs' OIDC token exchange, for `authority:admin` callers (see
   * {@linkcode TrustPoliciesApi}); the exchange itself needs no client: `exchangeToken`.
   */
  readonly trustPolicies: TrustPoliciesApi = new TrustPoliciesApi((spec) =>
    this.#transport.request(spec)
  );

  /**
   * Creates a client. Throws a `TypeError` when `baseUrl` or `token` is missing or malformed and a
   * `RangeError` when `deadlineMs` or `maxRetries` is out of range.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_" + "x".repeat(43),
   *   deadlineMs: 10_000,
   * });
   * assert.ok(client instanceof RuntimeServiceClient);
   * assert.throws(() => new RuntimeServiceClient({ baseUrl: "http://a.test", token: "a b" }), TypeError);
   * ```
   */
  constructor(options: RuntimeServiceClientOptions) {
    if (options === null || typeof options !== "object") {
      throw new TypeError("RuntimeServiceClient needs an options object");
    }
    const baseUrl = options.baseUrl ?? environmentValue(URL_VARIABLE);
    if (baseUrl === undefined) {
      throw new TypeError(`RuntimeServiceClient needs a baseUrl (or ${URL_VARIABLE})`);
    }
    const url = checkBaseUrl(baseUrl);
    const token = options.token ?? environmentValue(TOKEN_VARIABLE);
    if (typeof token !== "string" || token === "") {
      throw new TypeError(`RuntimeServiceClient needs a token (or ${TOKEN_VARIABLE})`);
    }
    if (!/^[\x21-\x7e]+$/.test(token)) {
      throw new TypeError("The token must be printable ASCII without spaces");
    }
    const deadlineMs = checkDeadline(options.deadlineMs ?? 60_000);
    const maxRetries = checkMaxRetries(options.maxRetries ?? 2);
    this.#transport = new Transport({
      baseUrl: url,
      token,
      fetch: options.fetch ?? ((input, init) => fetch(input, init)),
      deadlineMs,
      maxRetries,
    });
  }

  /**
   * Checks that the service is up (`GET /healthz`, unauthenticated: the bearer is not sent).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_" + "x".repeat(43),
   *   fetch: () => Promise.resolve(Response.json({ ok: true })),
   * });
   * assert.deepEqual(await client.health(), { ok: true });
   * ```
   */
  async health(options: CallOptions = {}): Promise<HealthStatus> {
    const answer = await this.#transport.request({
      method: "GET",
      path: "/healthz",
      authenticated: false,
      options,
    });
    return answer.body as HealthStatus;
  }

  /**
   * Describes the service and the calling principal (`GET /v1/runtime`).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const me = {
   *   interfaceVersion: "2026-07-23",
   *   principalId: "0b7a2f6e-2c56-4d1c-9a41-6a4b8b9fb0c1",
   *   capabilities: ["session:read"],
   *   expiresAt: "2030-01-01T00:00:00.000Z",
   * };
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_" + "x".repeat(43),
   *   fetch: () => Promise.resolve(Response.json(me)),
   * });
   * assert.deepEqual((await client.runtime()).capabilities, ["session:read"]);
   * ```
   */
  async runtime(options: CallOptions = {}): Promise<RuntimeInfo> {
    const answer = await this.#transport.request({
      method: "GET",
      path: "/v1/runtime",
      authenticated: true,
      options,
    });
    return answer.body as RuntimeInfo;
  }

  /**
   * Issues a scoped principal (`POST /v1/principals`, needs `authority:admin`). The answer holds
   * the principal's one-time bearer; it cannot be retrieved again.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * let sentKey: string | null = null;
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_" + "x".repeat(43),
   *   fetch: async (input, init) => {
   *     const request = new Request(input, init);
   *     sentKey = request.headers.get("idempotency-key");
   *     const body = await request.json();
   *     return Response.json({ ...body, bearer: "art_" + "n".repeat(43) }, { status: 201 });
   *   },
   * });
   * const issued = await client.createPrincipal(
   *   { capabilities: ["session:read", "session:write"], expiresAt: "2030-08-01T00:00:00Z" },
   *   { idempotencyKey: "issue-worker-7" },
   * );
   * assert.equal(sentKey, "issue-worker-7");
   * assert.deepEqual(issued.capabilities, ["session:read", "session:write"]);
   * ```
   */
  async createPrincipal(
    params: CreatePrincipalParams,
    options: MutatingCallOptions = {},
  ): Promise<IssuedPrincipal> {
    if (params === null || typeof params !== "object") {
      throw new TypeError("createPrincipal needs a params object");
    }
    const expiresAt = params.expiresAt instanceof Date
      ? params.expiresAt.toISOString()
      : params.expiresAt;
    const body: CreatePrincipalBody = {
      principalId: params.principalId ?? crypto.randomUUID(),
      capabilities: [...params.capabilities],
      expiresAt,
    };
    for (const field of ["agentIds", ...RESOURCE_POLICY_FIELDS] as const) {
      const list = params[field];
      if (list !== undefined) body[field] = [...list];
    }
    if (params.maxActiveRuns !== undefined) body.maxActiveRuns = params.maxActiveRuns;
    if (params.allowAgentOverrides !== undefined) {
      body.allowAgentOverrides = params.allowAgentOverrides;
    }
    if (params.budget !== undefined) body.budget = { ...params.budget };
    if (params.maxRunCost !== undefined) body.maxRunCost = { ...params.maxRunCost };
    if (params.maxRunSeconds !== undefined) body.maxRunSeconds = params.maxRunSeconds;
    if (params.name !== undefined) body.name = params.name;
    if (params.metadata !== undefined) body.metadata = { ...params.metadata };
    const answer = await this.#transport.request({
      method: "POST",
      path: "/v1/principals",
      body,
      authenticated: true,
      idempotencyKey: idempotencyKeyOf(options),
      options,
    });
    return answer.body as IssuedPrincipal;
  }

  /**
   * Revokes a principal (`DELETE /v1/principals/{id}`, needs `authority:admin`). Revoking an
   * already revoked principal succeeds again; an unknown id rejects with code `notFound`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const deleted: string[] = [];
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_" + "x".repeat(43),
   *   fetch: (input, init) => {
   *     deleted.push(new Request(input, init).url);
   *     return Promise.resolve(new Response(null, { status: 204 }));
   *   },
   * });
   * await client.revokePrincipal("0b7a2f6e-2c56-4d1c-9a41-6a4b8b9fb0c1");
   * assert.deepEqual(deleted, [
   *   "http://127.0.0.1:7777/v1/principals/0b7a2f6e-2c56-4d1c-9a41-6a4b8b9fb0c1",
   * ]);
   * ```
   */
  async revokePrincipal(principalId: string, options: MutatingCallOptions = {}): Promise<void> {
    if (typeof principalId !== "string" || principalId === "") {
      throw new TypeError("revokePrincipal needs a principal id");
    }
    await this.#transport.request({
      method: "DELETE",
      path: `/v1/principals/${encodeURIComponent(principalId)}`,
      authenticated: true,
      idempotencyKey: idempotencyKeyOf(options),
      options,
    });
  }

  /**
   * Lists every principal (`GET /v1/principals`, needs `authority:admin`), without bearers,
   * oldest first: walks the pages of {@linkcode RuntimeServiceClient.listPrincipalPage}.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const pages = [
   *   { principals: [{ principalId: "a", revokedAt: "2026-01-01T00:00:00Z" }], nextCursor: "c1" },
   *   { principals: [{ principalId: "b" }], nextCursor: null },
   * ];
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_" + "x".repeat(43),
   *   fetch: () => Promise.resolve(Response.json(pages.shift())),
   * });
   * const all = await client.listPrincipals(); // every page, oldest first
   * assert.deepEqual(all.map((p) => p.revokedAt ?? "valid"), ["2026-01-01T00:00:00Z", "valid"]);
   * ```
   */
  async listPrincipals(options: CallOptions = {}): Promise<PrincipalSummary[]> {
    const principals: PrincipalSummary[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.listPrincipalPage({ cursor }, options);
      principals.push(...page.principals);
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return principals;
  }

  /**
   * Reads one page of principals (`GET /v1/principals?limit=&cursor=`, needs
   * `authority:admin`). Pass the page's `nextCursor` back as `cursor` until it is null.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const urls: string[] = [];
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_" + "x".repeat(43),
   *   fetch: (input, init) => {
   *     urls.push(new Request(input, init).url);
   *     const nextCursor = urls.length === 1 ? "c1" : null;
   *     return Promise.resolve(Response.json({ principals: [], nextCursor }));
   *   },
   * });
   * const first = await client.listPrincipalPage({ limit: 50 });
   * assert.equal(first.nextCursor, "c1");
   * const second = await client.listPrincipalPage({ limit: 50, cursor: first.nextCursor! });
   * assert.equal(second.nextCursor, null);
   * assert.equal(urls[1], "http://127.0.0.1:7777/v1/principals?limit=50&cursor=c1");
   * ```
   */
  async listPrincipalPage(
    params: PrincipalPageParams = {},
    options: CallOptions = {},
  ): Promise<PrincipalPage> {
    const search = queryOf({ limit: checkedLimit(params.limit, 500), cursor: params.cursor });
    const answer = await this.#transport.request({
      method: "GET",
      path: `/v1/principals${search}`,
      authenticated: true,
      options,
    });
    const body = answer.body as { principals?: unknown; nextCursor?: unknown } | null;
    if (
      body === null || typeof body !== "object" || !Array.isArray(body.principals) ||
      !(body.nextCursor === undefined || body.nextCursor === null ||
        typeof body.nextCursor === "string")
    ) {
      throw new RuntimeServiceError({
        status: answer.status,
        code: "invalidResponse",
        layer: "transport",
        message: "The principal list answer has no principals array",
        correlationId: answer.headers.get("x-correlation-id") ?? "",
      });
    }
    return {
      principals: body.principals as PrincipalSummary[],
      nextCursor: (body.nextCursor as string | null | undefined) ?? null,
    };
  }

  /**
   * Reads the tokens and list cost settled in `[from, to)` (`GET /v1/usage`), summed by
   * principal, agent or UTC day (`groupBy`, default `principal`). Admins read every principal's
   * usage (or one's, with `principalId`); everyone else reads their own. `from` and `to` may be
   * `Date`s; amounts are minor-unit strings (`"2500"` is $25.00).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * let url = "";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_" + "x".repeat(43),
   *   fetch: (input) => {
   *     url = String(input);
   *     const sum = {
   *       inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 0, cacheCreationInputTokens: 0,
   *       listCost: { amount: "42", currency: "USD" },
   *     };
   *     return Promise.resolve(Response.json({
   *       from: "2026-07-01T00:00:00.000Z", to: "2026-07-23T00:00:00.000Z", groupBy: "agent",
   *       groups: [{ key: "agent_1", ...sum }], total: sum,
   *     }));
   *   },
   * });
   * const usage = await client.usage({ groupBy: "agent", from: new Date("2026-07-01T00:00:00Z") });
   * assert.equal(usage.groups[0].listCost.amount, "42");
   * assert.equal(new URL(url).search, "?from=2026-07-01T00%3A00%3A00.000Z&groupBy=agent");
   * ```
   */
  async usage(
    params: Omit<UsageParams, "from" | "to"> & { from?: string | Date; to?: string | Date } = {},
    options: CallOptions = {},
  ): Promise<UsagePage> {
    if (params === null || typeof params !== "object") {
      throw new TypeError("usage params must be an object");
    }
    const time = (value: string | Date | undefined) =>
      value instanceof Date ? value.toISOString() : value;
    if (params.groupBy !== undefined && !USAGE_GROUPS.includes(params.groupBy)) {
      throw new RangeError(`groupBy must be one of ${USAGE_GROUPS.join(", ")}`);
    }
    const query = queryOf({
      from: time(params.from),
      to: time(params.to),
      groupBy: params.groupBy,
      principalId: params.principalId,
    });
    const answer = await this.#transport.request({
      method: "GET",
      path: `/v1/usage${query}`,
      authenticated: true,
      options,
    });
    const body = answer.body as Partial<UsagePage> | null;
    if (body === null || typeof body !== "object" || !Array.isArray(body.groups)) {
      throw invalidAnswer(answer, "The usage answer has no groups array");
    }
    return body as UsagePage;
  }

  /**
   * Sends one call of the service's API as it is and answers whatever the service answered:
   * `{status, headers, body}` with the parsed JSON body (null when empty), a refused answer's
   * error body included. The shared headers, the deadline, the retries and the clock correction
   * are those of every call; a `POST` carries `idempotencyKey` (default: a fresh random key,
   * the same on its retries). Rejects only when no answer arrived (`connectionFailed`,
   * `deadlineExceeded`), when a 2xx body is not JSON (`invalidResponse`), or with the signal's
   * reason. `RuntimeServiceError.fromAnswer(answer)` turns a refused answer into the error the
   * other methods throw. This is what `automation-runtime call` sends.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * import { RuntimeServiceError } from "./errors.ts";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_" + "x".repeat(43),
   *   fetch: () =>
   *     Promise.resolve(Response.json({
   *       error: { code: "runNotFound", layer: "authority", message: "No such run" },
   *     }, { status: 404 })),
   * });
   * const answer = await client.request({ method: "GET", path: "/v1/runs/sesn_01" });
   * assert.equal(answer.status, 404);
   * assert.equal(RuntimeServiceError.fromAnswer(answer).code, "runNotFound");
   * ```
   */
  async request(
    call: RuntimeRequest,
    options: MutatingCallOptions = {},
  ): Promise<RuntimeAnswer> {
    if (call === null || typeof call !== "object") {
      throw new TypeError("request needs a call object");
    }
    if (!(REQUEST_METHODS as readonly string[]).includes(call.method)) {
      throw new TypeError(`method must be one of ${REQUEST_METHODS.join(", ")}`);
    }
    if (typeof call.path !== "string" || !/^\/[\x21-\x7e]*$/.test(call.path)) {
      throw new TypeError("path must start with / and hold printable ASCII without spaces");
    }
    const answer = await this.#transport.exchange({
      method: call.method,
      path: call.path,
      body: call.body,
      authenticated: true,
      idempotencyKey: call.method === "POST" || options.idempotencyKey !== undefined
        ? idempotencyKeyOf(options)
        : undefined,
      options,
    });
    return { status: answer.status, headers: answer.headers, body: answer.body };
  }

  /**
   * The service's clock minus this machine's, in ms, as this client learned it from a deadline
   * refusal (0 until then). Every call's `x-deadline` is sent on the service's clock.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_" + "x".repeat(43),
   * });
   * assert.equal(client.clockOffsetMs, 0);
   * ```
   */
  get clockOffsetMs(): number {
    return this.#transport.clockOffsetMs;
  }
}
