// The console's client of the service's `/v1` API: every call carries the shared headers
// (the bearer in `Authorization` and nowhere else, the interface version, a fresh correlation id,
// a deadline, an idempotency key on POSTs), refusals become `ApiError`s, a deadline refused for
// clock skew is sent once more on the service's clock (as the SDK does), and event streams are
// read with `fetch` (an `EventSource` cannot send the `Authorization` header) and resumed with
// `Last-Event-ID` after a dropped connection.
//
// The bearer lives in this module's memory; it is written to `sessionStorage` only when the user
// asks to stay signed in for the tab, never to lasting storage, a cookie or a URL.

const CONFIG = JSON.parse(document.getElementById("console-config")?.textContent ?? "{}");

/** What the service told the page when it served it: interface version, run states, actions. */
export const SERVICE = Object.freeze({
  interfaceVersion: String(CONFIG.interfaceVersion ?? ""),
  runStates: Array.isArray(CONFIG.runStates) ? CONFIG.runStates.map(String) : [],
  auditActions: Array.isArray(CONFIG.auditActions) ? CONFIG.auditActions.map(String) : [],
});

/** The service's root: the console is served at `<root>/console/`. */
const ROOT = new URL("../", document.baseURI);
/** The `sessionStorage` entry of a tab that stays signed in. */
const STORAGE_KEY = "automation-runtime-console-bearer";
/** How far ahead each call's `x-deadline` lies. */
const DEADLINE_MS = 30_000;

let bearer = null;
let clockOffsetMs = 0;

/** A refusal of the service (its error body), or a failure to reach it (`code: "unreachable"`). */
export class ApiError extends Error {
  constructor(status, error) {
    super(typeof error?.message === "string" ? error.message : `HTTP ${status}`);
    this.name = "ApiError";
    this.status = status;
    this.code = typeof error?.code === "string" ? error.code : "httpError";
    this.body = error ?? {};
  }
}

/** Keeps the bearer in memory (and in `sessionStorage` when `keep`). */
export function signIn(token, keep) {
  bearer = token;
  try {
    if (keep) sessionStorage.setItem(STORAGE_KEY, token);
    else sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // Storage refused (a private window's quota): the bearer stays in memory only.
  }
}

/** Takes back the bearer a tab kept; true when there was one. */
export function restoreSignIn() {
  let kept = null;
  try {
    kept = sessionStorage.getItem(STORAGE_KEY);
  } catch {
    kept = null;
  }
  if (kept === null || kept === "") return false;
  bearer = kept;
  return true;
}

/** Forgets the bearer, in memory and in the tab's storage. */
export function signOut() {
  bearer = null;
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // Nothing kept.
  }
}

/** The service's time as this page estimates it (its clock corrected by the learnt offset). */
export function serviceNow() {
  return Date.now() + clockOffsetMs;
}

