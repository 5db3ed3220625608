/**
 * Fetching one of an issuer's JSON documents (the discovery document, the JWKS) with a deadline
 * and a size cap: redirects are not followed, only 200 is accepted, a declared length over the
 * cap is refused unread, and the body is decoded as it streams in, stopping at the first byte
 * over the cap. The response body is released on every path.
 *
 * @module
 */
import { OidcVerificationError } from "./errors.ts";

/** Options of {@linkcode fetchJsonDocument}. */
export interface FetchJsonDocumentOptions {
  /** The fetch to use. */
  fetch: typeof fetch;
  /** Most ms for the request and the whole body. */
  timeoutMs: number;
  /** Most body bytes read. */
  maxBytes: number;
  /** What the document is, for messages (`discovery document`, `JWKS`). */
  label: string;
}

/**
 * Fetches `url` and parses its body as JSON. Throws {@linkcode OidcVerificationError}:
 * `issuerUnreachable` when the request fails, times out or answers other than 200;
 * `issuerInvalid` when the body is over the cap, not UTF-8 or not JSON.
 */
export async function fetchJsonDocument(
  url: string,
  options: FetchJsonDocumentOptions,
): Promise<unknown> {
  const { label, maxBytes } = options;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs);
  try {
    let response: Response;
    try {
      response = await options.fetch(url, {
        signal: controller.signal,
        redirect: "manual",
        headers: { accept: "application/json" },
      });
    } catch {
      throw unreachable(label, controller.signal);
    }
    try {
      if (response.status !== 200) {
        throw new OidcVerificationError(
          "issuerUnreachable",
          `The issuer's ${label} answered with status ${response.status}`,
        );
      }
      const declared = response.headers.get("content-length");
      if (declared !== null && Number(declared) > maxBytes) throw tooLarge(label, maxBytes);
      const text = await readText(response, options, controller.signal);
      try {
        return JSON.parse(text);
      } catch {
        throw new OidcVerificationError("issuerInvalid", `The issuer's ${label} is not JSON`);
      }
    } finally {
      // Frees the connection when the body was refused unread; a read body is already closed.
      await response.body?.cancel().catch(() => {});
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Reads and decodes the body, counting bytes as they arrive. */
async function readText(
  response: Response,
  options: FetchJsonDocumentOptions,
  signal: AbortSignal,
): Promise<string> {
  const body = response.body;
  if (body === null) return "";
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const reader = body.getReader();
  let text = "";
  let total = 0;
  try {
    while (true) {
      let step: ReadableStreamReadResult<Uint8Array>;
      try {
        step = await reader.read();
      } catch {
        throw unreachable(options.label, signal);
      }
      if (step.done) break;
      total += step.value.byteLength;
      if (total > options.maxBytes) {
        await reader.cancel().catch(() => {});
        throw tooLarge(options.label, options.maxBytes);
      }
      text += decoder.decode(step.value, { stream: true });
    }
    return text + decoder.decode();
  } catch (error) {
    if (error instanceof OidcVerificationError) throw error;
    throw new OidcVerificationError("issuerInvalid", `The issuer's ${options.label} is not UTF-8`);
  } finally {
    reader.releaseLock();
  }
}

function unreachable(label: string, signal: AbortSignal): OidcVerificationError {
  const how = signal.aborted ? "did not answer in time" : "could not be fetched";
  return new OidcVerificationError("issuerUnreachable", `The issuer's ${label} ${how}`);
}

function tooLarge(label: string, maxBytes: number): OidcVerificationError {
  return new OidcVerificationError(
    "issuerInvalid",
    `The issuer's ${label} is larger than ${maxBytes} bytes`,
  );
}
