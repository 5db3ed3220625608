/**
 * Idempotency of mutating POSTs. Rule 9 requires an `idempotency-key` of 1 to 128 printable
 * ASCII characters (400 `missingHeader` / `invalidHeader`). Once every shared check has passed,
 * the key is used for (principal, method, route, key), the route being its pattern with the
 * decoded path parameters put back in one canonical encoding ({@linkcode canonicalPath}), so
 * `/v1/runs/%73esn_1/messages` and `/v1/runs/sesn_1/messages` are one scope:
 *
 * - first use: the handler runs; its 2xx or 4xx is recorded for 24 h (5xx records nothing);
 * - same key, same body bytes: the recorded answer again, with `idempotent-replayed: true`;
 * - same key, other body: 422 `idempotencyConflict`;
 * - same key while the first still runs: 409 `idempotencyInFlight` with `Retry-After: 1`;
 * - same key after a first request that began an effect outside the store (a provider call:
 *   `context.idempotency.begin()`) and ended without an answer to record (a 5xx, a crash): 409
 *   `idempotencyUnsettled`; the effect is never repeated under that key.
 *
 * A route records its answer in one of two ways ({@linkcode IdempotencyMode}): `claim` writes a
 * claim on the key before the handler and completes it after; `atomic` writes nothing before
 * the handler, which records its answer in the same atomic store write as its effect (one write
 * per request instead of two), and duplicates running in this process are caught in memory.
 *
 * The handler learns of the key through `context.idempotency` ({@linkcode IdempotencyRecord}),
 * and a handler that records its answer in its own store write says how that went through one
 * call on it: `recorded()` (written with the effect: nothing more to record) or `used(held)` (the
 * write found the key used and wrote nothing: its answer is what the key holds). A handler that
 * writes no record itself ignores it, and the rule records whatever the handler answered.
 *
 * A route any caller may reach without a bearer records only its successes
 * ({@linkcode IdempotencyRuleOptions.recordRefusals}).
 *
 * The state shared by the requests of one server (the `atomic` keys running in this process)
 * lives on its {@linkcode Idempotency} instance, one per server (`RuntimeServices.idempotency`).
 *
 * @module
 */
