/**
 * Provider failures: what a failed call to the provider means for the service, in one place.
 *
 * A failure is first turned into a {@linkcode ProviderFailure}, a typed value saying what failed
 * (the provider refused, is busy, is unreachable, timed out, or the caller's deadline passed)
 * with the provider's status and error type and the provider's text scrubbed of the provider
 * credential and the webhook signing secrets (a provider may echo what it was sent). Making that
 * value counts it for the metrics, once.
 *
 * Scrubbing ({@linkcode SecretScrubber}) removes every form of a secret that could reveal it, not
 * only the exact text: any run of {@linkcode MIN_REVEALING_RUN} or more of its characters (so a
 * prefix or suffix the provider quoted, "sk-ant-api03-AbCd…"), in any letter case, also when
 * percent-encoded; and its base64 and base64url forms, alone or inside an encoded
 * `user:secret` pair (any run of 11 characters, which carries 8 of its bytes), and its hex
 * form. The provider's error type and request id are scrubbed like its message.
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
 * The shortest run of a secret's characters that is scrubbed wherever it appears: 8 characters
 * of a provider key (about 48 random bits) identify it; shorter runs are too common to tell
 * from ordinary text. A secret shorter than this is scrubbed whole.
 */
export const MIN_REVEALING_RUN = 8;

/** Base64 characters that carry {@linkcode MIN_REVEALING_RUN} bytes: 11 × 6 ≥ 8 × 8 bits. */
const MIN_BASE64_RUN = 11;
/** Hex digits that carry {@linkcode MIN_REVEALING_RUN} bytes. */
const MIN_HEX_RUN = 16;

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Every substring of `text` of `length` characters (the whole text when it is shorter). */
function runsOf(text: string, length: number): string[] {
  if (text.length <= length) return [text];
  const runs: string[] = [];
  for (let i = 0; i + length <= text.length; i++) runs.push(text.slice(i, i + length));
  return runs;
}

/**
 * The base64 text `bytes` always encode to, wherever they start in the encoded data: for each of
 * the three alignments, the characters that depend on `bytes` alone (so the encoding of
 * `user:secret` holds one of them, whatever `user` is).
 */
function base64Cores(bytes: Uint8Array): string[] {
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const padded = new Uint8Array(offset + bytes.length);
    padded.set(bytes, offset);
    const encoded = toBase64(padded);
    cores.push(
      encoded.slice(Math.ceil(offset * 8 / 6), Math.floor((offset + bytes.length) * 8 / 6)),
    );
  }
  return cores;
}

/**
 * Removes every revealing form of some secrets from text (see the module doc): each maximal
 * stretch of the text that holds one is replaced by `[redacted]`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SecretScrubber } from "./provider_failure.ts";
 * const key = "sk-live-7fQ2xK9mPzR4vT1w";
 * const scrubber = new SecretScrubber([key]);
 * assert.equal(scrubber.scrub(`bad key ${key.toUpperCase()}`), "bad key [redacted]");
 * assert.equal(scrubber.scrub(`key ${key.slice(0, 12)}… is revoked`), "key [redacted]… is revoked");
 * // Only the characters that encode "user:" alone are left of a basic credential.
 * assert.equal(scrubber.scrub(btoa(`user:${key}`)), "dXNlcjp[redacted]c=");
 * assert.equal(scrubber.scrub("nothing to hide"), "nothing to hide");
 * ```
 */
export class SecretScrubber {
  /** Runs of the secrets' text, lower-cased. */
  readonly #plain = new Set<string>();
  /** Secrets shorter than a run, lower-cased. */
  readonly #whole: string[] = [];
  /** Runs of the secrets' base64 and base64url forms (case matters). */
  readonly #base64 = new Set<string>();
  /** Runs of the secrets' hex form, lower-cased. */
  readonly #hex = new Set<string>();

  /** A scrubber of `secrets` (empty ones are ignored). */
  constructor(secrets: readonly string[]) {
    const encoder = new TextEncoder();
    for (const secret of secrets) {
      if (secret === "") continue;
      const lower = secret.toLowerCase();
      if (lower.length < MIN_REVEALING_RUN) this.#whole.push(lower);
      else for (const run of runsOf(lower, MIN_REVEALING_RUN)) this.#plain.add(run);
      const bytes = encoder.encode(secret);
      for (const core of base64Cores(bytes)) {
        const url = core.replaceAll("+", "-").replaceAll("/", "_");
        for (const form of [core, url]) {
          for (const run of runsOf(form, MIN_BASE64_RUN)) this.#base64.add(run);
        }
      }
      const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
      for (const run of runsOf(hex, MIN_HEX_RUN)) this.#hex.add(run);
    }
  }

  /** `text` with every revealing form of the secrets replaced by `[redacted]`. */
  scrub(text: string): string {
    if (this.#plain.size === 0 && this.#whole.length === 0) return text;
    // The text as read after percent-decoding, each character with where it came from.
    let view = "";
    const from: number[] = [];
    const to: number[] = [];
    for (let i = 0; i < text.length; i++) {
      const escape = text[i] === "%" ? /^[0-9A-Fa-f]{2}$/.exec(text.slice(i + 1, i + 3)) : null;
      from.push(i);
      if (escape !== null) {
        view += String.fromCharCode(parseInt(escape[0], 16));
        to.push(i + 3);
        i += 2;
      } else {
        view += text[i];
        to.push(i + 1);
      }
    }
    const lower = view.toLowerCase();
    const hidden = new Uint8Array(text.length);
    const hide = (start: number, length: number) =>
      hidden.fill(1, from[start], to[start + length - 1]);
    const find = (runs: ReadonlySet<string>, length: number, within: string) => {
      for (let i = 0; i + length <= within.length; i++) {
        if (runs.has(within.slice(i, i + length))) hide(i, length);
      }
    };
    find(this.#plain, MIN_REVEALING_RUN, lower);
    find(this.#base64, MIN_BASE64_RUN, view);
    find(this.#hex, MIN_HEX_RUN, lower);
    for (const secret of this.#whole) {
      for (let at = lower.indexOf(secret); at !== -1; at = lower.indexOf(secret, at + 1)) {
        hide(at, secret.length);
      }
    }
    let scrubbed = "";
    for (let i = 0; i < text.length; i++) {
      if (hidden[i] === 0) scrubbed += text[i];
      else if (i === 0 || hidden[i - 1] === 0) scrubbed += "[redacted]";
    }
    return scrubbed;
  }
}

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
  readonly #scrubber: SecretScrubber;
  readonly #onFailure: ((type: string) => void) | undefined;

  /** Creates the mapping for one set of provider settings. */
  constructor(options: ProviderFailuresOptions) {
    const settings = options.settings;
    this.#scrubber = new SecretScrubber(
      [settings.apiKey, settings.authToken, ...(settings.webhookSecrets ?? [])]
        .filter((value): value is string => value !== undefined && value !== ""),
    );
    this.#onFailure = options.onFailure;
  }

  /**
   * Strips every revealing form of the provider credential and the webhook secrets from provider
   * text ({@linkcode SecretScrubber}) and cuts it to {@linkcode MAX_PROVIDER_MESSAGE} characters.
   */
  scrub(text: string): string {
    return this.#scrubber.scrub(text.slice(0, MAX_PROVIDER_MESSAGE * 4))
      .slice(0, MAX_PROVIDER_MESSAGE);
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
        providerErrorType: this.scrub(error.type),
        ...(error.requestId !== undefined
          ? { providerRequestId: this.scrub(error.requestId) }
          : {}),
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
