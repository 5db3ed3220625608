/**
 * The service's own SHA-256 and HMAC-SHA256 agree with `node:crypto` on every length around the
 * block boundaries, on UTF-8 strings and on a megabyte, and the constant-time comparison is exact.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHash, createHmac } from "node:crypto";
import {
  constantTimeEqual,
  hmacSha256,
  sha256,
  sha256Hex,
  toBase64Url,
  toHex,
} from "../../server/digest.ts";

Deno.test("sha256 agrees with node:crypto on lengths 0 to 300 and on a megabyte", () => {
  const bytes = crypto.getRandomValues(new Uint8Array(300));
  for (let length = 0; length <= 300; length++) {
    const data = bytes.subarray(0, length);
    assert.equal(
      toHex(sha256(data)),
      createHash("sha256").update(data).digest("hex"),
      `length ${length}`,
    );
  }
  const large = new Uint8Array(1_048_577).fill(97);
  assert.equal(toHex(sha256(large)), createHash("sha256").update(large).digest("hex"));
});

Deno.test("sha256 hashes strings as UTF-8", () => {
  for (
    const text of ["", "abc", "art_token", "é日本\u{1f600}", "x".repeat(1000), "é".repeat(20_000)]
  ) {
    assert.equal(toHex(sha256(text)), createHash("sha256").update(text).digest("hex"));
  }
});

Deno.test("hmacSha256 agrees with node:crypto for short, block-sized and long keys", () => {
  for (const keyLength of [0, 1, 32, 63, 64, 65, 200]) {
    const key = crypto.getRandomValues(new Uint8Array(keyLength));
    for (const message of ["", "automation-runtime/authority/v1", "m".repeat(500)]) {
      assert.equal(
        toHex(hmacSha256(key, message)),
        createHmac("sha256", key).update(message).digest("hex"),
        `key ${keyLength}, message ${message.length}`,
      );
    }
  }
  assert.equal(
    toBase64Url(hmacSha256("art_string-key", "x")),
    createHmac("sha256", "art_string-key").update("x").digest("base64url"),
  );
});

Deno.test("hmacSha256 agrees with node:crypto for every message length 0 to 200", () => {
  const key = crypto.getRandomValues(new Uint8Array(32));
  const bytes = crypto.getRandomValues(new Uint8Array(200));
  for (let length = 0; length <= 200; length++) {
    const message = bytes.subarray(0, length);
    assert.equal(
      toHex(hmacSha256(key, message)),
      createHmac("sha256", key).update(message).digest("hex"),
      `length ${length}`,
    );
  }
});

Deno.test("digests are fresh arrays unless written into one given", () => {
  const first = sha256("a");
  const second = sha256("b");
  assert.notEqual(toHex(first), toHex(second));
  assert.equal(toHex(first), createHash("sha256").update("a").digest("hex"));
  const out = new Uint8Array(32);
  assert.equal(sha256("a", out), out);
  assert.equal(hmacSha256("k", "m", out), out);
  assert.equal(toHex(out), createHmac("sha256", "k").update("m").digest("hex"));
  assert.equal(sha256Hex("é日本"), createHash("sha256").update("é日本").digest("hex"));
  assert.equal(sha256Hex(bytesOf(70)), createHash("sha256").update(bytesOf(70)).digest("hex"));
});

function bytesOf(length: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 7) & 255);
}

Deno.test("toBase64Url agrees with node's base64url for lengths 0 to 64", () => {
  const bytes = crypto.getRandomValues(new Uint8Array(64));
  for (let length = 0; length <= 64; length++) {
    const data = bytes.subarray(0, length);
    assert.equal(toBase64Url(data), Buffer.from(data).toString("base64url"), `length ${length}`);
  }
});

Deno.test("constantTimeEqual is true only for equal bytes of equal length", () => {
  const a = crypto.getRandomValues(new Uint8Array(32));
  assert.ok(constantTimeEqual(a, a.slice()));
  for (let i = 0; i < 32; i++) {
    const b = a.slice();
    b[i] ^= 1;
    assert.ok(!constantTimeEqual(a, b));
  }
  assert.ok(!constantTimeEqual(a, a.subarray(0, 31)));
});
