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
/** The message block, 16 words: what {@linkcode rounds} runs through the state. */
export const W: Int32Array = new Int32Array(16);

const smallSigma0 = (x: number): number =>
  ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
const smallSigma1 = (x: number): number =>
  ((x >>> 17) | (x << 15)) ^ ((x >>> 19) | (x << 13)) ^ (x >>> 10);
const bigSigma0 = (x: number): number =>
  ((x >>> 2) | (x << 30)) ^ ((x >>> 13) | (x << 19)) ^ ((x >>> 22) | (x << 10));
const bigSigma1 = (x: number): number =>
  ((x >>> 6) | (x << 26)) ^ ((x >>> 11) | (x << 21)) ^ ((x >>> 25) | (x << 7));

/**
 * Runs the 64 rounds of the block in `W` on `state`, expanding the message schedule as it goes.
 * Speed trick: sixteen rounds written out per turn of the loop, the schedule's sixteen live words
 * and the eight working variables in locals (each round's variables renamed instead of shifted):
 * 200 ns a block against 255 ns for a loop of one round over a 64-word schedule (a loop on the
 * 2-core development machine; one block is a bearer's whole digest).
 */
export function rounds(state: Int32Array): void {
  let w0 = W[0], w1 = W[1], w2 = W[2], w3 = W[3], w4 = W[4], w5 = W[5], w6 = W[6], w7 = W[7];
  let w8 = W[8], w9 = W[9], w10 = W[10], w11 = W[11], w12 = W[12], w13 = W[13], w14 = W[14];
  let w15 = W[15];
  let a = state[0], b = state[1], c = state[2], d = state[3];
  let e = state[4], f = state[5], g = state[6], h = state[7];
  for (let j = 0; j < 64; j += 16) {
    if (j !== 0) w0 = (w0 + smallSigma0(w1) + w9 + smallSigma1(w14)) | 0;
    h = (h + bigSigma1(e) + ((e & f) ^ (~e & g)) + K[j] + w0) | 0;
    d = (d + h) | 0;
    h = (h + bigSigma0(a) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    if (j !== 0) w1 = (w1 + smallSigma0(w2) + w10 + smallSigma1(w15)) | 0;
    g = (g + bigSigma1(d) + ((d & e) ^ (~d & f)) + K[j + 1] + w1) | 0;
    c = (c + g) | 0;
    g = (g + bigSigma0(h) + ((h & a) ^ (h & b) ^ (a & b))) | 0;
    if (j !== 0) w2 = (w2 + smallSigma0(w3) + w11 + smallSigma1(w0)) | 0;
    f = (f + bigSigma1(c) + ((c & d) ^ (~c & e)) + K[j + 2] + w2) | 0;
    b = (b + f) | 0;
    f = (f + bigSigma0(g) + ((g & h) ^ (g & a) ^ (h & a))) | 0;
    if (j !== 0) w3 = (w3 + smallSigma0(w4) + w12 + smallSigma1(w1)) | 0;
    e = (e + bigSigma1(b) + ((b & c) ^ (~b & d)) + K[j + 3] + w3) | 0;
    a = (a + e) | 0;
    e = (e + bigSigma0(f) + ((f & g) ^ (f & h) ^ (g & h))) | 0;
    if (j !== 0) w4 = (w4 + smallSigma0(w5) + w13 + smallSigma1(w2)) | 0;
    d = (d + bigSigma1(a) + ((a & b) ^ (~a & c)) + K[j + 4] + w4) | 0;
    h = (h + d) | 0;
    d = (d + bigSigma0(e) + ((e & f) ^ (e & g) ^ (f & g))) | 0;
    if (j !== 0) w5 = (w5 + smallSigma0(w6) + w14 + smallSigma1(w3)) | 0;
    c = (c + bigSigma1(h) + ((h & a) ^ (~h & b)) + K[j + 5] + w5) | 0;
    g = (g + c) | 0;
    c = (c + bigSigma0(d) + ((d & e) ^ (d & f) ^ (e & f))) | 0;
    if (j !== 0) w6 = (w6 + smallSigma0(w7) + w15 + smallSigma1(w4)) | 0;
    b = (b + bigSigma1(g) + ((g & h) ^ (~g & a)) + K[j + 6] + w6) | 0;
    f = (f + b) | 0;
    b = (b + bigSigma0(c) + ((c & d) ^ (c & e) ^ (d & e))) | 0;
    if (j !== 0) w7 = (w7 + smallSigma0(w8) + w0 + smallSigma1(w5)) | 0;
    a = (a + bigSigma1(f) + ((f & g) ^ (~f & h)) + K[j + 7] + w7) | 0;
    e = (e + a) | 0;
    a = (a + bigSigma0(b) + ((b & c) ^ (b & d) ^ (c & d))) | 0;
    if (j !== 0) w8 = (w8 + smallSigma0(w9) + w1 + smallSigma1(w6)) | 0;
    h = (h + bigSigma1(e) + ((e & f) ^ (~e & g)) + K[j + 8] + w8) | 0;
    d = (d + h) | 0;
    h = (h + bigSigma0(a) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    if (j !== 0) w9 = (w9 + smallSigma0(w10) + w2 + smallSigma1(w7)) | 0;
    g = (g + bigSigma1(d) + ((d & e) ^ (~d & f)) + K[j + 9] + w9) | 0;
    c = (c + g) | 0;
    g = (g + bigSigma0(h) + ((h & a) ^ (h & b) ^ (a & b))) | 0;
    if (j !== 0) w10 = (w10 + smallSigma0(w11) + w3 + smallSigma1(w8)) | 0;
    f = (f + bigSigma1(c) + ((c & d) ^ (~c & e)) + K[j + 10] + w10) | 0;
    b = (b + f) | 0;
    f = (f + bigSigma0(g) + ((g & h) ^ (g & a) ^ (h & a))) | 0;
    if (j !== 0) w11 = (w11 + smallSigma0(w12) + w4 + smallSigma1(w9)) | 0;
    e = (e + bigSigma1(b) + ((b & c) ^ (~b & d)) + K[j + 11] + w11) | 0;
    a = (a + e) | 0;
    e = (e + bigSigma0(f) + ((f & g) ^ (f & h) ^ (g & h))) | 0;
    if (j !== 0) w12 = (w12 + smallSigma0(w13) + w5 + smallSigma1(w10)) | 0;
    d = (d + bigSigma1(a) + ((a & b) ^ (~a & c)) + K[j + 12] + w12) | 0;
    h = (h + d) | 0;
    d = (d + bigSigma0(e) + ((e & f) ^ (e & g) ^ (f & g))) | 0;
    if (j !== 0) w13 = (w13 + smallSigma0(w14) + w6 + smallSigma1(w11)) | 0;
    c = (c + bigSigma1(h) + ((h & a) ^ (~h & b)) + K[j + 13] + w13) | 0;
    g = (g + c) | 0;
    c = (c + bigSigma0(d) + ((d & e) ^ (d & f) ^ (e & f))) | 0;
    if (j !== 0) w14 = (w14 + smallSigma0(w15) + w7 + smallSigma1(w12)) | 0;
    b = (b + bigSigma1(g) + ((g & h) ^ (~g & a)) + K[j + 14] + w14) | 0;
    f = (f + b) | 0;
    b = (b + bigSigma0(c) + ((c & d) ^ (c & e) ^ (d & e))) | 0;
    if (j !== 0) w15 = (w15 + smallSigma0(w0) + w8 + smallSigma1(w13)) | 0;
    a = (a + bigSigma1(f) + ((f & g) ^ (~f & h)) + K[j + 15] + w15) | 0;
    e = (e + a) | 0;
    a = (a + bigSigma0(b) + ((b & c) ^ (b & d) ^ (c & d))) | 0;
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
