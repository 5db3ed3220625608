/**
 * Rule 2: a security-sensitive header sent twice (the runtime sees the values joined as
 * `a, b`), or a bearer also offered outside `Authorization` (query `access_token`, a cookie),
 * answers 400 `duplicateHeader`.
 *
 * @module
 */
import { checkRule, type Rule } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";

/** Cookie names that carry a bearer by convention. */
const BEARER_COOKIES = new Set([
  "access_token",
  "accesstoken",
  "auth_token",
  "authorization",
  "bearer",
  "token",
]);

function duplicate(header: string): InterfaceError {
  return new InterfaceError("duplicateHeader", `Header ${header} was sent more than once`, {
    extra: { header },
  });
}

function offeredElsewhere(where: string, header: string): InterfaceError {
  return new InterfaceError(
    "duplicateHeader",
    `A bearer credential was offered in the ${where}; send it only in the Authorization header`,
    { extra: { header } },
  );
}

function cookieCarriesBearer(cookie: string, authorization: string | null): boolean {
  const bearer = authorization === null ? null : authorization.replace(/^bearer +/i, "").trim();
  for (const pair of cookie.split(";")) {
    const equals = pair.indexOf("=");
    const name = (equals === -1 ? pair : pair.slice(0, equals)).trim().toLowerCase();
    const value = equals === -1 ? "" : pair.slice(equals + 1).trim();
    if (BEARER_COOKIES.has(name)) return true;
    if (/^bearer /i.test(value) || value.startsWith("art_")) return true;
    if (bearer !== null && bearer !== "" && value === bearer) return true;
  }
  return false;
}

/**
 * Finds the first duplicated security-sensitive header of a request, or a bearer offered in
 * the query or a cookie, and returns the error to answer, else null.
 *
 * `authorization`, `x-interface-version`, `x-correlation-id` and `x-deadline` never hold a
 * comma, so any comma means two fields. An `idempotency-key` may hold a comma, so only the
 * `, ` that joins two fields counts for it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RequestContext } from "../context.ts";
 * import { findDuplicate } from "./duplicates.ts";
 * const request = new Request("http://localhost/v1/runtime", {
 *   headers: [["x-deadline", "a"], ["x-deadline", "b"]],
 * });
 * assert.equal(findDuplicate(new RequestContext(request, Date.now()))?.code, "duplicateHeader");
 * ```
 */
export function findDuplicate(context: RequestContext): InterfaceError | null {
  if (context.authorization?.includes(",")) return duplicate("authorization");
  if (context.interfaceVersion?.includes(",")) return duplicate("x-interface-version");
  if (context.correlationHeader?.includes(",")) return duplicate("x-correlation-id");
  if (context.deadlineHeader?.includes(",")) return duplicate("x-deadline");
  if (context.idempotencyKey?.includes(", ")) return duplicate("idempotency-key");
  if (context.query.includes("access_token")) {
    if (new URLSearchParams(context.query).has("access_token")) {
      return offeredElsewhere("query string", "authorization");
    }
  }
  if (context.cookie !== null && cookieCarriesBearer(context.cookie, context.authorization)) {
    return offeredElsewhere("cookie header", "cookie");
  }
  return null;
}

/** The duplicate-header rule. */
export function duplicatesRule(): Rule<RequestContext> {
  return checkRule(function duplicates(context: RequestContext): void {
    const error = findDuplicate(context);
    if (error !== null) throw error;
  });
}
