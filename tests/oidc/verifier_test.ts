/**
 * ID token verification against a local issuer served on loopback: a valid token yields its
 * claims; every hostile token is refused with its reason code, without a word of the token in
 * the error; the checks that need no key (algorithm, form) fetch nothing from the issuer.
 */
import assert from "node:assert/strict";
import { base64url, CompactSign } from "jose";
import { CLOCK_SKEW_SECONDS, MAX_TOKEN_LENGTH, OidcVerifier } from "../../server/oidc/mod.ts";
import { AUDIENCE, decodeClaims, makeSigningKey, tamper } from "../support/oidc_issuer.ts";
import { assertRefused } from "./_refusal.ts";
import { startIssuerAndVerifier } from "./_setup.ts";

for (const algorithm of ["RS256", "ES256", "EdDSA"] as const) {
  Deno.test(`a valid ${algorithm} token verifies and yields its claims`, async () => {
    const { issuer, verifier, expected } = await startIssuerAndVerifier({ algorithm });
    try {
      const token = await issuer.mint();
      const claims = decodeClaims(token);
      const verified = await verifier.verify(token, expected);
      assert.equal(verified.issuer, issuer.issuer);
      assert.equal(verified.subject, "repo:octo-org/octo-repo:ref:refs/heads/main");
      assert.equal(verified.jwtId, claims.jti);
      assert.deepEqual(verified.audience, [AUDIENCE]);
      assert.equal(verified.expiresAt, (claims.exp as number) * 1000);
      assert.equal(verified.issuedAt, (claims.iat as number) * 1000);
      assert.equal(verified.notBefore, (claims.nbf as number) * 1000);
      assert.equal(verified.algorithm, algorithm);
      assert.equal(verified.keyId, issuer.current.kid);
      assert.deepEqual(verified.claims, claims);
      assert.equal(verified.claims.repository, "octo-org/octo-repo");
      assert.equal(verified.claims.job_workflow_ref, claims.job_workflow_ref);
      assert.equal(issuer.discoveryFetches, 1);
      assert.equal(issuer.jwksFetches, 1);
      // The keys are cached: a second token fetches nothing.
      await verifier.verify(await issuer.mint(), expected);
      assert.equal(issuer.jwksFetches, 1);
    } finally {
      await issuer.close();
    }
  });
}

Deno.test("an audience array containing the expected audience verifies; one without it does not", async () => {
  const { issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    const verified = await verifier.verify(
      await issuer.mint({ aud: ["https://github.com/octo-org", AUDIENCE] }),
      expected,
    );
    assert.deepEqual(verified.audience, ["https://github.com/octo-org", AUDIENCE]);
    const token = await issuer.mint({ aud: ["https://github.com/octo-org", "other-service"] });
    await assertRefused(verifier.verify(token, expected), "audienceMismatch", token);
  } finally {
    await issuer.close();
  }
});

Deno.test("a token for another audience is refused as audienceMismatch", async () => {
  const { issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    const token = await issuer.mint({ aud: "https://github.com/octo-org" });
    await assertRefused(verifier.verify(token, expected), "audienceMismatch", token);
    // The same token passes for the audience it names: the refusal is the audience's.
    await verifier.verify(token, { ...expected, audience: "https://github.com/octo-org" });
  } finally {
    await issuer.close();
  }
});

Deno.test("a token naming another issuer, even signed by the trusted one's key, is refused as issuerMismatch", async () => {
  const { issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    const token = await issuer.mint({ iss: "https://token.actions.githubusercontent.com" });
    await assertRefused(verifier.verify(token, expected), "issuerMismatch", token);
  } finally {
    await issuer.close();
  }
});

