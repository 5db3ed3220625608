/**
 * Synchronous SHA-256 and HMAC-SHA256 over bytes, hex and base64url, and a constant-time
 * comparison: what the service hashes with. Plain JavaScript on purpose: importing `node:crypto`
 * loads Deno's Node compatibility layer, which costs tens of milliseconds of startup, and
 * WebCrypto is asynchronous where the authentication path is not. Internal to the server: the
 * authenticator, the bootstrap credential, the principal routes, the idempotency rule and the
 * MCP session ids hash with it; not exported from `server/mod.ts`.
 *
 * @module
 */

import { compress, finish, INITIAL, rounds, storeWord, W } from "../client/sha256.ts";

const encoder = new TextEncoder();

const asciiState = new Int32Array(8);

/**
 * SHA-256 of the low byte of each UTF-16 code unit of `text` (exact for ASCII, which is all a
 * bearer may hold), written into `out` (32 bytes). The authentication hot path uses it: it reads
 * the string directly, with no encoder and no allocation. Speed trick: whole words are read four
 * characters at a time and the padding's zero words written without looking at the text: a
 * bearer's digest (47 characters, one block) in 220 ns against 250 ns reading byte by byte past
 * its last whole word (a loop on the 2-core development machine).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sha256Ascii } from "./digest.ts";
 * const digest = sha256Ascii("abc", new Uint8Array(32));
 * assert.equal(digest[0].toString(16), "ba");
 * ```
 */
export function sha256Ascii(text: string, out: Uint8Array): Uint8Array {
  const length = text.length;
  const blocks = ((length + 8) >> 6) + 1;
  const state = asciiState;
  state.set(INITIAL);
  // The word that holds the text's last characters and its 0x80 terminator.
  const lastWord = length >> 2;
  for (let block = 0; block < blocks; block++) {
    const base = block << 4;
    for (let i = 0; i < 16; i++) {
      const word = base + i;
      const at = word << 2;
      if (word < lastWord) {
        W[i] = ((text.charCodeAt(at) & 0xff) << 24) | ((text.charCodeAt(at + 1) & 0xff) << 16) |
          ((text.charCodeAt(at + 2) & 0xff) << 8) | (text.charCodeAt(at + 3) & 0xff);
      } else if (word > lastWord) {
        W[i] = 0;
      } else {
        let value = 0;
        for (let j = 0; j < 4; j++) {
          const index = at + j;
          value = (value << 8) |
            (index < length ? text.charCodeAt(index) & 0xff : index === length ? 0x80 : 0);
        }
        W[i] = value;
      }
    }
    if (block === blocks - 1) {
      W[14] = Math.floor(length / 0x20000000);
      W[15] = length << 3;
    }
    rounds(state);
  }
  for (let i = 0; i < 8; i++) storeWord(out, i << 2, state[i]);
  return out;
}

/** Reusable room for a short string's UTF-8 bytes. */
let textBytes = new Uint8Array(1024);
const digestState = new Int32Array(8);

/** Longest string encoded into the reusable buffer; longer ones get their own array. */
const MAX_REUSED_TEXT = 16_384;

/** The UTF-8 bytes of `text`, in reusable memory when short: valid until the next call. */
function utf8(text: string): Uint8Array {
  if (text.length > MAX_REUSED_TEXT) return encoder.encode(text);
  // Three bytes per UTF-16 code unit is the most UTF-8 can need.
  if (text.length * 3 > textBytes.length) textBytes = new Uint8Array(text.length * 3);
  const { written } = encoder.encodeInto(text, textBytes);
  return textBytes.subarray(0, written);
}

/**
 * Runs SHA-256 over `prefix` (one 64-byte block, or null) followed by `bytes`, and writes the
 * digest into `out`. Allocates nothing.
 */
