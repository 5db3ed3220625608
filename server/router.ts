/**
 * Route definitions and the tiny router that finds one by method and path. Paths are literal
 * segments and `:name` parameters; a path that exists under other methods yields `allow`.
 *
 * @module
 */
import type { RequestContext } from "./context.ts";
import type { Capability, StoredResponse } from "./store/types.ts";

/** A request body schema: anything with zod's `safeParse`. */
export interface BodySchema {
  /** Validates a parsed JSON value. */
  safeParse(value: unknown): {
    success: boolean;
    data?: unknown;
    error?: { issues: readonly { path: readonly PropertyKey[]; message: string }[] };
  };
}

/**
 * Which rules a route runs: `public` none (such as `/healthz`), `shared` every shared request
 * rule of `/v1/*`, `custom` none, because the handler applies its own (such as MCP), `provider`
 * none either: the handler applies the rules of the provider's own API (`server/native/`).
 */
export type RouteKind = "public" | "shared" | "custom" | "provider";

/**
 * How an idempotent route records its answer under the key:
 *
 * - `claim`: the key is claimed before the handler runs and completed after it (two store
 *   writes); a duplicate arriving meanwhile, from any replica, answers 409 `idempotencyInFlight`.
 * - `atomic`: no claim is written; the handler records its answer in the same atomic store write
 *   as its effect (one store write), which writes nothing when the key was used meanwhile. A
 *   duplicate arriving while the first runs in this process answers 409 `idempotencyInFlight`;
 *   one racing it from another replica gets the recorded answer once the first has committed.
 *
 * Either way, a handler that records its answer in its own store write reports how that went on
 * `context.idempotency` (`IdempotencyRecord`): `recorded()` once the write succeeded, or
 * `return await context.idempotency.used(held)` when it found the key used. A `claim` route
 * whose handler writes no record itself needs neither: its answer is recorded for it.
 */
export type IdempotencyMode = "claim" | "atomic";

/** One route. */
export interface RouteDefinition {
  /** HTTP method, upper case. */
  readonly method: string;
  /** Path pattern, such as `/v1/principals/:principalId`. */
  readonly path: string;
  /** Which rules apply. */
  readonly kind: RouteKind;
  /**
   * Who may call a shared route: `bearer` (the default) runs the authentication rule, so every
   * caller is a principal; `none` leaves that one step out, for the one route whose body carries
   * its own credential (`POST /v1/token-exchange`). Such a route has no capability, its in-flight
   * quota is shared by every anonymous caller, and its refusals are not recorded under their
   * idempotency key (an anonymous caller must not make the store write): see `rules/order.ts`.
   */
  readonly authentication?: "bearer" | "none";
  /** Capability the caller needs (shared routes). */
  readonly capability?: Capability;
  /** A mutating request that requires an `idempotency-key` and is replayed by it. */
  readonly idempotent?: boolean;
  /**
   * How an idempotent route records its answer (default `claim`): see
   * {@linkcode IdempotencyMode}.
   */
  readonly idempotency?: IdempotencyMode;
  /** Schema of the JSON body; when set, the content-type, body and JSON rules run. */
  readonly body?: BodySchema;
  /** A body limit of its own, in bytes, below the server's (`maxBodyBytes`). */
  readonly maxBodyBytes?: number;
  /**
   * How long its body may take to arrive, in ms, within the request's deadline: a route any
   * caller may reach keeps a slow body from holding a slot of the shared quota for long.
   */
  readonly maxBodyMs?: number;
  /** Answers the request. */
  handle(context: RequestContext): Response | Promise<Response>;
  /** Rebuilds a recorded response on replay (default: the recorded status and body as JSON). */
  replay?(stored: StoredResponse, context: RequestContext): Response | Promise<Response>;
}

/** What {@linkcode Router.match} found. */
export type RouteMatch<T> =
  | {
    readonly value: T;
    readonly params: Readonly<Record<string, string>>;
    /** The route's path pattern, such as `/v1/runs/:runId`: a label without ids in it. */
    readonly pattern: string;
  }
  | { readonly allow: readonly string[] }
  | null;

const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});

interface Pattern<T> {
  readonly path: string;
  readonly segments: readonly string[];
  readonly methods: Map<string, T>;
}

/**
 * Maps (method, path) to values.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Router } from "./router.ts";
 * const router = new Router<string>();
 * router.add("GET", "/v1/principals/:principalId", "get one");
 * const match = router.match("GET", "/v1/principals/abc");
 * assert.equal(match !== null && "params" in match ? match.params.principalId : null, "abc");
 * ```
 */
export class Router<T> {
  #static = new Map<string, Map<string, RouteMatch<T>>>();
  #patterns: Pattern<T>[] = [];

  /**
   * Adds a route; a later one for the same method and path replaces the earlier.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Router } from "./router.ts";
   * const router = new Router<number>();
   * router.add("GET", "/healthz", 1);
   * router.add("GET", "/healthz", 2);
   * assert.deepEqual(router.match("GET", "/healthz"), { value: 2, params: {}, pattern: "/healthz" });
   * ```
   */
  add(method: string, path: string, value: T): void {
    if (!path.includes("/:")) {
      let methods = this.#static.get(path);
      if (methods === undefined) this.#static.set(path, methods = new Map());
      // The match of a literal path is built once here, not on every request.
      methods.set(method, Object.freeze({ value, params: NO_PARAMS, pattern: path }));
      return;
    }
    const segments = path.split("/");
    let pattern = this.#patterns.find((p) => p.segments.join("/") === segments.join("/"));
    if (pattern === undefined) {
      pattern = { path, segments, methods: new Map() };
      this.#patterns.push(pattern);
    }
    pattern.methods.set(method, value);
  }

  /**
   * Finds the value for a method and path, the allowed methods when only the method is wrong,
   * or null when nothing matches the path.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Router } from "./router.ts";
   * const router = new Router<number>();
   * router.add("GET", "/healthz", 1);
   * assert.deepEqual(router.match("POST", "/healthz"), { allow: ["GET"] });
   * ```
   */
  match(method: string, path: string): RouteMatch<T> {
    const methods = this.#static.get(path);
    if (methods !== undefined) {
      return methods.get(method) ?? { allow: [...methods.keys()] };
    }
    if (this.#patterns.length === 0) return null;
    const parts = path.split("/");
    for (const pattern of this.#patterns) {
      const params = matchSegments(pattern.segments, parts);
      if (params === null) continue;
      const value = pattern.methods.get(method);
      return value === undefined
        ? { allow: [...pattern.methods.keys()] }
        : { value, params, pattern: pattern.path };
    }
    return null;
  }
}

function matchSegments(
  segments: readonly string[],
  parts: readonly string[],
): Record<string, string> | null {
  if (segments.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i];
    const part = parts[i];
    if (segment.startsWith(":")) {
      if (part === "") return null;
      let decoded: string;
      try {
        decoded = decodeURIComponent(part);
      } catch {
        return null;
      }
      params[segment.slice(1)] = decoded;
    } else if (segment !== part) {
      return null;
    }
  }
  return params;
}
