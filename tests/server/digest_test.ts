/**
 * The service's own SHA-256 and HMAC-SHA256 agree with `node:crypto` on every length around the
 * block boundaries, on UTF-8 strings and on a megabyte, and the constant-time comparison is exact.
 */
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { constantTimeEqual, hmacSha256, sha256, toBase64Url, toHex } from "../../server/_digest.ts";

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
  for (const text of ["", "abc", "art_token", "é日本\u{1f600}", "x".repeat(1000)]) {
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