Deno.test("expiry and not-before are checked with 60 s of skew", async () => {
  const { time, issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    assert.equal(CLOCK_SKEW_SECONDS, 60);
    const now = Math.floor(time.now() / 1000);
    // Expired 30 s ago: within the skew.
    await verifier.verify(
      await issuer.mint({ iat: now - 330, nbf: now - 330, exp: now - 30 }),
      expected,
    );
    const expired = await issuer.mint({ iat: now - 400, nbf: now - 400, exp: now - 61 });
    await assertRefused(verifier.verify(expired, expected), "expired", expired);
    // Valid from 30 s ahead: within the skew.
    await verifier.verify(await issuer.mint({ nbf: now + 30 }), expected);
    const early = await issuer.mint({ nbf: now + 61 });
    await assertRefused(verifier.verify(early, expected), "notYetValid", early);
    // Issued in the future beyond the skew.
    const future = await issuer.mint({ iat: now + 120, nbf: undefined, exp: now + 600 });
    await assertRefused(verifier.verify(future, expected), "notYetValid", future);
    // The same token once the clock has caught up.
    time.advance(120);
    await verifier.verify(future, expected);
    // And after its expiry plus the skew.
    time.advance(600 - 120 + CLOCK_SKEW_SECONDS);
    await assertRefused(verifier.verify(future, expected), "expired", future);
  } finally {
    await issuer.close();
  }
});

Deno.test("alg none is refused as unsupportedAlgorithm without asking the issuer for keys", async () => {
  const { issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    const token = issuer.unsigned();
    await assertRefused(verifier.verify(token, expected), "unsupportedAlgorithm", token);
    const signed = issuer.unsigned() + (await issuer.mint()).split(".")[2];
    await assertRefused(verifier.verify(signed, expected), "unsupportedAlgorithm", signed);
    assert.equal(issuer.discoveryFetches, 0);
    assert.equal(issuer.jwksFetches, 0);
  } finally {
    await issuer.close();
  }
});

Deno.test("a token HS256-signed with the issuer's public key as the secret is refused", async () => {
  const { issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    // The keys are loaded first, so the refusal cannot be for want of a key.
    await verifier.verify(await issuer.mint(), expected);
    const token = await issuer.hmacWithPublicKey();
    await assertRefused(verifier.verify(token, expected), "unsupportedAlgorithm", token);
    for (const alg of ["HS384", "HS512", "PS256", "RS512", "ES384"]) {
      const header = btoa(JSON.stringify({ alg, kid: issuer.current.kid }))
        .replaceAll("=", "").replaceAll("+", "-").replaceAll("/", "_");
      const other = `${header}.${token.split(".")[1]}.${token.split(".")[2]}`;
      await assertRefused(verifier.verify(other, expected), "unsupportedAlgorithm", other);
    }
  } finally {
    await issuer.close();
  }
});

Deno.test("a tampered payload or header is refused as badSignature", async () => {
  const { issuer, verifier, expected } = await startIssuerAndVerifier({ algorithm: "ES256" });
  try {
    const token = await issuer.mint();
    const tampered = tamper(token, { repository: "octo-org/other-repo" });
    await assertRefused(verifier.verify(tampered, expected), "badSignature", tampered);
    const [header, payload, signature] = token.split(".");
    const swapped = `${header}.${payload}.${signature.slice(0, -4)}${
      signature.slice(-4).split("").reverse().join("")
    }`;
    if (swapped !== token) {
      await assertRefused(verifier.verify(swapped, expected), "badSignature", swapped);
    }
    // Signed by a key of the same kind published under the token's kid elsewhere: not ours.
    const stranger = await makeSigningKey("ES256", issuer.current.kid);
    const forged = await issuer.mint({}, { key: stranger });
    await assertRefused(verifier.verify(forged, expected), "badSignature", forged);
  } finally {
    await issuer.close();
  }
});

Deno.test("a token whose kid the issuer does not publish is refused as unknownKey after one refetch", async () => {
  const { time, issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    await verifier.verify(await issuer.mint(), expected);
    assert.equal(issuer.jwksFetches, 1);
    time.advance(61);
    const unpublished = await makeSigningKey("RS256", "unpublished-key");
    const token = await issuer.mint({}, { key: unpublished });
    const refusal = await assertRefused(verifier.verify(token, expected), "unknownKey", token);
    assert.doesNotMatch(refusal.message, /unpublished-key/);
    assert.equal(issuer.jwksFetches, 2, "one refetch for the unknown kid");
    // The next one within the minute gets no refetch.
    await assertRefused(verifier.verify(token, expected), "unknownKey", token);
    assert.equal(issuer.jwksFetches, 2);
  } finally {
    await issuer.close();
  }
});

