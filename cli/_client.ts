/**
 * What the client commands (`principal`, `run`, `audit`, `token`) share: the SDK client built
 * from the environment, the service URL, the bearer's resolution, the `--idempotency-key` check
 * and the one-line description of a service error.
 *
 * The bearer comes only from `AUTOMATION_RUNTIME_TOKEN` or, when that is unset, from the secret
 * file (`RUNTIME_BOOTSTRAP_ENV`, else the default path); never from an argument. The URL comes
 * from `AUTOMATION_RUNTIME_URL` (default `http://127.0.0.1:7777`).
 *
 * @module
 */
import { RuntimeServiceClient, type RuntimeServiceError } from "../sdk/mod.ts";
import { defaultSecretFilePath, readSecretFile } from "../server/bootstrap/secret_file.ts";
import { BOOTSTRAP_VARIABLES, checkBearerSyntax } from "../server/bootstrap/variables.ts";
import { UsageError } from "./_args.ts";
import {
  DEFAULT_URL,
  PROGRAM,
  SECRET_FILE_VARIABLE,
  TOKEN_VARIABLE,
  URL_VARIABLE,
} from "./command_table.ts";

export { DEFAULT_URL, TOKEN_VARIABLE, URL_VARIABLE } from "./command_table.ts";

const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,128}$/;

/**
 * Checks a `--idempotency-key` value: 1 to 128 printable ASCII characters, or a
 * {@linkcode UsageError} naming `command`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { idempotencyKeyFlag } from "./_client.ts";
 * assert.equal(idempotencyKeyFlag("run", "retry-7"), "retry-7");
 * assert.equal(idempotencyKeyFlag("run", undefined), undefined);
 * assert.throws(() => idempotencyKeyFlag("run", "tab\there"));
 * ```
 */
export function idempotencyKeyFlag(command: string, value: string | undefined): string | undefined {
  if (value !== undefined && !IDEMPOTENCY_KEY.test(value)) {
    throw new UsageError(command, "--idempotency-key must be 1 to 128 printable ASCII characters");
  }
  return value;
}

/**
 * The SDK client for the URL in `AUTOMATION_RUNTIME_URL` and the caller's bearer.
 *
 * @example
 * ```ts ignore
 * import { clientFromEnvironment } from "./_client.ts";
 * const client = await clientFromEnvironment();
 * ```
 */
export async function clientFromEnvironment(): Promise<RuntimeServiceClient> {
  return new RuntimeServiceClient({ baseUrl: serviceUrl(), token: await resolveToken() });
}

/**
 * The service URL: `AUTOMATION_RUNTIME_URL`, else {@linkcode DEFAULT_URL}; an `http(s)` URL
 * without credentials, query or fragment, else an error naming the variable.
 *
 * @example
 * ```ts ignore
 * import { serviceUrl } from "./_client.ts";
 * const url = serviceUrl();
 * ```
 */
export function serviceUrl(): URL {
  const baseUrl = Deno.env.get(URL_VARIABLE) || DEFAULT_URL;
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new Error(`${URL_VARIABLE} is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`${URL_VARIABLE} must be an http or https URL`);
  }
  if (url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "") {
    throw new Error(`${URL_VARIABLE} must not carry credentials, a query or a fragment`);
  }
  return url;
}

async function resolveToken(): Promise<string> {
  const fromEnv = Deno.env.get(TOKEN_VARIABLE);
  if (fromEnv !== undefined) {
    if (!/^[\x21-\x7e]+$/.test(fromEnv)) {
      throw new Error(`${TOKEN_VARIABLE} is empty or holds characters a bearer cannot contain`);
    }
    return fromEnv;
  }
  const named = Deno.env.get(SECRET_FILE_VARIABLE);
  const path = named !== undefined && named.trim() !== "" ? named : defaultSecretFilePath();
  const values = await readSecretFile(path);
  if (values === null) {
    throw new Error(
      `No bearer: set ${TOKEN_VARIABLE} or run \`${PROGRAM} init\` (no secret file at ${path})`,
    );
  }
  const token = values[BOOTSTRAP_VARIABLES.token];
  const problem = checkBearerSyntax(token);
  if (problem !== null) throw new Error(`${BOOTSTRAP_VARIABLES.token} in ${path} ${problem}`);
  return token;
}

/**
 * One line describing a service error: its message, then the HTTP status, the code, the
 * provider's status and error type (on `providerError`), a refused token exchange's reason and
 * claim, when to retry, and the correlation id.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RuntimeServiceError } from "../sdk/mod.ts";
 * import { describeServiceError } from "./_client.ts";
 * const error = new RuntimeServiceError({
 *   status: 429,
 *   code: "runQuotaExceeded",
 *   layer: "authority",
 *   message: "Too many active runs",
 *   correlationId: "c-1",
 *   retryAfterMs: 30_000,
 * });
 * assert.equal(
 *   describeServiceError(error).message,
 *   "Too many active runs (HTTP 429, runQuotaExceeded, retry after 30 s, correlation id c-1)",
 * );
 * ```
 */
export function describeServiceError(error: RuntimeServiceError): Error {
  const parts: string[] = [];
  if (error.status !== 0) parts.push(`HTTP ${error.status}`);
  parts.push(error.code);
  if (error.providerStatus !== undefined || error.providerErrorType !== undefined) {
    const status = error.providerStatus === undefined ? "" : ` HTTP ${error.providerStatus}`;
    const type = error.providerErrorType === undefined ? "" : ` ${error.providerErrorType}`;
    parts.push(`provider${status}${type}`);
  }
  const refusal = error.details.details;
  if (refusal !== null && typeof refusal === "object" && !Array.isArray(refusal)) {
    // A refused token exchange: the reason code, and the claim named (never a value).
    const { reason, claim } = refusal as Record<string, unknown>;
    if (typeof reason === "string") parts.push(`reason ${reason}`);
    if (typeof claim === "string") parts.push(`claim ${claim}`);
  }
  const answeredBy = error.details.answeredBy;
  if (typeof answeredBy === "string") {
    const result = error.details.result;
    parts.push(`answered by ${answeredBy}${typeof result === "string" ? `: ${result}` : ""}`);
  }
  if (error.retryAfterMs !== undefined) {
    parts.push(`retry after ${Math.ceil(error.retryAfterMs / 1000)} s`);
  }
  parts.push(`correlation id ${error.correlationId}`);
  return new Error(`${error.message} (${parts.join(", ")})`);
}