import { sha256Hex, toHex } from "../digest.ts";
import type { Next, Rule } from "../chain.ts";
import type { IdempotencyRecord, RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { IdempotencyMode } from "../router.ts";
import type { IdempotencyKeyUsed, Store, StoredResponse } from "../store/types.ts";

/** How long a recorded answer is kept, in ms (24 h). */
export const IDEMPOTENCY_TTL_MS = 86_400_000;

const PRINTABLE = /^[\x20-\x7e]{1,128}$/;

/**
 * The idempotency-key header rule (rule 9).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RequestContext } from "../context.ts";
 * import { idempotencyKeyRule } from "./idempotency.ts";
 * const rule = idempotencyKeyRule();
 * const request = new Request("http://localhost/v1/x", { headers: { "idempotency-key": "k-1" } });
 * const answer = rule(new RequestContext(request, Date.now()), () => new Response("ok"));
 * assert.equal((answer as Response).status, 200);
 * assert.throws(
 *   () => rule(new RequestContext(new Request("http://localhost/"), 0), () => new Response()),
 *   /idempotency-key is required/,
 * );
 * ```
 */
export function idempotencyKeyRule(): Rule<RequestContext> {
  return function idempotencyKey(context: RequestContext, next: Next) {
    const key = context.idempotencyKey;
    if (key === null) {
      throw new InterfaceError("missingHeader", "Header idempotency-key is required", {
        extra: { header: "idempotency-key" },
      });
    }
    if (!PRINTABLE.test(key)) {
      throw new InterfaceError(
        "invalidHeader",
        "Header idempotency-key must be 1 to 128 printable ASCII characters",
        { extra: { header: "idempotency-key" } },
      );
    }
    return next();
  };
}

/** Options of the {@linkcode Idempotency} constructor. */
export interface IdempotencyOptions {
  /** The store holding the records. */
  store: Store;
  /** How long answers are kept, in ms (default 24 h). */
  ttlMs?: number;
}

/** Options of {@linkcode Idempotency.rule}: the route's. */
export interface IdempotencyRuleOptions {
  /** How answers are recorded (default `claim`). */
  mode?: IdempotencyMode;
  /** Rebuilds a recorded answer (default: its status and body as JSON). */
  replay?: (stored: StoredResponse, context: RequestContext) => Response | Promise<Response>;
  /**
   * Record the handler's 4xx answers too (default true). False for a route any caller may reach
   * without a bearer (the token exchange): a refusal is then only looked up against the key (a
   * retry of a request that succeeded gets its recorded answer) and never written, so no
   * anonymous request makes the store write; a 429 is answered as it is, without even a read.
   * Only with the `atomic` mode.
   */
  recordRefusals?: boolean;
}

/**
 * The path a key is scoped to: the route's pattern (`/v1/runs/:runId/messages`) with each
 * parameter's decoded value put back percent-encoded one way (`encodeURIComponent`), so every
 * spelling of one resource is one path; the raw path when no route matched.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { canonicalPath } from "./idempotency.ts";
 * const pattern = "/v1/runs/:runId/messages";
 * assert.equal(
 *   canonicalPath(pattern, { runId: "sesn_1" }, "/v1/runs/%73esn_1/messages"),
 *   "/v1/runs/sesn_1/messages",
 * );
 * ```
 */
export function canonicalPath(
  pattern: string | null,
  params: Readonly<Record<string, string>>,
  path: string,
): string {
  if (pattern === null) return path;
  if (!pattern.includes("/:")) return pattern;
  return pattern.split("/").map((segment) =>
    segment.startsWith(":") ? encodeURIComponent(params[segment.slice(1)] ?? "") : segment
  ).join("/");
}

/**
 * The digest scoping a key to (principal, method, path, key); `path` is the
 * {@linkcode canonicalPath}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { idempotencyScope } from "./idempotency.ts";
 * assert.equal(idempotencyScope("p", "POST", "/v1/principals", "k").length, 64);
 * ```
 */
export function idempotencyScope(
  principalId: string,
  method: string,
  path: string,
  key: string,
): string {
  return sha256Hex(`${principalId}\n${method}\n${path}\n${key}`);
}

/** Hex SHA-256 of a body: in JavaScript when small, off the event loop with WebCrypto when large. */
async function bodyDigest(bytes: Uint8Array): Promise<string> {
  if (bytes.length <= 16_384) return sha256Hex(bytes);
  return toHex(
    new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)),
  );
}

/**
 * Lets go of a claim whose request answered no answer to record: drops it, or, when its effect
 * may have happened (`record.begun`), ends its lease so the key is `unsettled` at once.
 */
async function release(store: Store, record: KeyRecord, now: number): Promise<void> {
  try {
    if (record.begun) await store.idempotency.abandon(record.scope, record.token!, now);
    else await store.idempotency.release(record.scope, record.token!);
  } catch {
    // The claim's lease runs out on its own; the original failure is what the caller sees.
  }
}

function defaultReplay(stored: StoredResponse): Response {
  const empty = stored.status === 204 || stored.status === 304 || stored.body === "";
  return new Response(empty ? null : stored.body, {
    status: stored.status,
    headers: empty ? undefined : { "content-type": "application/json" },
  });
}

type Replay = NonNullable<IdempotencyRuleOptions["replay"]>;

/** The answer for a key some other request used: 409, 422, or its recorded answer again. */
async function answerUsed(
  used: IdempotencyKeyUsed,
  replay: Replay,
  context: RequestContext,
): Promise<Response> {
  switch (used.state) {
    case "inFlight":
      throw new InterfaceError(
        "idempotencyInFlight",
        "A request with this idempotency key is still in progress",
        { headers: { "retry-after": "1" } },
      );
    case "conflict":
      throw new InterfaceError(
        "idempotencyConflict",
        "This idempotency key was used with a different request body",
      );
    case "completed": {
      const response = await replay(used.response, context);
      response.headers.set("idempotent-replayed", "true");
      return response;
    }
    case "unsettled":
      throw new InterfaceError(
        "idempotencyUnsettled",
        "The first request with this idempotency key began its effect and did not finish; it " +
          "is not repeated under this key. Check its outcome, then use a new key",
      );
  }
}