function digestInto(prefix: Uint8Array | null, bytes: Uint8Array, out: Uint8Array): Uint8Array {
  const state = digestState;
  state.set(INITIAL);
  if (prefix !== null) compress(state, prefix, 0);
  return finish(state, prefix === null ? 0 : 64, bytes, out);
}

/**
 * SHA-256 of bytes, or of a string as UTF-8, written into `out` (a new 32-byte array unless
 * given).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sha256, toHex } from "./digest.ts";
 * assert.equal(toHex(sha256("abc")).slice(0, 8), "ba7816bf");
 * ```
 */
export function sha256(
  data: Uint8Array | string,
  out: Uint8Array = new Uint8Array(32),
): Uint8Array {
  return digestInto(null, typeof data === "string" ? utf8(data) : data, out);
}

const SCRATCH_DIGEST = new Uint8Array(32);

/**
 * Lower-case hex SHA-256 of bytes, or of a string as UTF-8, with no intermediate array.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sha256Hex } from "./digest.ts";
 * assert.equal(sha256Hex("abc").slice(0, 8), "ba7816bf");
 * ```
 */
export function sha256Hex(data: Uint8Array | string): string {
  return toHex(sha256(data, SCRATCH_DIGEST));
}

const INNER_PAD = new Uint8Array(64);
const OUTER_PAD = new Uint8Array(64);
const INNER_DIGEST = new Uint8Array(32);

/**
 * HMAC-SHA256 (RFC 2104) with a key of bytes, or a string as UTF-8, written into `out` (a new
 * 32-byte array unless given).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hmacSha256, toHex } from "./digest.ts";
 * assert.equal(toHex(hmacSha256("key", "The quick brown fox jumps over the lazy dog")).slice(0, 8), "f7bc83f4");
 * ```
 */
export function hmacSha256(
  key: Uint8Array | string,
  message: Uint8Array | string,
  out: Uint8Array = new Uint8Array(32),
): Uint8Array {
  let keyBytes = typeof key === "string" ? encoder.encode(key) : key;
  if (keyBytes.length > 64) keyBytes = sha256(keyBytes);
  for (let i = 0; i < 64; i++) {
    const byte = i < keyBytes.length ? keyBytes[i] : 0;
    INNER_PAD[i] = byte ^ 0x36;
    OUTER_PAD[i] = byte ^ 0x5c;
  }
  const messageBytes = typeof message === "string" ? utf8(message) : message;
  digestInto(INNER_PAD, messageBytes, INNER_DIGEST);
  return digestInto(OUTER_PAD, INNER_DIGEST, out);
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/**
 * Lower-case hex of bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toHex } from "./digest.ts";
 * assert.equal(toHex(new Uint8Array([0, 255])), "00ff");
 * ```
 */
export function toHex(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i++) text += HEX[bytes[i]];
  return text;
}

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/**
 * Unpadded base64url of bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toBase64Url } from "./digest.ts";
 * assert.equal(toBase64Url(new Uint8Array([251, 255])), "-_8");
 * ```
 */
export function toBase64Url(bytes: Uint8Array): string {
  let text = "";
  const whole = bytes.length - (bytes.length % 3);
  for (let i = 0; i < whole; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    text += BASE64URL[n >>> 18] + BASE64URL[(n >>> 12) & 63] + BASE64URL[(n >>> 6) & 63] +
      BASE64URL[n & 63];
  }
  const rest = bytes.length - whole;
  if (rest === 1) {
    const n = bytes[whole] << 16;
    text += BASE64URL[n >>> 18] + BASE64URL[(n >>> 12) & 63];
  } else if (rest === 2) {
    const n = (bytes[whole] << 16) | (bytes[whole + 1] << 8);
    text += BASE64URL[n >>> 18] + BASE64URL[(n >>> 12) & 63] + BASE64URL[(n >>> 6) & 63];
  }
  return text;
}

/**
 * Compares two byte arrays in time that depends only on their lengths.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { constantTimeEqual } from "./digest.ts";
 * assert.equal(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2])), true);
 * ```
 */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}
