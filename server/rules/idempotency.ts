/**
 * Idempotency of mutating POSTs. Rule 9 requires an `idempotency-key` of 1 to 128 printable
 * ASCII characters (400 `missingHeader` / `invalidHeader`). Once every shared check has passed,
 * the key is used for (principal, method, path, key):
 *
 * - first use: the handler runs; its 2xx or 4xx is recorded for 24 h (5xx records nothing);
 * - same key, same body bytes: the recorded answer again, with `idempotent-replayed: true`;
 * - same key, other body: 422 `idempotencyConflict`;
 * - same key while the first still runs: 409 `idempotencyInFlight` with `Retry-After: 1`.
 *
 * A route records its answer in one of two ways ({@linkcode IdempotencyMode}): `claim` writes a
 * claim on the key before the handler and completes it after; `atomic` writes nothing before
 * the handler, which records its answer in the same atomic store write as its effect (one write
 * per request instead of two), and duplicates running in this process are caught in memory.
 *
 * @module
 */
import { sha256Hex, toHex } from "../_digest.ts";
import type { Next, Step } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError, toResponse } from "../errors.ts";
import type { IdempotencyMode } from "../router.ts";
import type { IdempotencyKeyUsed, Store, StoredResponse } from "../store/types.ts";

/** How long a recorded answer is kept, in ms (24 h). */
export const IDEMPOTENCY_TTL_MS = 86_400_000;

const PRINTABLE = /^[\x20-\x7e]{1,128}$/;

/**
 * The idempotency-key header step (rule 9).
 *
 * @example
 * ```ts
 * import { idempotencyKeyStep } from "./idempotency.ts";
 * const step = idempotencyKeyStep();
 * ```
 */
export function idempotencyKeyStep(): Step<RequestContext> {
  return function idempotencyKey(context: RequestContext, next: Next): Promise<Response> {
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

/** Options of {@linkcode idempotencyClaimStep}. */
export interface IdempotencyClaimOptions {
  /** The store holding the records. */
  store: Store;
  /** Rebuilds a recorded answer (default: its status and body as JSON). */
  replay?: (stored: StoredResponse, context: RequestContext) => Response | Promise<Response>;
  /** How answers are recorded (default `claim`). */
  mode?: IdempotencyMode;
  /** How long answers are kept, in ms (default 24 h). */
  ttlMs?: number;
}

/**
 * Thrown by a handler of an `atomic` route whose store write found the idempotency key already
 * used (nothing was written); the idempotency step answers from `used` instead of the handler.
 */
export class IdempotencyKeyUsedError extends Error {
  /** Stable error code. */
  readonly code = "idempotencyKeyUsed" as const;
  /** What the key holds. */
  readonly used: IdempotencyKeyUsed;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import { IdempotencyKeyUsedError } from "./idempotency.ts";
   * throw new IdempotencyKeyUsedError({ state: "inFlight" });
   * ```
   */
  constructor(used: IdempotencyKeyUsed) {
    super("The idempotency key was used by another request");
    this.name = "IdempotencyKeyUsedError";
    this.used = used;
  }
}

/**
 * The digest scoping a key to (principal, method, path, key).
 *
 * @example
 * ```ts
 * import { idempotencyScope } from "./idempotency.ts";
 * console.log(idempotencyScope("p", "POST", "/v1/principals", "k").length); // 64
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

async function release(store: Store, scope: string, token: string): Promise<void> {
  try {
    await store.releaseIdempotency(scope, token);
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

type Replay = NonNullable<IdempotencyClaimOptions["replay"]>;

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
  }
}

/** Records `response` under a claimed key and returns it with its body re-wrapped. */
async function complete(
  store: Store,
  claim: { scope: string; token: string; expiresAt: number },
  response: Response,
): Promise<Response> {
  const body = await response.text();
  await store.completeIdempotency({
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

/**
 * Scopes of `atomic` requests running in this process, by store: a duplicate of one of them
 * answers 409 `idempotencyInFlight` at once, as a written claim would make it.
 */
const running = new WeakMap<Store, Set<string>>();

/**
 * The idempotency step: runs right before the handler, after every shared check. In `claim`
 * mode it claims the key first and records the handler's answer after; in `atomic` mode it
 * writes nothing first and leaves the recording of a success to the handler's own store write
 * (`context.idempotency.token` is null then), recording only refusals itself.
 *
 * @example
 * ```ts ignore
 * import { idempotencyClaimStep } from "./idempotency.ts";
 * const step = idempotencyClaimStep({ store });
 * ```
 */
export function idempotencyClaimStep(options: IdempotencyClaimOptions): Step<RequestContext> {
  const { store } = options;
  const replay = options.replay ?? defaultReplay;
  const ttlMs = options.ttlMs ?? IDEMPOTENCY_TTL_MS;
  let scopes = running.get(store);
  if (scopes === undefined) running.set(store, scopes = new Set());
  const inProcess = scopes;

  /** The `atomic` mode: one store write, made by the handler together with its effect. */
  async function atomic(
    context: RequestContext,
    next: Next,
    key: { scope: string; requestDigest: string; leaseMs: number; expiresAt: number },
  ): Promise<Response> {
    const { scope, requestDigest, expiresAt } = key;
    if (inProcess.has(scope)) return await answerUsed({ state: "inFlight" }, replay, context);
    inProcess.add(scope);
    try {
      const state = { scope, token: null, requestDigest, expiresAt, completed: false };
      context.idempotency = state;
      let response: Response;
      try {
        response = await next();
      } catch (error) {
        if (error instanceof IdempotencyKeyUsedError) {
          return await answerUsed(error.used, replay, context);
        }
        if (!(error instanceof InterfaceError) || error.status >= 500 || state.completed) {
          throw error;
        }
        response = toResponse(error, context.responseCorrelationId);
      }
      if (state.completed || response.status >= 500) return response;
      // The handler answered without a store write of its own (a refusal): record that answer
      // under a claim now, unless another request used the key meanwhile.
      const now = context.receivedAt;
      const claim = await store.claimIdempotency({ ...key, now });
      if (claim.state !== "claimed") {
        await response.body?.cancel();
        return await answerUsed(claim, replay, context);
      }
      return await complete(store, { scope, token: claim.token, expiresAt }, response);
    } finally {
      inProcess.delete(scope);
    }
  }

  return async function idempotency(context: RequestContext, next: Next): Promise<Response> {
    const principalId = context.principal?.principalId ?? "";
    const scope = idempotencyScope(
      principalId,
      context.method,
      context.path,
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
    const claim = await store.claimIdempotency({ scope, requestDigest, now, leaseMs, expiresAt });
    if (claim.state !== "claimed") return await answerUsed(claim, replay, context);
    const state = { scope, token: claim.token, requestDigest, expiresAt, completed: false };
    context.idempotency = state;
    let response: Response;
    try {
      response = await next();
    } catch (error) {
      if (error instanceof InterfaceError && error.status < 500 && !state.completed) {
        response = toResponse(error, context.responseCorrelationId);
      } else {
        if (!state.completed) await release(store, scope, claim.token);
        throw error;
      }
    }
    if (state.completed) return response;
    if (response.status >= 500) {
      await release(store, scope, claim.token);
      return response;
    }
    return await complete(store, state, response);
  };
}
