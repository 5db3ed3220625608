/**
 * Provider failures (`server/runs/provider_failure.ts`) on their own: each client error becomes
 * one typed, scrubbed failure, counted once; the service's rendering of it; and the failure read
 * back from that rendering, for an interface that answers in another shape.
 */
import assert from "node:assert/strict";
import {
  ProviderAbortError,
  ProviderApiError,
  ProviderConnectionError,
  ProviderTimeoutError,
} from "../../client/errors.ts";
import { InterfaceError } from "../../server/errors.ts";
import {
  interfaceErrorOf,
  isSessionGone,
  MAX_PROVIDER_MESSAGE,
  ProviderFailure,
  providerFailureOf,
  ProviderFailures,
} from "../../server/runs/provider_failure.ts";

const settings = {
  apiKey: "sk-api-key-0123456789",
  authToken: "bearer-token-0123456789",
  webhookSecrets: ["whsec_first", "whsec_second"],
};

function apiError(status: number | undefined, message = "refused", type = "invalid_request_error") {
  return new ProviderApiError({ status, type, message, retryable: false, requestId: "req_1" });
}

Deno.test("provider failures: each client error is one kind, one answer, one count", () => {
  const counted: string[] = [];
  const failures = new ProviderFailures({ settings, onFailure: (type) => counted.push(type) });
  const cases: [unknown, string, number, string, boolean][] = [
    [apiError(400), "refused", 502, "invalid_request_error", false],
    [apiError(500, "oops", "api_error"), "refused", 502, "api_error", false],
    [apiError(429, "slow down", "rate_limit_error"), "busy", 503, "rate_limit_error", true],
    [apiError(503, "busy", "overloaded_error"), "busy", 503, "overloaded_error", true],
    [apiError(529, "busy", "overloaded_error"), "busy", 503, "overloaded_error", true],
    [new ProviderConnectionError("refused"), "unreachable", 503, "connection", true],
    [new ProviderTimeoutError(60_000), "timeout", 503, "timeout", true],
    [new ProviderAbortError(), "deadline", 503, "aborted", true],
  ];
  for (const [error, kind, status, metricType, retryAfter] of cases) {
    counted.length = 0;
    const refusal = failures.refusal(error);
    const failure = providerFailureOf(refusal);
    assert.ok(failure instanceof ProviderFailure);
    assert.equal(failure.kind, kind);
    assert.equal(refusal.status, status);
    assert.equal(refusal.code, status === 502 ? "providerError" : "providerUnavailable");
    assert.equal(refusal.headers?.["retry-after"] === "1", retryAfter, kind);
    assert.equal(failure.retryable, retryAfter);
    assert.deepEqual(counted, [metricType], "counted once, by type");
  }
});

Deno.test("provider failures: the provider's status and type reach the service's error body", () => {
  const failures = new ProviderFailures({ settings });
  const refusal = failures.refusal(apiError(409, "conflict", "conflict_error"));
  assert.deepEqual(refusal.extra, { providerErrorType: "conflict_error", providerStatus: 409 });
  assert.equal(refusal.message, "The provider refused the request: conflict");
  const busy = failures.refusal(apiError(429, "slow down", "rate_limit_error"));
  assert.equal(busy.message, "The provider is busy; try again later: slow down");
  const failure = providerFailureOf(busy)!;
  assert.equal(failure.providerStatus, 429);
  assert.equal(failure.providerErrorType, "rate_limit_error");
  assert.equal(failure.providerRequestId, "req_1");
  // An error frame inside a stream has no status: none is made up.
  const frame = failures.refusal(apiError(undefined, "stream broke", "api_error"));
  assert.deepEqual(frame.extra, { providerErrorType: "api_error" });
});

Deno.test("provider failures: the credential and the webhook secrets never survive, the text is cut", () => {
  const failures = new ProviderFailures({ settings });
  const echoed = `key ${settings.apiKey} token ${settings.authToken} ` +
    `secrets ${settings.webhookSecrets.join(" ")}`;
  const refusal = failures.refusal(apiError(400, echoed));
  const failure = providerFailureOf(refusal)!;
  for (
    const secret of [settings.apiKey, settings.authToken, ...settings.webhookSecrets]
  ) {
    assert.ok(!refusal.message.includes(secret));
    assert.ok(!failure.message.includes(secret));
    assert.ok(!JSON.stringify(refusal.extra).includes(secret));
  }
  assert.equal(failure.cause, undefined, "the client error (unscrubbed) is not kept");
  const long = failures.scrub(`${"x".repeat(3 * MAX_PROVIDER_MESSAGE)}${settings.apiKey}`);
  assert.equal(long.length, MAX_PROVIDER_MESSAGE);
  // A secret straddling the cut is scrubbed before the cut, not cut in half and left.
  const straddling = failures.scrub(`${"x".repeat(MAX_PROVIDER_MESSAGE - 4)}${settings.apiKey}`);
  assert.ok(!straddling.includes("sk-a"));
});