/** Records `response` under a claimed key and returns it with its body re-wrapped. */
async function complete(
  store: Store,
  claim: { scope: string; token: string; expiresAt: number },
  response: Response,
): Promise<Response> {
  const body = await response.text();
  await store.idempotency.complete({
    scope: claim.scope,
    token: claim.token,
    response: { status: response.status, body },
    expiresAt: claim.expiresAt,
  });
  return new Response(body === "" ? null : body, {
    status: response.status,
    headers: response.headers,
  });
}

/** The key of one request, as its handler sees it; `settled` once the handler reported. */
class KeyRecord implements IdempotencyRecord {
  readonly scope: string;
  readonly token: string | null;
  readonly requestDigest: string;
  readonly expiresAt: number;
  /** Whether the handler reported its own store write: the rule then records nothing. */
  settled = false;
  /** Whether the handler began an effect that may have happened (`begin()`, not `undone()`). */
  begun = false;
  readonly #store: Store;
  readonly #replay: Replay;
  readonly #context: RequestContext;

  constructor(
    key: { scope: string; token: string | null; requestDigest: string; expiresAt: number },
    store: Store,
    replay: Replay,
    context: RequestContext,
  ) {
    this.scope = key.scope;
    this.token = key.token;
    this.requestDigest = key.requestDigest;
    this.expiresAt = key.expiresAt;
    this.#store = store;
    this.#replay = replay;
    this.#context = context;
  }

  recorded(): void {
    this.settled = true;
  }

  async begin(): Promise<void> {
    if (this.token === null) return;
    if (!await this.#store.idempotency.begin(this.scope, this.token)) {
      throw new InterfaceError(
        "idempotencyInFlight",
        "Another request with this idempotency key took it over",
        { headers: { "retry-after": "1" } },
      );
    }
    this.begun = true;
  }

  undone(): void {
    this.begun = false;
  }

  used(held: IdempotencyKeyUsed): Promise<Response> {
    this.settled = true;
    return answerUsed(held, this.#replay, this.#context);
  }
}

/**
 * The idempotency of one server: makes the rule of each idempotent route and holds what those
 * rules share, the scopes of `atomic` requests running in this process (a duplicate of one of
 * them answers 409 `idempotencyInFlight` at once, as a written claim would make it). The HTTP
 * routes and the MCP tools of a server use the same instance.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compose } from "../chain.ts";
 * import { RequestContext } from "../context.ts";
 * import { openKvStore } from "../store/mod.ts";
 * import { Idempotency } from "./idempotency.ts";
 * const store = await openKvStore({ path: ":memory:", namespace: "example" });
 * try {
 *   const idempotency = new Idempotency({ store });
 *   let runs = 0;
 *   const chain = compose<RequestContext>([
 *     idempotency.rule(),
 *     (context) => context.json(JSON.stringify({ run: ++runs }), 201),
 *   ]);
 *   const post = () => {
 *     const request = new Request("http://localhost/v1/things", {
 *       method: "POST",
 *       headers: { "idempotency-key": "k-1" },
 *     });
 *     const context = new RequestContext(request, Date.now());
 *     context.bodyBytes = new TextEncoder().encode("{}");
 *     return chain(context);
 *   };
 *   const first = await post();
 *   assert.deepEqual(await first.json(), { run: 1 });
 *   const again = await post();
 *   assert.deepEqual(await again.json(), { run: 1 });
 *   assert.equal(again.headers.get("idempotent-replayed"), "true");
 * } finally {
 *   await store.close();
 * }
 * ```
 */
export class Idempotency {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #running = new Set<string>();

  /**
   * Creates the idempotency of one server over its store.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { openKvStore } from "../store/mod.ts";
   * import { Idempotency } from "./idempotency.ts";
   * const store = await openKvStore({ path: ":memory:", namespace: "example" });
   * assert.equal(typeof new Idempotency({ store }).rule(), "function");
   * await store.close();
   * ```
   */
  constructor(options: IdempotencyOptions) {
    this.#store = options.store;
    this.#ttlMs = options.ttlMs ?? IDEMPOTENCY_TTL_MS;
  }