Deno.test("a token without kid verifies against the one key of its kind, or each of several", async () => {
  const { issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    await verifier.verify(await issuer.mint({}, { header: { kid: undefined } }), expected);
    const first = issuer.current;
    await issuer.rotate();
    const verified = await verifier.verify(
      await issuer.mint({}, { key: first, header: { kid: undefined } }),
      expected,
    );
    assert.equal(verified.keyId, null);
    const stranger = await makeSigningKey("RS256");
    const token = await issuer.mint({}, { key: stranger, header: { kid: undefined } });
    await assertRefused(verifier.verify(token, expected), "badSignature", token);
  } finally {
    await issuer.close();
  }
});

Deno.test("exp, iat, sub and jti are required; sub and jti must be non-empty strings", async () => {
  const { issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    for (const claim of ["exp", "iat", "sub", "jti", "aud", "iss"]) {
      const token = await issuer.mint({ [claim]: undefined });
      const refusal = await assertRefused(verifier.verify(token, expected), "missingClaim", token);
      assert.equal(refusal.claim, claim);
    }
    for (const claim of ["sub", "jti"]) {
      const empty = await issuer.mint({ [claim]: "" });
      const refusal = await assertRefused(verifier.verify(empty, expected), "missingClaim", empty);
      assert.equal(refusal.claim, claim);
      const number = await issuer.mint({ [claim]: 12345678 });
      await assertRefused(verifier.verify(number, expected), "malformed", number);
    }
    const textTime = await issuer.mint({ exp: "tomorrow-noon" });
    await assertRefused(verifier.verify(textTime, expected), "malformed", textTime);
  } finally {
    await issuer.close();
  }
});

Deno.test("malformed tokens are refused as malformed, those broken before the signature without asking the issuer", async () => {
  const { issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    const valid = await issuer.mint();
    const [header, payload, signature] = valid.split(".");
    const notJson = base64url.encode("not json at all");
    const noAlg = base64url.encode(JSON.stringify({ typ: "JWT", kid: issuer.current.kid }));
    for (
      const token of [
        "",
        "a.b",
        `${header}.${payload}`,
        `${header}.${payload}.${signature}.extra`,
        `${notJson}.${payload}.${signature}`,
        `${noAlg}.${payload}.${signature}`,
        `${header}.${payload}.${signature}`.padEnd(MAX_TOKEN_LENGTH + 1, "A"),
      ]
    ) {
      await assertRefused(verifier.verify(token, expected), "malformed", token);
    }
    assert.equal(issuer.jwksFetches, 0);
    // Validly signed, but the payload is not a JSON object.
    for (const body of ["not json at all", "[1,2,3]", '"a string"']) {
      const token = await new CompactSign(new TextEncoder().encode(body))
        .setProtectedHeader({ alg: "RS256", kid: issuer.current.kid })
        .sign(issuer.current.privateKey);
      await assertRefused(verifier.verify(token, expected), "malformed", token);
    }
  } finally {
    await issuer.close();
  }
});

Deno.test("a caller's abort stops verification while the issuer does not answer", async () => {
  const { issuer, expected } = await startIssuerAndVerifier();
  const verifier = new OidcVerifier({ allowLoopbackHttp: true, timeoutMs: 2_000 });
  try {
    // Headers at once, then a body that never comes.
    issuer.intercept = () => new Response(new ReadableStream({ start() {} }));
    const token = await issuer.mint();
    const controller = new AbortController();
    const started = Date.now();
    const verification = verifier.verify(token, { ...expected, signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    await assert.rejects(verification, (error) => (error as Error).name === "AbortError");
    assert.ok(Date.now() - started < 1_500, "the abort did not wait for the fetch's deadline");
    // The shared load goes on to its own deadline, then refuses.
    await assertRefused(verifier.verify(token, expected), "issuerUnreachable", token);
  } finally {
    await issuer.close();
  }
});
