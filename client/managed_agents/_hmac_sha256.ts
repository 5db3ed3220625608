/**
 * Synchronous HMAC-SHA256 (RFC 2104, FIPS 180-4) for short webhook bodies. WebCrypto hands every
 * call to a worker thread and back, a fixed cost of about 60 µs in Deno 2.9 that is several
 * times the whole hashing work of a 1 KiB body; plain JavaScript on the calling thread avoids it.
 * Larger bodies still go to WebCrypto (see `webhooks.ts`), where native hashing wins.
 *
 * The key's inner and outer padded blocks are compressed once, when the key is made, so a
 * message costs only its own blocks plus one outer block.
 *
 * @module
 */

import { compress, finish, INITIAL } from "../sha256.ts";

const STATE = new Int32Array(8);
const INNER_DIGEST = new Uint8Array(32);

/** An HMAC-SHA256 key with its padded blocks already compressed. */
export interface HmacSha256Key {
  /** SHA-256 state after the key XOR 0x36 block. */
  readonly inner: Int32Array;
  /** SHA-256 state after the key XOR 0x5c block. */
  readonly outer: Int32Array;
}

/** Prepares `key` (any length; hashed first when longer than 64 bytes, per RFC 2104). */
export function hmacSha256Key(key: Uint8Array): HmacSha256Key {
  let bytes = key;
  if (bytes.length > 64) {
    const digest = new Uint8Array(32);
    STATE.set(INITIAL);
    // A plain SHA-256: `finish` counts one absorbed block, so feed the first block directly.
    const first = bytes.subarray(0, 64);
    compress(STATE, first, 0);
    finish(STATE, 64, bytes.subarray(64), digest);
    bytes = digest;
  }
  const pad = new Uint8Array(64);
  const inner = Int32Array.from(INITIAL);
  const outer = Int32Array.from(INITIAL);
  for (let i = 0; i < 64; i++) pad[i] = (bytes[i] ?? 0) ^ 0x36;
  compress(inner, pad, 0);
  for (let i = 0; i < 64; i++) pad[i] = (bytes[i] ?? 0) ^ 0x5c;
  compress(outer, pad, 0);
  pad.fill(0);
  if (bytes !== key) bytes.fill(0);
  return { inner, outer };
}

/** HMAC-SHA256 of `message` under `key`, written into `out` (32 bytes). */
export function hmacSha256(key: HmacSha256Key, message: Uint8Array, out: Uint8Array): Uint8Array {
  STATE.set(key.inner);
  finish(STATE, 64, message, INNER_DIGEST);
  STATE.set(key.outer);
  return finish(STATE, 64, INNER_DIGEST, out);
}
