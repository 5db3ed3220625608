/**
 * The request headers of the provider's own API, read the way its clients send them: the
 * credential (`Authorization: Bearer <key>` or `x-api-key: <key>`) and the version and betas,
 * which the vendor's SDK names after its brand (`<brand>-version`, `<brand>-beta`). The service
 * knows no brand: it reads any header named `<word>-version` or `<word>-beta` with `<word>` one
 * token of letters and digits (`provider-version`, or the SDK's own), in one rule,
 * {@linkcode VERSION_OR_BETA}.
 *
 * @module
 */
import { InterfaceError } from "../errors.ts";
import type { UpstreamOptions } from "../runs/call.ts";

/** The one rule for the provider API's version and beta headers: `<word>-version`, `<word>-beta`. */
export const VERSION_OR_BETA: RegExp = /^[a-z][a-z0-9]*-(version|beta)$/;

/** Most beta values passed on. */
export const MAX_BETAS = 16;

const TOKEN = /^[A-Za-z0-9._-]{1,64}$/;

function invalidHeader(header: string, message: string): InterfaceError {
  return new InterfaceError("invalidHeader", message, { extra: { header } });
}

/**
 * The credential of a request as an `Authorization` value: its `Authorization` header, or
 * `Bearer <x-api-key>`. Both given with different keys: 401 `authenticationFailed` (one
 * credential per request). Neither: null (the authenticator refuses it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { credentialOf } from "./_headers.ts";
 * assert.equal(credentialOf(new Headers({ "x-api-key": "art_1" })), "Bearer art_1");
 * assert.equal(credentialOf(new Headers({ authorization: "Bearer art_1" })), "Bearer art_1");
 * assert.throws(() =>
 *   credentialOf(new Headers({ authorization: "Bearer art_1", "x-api-key": "art_2" }))
 * );
 * ```
 */
export function credentialOf(headers: Headers): string | null {
  const authorization = headers.get("authorization");
  const key = headers.get("x-api-key");
  if (key === null) return authorization;
  if (key.includes(",")) {
    throw new InterfaceError("duplicateHeader", "Header x-api-key was sent more than once", {
      extra: { header: "x-api-key" },
    });
  }
  const fromKey = `Bearer ${key.trim()}`;
  if (authorization === null) return fromKey;
  const bearer = /^bearer +(.*)$/i.exec(authorization.trim())?.[1]?.trim();
  if (bearer !== key.trim()) {
    throw new InterfaceError(
      "authenticationFailed",
      "Send one credential: Authorization and x-api-key hold different keys",
      { headers: { "www-authenticate": "Bearer" } },
    );
  }
  return authorization;
}

/**
 * The version and betas a request asks of the provider's API, to pass on: the values of every
 * {@linkcode VERSION_OR_BETA} header (betas comma-separated, repeats dropped, at most
 * {@linkcode MAX_BETAS}). Two versions that differ, or a value that is not a token: 400
 * `invalidHeader`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { upstreamOf } from "./_headers.ts";
 * const headers = new Headers({
 *   "acme-version": "2026-10-21",
 *   "acme-beta": "managed-agents-2026-04-01,files-1",
 *   "x-interface-version": "ignored",
 * });
 * assert.deepEqual(upstreamOf(headers), {
 *   providerVersion: "2026-10-21",
 *   betas: ["managed-agents-2026-04-01", "files-1"],
 * });
 * ```
 */
export function upstreamOf(headers: Headers): UpstreamOptions {
  let version: string | undefined;
  const betas = new Set<string>();
  for (const [name, value] of headers) {
    const match = VERSION_OR_BETA.exec(name);
    if (match === null) continue;
    if (match[1] === "version") {
      const text = value.trim();
      if (!TOKEN.test(text)) throw invalidHeader(name, `Header ${name} must be a version token`);
      if (version !== undefined && version !== text) {
        throw invalidHeader(name, "The request names two different API versions");
      }
      version = text;
    } else {
      for (const item of value.split(",")) {
        const beta = item.trim();
        if (beta === "") continue;
        if (!TOKEN.test(beta)) throw invalidHeader(name, `Header ${name} holds an invalid beta`);
        betas.add(beta);
      }
    }
  }
  if (betas.size > MAX_BETAS) {
    throw invalidHeader("beta", `At most ${MAX_BETAS} beta values are passed on`);
  }
  return {
    ...(version !== undefined ? { providerVersion: version } : {}),
    ...(betas.size > 0 ? { betas: [...betas] } : {}),
  };
}
