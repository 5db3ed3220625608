/**
 * The SHA-256 compression function (FIPS 180-4) in plain JavaScript, shared by everything that
 * hashes synchronously: the service's bearer digests and HMACs (`server/digest.ts`) and short
 * webhook bodies (`client/managed_agents/_hmac_sha256.ts`). Synchronous on purpose: WebCrypto
 * hands every call to a worker thread and back (about 60 µs in Deno 2.9), and `node:crypto` loads
 * Deno's Node compatibility layer at startup. No `Deno.*` and no `node:` import, so it runs in
 * browsers and Node too.
 *
 * The state is a caller-owned `Int32Array(8)`; `W` is one shared message schedule, which is safe
 * because every function here runs to completion without yielding.
 *
 * @module
 */

// Signed 32-bit, so the rounds stay in small-integer math.
// deno-fmt-ignore
const K: Int32Array = Int32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
// deno-fmt-ignore
export const INITIAL: Int32Array = Int32Array.from([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);
/** The message schedule: words 0 to 15 are the block, 16 to 63 are expanded by {@linkcode rounds}. */
export const W: Int32Array = new Int32Array(64);

/** Expands the message schedule in `W` (words 0 to 15 filled) and runs the 64 rounds on `state`. */
export function rounds(state: Int32Array): void {
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

/** Runs the 64-byte block of `bytes` at `offset` through `state`. */
export function compress(state: Int32Array, bytes: Uint8Array, offset: number): void {
  for (let i = 0; i < 16; i++) {
    const at = offset + (i << 2);
    W[i] = (bytes[at] << 24) | (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3];
  }
  rounds(state);
}

/** Writes a 32-bit word big-endian at `at`. */
export function storeWord(bytes: Uint8Array, at: number, word: number): void {
  bytes[at] = word >>> 24;
  bytes[at + 1] = word >>> 16;
  bytes[at + 2] = word >>> 8;
  bytes[at + 3] = word;
}

/** The last block or two of a message, with its padding and length. */
const TAIL = new Uint8Array(128);

/**
 * Finishes a hash whose `state` has already absorbed `absorbed` bytes (a multiple of 64): runs
 * `bytes`, the padding and the total length through it and writes the digest into `out`.
 * Allocates nothing.
 */
export function finish(
  state: Int32Array,
  absorbed: number,
  bytes: Uint8Array,
  out: Uint8Array,
): Uint8Array {
  const length = bytes.length;
  const whole = length - (length % 64);
  for (let offset = 0; offset < whole; offset += 64) compress(state, bytes, offset);
  const rest = length - whole;
  const tailLength = rest < 56 ? 64 : 128;
  TAIL.fill(0);
  TAIL.set(bytes.subarray(whole));
  TAIL[rest] = 0x80;
  const bits = (absorbed + length) * 8;
  storeWord(TAIL, tailLength - 8, Math.floor(bits / 0x1_0000_0000));
  storeWord(TAIL, tailLength - 4, bits >>> 0);
  for (let offset = 0; offset < tailLength; offset += 64) compress(state, TAIL, offset);
  for (let i = 0; i < 8; i++) storeWord(out, i << 2, state[i]);
  return out;
}
