/**
 * Synchronous SHA-256 and HMAC-SHA256 over bytes, hex and base64url, and a constant-time
 * comparison: what the service hashes with. Plain JavaScript on purpose: importing `node:crypto`
 * loads Deno's Node compatibility layer, which costs tens of milliseconds of startup, and
 * WebCrypto is asynchronous where the authentication path is not.
 *
 * @module
 */

// Signed 32-bit, so the rounds stay in small-integer math.
const K = Int32Array.from([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);
const INITIAL = Int32Array.from([
  0x6a09e667,
  0xbb67ae85,
  0x3c6ef372,
  0xa54ff53a,
  0x510e527f,
  0x9b05688c,
  0x1f83d9ab,
  0x5be0cd19,
]);
const W = new Int32Array(64);
const encoder = new TextEncoder();

/** Expands the message schedule in `W` (words 0 to 15 filled) and runs the 64 rounds on `state`. */
function rounds(state: Int32Array): void {
  for (let i = 16; i < 64; i++) {
    const x = W[i - 15];
    const y = W[i - 2];
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
  }
  let a = state[0], b = state[1], c = state[2], d = state[3];
  let e = state[4], f = state[5], g = state[6], h = state[7];
  for (let i = 0; i < 64; i++) {
    const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + s1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
    const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  state[0] = (state[0] + a) | 0;
  state[1] = (state[1] + b) | 0;
  state[2] = (state[2] + c) | 0;
  state[3] = (state[3] + d) | 0;
  state[4] = (state[4] + e) | 0;
  state[5] = (state[5] + f) | 0;
  state[6] = (state[6] + g) | 0;
  state[7] = (state[7] + h) | 0;
}

function compress(state: Int32Array, bytes: Uint8Array, offset: number): void {
  for (let i = 0; i < 16; i++) {
    const at = offset + (i << 2);
    W[i] = (bytes[at] << 24) | (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3];
  }
  rounds(state);
}

/** Writes a 32-bit word big-endian at `at`. */
function storeWord(bytes: Uint8Array, at: number, word: number): void {
  bytes[at] = word >>> 24;
  bytes[at + 1] = word >>> 16;
  bytes[at + 2] = word >>> 8;
  bytes[at + 3] = word;
}

const asciiState = new Int32Array(8);

/**
 * SHA-256 of the low byte of each UTF-16 code unit of `text` (exact for ASCII, which is all a
 * bearer may hold), written into `out` (32 bytes). The authentication hot path uses it: it reads
 * the string directly, with no encoder and no allocation.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sha256Ascii } from "./_digest.ts";
 * const digest = sha256Ascii("abc", new Uint8Array(32));
 * assert.equal(digest[0].toString(16), "ba");
 * ```
 */
export function sha256Ascii(text: string, out: Uint8Array): Uint8Array {
  const length = text.length;
  const blocks = ((length + 8) >> 6) + 1;
  const state = asciiState;
  state.set(INITIAL);
  for (let block = 0; block < blocks; block++) {
    const base = block << 6;
    for (let i = 0; i < 16; i++) {
      const at = base + (i << 2);
      if (at + 4 <= length) {
        W[i] = ((text.charCodeAt(at) & 0xff) << 24) | ((text.charCodeAt(at + 1) & 0xff) << 16) |
          ((text.charCodeAt(at + 2) & 0xff) << 8) | (text.charCodeAt(at + 3) & 0xff);
      } else {
        // The word holding the end of the text, its 0x80 terminator, or padding.
        let word = 0;
        for (let j = 0; j < 4; j++) {
          const index = at + j;
          const byte = index < length ? text.charCodeAt(index) & 0xff : index === length ? 0x80 : 0;
          word = (word << 8) | byte;
        }
        W[i] = word;
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
/** The last block or two of a message with its padding. */
const TAIL = new Uint8Array(128);
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
 * digest into `out`. Allocates nothing: the padding goes through {@linkcode TAIL}.
 */
function digestInto(prefix: Uint8Array | null, bytes: Uint8Array, out: Uint8Array): Uint8Array {
  const state = digestState;
  state.set(INITIAL);
  if (prefix !== null) compress(state, prefix, 0);
  const length = bytes.length;
  const whole = length - (length % 64);
  for (let offset = 0; offset < whole; offset += 64) compress(state, bytes, offset);
  const rest = length - whole;
  const tailLength = rest < 56 ? 64 : 128;
  TAIL.fill(0);
  TAIL.set(bytes.subarray(whole));
  TAIL[rest] = 0x80;
  const bits = (length + (prefix === null ? 0 : 64)) * 8;
  const high = Math.floor(bits / 0x1_0000_0000);
  const low = bits >>> 0;
  storeWord(TAIL, tailLength - 8, high);
  storeWord(TAIL, tailLength - 4, low);
  for (let offset = 0; offset < tailLength; offset += 64) compress(state, TAIL, offset);
  for (let i = 0; i < 8; i++) storeWord(out, i << 2, state[i]);
  return out;
}

/**
 * SHA-256 of bytes, or of a string as UTF-8, written into `out` (a new 32-byte array unless
 * given).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sha256, toHex } from "./_digest.ts";
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
 * import { sha256Hex } from "./_digest.ts";
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
 * import { hmacSha256, toHex } from "./_digest.ts";
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
 * import { toHex } from "./_digest.ts";
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
 * import { toBase64Url } from "./_digest.ts";
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
 * import { constantTimeEqual } from "./_digest.ts";
 * assert.equal(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2])), true);
 * ```
 */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}
