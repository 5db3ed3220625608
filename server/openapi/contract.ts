/**
 * The contract of each route, derived from its definition in the route table and its
 * declaration: every status it can answer, the body schema of each, and the error codes by
 * status. The OpenAPI document is written from it, and {@linkcode checkAnswer} checks a received
 * answer against it (the black-box tests do, for every answer they get).
 *
 * Error codes come from three places: every route can answer 503 `shuttingDown` and 500
 * `internal`; a `shared` route adds the codes of the shared rules it runs (headers, bearer,
 * deadline, quota; capability, body and idempotency rules when its definition calls for them);
 * the declaration adds the codes its handler answers.
 *
 * @module
 */
import type { z } from "zod";
import { ERROR_CODES, type ErrorCode } from "../errors.ts";
import type { RouteDefinition } from "../router.ts";
import {
  type AnswerDeclaration,
  ROUTE_DECLARATIONS,
  type RouteDeclaration,
} from "./declarations.ts";
import { errorSchema, jsonRpcSchema, nativeErrorSchema } from "./schemas.ts";

/** One route's contract. */
export interface RouteContract {
  /** HTTP method. */
  readonly method: string;
  /** Path pattern, such as `/v1/runs/:runId`. */
  readonly pattern: string;
  /** The route's definition. */
  readonly route: RouteDefinition;
  /** Its declaration. */
  readonly declaration: RouteDeclaration;
  /** Successful answers by status. */
  readonly answers: ReadonlyMap<number, AnswerDeclaration>;
  /** Error codes by status, sorted. */
  readonly errors: ReadonlyMap<number, readonly ErrorCode[]>;
  /** Statuses at which the MCP transport answers a JSON-RPC error object instead. */
  readonly jsonRpcErrors: readonly number[];
  /**
   * Whether the route is of the provider's own API: any 2xx is the provider's answer, and every
   * error status (its own refusals and the provider's, passed on) has the provider's error shape.
   */
  readonly providerShape?: boolean;
}

const ALWAYS: readonly ErrorCode[] = ["shuttingDown", "internal"];
const SHARED: readonly ErrorCode[] = [
  "duplicateHeader",
  "authenticationFailed",
  "tokenExpired",
  "missingHeader",
  "invalidHeader",
  "unsupportedInterfaceVersion",
  "deadlineExceeded",
  "resourceExhausted",
  "storeUnavailable",
];
/** The codes of the authentication rule. */
const BEARER: readonly ErrorCode[] = ["authenticationFailed", "tokenExpired"];
const BODY: readonly ErrorCode[] = [
  "unsupportedMediaType",
  "payloadTooLarge",
  "invalidJson",
  "invalidRequest",
];
const IDEMPOTENT: readonly ErrorCode[] = ["idempotencyInFlight", "idempotencyConflict"];
/** The MCP endpoint's own checks that answer the runtime's error body. */
const MCP: readonly ErrorCode[] = [
  "originNotAllowed",
  "methodNotAllowed",
  "duplicateHeader",
  "authenticationFailed",
  "tokenExpired",
  "invalidHeader",
  "deadlineExceeded",
  "resourceExhausted",
  "payloadTooLarge",
  "storeUnavailable",
];

/** The error codes a route can answer, whatever their status. */
export function errorCodesOf(route: RouteDefinition, declaration: RouteDeclaration): ErrorCode[] {
  const codes = new Set<ErrorCode>(ALWAYS);
  if (route.kind === "shared") {
    for (const code of SHARED) {
      // A route without a bearer answers the authentication codes only as its handler declares.
      if (route.authentication === "none" && BEARER.includes(code)) continue;
      codes.add(code);
    }
    if (route.capability !== undefined) codes.add("missingCapability");
    if (route.body !== undefined) { for (const code of BODY) codes.add(code); }
    if (route.idempotent) { for (const code of IDEMPOTENT) codes.add(code); }
  } else if (route.kind === "custom") {
    for (const code of MCP) codes.add(code);
  } else if (route.kind === "provider") {
    return [];
  }
  for (const code of declaration.errors ?? []) codes.add(code);
  return [...codes];
}

/**
 * The contract of one route, or null when its declaration leaves it out of the document.
 * Throws when the route has no declaration.
 */
export function routeContract(route: RouteDefinition): RouteContract | null {
  const key = `${route.method} ${route.path}`;
  const declaration = ROUTE_DECLARATIONS[key];
  if (declaration === undefined) {
    throw new Error(`Route ${key} has no declaration in server/openapi/declarations.ts`);
  }
  if (declaration.omit !== undefined) return null;
  const errors = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(route, declaration).sort()) {
    const known = ERROR_CODES[code];
    if (known === undefined) throw new Error(`Route ${key} declares an unknown error code ${code}`);
    const status = known.status;
    const list = errors.get(status);
    if (list === undefined) errors.set(status, [code]);
    else list.push(code);
  }
  return {
    method: route.method,
    pattern: route.path,
    route,
    declaration,
    answers: new Map(
      Object.entries(declaration.answers).map(([status, answer]) => [
        Number(status),
        answer,
      ]),
    ),
    errors: new Map([...errors].sort(([a], [b]) => a - b)),
    jsonRpcErrors: route.kind === "custom" ? [400, 404, 406, 415] : [],
    ...(route.kind === "provider" ? { providerShape: true } : {}),
  };
}