/** A random UUID (version 4), also where `crypto.randomUUID` is missing (plain HTTP). */
export function uuid() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${
    hex.slice(20)
  }`;
}

function urlOf(path, query) {
  const url = new URL(path, ROOT);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== "") {
      url.searchParams.set(name, String(value));
    }
  }
  return url;
}

async function errorOf(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  return new ApiError(response.status, body?.error ?? { message: `HTTP ${response.status}` });
}

/** Whether a refusal is about the deadline, which a skewed clock explains. */
function refusedDeadline(error) {
  return (error.status === 408 && error.code === "deadlineExceeded") ||
    (error.status === 400 && error.code === "invalidHeader" && error.body.header === "x-deadline");
}

/** Learns the service's clock from a refusal's `Date`; true when it moved the offset. */
function learnOffset(response) {
  const date = Date.parse(response.headers.get("date") ?? "");
  if (Number.isNaN(date)) return false;
  // `Date` has whole seconds: the service's time lies within the second after it.
  const offset = date + 500 - Date.now();
  if (Math.abs(offset - clockOffsetMs) < 2_000) return false;
  clockOffsetMs = offset;
  return true;
}

/**
 * Sends one request under the shared rules and answers the response of a 2xx, else throws an
 * `ApiError`. `key` is the idempotency key of a POST (a fresh one unless given).
 */
async function send(method, path, options = {}) {
  if (bearer === null) throw new ApiError(401, { code: "signedOut", message: "Signed out" });
  const url = urlOf(path, options.query);
  const key = method === "POST" ? (options.key ?? uuid()) : undefined;
  for (let attempt = 0;; attempt++) {
    const headers = new Headers({
      authorization: `Bearer ${bearer}`,
      "x-interface-version": SERVICE.interfaceVersion,
      "x-correlation-id": uuid(),
      "x-deadline": new Date(serviceNow() + DEADLINE_MS).toISOString(),
      accept: options.accept ?? "application/json",
    });
    if (key !== undefined) {
      headers.set("idempotency-key", key);
      headers.set("content-type", "application/json");
    }
    if (options.lastEventId !== undefined) headers.set("last-event-id", options.lastEventId);
    let response;
    try {
      response = await fetch(url, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: options.signal,
        credentials: "omit",
        cache: "no-store",
        redirect: "error",
        referrerPolicy: "no-referrer",
      });
    } catch (error) {
      if (options.signal?.aborted) throw error;
      throw new ApiError(0, { code: "unreachable", message: "The service cannot be reached" });
    }
    if (response.ok) return response;
    const error = await errorOf(response);
    if (attempt === 0 && refusedDeadline(error) && learnOffset(response)) continue;
    throw error;
  }
}

/** Calls a JSON route: `call("GET", "v1/runs", { query })`; answers the parsed body (or null). */
export async function call(method, path, options = {}) {
  const response = await send(method, path, options);
  if (response.status === 204) return null;
  return await response.json();
}

/** Whether the service answered 401: the bearer is unknown, revoked or expired. */
export function isSignedOut(error) {
  return error instanceof ApiError && error.status === 401;
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * The frames of an SSE body, WHATWG style: `{ event, data, id, retry }` per dispatched event
 * (`id`: the last event id so far). Comments and empty events are skipped.
 */
async function* sseFrames(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const cancel = () => reader.cancel().catch(() => {});
  signal.addEventListener("abort", cancel, { once: true });
  let buffer = "";
  let data = [];
  let event = "";
  let id;
  let retry;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      // A trailing CR may be the first half of CRLF: keep it for the next chunk.
      const end = buffer.endsWith("\r") ? buffer.length - 1 : buffer.length;
      const lines = buffer.slice(0, end).split(/\r\n|\r|\n/);
      buffer = lines.pop() + buffer.slice(end);
      for (const line of lines) {
        if (line === "") {
          if (data.length > 0) {
            yield { event: event || "message", data: data.join("\n"), id, retry };
          }
          data = [];
          event = "";
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let text = colon < 0 ? "" : line.slice(colon + 1);
        if (text.startsWith(" ")) text = text.slice(1);
        if (field === "data") data.push(text);
        else if (field === "event") event = text;
        else if (field === "id" && !text.includes("\0")) id = text;
        else if (field === "retry" && /^\d+$/.test(text)) retry = Number(text);
      }
    }
  } finally {
    signal.removeEventListener("abort", cancel);
  }
}

/**
 * Follows an SSE route until `signal` aborts: each event's parsed JSON goes to `onEvent`, the
 * connection's state ("connecting", "live", "reconnecting", "ended", "failed") to `onStatus`.
 * A dropped connection, or a stream the service ended, is opened again with `Last-Event-ID`
 * (after the `retry` delay, doubling while it keeps failing) unless `reconnect()` says no; a
 * refusal that a retry cannot fix (401, 403, 404) ends it with "failed".
 */
export async function follow(path, options) {
  const { signal, onEvent, onStatus } = options;
  const reconnect = options.reconnect ?? (() => true);
  let lastEventId = options.lastEventId;
  let retryMs = 2_000;
  let failures = 0;
  while (!signal.aborted) {
    try {
      onStatus?.("connecting");
      const response = await send("GET", path, {
        query: options.query,
        accept: "text/event-stream",
        lastEventId,
        signal,
      });
      onStatus?.("live");
      failures = 0;
      for await (const frame of sseFrames(response.body, signal)) {
        if (frame.retry !== undefined) retryMs = frame.retry;
        if (frame.id !== undefined) lastEventId = frame.id;
        let value;
        try {
          value = JSON.parse(frame.data);
        } catch {
          continue;
        }
        onEvent(value, frame);
      }
      if (signal.aborted) return;
      if (!reconnect()) {
        onStatus?.("ended");
        return;
      }
    } catch (error) {
      if (signal.aborted) return;
      const status = error instanceof ApiError ? error.status : 0;
      if (status === 401 || status === 403 || status === 404) {
        onStatus?.("failed", error);
        return;
      }
      failures++;
    }
    onStatus?.("reconnecting");
    await sleep(Math.min(retryMs * 2 ** Math.max(0, failures - 1), 30_000), signal);
  }
}
