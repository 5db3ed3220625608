/**
 * The one order of the shared request rules, for both interfaces: the chain of every `/v1/*`
 * route (`chainFor` in `server/server.ts`), and the MCP endpoint (`server/mcp/endpoint.ts`) with
 * the tool calls it carries (`server/mcp/_dispatch.ts`). A chain names the rule it runs at each
 * step and leaves out the steps it skips; {@linkcode inRuleOrder} lines them up in
 * {@linkcode RULE_ORDER}, so no chain can run two rules in another order than the others.
 *
 * | step | rule (`docs/http-api.md`) | `/v1/*` | MCP |
 * |---|---|---|---|
 * | `duplicates` | 2 | every route | every MCP request |
 * | `authenticate` | 3, 4 | every route but an `authentication: "none"` one | every MCP request |
 * | `interfaceVersion` | 5 | every route | – (the transport has its own version header) |
 * | `correlation` | 6 | every route | when the header is present |
 * | `deadline` | 7 | every route | when the header is present |
 * | `capability` | 8 | the route's | the twin route's, per tool call |
 * | `quota` | – | every route | every MCP request (a POST until its body is handed over), and each tool call for as long as it runs |
 * | `idempotencyKey` | 9 | idempotent routes | tool calls given an `idempotencyKey` |
 * | `contentType` | 10 | routes with a body | – (the transport's) |
 * | `body` | 11 | routes with a body | – (the endpoint reads the JSON-RPC body) |
 * | `arguments` | – | – (the handler reads the path and query) | the tool's own arguments |
 * | `json` | 12 | routes with a body | tools with a body |
 * | `idempotency` | – | idempotent routes | tool calls given an `idempotencyKey` |
 *
 * Then the route's handler. One route skips `authenticate`: `POST /v1/token-exchange`, whose
 * body carries the credential (a CI job's OIDC ID token) and whose definition says
 * `authentication: "none"` ({@linkcode stepsOf} leaves the step out). Every other step runs for
 * it as for any route; its in-flight quota counts every anonymous request together, and its
 * idempotency step records only its successes.
 *
 * Over MCP the steps fall into two chains: the endpoint's, once per MCP request (every step up
 * to `quota` that reads the request's own headers), and the tool call's (from `capability` on),
 * run inside the first. So a tool call's capability is checked
 * after its MCP request took its in-flight slot: the tool is known only once the request's
 * JSON-RPC body is read. Within each chain, and for every rule both interfaces run on one
 * operation, the order is this one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compose, type Rule } from "../chain.ts";
 * import { inRuleOrder } from "./order.ts";
 * const seen: string[] = [];
 * const note = (name: string): Rule<unknown> => (_context, next) => {
 *   seen.push(name);
 *   return next();
 * };
 * // Named in any order, the rules run in the one order: the key (rule 9) before the body (12).
 * const chain = compose([
 *   ...inRuleOrder({ json: note("json"), idempotencyKey: note("idempotencyKey") }),
 *   () => new Response(null, { status: 204 }),
 * ]);
 * assert.equal((await chain({})).status, 204);
 * assert.deepEqual(seen, ["idempotencyKey", "json"]);
 * ```
 *
 * @module
 */
import type { Rule } from "../chain.ts";

/** The steps of the shared request rules, in the order every chain runs them. */
export const RULE_ORDER = [
  "duplicates",
  "authenticate",
  "interfaceVersion",
  "correlation",
  "deadline",
  "capability",
  "quota",
  "idempotencyKey",
  "contentType",
  "body",
  "arguments",
  "json",
  "idempotency",
] as const;

/** One step of {@linkcode RULE_ORDER}. */
export type RuleStep = typeof RULE_ORDER[number];

/** The rule a chain runs at each step; a step left out (or undefined) is skipped. */
export type RuleSteps<C> = { readonly [S in RuleStep]?: Rule<C> | undefined };

/** What a route's definition says about the steps it runs (see `router.ts`). */
export interface RouteSteps {
  /** `none`: no authentication step (the route's body carries its own credential). */
  readonly authentication?: "bearer" | "none";
}

/**
 * The steps a route runs before its route-specific ones: every step of `shared`, except
 * `authenticate` for a route that says `authentication: "none"`. The one place a chain leaves
 * authentication out.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { Rule } from "../chain.ts";
 * import { stepsOf } from "./order.ts";
 * const rule: Rule<unknown> = (_context, next) => next();
 * const shared = { duplicates: rule, authenticate: rule };
 * assert.deepEqual(Object.keys(stepsOf({}, shared)), ["duplicates", "authenticate"]);
 * assert.deepEqual(Object.keys(stepsOf({ authentication: "none" }, shared)), ["duplicates"]);
 * ```
 */
export function stepsOf<C, S extends RuleSteps<C>>(route: RouteSteps, shared: S): RuleSteps<C> {
  if (route.authentication !== "none") return shared;
  const { authenticate: _skipped, ...rest } = shared;
  return rest;
}

/**
 * The given rules in {@linkcode RULE_ORDER}, ready for `compose` (the caller appends its
 * handler). The HTTP chains are built once per route, when the server is.
 */
export function inRuleOrder<C>(steps: RuleSteps<C>): Rule<C>[] {
  const rules: Rule<C>[] = [];
  for (const step of RULE_ORDER) {
    const rule = steps[step];
    if (rule !== undefined) rules.push(rule);
  }
  return rules;
}
