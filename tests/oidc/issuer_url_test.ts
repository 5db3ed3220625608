/**
 * The issuer URL rules a trust policy's validation and the verifier share: HTTPS, loopback HTTP
 * only when allowed and only on 127.0.0.1, [::1] and localhost, canonical form, and the
 * discovery URL built from the issuer.
 */
import assert from "node:assert/strict";
import { discoveryUrl, issuerUrlProblem, MAX_ISSUER_LENGTH } from "../../server/oidc/mod.ts";
import { jwksUriProblem } from "../../server/oidc/issuer_url.ts";

const loopback = { allowLoopbackHttp: true };

Deno.test("https issuers are admitted, with or without a path", () => {
  for (
    const issuer of [
      "https://token.actions.githubusercontent.com",
      "https://gitlab.com",
      "https://gitlab.com/",
      "https://login.example.com/tenant-1/v2.0",
      "https://ci.example:8443",
    ]
  ) {
    assert.equal(issuerUrlProblem(issuer), null, issuer);
    assert.equal(issuerUrlProblem(issuer, loopback), null, issuer);
  }
});

Deno.test("an http issuer is refused unless loopback http is allowed, then only on loopback names", () => {
  for (const issuer of ["http://127.0.0.1:8080", "http://[::1]:8080", "http://localhost:8080"]) {
    assert.match(issuerUrlProblem(issuer)!, /https/, issuer);
    assert.equal(issuerUrlProblem(issuer, loopback), null, issuer);
  }
  for (
    const issuer of [
      "http://ci.example",
      "http://127.0.0.2:8080",
      "http://10.0.0.1",
      "http://localhost.example.com",
      "http://0.0.0.0:8080",
      "http://[::ffff:127.0.0.1]",
    ]
  ) {
    assert.notEqual(issuerUrlProblem(issuer, loopback), null, issuer);
  }
});

Deno.test("other schemes, credentials, queries, fragments and non-canonical forms are refused", () => {
  for (
    const issuer of [
      "",
      "token.actions.githubusercontent.com",
      "ftp://ci.example",
      "file:///etc/passwd",
      "https://user:pass@ci.example",
      "https://ci.example?x=1",
      "https://ci.example/?",
      "https://ci.example#frag",
      "HTTPS://ci.example",
      "https://CI.example",
      "https://ci.example:443",
      "https://ci.example/a/../b",
      " https://ci.example",
      "https://ci.example/" + "a".repeat(MAX_ISSUER_LENGTH),
      "http://127.1:8080",
    ]
  ) {
    assert.notEqual(issuerUrlProblem(issuer, loopback), null, issuer);
  }
});

Deno.test("a problem never repeats the URL", () => {
  const issuer = "https://secret-looking-user:secret-looking-pass@ci.example";
  const problem = issuerUrlProblem(issuer)!;
  assert.doesNotMatch(problem, /secret-looking/);
});

Deno.test("jwks_uri: https anywhere, loopback http only when allowed, no credentials or fragment", () => {
  assert.equal(jwksUriProblem("https://www.googleapis.com/oauth2/v3/certs"), null);
  assert.equal(jwksUriProblem("https://keys.example/jwks?version=2"), null);
  assert.notEqual(jwksUriProblem("http://127.0.0.1:8080/jwks"), null);
  assert.equal(jwksUriProblem("http://127.0.0.1:8080/jwks", loopback), null);
  assert.notEqual(jwksUriProblem("http://keys.example/jwks", loopback), null);
  assert.notEqual(jwksUriProblem("https://u:p@keys.example/jwks"), null);
  assert.notEqual(jwksUriProblem("https://keys.example/jwks#x"), null);
  assert.notEqual(jwksUriProblem("/jwks"), null);
});

Deno.test("the discovery URL appends the well-known path after dropping one trailing slash", () => {
  assert.equal(
    discoveryUrl("https://token.actions.githubusercontent.com"),
    "https://token.actions.githubusercontent.com/.well-known/openid-configuration",
  );
  assert.equal(
    discoveryUrl("https://login.example.com/tenant-1/v2.0/"),
    "https://login.example.com/tenant-1/v2.0/.well-known/openid-configuration",
  );
});
