/**
 * CI with no stored secret, from the client side: {@linkcode exchangeToken} trades a CI job's
 * OIDC ID token for a short-lived principal under a trust policy (`POST /v1/token-exchange`,
 * no bearer needed), and {@linkcode requestGitHubActionsIdToken} fetches a GitHub Actions job's
 * ID token for an audience. Web standards only: Deno, Node 20+ and browsers.
 *
 * The ID token is only ever sent in a request body (never a URL) and appears in no error.
 *
 * @module
 */
import {
  type IssuedPrincipal,
  type SubjectTokenType,
  TOKEN_EXCHANGE_GRANT_TYPE,
  type TokenExchangeBody,
  TRUST_POLICY_NAME,
} from "../wire/mod.ts";
import { RuntimeServiceError } from "./errors.ts";
import { environmentValue, idempotencyKeyOf, invalidAnswer, isObject } from "./_request.ts";
import { checkBaseUrl, checkDeadline, checkMaxRetries, Transport } from "./_transport.ts";
import type { MutatingCallOptions } from "./types.ts";

/** The variable GitHub Actions sets to the URL that hands out the job's ID tokens. */
export const GITHUB_ID_TOKEN_URL_VARIABLE = "ACTIONS_ID_TOKEN_REQUEST_URL";
/** The variable GitHub Actions sets to the bearer of that URL (`id-token: write`). */
export const GITHUB_ID_TOKEN_TOKEN_VARIABLE = "ACTIONS_ID_TOKEN_REQUEST_TOKEN";

/** The longest ID token read, in characters (the service refuses longer ones). */
const MAX_ID_TOKEN_LENGTH = 16_384;

/** Options of {@linkcode exchangeToken}. */
export interface ExchangeTokenOptions extends MutatingCallOptions {
  /** The OIDC ID token (a compact JWT). Never put it in a URL or an argument. */
  idToken: string;
  /** The trust policy to exchange it under. */
  policy: string;
  /** Base URL of the service (default: `AUTOMATION_RUNTIME_URL`, when the runtime has one). */
  baseUrl?: string | URL;
  /** The `subject_token_type` (default: `urn:ietf:params:oauth:token-type:jwt`). */
  subjectTokenType?: SubjectTokenType;
  /** The fetch to use (default: the global `fetch`). */
  fetch?: typeof fetch;
  /** Retries after the first attempt (default 2, 0 to 10): the call carries an idempotency key. */
  maxRetries?: number;
}

/**
 * Exchanges a CI job's OIDC ID token for a principal (`POST /v1/token-exchange`). The answer is
 * the principal as issuance answers it, with its one-time bearer: hand it to the job (as
 * `AUTOMATION_RUNTIME_TOKEN`) and nowhere else. The call sends an idempotency key (yours, or one
 * kept across its retries), so a lost answer is replayed, never issued twice. A refused token
 * rejects with a `RuntimeServiceError` of code `authenticationFailed` and its reason in
 * `details.reason` (`expired`, `replayed`, `unknownPolicy`, …); claims the policy does not match
 * with `policyMismatch` and `details.claim`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { exchangeToken } from "./token_exchange.ts";
 * // A stand-in for the service, so that the example runs anywhere; leave `fetch` out for real.
 * const service: typeof fetch = async (input, init) => {
 *   const request = new Request(input, init);
 *   assert.equal(request.headers.get("authorization"), null);
 *   const body = await request.json();
 *   assert.equal(body.grant_type, "urn:ietf:params:oauth:grant-type:token-exchange");
 *   return Response.json({
 *     principalId: "0b7a2f6e-2c56-4d1c-9a41-6a4b8b9fb0c1",
 *     capabilities: ["session:read", "session:write"],
 *     expiresAt: "2026-07-23T12:15:00.000Z",
 *     maxActiveRuns: 2,
 *     bearer: "art_" + "n".repeat(43),
 *   }, { status: 201 });
 * };
 * const principal = await exchangeToken({
 *   baseUrl: "https://runtime.example",
 *   idToken: "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", // from your CI system, never hard-coded
 *   policy: "octo-repo-main",
 *   fetch: service,
 * });
 * assert.ok(principal.bearer.startsWith("art_"));
 * ```
 */
export async function exchangeToken(options: ExchangeTokenOptions): Promise<IssuedPrincipal> {
  if (options === null || typeof options !== "object") {
    throw new TypeError("exchangeToken needs an options object");
  }
  const { idToken, policy } = options;
  if (
    typeof idToken !== "string" || idToken.length === 0 || idToken.length > MAX_ID_TOKEN_LENGTH ||
    !/^[A-Za-z0-9_.=-]+$/.test(idToken)
  ) {
    throw new TypeError("idToken must be a compact JWT (base64url segments joined by dots)");
  }
  if (typeof policy !== "string" || !TRUST_POLICY_NAME.test(policy)) {
    throw new TypeError(
      "policy must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
    );
  }
  const baseUrl = options.baseUrl ?? environmentValue("AUTOMATION_RUNTIME_URL");
  if (baseUrl === undefined) {
    throw new TypeError("exchangeToken needs a baseUrl (or AUTOMATION_RUNTIME_URL)");
  }
  const transport = new Transport({
    baseUrl: checkBaseUrl(baseUrl),
    token: null,
    fetch: options.fetch ?? ((input, init) => fetch(input, init)),
    deadlineMs: checkDeadline(options.deadlineMs ?? 60_000),
    maxRetries: checkMaxRetries(options.maxRetries ?? 2),
  });
  const body: TokenExchangeBody = {
    grant_type: TOKEN_EXCHANGE_GRANT_TYPE,
    subject_token: idToken,
    subject_token_type: options.subjectTokenType ?? "urn:ietf:params:oauth:token-type:jwt",
    policy,
  };
  const answer = await transport.request({
    method: "POST",
    path: "/v1/token-exchange",
    body,
    authenticated: false,
    idempotencyKey: idempotencyKeyOf(options),
    options,
  });
  const issued = answer.body;
  if (!isObject(issued) || typeof issued.bearer !== "string" || issued.bearer === "") {
    throw invalidAnswer(answer, "The token exchange answer has no bearer");
  }
  return issued as unknown as IssuedPrincipal;
}