  /**
   * The idempotency rule of one route: runs right before the handler, after every shared
   * check, and sets `context.idempotency`. In `claim` mode it claims the key first and records
   * the handler's answer after (unless the handler completed the claim in its own write:
   * `recorded()`); in `atomic` mode it writes nothing first (`token` is null) and leaves the
   * recording of a success to the handler's own store write, recording only refusals itself.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { openKvStore } from "../store/mod.ts";
   * import { Idempotency } from "./idempotency.ts";
   * const store = await openKvStore({ path: ":memory:", namespace: "example" });
   * const rule = new Idempotency({ store }).rule({ mode: "atomic" });
   * assert.equal(typeof rule, "function");
   * await store.close();
   * ```
   */
  rule(options: IdempotencyRuleOptions = {}): Rule<RequestContext> {
    const store = this.#store;
    const ttlMs = this.#ttlMs;
    const running = this.#running;
    const replay = options.replay ?? defaultReplay;
    const recordRefusals = options.recordRefusals ?? true;
    if (!recordRefusals && options.mode !== "atomic") {
      throw new Error("An idempotency rule that records no refusal must be atomic");
    }

    /** The `atomic` mode: one store write, made by the handler together with its effect. */
    async function atomic(
      context: RequestContext,
      next: Next,
      key: { scope: string; requestDigest: string; leaseMs: number; expiresAt: number },
    ): Promise<Response> {
      const { scope, requestDigest, expiresAt } = key;
      if (running.has(scope)) return await answerUsed({ state: "inFlight" }, replay, context);
      running.add(scope);
      try {
        const record = new KeyRecord(
          { scope, token: null, requestDigest, expiresAt },
          store,
          replay,
          context,
        );
        context.idempotency = record;
        const response = await next();
        if (record.settled || response.status >= 500) return response;
        if (!recordRefusals) {
          // An anonymous refusal: answered as it is unless the key holds another answer.
          if (response.status === 429) return response;
          const held = await store.idempotency.lookup(scope, requestDigest, context.receivedAt);
          if (held === null) return response;
          await response.body?.cancel();
          return await answerUsed(held, replay, context);
        }
        // The handler answered without a store write of its own (a refusal): record that
        // answer under a claim now, unless another request used the key meanwhile.
        const claim = await store.idempotency.claim({ ...key, now: context.receivedAt });
        if (claim.state !== "claimed") {
          await response.body?.cancel();
          return await answerUsed(claim, replay, context);
        }
        return await complete(store, { scope, token: claim.token, expiresAt }, response);
      } finally {
        running.delete(scope);
      }
    }

    return async function idempotency(context: RequestContext, next: Next): Promise<Response> {
      const principalId = context.principal?.principalId ?? "";
      const scope = idempotencyScope(
        principalId,
        context.method,
        canonicalPath(context.route, context.params, context.path),
        context.idempotencyKey ?? "",
      );
      const requestDigest = await bodyDigest(context.bodyBytes ?? new Uint8Array(0));
      const now = context.receivedAt;
      const expiresAt = now + ttlMs;
      // A claim outlives its holder's deadline only by a margin; after that a crashed holder's
      // claim may be taken over.
      const leaseMs = Math.max(context.deadline - now, 0) + 5_000;
      if (options.mode === "atomic") {
        return await atomic(context, next, { scope, requestDigest, leaseMs, expiresAt });
      }
      const claim = await store.idempotency.claim({
        scope,
        requestDigest,
        now,
        leaseMs,
        expiresAt,
      });
      if (claim.state !== "claimed") return await answerUsed(claim, replay, context);
      const token = claim.token;
      const record = new KeyRecord(
        { scope, token, requestDigest, expiresAt },
        store,
        replay,
        context,
      );
      context.idempotency = record;
      // A refusal of the handler arrives as its error response (the chain's one error handler
      // rendered it), so it is recorded like any other 4xx.
      let response: Response;
      try {
        response = await next();
      } catch (error) {
        // Only a chain composed without an error handler lets an error through.
        if (!record.settled) await release(store, record, now);
        throw error;
      }
      if (record.settled) return response;
      if (response.status >= 500) {
        await release(store, record, now);
        return response;
      }
      return await complete(store, { scope, token, expiresAt }, response);
    };
  }
}