/** Every form of `key` the scrubbing must remove, by name. */
function revealingForms(key: string): Record<string, string> {
  const url = (text: string) => btoa(text).replaceAll("+", "-").replaceAll("/", "_");
  const forms: Record<string, string> = {
    exact: key,
    lower: key.toLowerCase(),
    upper: key.toUpperCase(),
    mixed: [...key].map((c, i) => (i % 2 === 0 ? c.toUpperCase() : c.toLowerCase())).join(""),
    uriComponent: encodeURIComponent(key),
    percentEveryByte: [...key].map((c) => `%${c.charCodeAt(0).toString(16)}`).join(""),
    percentUpper: [...key].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join(""),
    base64: btoa(key),
    base64url: url(key),
    hex: [...key].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join(""),
    prefix: key.slice(0, 8),
    suffix: key.slice(-8),
    middle: key.slice(5, 15),
  };
  // `user:key` under every alignment of the key in the encoded bytes.
  for (const user of ["", "u", "us", "use", "user", "admin01"]) {
    forms[`basic(${user})`] = btoa(`${user}:${key}`);
    forms[`basicUrl(${user})`] = url(`${user}:${key}`);
  }
  return forms;
}

/**
 * Whether `text` still reveals `key`: 8 of its characters in a row in any case (after
 * percent-decoding), or 8 of its bytes in a row in base64, base64url or hex.
 */
function reveals(text: string, key: string): string | null {
  const decoded = text.replace(
    /%([0-9a-fA-F]{2})/g,
    (_, hex) => String.fromCharCode(parseInt(hex, 16)),
  )
    .toLowerCase();
  const lowerKey = key.toLowerCase();
  for (let i = 0; i + 8 <= lowerKey.length; i++) {
    if (decoded.includes(lowerKey.slice(i, i + 8))) return `plain ${lowerKey.slice(i, i + 8)}`;
  }
  // Decode every base64 run of the text at every offset and look for 8 key bytes.
  const runs = text.match(/[A-Za-z0-9+/_-]{11,}/g) ?? [];
  for (const run of runs) {
    for (let start = 0; start < 4; start++) {
      const slice = run.slice(start).replaceAll("-", "+").replaceAll("_", "/");
      const usable = slice.slice(0, slice.length - (slice.length % 4));
      let bytes = "";
      try {
        bytes = atob(usable);
      } catch {
        continue;
      }
      for (let i = 0; i + 8 <= key.length; i++) {
        if (bytes.includes(key.slice(i, i + 8))) return `base64 ${run}`;
      }
    }
  }
  const hexKey = [...key].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("");
  for (let i = 0; i + 16 <= hexKey.length; i += 2) {
    if (text.toLowerCase().includes(hexKey.slice(i, i + 16))) return "hex";
  }
  return null;
}

Deno.test("provider failures: every form that could reveal the key is scrubbed, type and id too", () => {
  const key = "sk-ant-api03-Xq7Lm2Pz9Rt4Vw8Ky1Nb5Hc3";
  const failures = new ProviderFailures({ settings: { apiKey: key } });
  for (const [name, form] of Object.entries(revealingForms(key))) {
    const refusal = failures.refusal(
      new ProviderApiError({
        status: 401,
        type: `authentication_error ${form}`,
        message: `invalid key "${form}" (${name})`,
        retryable: false,
        requestId: `req_${form}`,
      }),
    );
    const failure = providerFailureOf(refusal)!;
    const body = JSON.stringify({ message: refusal.message, ...refusal.extra });
    assert.equal(reveals(body, key), null, `${name}: ${body}`);
    assert.equal(reveals(failure.providerErrorType ?? "", key), null, name);
    assert.equal(reveals(failure.providerRequestId ?? "", key), null, name);
    assert.match(refusal.message, /\[redacted\]/, name);
  }
  // Short runs and ordinary text stay: 7 characters of the key are not enough to name it.
  const refusal = failures.refusal(apiError(400, `agent ${key.slice(13, 20)} is not ready`));
  assert.equal(
    refusal.message,
    `The provider refused the request: agent ${key.slice(13, 20)} is not ready`,
  );
});

Deno.test("provider failures: the service's own errors pass, anything else is not a provider failure", () => {
  const counted: string[] = [];
  const failures = new ProviderFailures({ settings, onFailure: (type) => counted.push(type) });
  const own = new InterfaceError("runNotFound", "No run with this id");
  assert.equal(failures.refusal(own), own);
  const bug = new TypeError("not a provider failure");
  assert.throws(() => failures.refusal(bug), (error) => error === bug);
  assert.equal(failures.failureOf(bug), null);
  assert.equal(providerFailureOf(own), null);
  assert.deepEqual(counted, []);
});

Deno.test("provider failures: a rendering is built from the failure alone", () => {
  const failure = new ProviderFailure({
    kind: "refused",
    message: "bad agent",
    providerStatus: 400,
    providerErrorType: "invalid_request_error",
  });
  const error = interfaceErrorOf(failure);
  assert.equal(error.status, 502);
  assert.equal(error.cause, failure);
  assert.equal(providerFailureOf(failure), failure);
});

Deno.test("provider failures: only a provider 404 says the session is gone", () => {
  assert.equal(isSessionGone(apiError(404, "no such session", "not_found_error")), true);
  assert.equal(isSessionGone(apiError(400)), false);
  assert.equal(isSessionGone({ status: 404 }), false);
  assert.equal(isSessionGone(new ProviderConnectionError("reset")), false);
});
