/**
 * Self-certifying MCP session ids, so that a session works on every replica sharing the
 * bootstrap without a session table: `<nonce>.<protocol version>.<tag>`, where the nonce is 16
 * random bytes (base64url) and the tag is HMAC-SHA256 over nonce, version and the id of the
 * principal that opened the session, keyed from the bootstrap's authority key (which never
 * touches the store). A replica that has never seen a session accepts its id only from that
 * same principal: another principal's request fails the tag and gets 404, on every replica.
 *
 * The id is not a credential: every request still authenticates its bearer, so revocation
 * and expiry end a session's access on its next request on any replica.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SessionIds } from "./session_id.ts";
 * const ids = new SessionIds(crypto.getRandomValues(new Uint8Array(32)));
 * const id = ids.mint("principal-a", "2025-11-25");
 * assert.deepEqual(ids.verify(id, "principal-a"), { protocolVersion: "2025-11-25" });
 * assert.equal(ids.verify(id, "principal-b"), null);
 * ```
 *
 * @module
 */
import { constantTimeEqual, hmacSha256, toBase64Url } from "../digest.ts";

/** What a verified session id carries. */
export interface VerifiedSessionId {
  /** The protocol revision negotiated when the session was opened. */
  readonly protocolVersion: string;
}

const SHAPE = /^([A-Za-z0-9_-]{22})\.(\d{4}-\d{2}-\d{2})\.([A-Za-z0-9_-]{43})$/;

const encoder = new TextEncoder();

/** Mints and verifies session ids under one key. */
export class SessionIds {
  #key: Uint8Array;

  /** Derives the session-id key from the bootstrap's authority key. */
  constructor(authorityKey: Uint8Array) {
    this.#key = hmacSha256(authorityKey, "automation-runtime/mcp-session/v1");
  }

  /** A new session id bound to `principalId`. */
  mint(principalId: string, protocolVersion: string): string {
    const nonce = toBase64Url(crypto.getRandomValues(new Uint8Array(16)));
    return `${nonce}.${protocolVersion}.${this.#tag(nonce, protocolVersion, principalId)}`;
  }

  /**
   * What the id carries when it was minted here for `principalId`, else null (malformed,
   * forged, or another principal's).
   */
  verify(id: string, principalId: string): VerifiedSessionId | null {
    const match = SHAPE.exec(id);
    if (match === null) return null;
    const [, nonce, protocolVersion, tag] = match;
    const expected = this.#tag(nonce, protocolVersion, principalId);
    if (!constantTimeEqual(encoder.encode(tag), encoder.encode(expected))) return null;
    return { protocolVersion };
  }

  #tag(nonce: string, protocolVersion: string, principalId: string): string {
    return toBase64Url(hmacSha256(this.#key, `${nonce}.${protocolVersion}.${principalId}`));
  }
}