/** An answer to check. */
export interface ReceivedAnswer {
  /** HTTP status. */
  readonly status: number;
  /** Response headers. */
  readonly headers: Headers;
  /** Body text. */
  readonly text: string;
}

function parsed(schema: z.ZodType, text: string): string | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return "the body is not JSON";
  }
  const result = schema.safeParse(value);
  if (result.success) return null;
  return result.error.issues.map((issue) => `${issue.path.join(".") || "(body)"}: ${issue.message}`)
    .join("; ");
}

/**
 * The ways an answer breaks its route's contract (empty when it keeps it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { healthRoutes } from "../routes/health.ts";
 * import { checkAnswer, routeContract } from "./contract.ts";
 * const contract = routeContract(healthRoutes()[0])!;
 * const headers = new Headers({
 *   "content-type": "application/json",
 *   "x-content-type-options": "nosniff",
 *   "cache-control": "no-store",
 * });
 * assert.deepEqual(checkAnswer(contract, { status: 200, headers, text: '{"ok":true}' }), []);
 * assert.equal(checkAnswer(contract, { status: 200, headers, text: '{"ok":1}' }).length, 1);
 * ```
 */
export function checkAnswer(contract: RouteContract, answer: ReceivedAnswer): string[] {
  const problems: string[] = [];
  const { status, headers, text } = answer;
  if (headers.get("x-content-type-options") !== "nosniff") {
    problems.push("x-content-type-options is not nosniff");
  }
  if (contract.providerShape === true) return [...problems, ...providerAnswer(answer)];
  const success = contract.answers.get(status);
  if (success !== undefined) {
    for (const name of success.headers ?? []) {
      if (!headers.has(name)) problems.push(`header ${name} is missing`);
    }
    if (success.schema === undefined || contract.method === "HEAD") {
      if (success.contentType === undefined && text !== "") {
        problems.push("a body was not expected");
      }
      return problems;
    }
    const type = headers.get("content-type") ?? "";
    if (success.contentType !== undefined && type.startsWith(success.contentType)) return problems;
    if (!type.startsWith("application/json")) {
      problems.push(`content-type ${type} is not application/json`);
      return problems;
    }
    const problem = parsed(success.schema, text);
    if (problem !== null) problems.push(`${status} body: ${problem}`);
    return problems;
  }
  const codes = contract.errors.get(status);
  if (codes === undefined && !contract.jsonRpcErrors.includes(status)) {
    problems.push(
      `status ${status} is not in the contract of ${contract.method} ${contract.pattern}`,
    );
    return problems;
  }
  if (contract.method === "HEAD") return problems;
  if (!(headers.get("content-type") ?? "").startsWith("application/json")) {
    problems.push("an error answer is not application/json");
    return problems;
  }
  const asError = codes === undefined ? "not an error status" : parsed(errorSchema(codes), text);
  if (asError === null) {
    problems.push(...errorHeaders(status, JSON.parse(text).error.code, headers));
    return problems;
  }
  if (contract.jsonRpcErrors.includes(status) && parsed(jsonRpcSchema, text) === null) {
    return problems;
  }
  problems.push(`${status} error body: ${asError}`);
  return problems;
}

/** The ways an answer of the provider's own API breaks its shape (see `providerShape`). */
function providerAnswer(answer: ReceivedAnswer): string[] {
  const { status, headers, text } = answer;
  const problems: string[] = [];
  if (!headers.has("request-id")) problems.push("header request-id is missing");
  if (status >= 200 && status < 300) return problems;
  if (status < 400 || status > 599) return [...problems, `status ${status} is not expected`];
  if (!(headers.get("content-type") ?? "").startsWith("application/json")) {
    return [...problems, "an error answer is not application/json"];
  }
  const problem = parsed(nativeErrorSchema, text);
  if (problem !== null) problems.push(`${status} error body: ${problem}`);
  return problems;
}

/** Codes whose answer says when to retry. */
export const RETRY_AFTER_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "idempotencyInFlight",
  "resourceExhausted",
  "runQuotaExceeded",
  "storeUnavailable",
  "shuttingDown",
  "providerUnavailable",
]);

/** The headers an error answer carries. */
function errorHeaders(status: number, code: ErrorCode, headers: Headers): string[] {
  const required = status === 401
    ? ["www-authenticate"]
    : status === 405
    ? ["allow"]
    : RETRY_AFTER_CODES.has(code)
    ? ["retry-after"]
    : [];
  return required.filter((name) => !headers.has(name)).map((name) => `header ${name} is missing`);
}
