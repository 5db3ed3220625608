/**
 * The black-box tests' one hook on the OpenAPI contract: every answer a helper receives is
 * checked against the contract of the route it was sent to (status, the headers that matter,
 * body), and a mismatch fails the test that sent it.
 *
 * @module
 */
import { AssertionError } from "node:assert/strict";
import { checkAnswer, type RouteContract, routeContract } from "../../server/openapi/contract.ts";
import { defaultRouteTable } from "../../server/openapi/table.ts";
import { type RouteDefinition, Router } from "../../server/router.ts";

/** An answer as the helpers hold it. */
export interface CheckedAnswer {
  status: number;
  headers: Headers;
  text: string;
}

const NOT_ROUTED: RouteContract = {
  method: "*",
  pattern: "(no route)",
  route: { method: "*", path: "(no route)", kind: "public", handle: () => new Response() },
  declaration: { summary: "", tag: "", answers: {} },
  answers: new Map(),
  errors: new Map([[404, ["notFound"]], [405, ["methodNotAllowed"]], [503, ["shuttingDown"]]]),
  jsonRpcErrors: [],
};

/** An unknown path under `/provider`: the provider's error shape. */
const NOT_ROUTED_NATIVE: RouteContract = { ...NOT_ROUTED, providerShape: true };

const routers = new WeakMap<readonly RouteDefinition[], Router<RouteContract>>();
let defaultTable: Promise<readonly RouteDefinition[]> | null = null;

function routerOf(routes: readonly RouteDefinition[]): Router<RouteContract> {
  let router = routers.get(routes);
  if (router === undefined) {
    router = new Router<RouteContract>();
    for (const route of routes) {
      const contract = routeContract(route);
      if (contract !== null) router.add(route.method, route.path, contract);
    }
    routers.set(routes, router);
  }
  return router;
}

/**
 * Throws an `AssertionError` when the answer to `method path` breaks the route's contract.
 * `routes` is the server's route table (default: a server with default options).
 */
export async function assertKeepsContract(
  method: string,
  path: string,
  answer: CheckedAnswer,
  routes?: readonly RouteDefinition[],
): Promise<void> {
  const table = routes ?? await (defaultTable ??= defaultRouteTable());
  const pathname = new URL(path, "http://localhost").pathname;
  const match = routerOf(table).match(method, pathname);
  const contract = match !== null && "value" in match
    ? match.value
    : pathname === "/provider" || pathname.startsWith("/provider/")
    ? NOT_ROUTED_NATIVE
    : NOT_ROUTED;
  // A CORS preflight is answered before routing.
  if (method === "OPTIONS" && answer.status === 204) return;
  const problems = checkAnswer(contract, answer);
  if (problems.length > 0) {
    throw new AssertionError({
      message: `${method} ${pathname} answered ${answer.status} outside the OpenAPI contract: ` +
        `${problems.join("; ")}\n${answer.text.slice(0, 500)}`,
    });
  }
}
