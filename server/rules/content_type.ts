/**
 * Rule 10: a JSON endpoint needs `content-type: application/json` (parameters such as
 * `charset` allowed), else 415 `unsupportedMediaType`.
 *
 * @module
 */
import type { Next, Rule } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";

/**
 * Whether a `content-type` value names JSON.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isJsonContentType } from "./content_type.ts";
 * assert.equal(isJsonContentType("application/json; charset=utf-8"), true);
 * assert.equal(isJsonContentType("text/plain"), false);
 * ```
 */
export function isJsonContentType(value: string | null): boolean {
  if (value === null) return false;
  const semicolon = value.indexOf(";");
  const media = (semicolon === -1 ? value : value.slice(0, semicolon)).trim().toLowerCase();
  return media === "application/json";
}

/** The content-type rule. */
export function contentTypeRule(): Rule<RequestContext> {
  return function contentType(context: RequestContext, next: Next) {
    if (isJsonContentType(context.request.headers.get("content-type"))) return next();
    throw new InterfaceError("unsupportedMediaType", "Content-Type must be application/json", {
      extra: { header: "content-type" },
    });
  };
}