/** Options of {@linkcode requestGitHubActionsIdToken}. */
export interface GitHubActionsIdTokenOptions {
  /** The audience to ask for: the trust policy's `audience`. */
  audience: string;
  /** The request URL (default: `ACTIONS_ID_TOKEN_REQUEST_URL`). */
  requestUrl?: string;
  /** Its bearer (default: `ACTIONS_ID_TOKEN_REQUEST_TOKEN`). Never logged or echoed. */
  requestToken?: string;
  /** The fetch to use (default: the global `fetch`). */
  fetch?: typeof fetch;
  /** Aborts the request. */
  signal?: AbortSignal;
  /** Most ms to wait for the token (default 30000). */
  timeoutMs?: number;
}

function ciError(message: string, status = 0, cause?: unknown): RuntimeServiceError {
  return new RuntimeServiceError({
    status,
    code: "idTokenUnavailable",
    layer: "client",
    message,
    correlationId: "",
    cause,
  });
}

/**
 * Fetches the running GitHub Actions job's OIDC ID token for `audience`: a `GET` of
 * `ACTIONS_ID_TOKEN_REQUEST_URL` with `audience` added to its query and
 * `ACTIONS_ID_TOKEN_REQUEST_TOKEN` as its bearer (the job needs `permissions: id-token: write`).
 * Rejects with a `RuntimeServiceError` of code `idTokenUnavailable` (layer `client`) when the
 * variables are missing or the request fails; the message never holds either variable's value.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { requestGitHubActionsIdToken } from "./token_exchange.ts";
 * const token = await requestGitHubActionsIdToken({
 *   audience: "automation-runtime",
 *   requestUrl: "https://pipelines.actions.example/token?api-version=2.0",
 *   requestToken: "request-bearer",
 *   // A stand-in for GitHub's endpoint; leave `fetch` (and the two above) out in a job.
 *   fetch: (input, init) => {
 *     const url = new URL(String(input));
 *     assert.equal(url.searchParams.get("audience"), "automation-runtime");
 *     assert.equal(new Headers(init?.headers).get("authorization"), "Bearer request-bearer");
 *     return Promise.resolve(Response.json({ value: "eyJ.eyJ.sig" }));
 *   },
 * });
 * assert.equal(token, "eyJ.eyJ.sig");
 * ```
 */
export async function requestGitHubActionsIdToken(
  options: GitHubActionsIdTokenOptions,
): Promise<string> {
  const { audience } = options;
  if (typeof audience !== "string" || !/^[\x21-\x7e]{1,256}$/.test(audience)) {
    throw new TypeError("audience must be 1 to 256 printable characters without spaces");
  }
  const requestUrl = options.requestUrl ?? environmentValue(GITHUB_ID_TOKEN_URL_VARIABLE);
  const requestToken = options.requestToken ?? environmentValue(GITHUB_ID_TOKEN_TOKEN_VARIABLE);
  if (requestUrl === undefined || requestToken === undefined) {
    throw ciError(
      `No GitHub Actions ID token: ${GITHUB_ID_TOKEN_URL_VARIABLE} and ` +
        `${GITHUB_ID_TOKEN_TOKEN_VARIABLE} are unset (give the job "permissions: id-token: write")`,
    );
  }
  // `new URL`, not `URL.parse`: Node 20 has no `URL.parse`.
  let url: URL | null;
  try {
    url = new URL(requestUrl);
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== "https:" && url.protocol !== "http:")) {
    throw ciError(`${GITHUB_ID_TOKEN_URL_VARIABLE} is not an http(s) URL`);
  }
  url.searchParams.set("audience", audience);
  const controller = new AbortController();
  const onAbort = () => controller.abort(options.signal?.reason);
  options.signal?.throwIfAborted();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 30_000);
  try {
    let response: Response;
    try {
      response = await (options.fetch ?? fetch)(url, {
        headers: { authorization: `Bearer ${requestToken}`, accept: "application/json" },
        signal: controller.signal,
        redirect: "manual",
      });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      throw ciError("The GitHub Actions ID token request failed", 0, error);
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      throw ciError(
        `The GitHub Actions ID token request answered HTTP ${response.status}`,
        response.status,
      );
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch {
      throw ciError("The GitHub Actions ID token answer is not JSON", response.status);
    }
    const value = isObject(body) ? body.value : undefined;
    if (typeof value !== "string" || value === "" || value.length > MAX_ID_TOKEN_LENGTH) {
      throw ciError("The GitHub Actions ID token answer has no token", response.status);
    }
    return value;
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
  }
}
