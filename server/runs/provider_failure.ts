/**
 * Provider failures: what a failed call to the provider means for the service, in one place.
 *
 * A failure is first turned into a {@linkcode ProviderFailure}, a typed value saying what failed
 * (the provider refused, is busy, is unreachable, timed out, or the caller's deadline passed)
 * with the provider's status and error type and the provider's text scrubbed of the provider
 * credential and the webhook signing secrets (a provider may echo what it was sent). Making that
 * value counts it for the metrics, once.
 *
 * How an interface renders a failure is a separate step: {@linkcode interfaceErrorOf} renders it
 * as the service's own error (`providerError` 502, `providerUnavailable` 503 with `Retry-After`),
 * keeping the failure as the error's `cause`, so another interface can read it back with
 * {@linkcode providerFailureOf} and answer in its own wire shape instead.
 *
 * @module
 */
// The error classes only: the client itself is loaded on first use (see `provider.ts`).
import {
  ProviderAbortError,
  ProviderApiError,
  ProviderConnectionError,
  ProviderTimeoutError,
} from "../../client/errors.ts";
import { InterfaceError } from "../errors.ts";
import type { ProviderSettings } from "./provider.ts";

/** Longest provider message passed on, in characters. */
export const MAX_PROVIDER_MESSAGE = 500;

/**
 * What failed: `refused` (the provider answered with an error), `busy` (it answered 429, 503 or
 * 529), `unreachable` (no connection), `timeout` (the client's own timeout fired), `deadline`
 * (the caller's deadline passed first).
 */
export type ProviderFailureKind = "refused" | "busy" | "unreachable" | "timeout" | "deadline";

/** Fields of a {@linkcode ProviderFailure}. */
export interface ProviderFailureInit {
  /** What failed. */
  kind: ProviderFailureKind;
  /** What to say about it: the provider's own text, already scrubbed, or a fixed description. */
  message: string;
  /** The provider's HTTP status, when it answered. */
  providerStatus?: number;
  /** The provider's error type (`rate_limit_error`...), when it answered. */
  providerErrorType?: string;
  /** The provider's request id, when it answered. */
  providerRequestId?: string;
}

/**
 * A failed provider call as the service sees it: typed, and holding no secret (its message was
 * scrubbed before it was made; the client error it came from is not kept).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderFailure } from "./provider_failure.ts";
 * const failure = new ProviderFailure({
 *   kind: "busy",
 *   message: "Overloaded",
 *   providerStatus: 529,
 *   providerErrorType: "overloaded_error",
 * });
 * assert.equal(failure.retryable, true);
 * assert.equal(failure.metricType, "overloaded_error");
 * ```
 */
export class ProviderFailure extends Error {
  /** What failed. */
  readonly kind: ProviderFailureKind;
  /** The provider's HTTP status, when it answered. */
  readonly providerStatus: number | undefined;
  /** The provider's error type, when it answered. */
  readonly providerErrorType: string | undefined;
  /** The provider's request id, when it answered. */
  readonly providerRequestId: string | undefined;

  /** Creates the failure; `message` must already be scrubbed. */
  constructor(init: ProviderFailureInit) {
    super(init.message);
    this.name = "ProviderFailure";
    this.kind = init.kind;
    this.providerStatus = init.providerStatus;
    this.providerErrorType = init.providerErrorType;
    this.providerRequestId = init.providerRequestId;
  }

  /** Whether trying again later could succeed (everything but a refusal). */
  get retryable(): boolean {
    return this.kind !== "refused";
  }

  /**
   * The failure's label in the metrics: the provider's error type when it answered (`api_error`
   * without one), else `connection`, `timeout` or `aborted`.
   */
  get metricType(): string {
    switch (this.kind) {
      case "unreachable":
        return "connection";
      case "timeout":
        return "timeout";
      case "deadline":
        return "aborted";
      default:
        return this.providerErrorType ?? "api_error";
    }
  }
}

/** Options of {@linkcode ProviderFailures}. */
export interface ProviderFailuresOptions {
  /** The provider settings: their credential and webhook secrets are scrubbed from messages. */
  settings: ProviderSettings;
  /** Told of every failure made, by its {@linkcode ProviderFailure.metricType} (the metrics). */
  onFailure?: (type: string) => void;
}

/**
 * Turns provider client errors into {@linkcode ProviderFailure}s (scrubbed and counted) and into
 * the service's answers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderApiError } from "../../client/errors.ts";
 * import { ProviderFailures } from "./provider_failure.ts";
 * const seen: string[] = [];
 * const failures = new ProviderFailures({
 *   settings: { apiKey: "sk-secret" },
 *   onFailure: (type) => seen.push(type),
 * });
 * const refusal = failures.refusal(new ProviderApiError({
 *   status: 400, type: "invalid_request_error", message: "bad key sk-secret", retryable: false,
 * }));
 * assert.equal(refusal.code, "providerError");
 * assert.equal(refusal.status, 502);
 * assert.ok(!refusal.message.includes("sk-secret"));
 * assert.deepEqual(seen, ["invalid_request_error"]);
 * ```
 */
