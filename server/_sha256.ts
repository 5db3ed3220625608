/**
 * SHA-256 of a short ASCII string, synchronous and allocation-light, for the authentication hot
 * path (a bearer is validated as printable ASCII before it is hashed). `node:crypto` gives the
 * same digest but pays several runtime calls per hash; the tests check both agree.
 *
 * @module
 */

const K = new Uint32Array([
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
const W = new Int32Array(64);
const H = new Int32Array(8);

/**
 * Hashes the low byte of each UTF-16 code unit of `text` (exact for ASCII) into `out`
 * (32 bytes).
 *
 * @example
 * ```ts
 * import { sha256Ascii } from "./_sha256.ts";
 * const digest = sha256Ascii("abc", new Uint8Array(32));
 * console.log(digest[0].toString(16)); // "ba"
 * ```
 */
export function sha256Ascii(text: string, out: Uint8Array): Uint8Array {
  const length = text.length;
  const blocks = ((length + 8) >> 6) + 1;
  H[0] = 0x6a09e667;
  H[1] = 0xbb67ae85 | 0;
  H[2] = 0x3c6ef372;
  H[3] = 0xa54ff53a | 0;
  H[4] = 0x510e527f;
  H[5] = 0x9b05688c | 0;
  H[6] = 0x1f83d9ab;
  H[7] = 0x5be0cd19;
  for (let block = 0; block < blocks; block++) {
    const base = block << 6;
    for (let i = 0; i < 16; i++) {
      let word = 0;
      for (let j = 0; j < 4; j++) {
        const at = base + (i << 2) + j;
        const byte = at < length ? text.charCodeAt(at) & 0xff : at === length ? 0x80 : 0;
        word = (word << 8) | byte;
      }
      W[i] = word;
    }
    if (block === blocks - 1) {
      W[14] = Math.floor(length / 0x20000000);
      W[15] = length << 3;
    }
    for (let i = 16; i < 64; i++) {
      const x = W[i - 15];
      const y = W[i - 2];
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
    }
    let a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
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
    H[0] += a;
    H[1] += b;
    H[2] += c;
    H[3] += d;
    H[4] += e;
    H[5] += f;
    H[6] += g;
    H[7] += h;
  }
  for (let i = 0; i < 8; i++) {
    const word = H[i];
    out[i << 2] = word >>> 24;
    out[(i << 2) + 1] = word >>> 16;
    out[(i << 2) + 2] = word >>> 8;
    out[(i << 2) + 3] = word;
  }
  return out;
}