export class ProviderFailures {
  readonly #secrets: readonly string[];
  readonly #onFailure: ((type: string) => void) | undefined;

  /** Creates the mapping for one set of provider settings. */
  constructor(options: ProviderFailuresOptions) {
    const settings = options.settings;
    this.#secrets = [settings.apiKey, settings.authToken, ...(settings.webhookSecrets ?? [])]
      .filter((value): value is string => value !== undefined && value !== "");
    this.#onFailure = options.onFailure;
  }

  /**
   * Strips the provider credential and the webhook secrets from provider text and cuts it to
   * {@linkcode MAX_PROVIDER_MESSAGE} characters.
   */
  scrub(text: string): string {
    let scrubbed = text.slice(0, MAX_PROVIDER_MESSAGE * 4);
    for (const secret of this.#secrets) scrubbed = scrubbed.replaceAll(secret, "[redacted]");
    return scrubbed.slice(0, MAX_PROVIDER_MESSAGE);
  }

  /**
   * The failure a provider client error stands for (counted once here), or null for anything
   * that is not a provider client error.
   */
  failureOf(error: unknown): ProviderFailure | null {
    const failure = this.#classify(error);
    if (failure !== null) this.#onFailure?.(failure.metricType);
    return failure;
  }

  #classify(error: unknown): ProviderFailure | null {
    if (error instanceof ProviderApiError) {
      const status = error.status;
      return new ProviderFailure({
        kind: status === 429 || status === 503 || status === 529 ? "busy" : "refused",
        message: this.scrub(error.message),
        ...(status !== undefined ? { providerStatus: status } : {}),
        providerErrorType: error.type,
        ...(error.requestId !== undefined ? { providerRequestId: error.requestId } : {}),
      });
    }
    if (error instanceof ProviderAbortError) {
      return new ProviderFailure({
        kind: "deadline",
        message: "The provider did not answer before the request's deadline",
      });
    }
    if (error instanceof ProviderTimeoutError) {
      return new ProviderFailure({
        kind: "timeout",
        message: "The provider did not answer in time",
      });
    }
    if (error instanceof ProviderConnectionError) {
      return new ProviderFailure({ kind: "unreachable", message: "The provider is unreachable" });
    }
    return null;
  }

  /**
   * The service's answer to a failed provider call: its {@linkcode interfaceErrorOf} rendering.
   * An {@linkcode InterfaceError} is answered as it is; anything else (a store failure, a bug)
   * is thrown again, for the server's one error handler.
   */
  refusal(error: unknown): InterfaceError {
    const failure = this.failureOf(error);
    if (failure !== null) return interfaceErrorOf(failure);
    if (error instanceof InterfaceError) return error;
    throw error;
  }
}

/**
 * Renders a failure as the service's error: 502 `providerError` for a refusal (with
 * `providerStatus` and `providerErrorType`), 503 `providerUnavailable` with `Retry-After: 1`
 * otherwise. The failure is the error's `cause`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { interfaceErrorOf, ProviderFailure, providerFailureOf } from "./provider_failure.ts";
 * const failure = new ProviderFailure({ kind: "unreachable", message: "No connection" });
 * const error = interfaceErrorOf(failure);
 * assert.equal(error.status, 503);
 * assert.equal(error.headers?.["retry-after"], "1");
 * assert.equal(providerFailureOf(error), failure);
 * ```
 */
export function interfaceErrorOf(failure: ProviderFailure): InterfaceError {
  if (failure.kind !== "refused" && failure.kind !== "busy") {
    return new InterfaceError("providerUnavailable", failure.message, {
      headers: { "retry-after": "1" },
      cause: failure,
    });
  }
  const extra: Record<string, unknown> = { providerErrorType: failure.providerErrorType };
  if (failure.providerStatus !== undefined) extra.providerStatus = failure.providerStatus;
  if (failure.kind === "refused") {
    return new InterfaceError(
      "providerError",
      `The provider refused the request: ${failure.message}`,
      { extra, cause: failure },
    );
  }
  return new InterfaceError(
    "providerUnavailable",
    `The provider is busy; try again later: ${failure.message}`,
    { extra, headers: { "retry-after": "1" }, cause: failure },
  );
}

/**
 * The provider failure behind a thrown error: the failure itself, or the one an
 * {@linkcode interfaceErrorOf} rendering carries; else null.
 */
export function providerFailureOf(error: unknown): ProviderFailure | null {
  if (error instanceof ProviderFailure) return error;
  if (error instanceof InterfaceError && error.cause instanceof ProviderFailure) {
    return error.cause;
  }
  return null;
}

/**
 * Whether a provider call failed because the session no longer exists at the provider (404):
 * its run then ends as `failed`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderApiError } from "../../client/errors.ts";
 * import { isSessionGone } from "./provider_failure.ts";
 * const gone = new ProviderApiError({
 *   status: 404, type: "not_found_error", message: "no session", retryable: false,
 * });
 * assert.equal(isSessionGone(gone), true);
 * assert.equal(isSessionGone(new Error("reset")), false);
 * ```
 */
export function isSessionGone(error: unknown): boolean {
  return error instanceof ProviderApiError && error.status === 404;
}
