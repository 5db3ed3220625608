/**
 * Discovery and the JWKS cache: a key rotation at the issuer is picked up without a restart,
 * unknown `kid`s cost the issuer at most one fetch a minute (on an injected clock), issuer and
 * `jwks_uri` URLs follow the scheme rules, oversized or wrong documents are refused, fetches have
 * deadlines, failures back off, and the cache is bounded.
 */
import assert from "node:assert/strict";
import {
  DEFAULT_MAX_DOCUMENT_BYTES,
  DEFAULT_REFETCH_INTERVAL_MS,
  JwksCache,
  OidcVerificationError,
  OidcVerifier,
} from "../../server/oidc/mod.ts";
import { AUDIENCE, LocalOidcIssuer, makeSigningKey } from "../support/oidc_issuer.ts";
import { assertRefused } from "./_refusal.ts";
import { startIssuerAndVerifier, testClock } from "./_setup.ts";

/** A JSON document of exactly `bytes` bytes: `document` with a padding field. */
function documentOfSize(document: Record<string, unknown>, bytes: number): string {
  const bare = JSON.stringify({ ...document, padding: "" });
  const text = JSON.stringify({ ...document, padding: "x".repeat(bytes - bare.length) });
  assert.equal(new TextEncoder().encode(text).length, bytes);
  return text;
}

/** A response whose body streams in chunks, without a declared length. */
function streamed(text: string): Response {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new Response(
    new ReadableStream<Uint8Array>({
      pull(controller) {
        if (at >= bytes.length) return controller.close();
        controller.enqueue(bytes.slice(at, at + 4096));
        at += 4096;
      },
    }),
    { headers: { "content-type": "application/json" } },
  );
}

Deno.test("a key rotation at the issuer (new kid) is picked up without a restart, with one refetch", async () => {
  const { time, issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    await verifier.verify(await issuer.mint(), expected);
    assert.equal(issuer.jwksFetches, 1);
    const old = issuer.current;
    await issuer.rotate({ keepOld: false });
    time.advance(DEFAULT_REFETCH_INTERVAL_MS / 1000 + 1);
    const verified = await verifier.verify(await issuer.mint(), expected);
    assert.equal(verified.keyId, issuer.current.kid);
    assert.notEqual(verified.keyId, old.kid);
    assert.equal(issuer.jwksFetches, 2);
    // The next tokens use the new set without fetching.
    await verifier.verify(await issuer.mint(), expected);
    assert.equal(issuer.jwksFetches, 2);
    // The withdrawn key no longer verifies: the refetched set lacks it, and no other refetch
    // is due.
    const stale = await issuer.mint({}, { key: old });
    await assertRefused(verifier.verify(stale, expected), "unknownKey", stale);
    assert.equal(issuer.jwksFetches, 2);
  } finally {
    await issuer.close();
  }
});

Deno.test("a flood of unknown kids causes at most one JWKS fetch a minute", async () => {
  const { time, issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    await verifier.verify(await issuer.mint(), expected);
    assert.equal(issuer.jwksFetches, 1);
    const flood = async (): Promise<void> => {
      const tokens = await Promise.all(
        Array.from(
          { length: 20 },
          async (_, index) =>
            issuer.mint({}, { key: await makeSigningKey("ES256", `made-up-${index}`) }),
        ),
      );
      const refusals = await Promise.allSettled(
        tokens.map((token) => verifier.verify(token, expected)),
      );
      for (const refusal of refusals) {
        assert.equal(refusal.status, "rejected");
        assert.equal((refusal.reason as OidcVerificationError).reason, "unknownKey");
      }
    };
    // Within the minute of the first load: no refetch at all.
    time.advance(30);
    await flood();
    assert.equal(issuer.jwksFetches, 1);
    // A minute after it: one refetch shared by the whole flood.
    time.advance(31);
    await flood();
    assert.equal(issuer.jwksFetches, 2);
    time.advance(59);
    await flood();
    assert.equal(issuer.jwksFetches, 2);
    time.advance(1);
    await flood();
    assert.equal(issuer.jwksFetches, 3);
    // Known keys still verify all along.
    await verifier.verify(await issuer.mint(), expected);
    assert.equal(issuer.jwksFetches, 3);
  } finally {
    await issuer.close();
  }
});

Deno.test("concurrent first verifications share one discovery and one JWKS fetch", async () => {
  const { issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    const tokens = await Promise.all(Array.from({ length: 10 }, () => issuer.mint()));
    await Promise.all(tokens.map((token) => verifier.verify(token, expected)));
    assert.equal(issuer.discoveryFetches, 1);
    assert.equal(issuer.jwksFetches, 1);
  } finally {
    await issuer.close();
  }
});

Deno.test("keys are loaded again once older than the maximum age, dropping withdrawn ones", async () => {
  const { time, issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    const first = issuer.current;
    await verifier.verify(await issuer.mint(), expected);
    await issuer.rotate({ keepOld: false });
    time.advance(599);
    await verifier.verify(await issuer.mint({}, { key: first }), expected);
    assert.equal(issuer.jwksFetches, 1);
    time.advance(2);
    const withdrawn = await issuer.mint({}, { key: first });
    await assertRefused(verifier.verify(withdrawn, expected), "unknownKey", withdrawn);
    assert.equal(issuer.jwksFetches, 2);
  } finally {
    await issuer.close();
  }
});

Deno.test("an http issuer is refused unless loopback http is allowed, and a non-loopback one always", async () => {
  const time = testClock();
  const loopback = await LocalOidcIssuer.start({ now: time.now });
  const remote = await LocalOidcIssuer.start({ now: time.now, issuer: "http://ci.example" });
  try {
    const strict = new OidcVerifier({ now: time.now });
    const token = await loopback.mint();
    await assertRefused(
      strict.verify(token, { issuer: loopback.issuer, audience: AUDIENCE }),
      "issuerNotAllowed",
      token,
    );
    const lenient = new OidcVerifier({ now: time.now, allowLoopbackHttp: true });
    await lenient.verify(token, { issuer: loopback.issuer, audience: AUDIENCE });
    const remoteVerifier = new OidcVerifier({
      now: time.now,
      allowLoopbackHttp: true,
      fetch: remote.fetch,
    });
    const remoteToken = await remote.mint();
    await assertRefused(
      remoteVerifier.verify(remoteToken, { issuer: remote.issuer, audience: AUDIENCE }),
      "issuerNotAllowed",
      remoteToken,
    );
    assert.equal(remote.discoveryFetches, 0);
    assert.equal(loopback.discoveryFetches, 1);
  } finally {
    await loopback.close();
    await remote.close();
  }
});

Deno.test("an https issuer is fetched; its jwks_uri over http is refused where loopback http is not allowed", async () => {
  const { issuer, verifier, expected } = await startIssuerAndVerifier({
    issuer: "https://token.ci.example",
  });
  try {
    await verifier.verify(await issuer.mint(), expected);
    assert.equal(issuer.jwksFetches, 1);
    const strict = new OidcVerifier({ fetch: issuer.fetch });
    issuer.intercept = (_request, path) =>
      path === "/.well-known/openid-configuration"
        ? Response.json({
          ...issuer.discoveryDocument(),
          jwks_uri: `${issuer.url}/.well-known/jwks`,
        })
        : undefined;
    const token = await issuer.mint();
    await assertRefused(strict.verify(token, expected), "issuerInvalid", token);
    assert.equal(issuer.jwksFetches, 1);
  } finally {
    await issuer.close();
  }
});

Deno.test("a discovery document naming another issuer, or no jwks_uri, is refused", async () => {
  const { issuer, verifier, expected } = await startIssuerAndVerifier();
  try {
    const token = await issuer.mint();
    issuer.intercept = (_request, path) =>
      path === "/.well-known/openid-configuration"
        ? Response.json({ ...issuer.discoveryDocument(), issuer: `${issuer.issuer}/` })
        : undefined;
    await assertRefused(verifier.verify(token, expected), "issuerInvalid", token);
    assert.equal(issuer.jwksFetches, 0);
    const fresh = new OidcVerifier({ allowLoopbackHttp: true });
    issuer.intercept = (_request, path) =>
      path === "/.well-known/openid-configuration"
        ? Response.json({ ...issuer.discoveryDocument(), jwks_uri: undefined })
        : undefined;
    await assertRefused(fresh.verify(token, expected), "issuerInvalid", token);
  } finally {
    await issuer.close();
  }
});

for (const path of ["/.well-known/openid-configuration", "/.well-known/jwks"]) {
  Deno.test(`an oversized ${path} is refused, declared or streamed; one at the cap is read`, async () => {
    const issuer = await LocalOidcIssuer.start();
    try {
      const expected = { issuer: issuer.issuer, audience: AUDIENCE };
      const document = (): Record<string, unknown> =>
        path.endsWith("jwks") ? issuer.jwksDocument() : issuer.discoveryDocument();
      const token = await issuer.mint();
      for (const form of ["declared", "streamed"] as const) {
        const verifier = new OidcVerifier({ allowLoopbackHttp: true });
        const text = documentOfSize(document(), DEFAULT_MAX_DOCUMENT_BYTES + 1);
        issuer.intercept = (_request, requested) =>
          requested !== path
            ? undefined
            : form === "declared"
            ? new Response(text, { headers: { "content-type": "application/json" } })
            : streamed(text);
        const refusal = await assertRefused(
          verifier.verify(token, expected),
          "issuerInvalid",
          token,
        );
        assert.match(refusal.message, /larger than 65536 bytes/);
      }
      for (const form of ["declared", "streamed"] as const) {
        const verifier = new OidcVerifier({ allowLoopbackHttp: true });
        const text = documentOfSize(document(), DEFAULT_MAX_DOCUMENT_BYTES);
        issuer.intercept = (_request, requested) =>
          requested !== path
            ? undefined
            : form === "declared"
            ? new Response(text)
            : streamed(text);
        await verifier.verify(token, expected);
      }
    } finally {
      await issuer.close();
    }
  });
}

Deno.test("an error status, a redirect, a document that is not JSON and a JWKS with too many keys are refused", async () => {
  const issuer = await LocalOidcIssuer.start();
  try {
    const expected = { issuer: issuer.issuer, audience: AUDIENCE };
    const token = await issuer.mint();
    const moved = (path: string): Response | undefined =>
      path === "/moved/.well-known/openid-configuration"
        ? Response.json(issuer.discoveryDocument())
        : undefined;
    const cases: [string, () => Response, "issuerUnreachable" | "issuerInvalid"][] = [
      [
        "/.well-known/openid-configuration",
        () => new Response("gone", { status: 503 }),
        "issuerUnreachable",
      ],
      [
        "/.well-known/openid-configuration",
        // To the same issuer's own document: followed, it would be read.
        () => Response.redirect(`${issuer.url}/moved/.well-known/openid-configuration`, 302),
        "issuerUnreachable",
      ],
      ["/.well-known/jwks", () => new Response("<html>", { status: 200 }), "issuerInvalid"],
      [
        "/.well-known/jwks",
        () => new Response(new Uint8Array([0xff, 0xfe, 0x7b])),
        "issuerInvalid",
      ],
      ["/.well-known/jwks", () => Response.json({ keys: "none" }), "issuerInvalid"],
      ["/.well-known/jwks", () => Response.json([issuer.current.jwk]), "issuerInvalid"],
      [
        "/.well-known/jwks",
        () => Response.json({ keys: Array.from({ length: 33 }, () => issuer.current.jwk) }),
        "issuerInvalid",
      ],
    ];
    for (const [path, answer, reason] of cases) {
      issuer.intercept = (_request, requested) => requested === path ? answer() : moved(requested);
      const verifier = new OidcVerifier({ allowLoopbackHttp: true });
      await assertRefused(verifier.verify(token, expected), reason, token);
    }
    // 32 keys are admitted.
    issuer.intercept = (_request, requested) =>
      requested === "/.well-known/jwks"
        ? Response.json({ keys: Array.from({ length: 32 }, () => issuer.current.jwk) })
        : undefined;
    await new OidcVerifier({ allowLoopbackHttp: true }).verify(token, expected);
  } finally {
    await issuer.close();
  }
});

Deno.test("a fetch that does not finish in time is refused as issuerUnreachable", async () => {
  const issuer = await LocalOidcIssuer.start();
  try {
    const expected = { issuer: issuer.issuer, audience: AUDIENCE };
    const token = await issuer.mint();
    const verifier = new OidcVerifier({ allowLoopbackHttp: true, timeoutMs: 200 });
    issuer.intercept = (_request, path) =>
      path === "/.well-known/jwks" ? new Response(new ReadableStream({ start() {} })) : undefined;
    const started = Date.now();
    const refusal = await assertRefused(
      verifier.verify(token, expected),
      "issuerUnreachable",
      token,
    );
    assert.match(refusal.message, /in time/);
    assert.ok(Date.now() - started < 5_000);
  } finally {
    await issuer.close();
  }
});

Deno.test("a failed load is not retried for five seconds, then is", async () => {
  const time = testClock();
  const issuer = await LocalOidcIssuer.start({ now: time.now });
  try {
    const expected = { issuer: issuer.issuer, audience: AUDIENCE };
    const verifier = new OidcVerifier({ allowLoopbackHttp: true, now: time.now });
    issuer.intercept = () => new Response("down", { status: 500 });
    const token = await issuer.mint();
    await assertRefused(verifier.verify(token, expected), "issuerUnreachable", token);
    assert.equal(issuer.discoveryFetches, 1);
    issuer.intercept = null;
    time.advance(4);
    await assertRefused(verifier.verify(token, expected), "issuerUnreachable", token);
    assert.equal(issuer.discoveryFetches, 1);
    time.advance(1);
    await verifier.verify(token, expected);
    assert.equal(issuer.discoveryFetches, 2);
  } finally {
    await issuer.close();
  }
});

Deno.test("the cache keeps at most maxIssuers issuers, dropping the least recently used", async () => {
  const fetched: string[] = [];
  const cache = new JwksCache({
    maxIssuers: 2,
    fetch: (input) => {
      const url = new URL(String(input));
      fetched.push(url.hostname);
      return Promise.resolve(
        url.pathname === "/.well-known/openid-configuration"
          ? Response.json({ issuer: url.origin, jwks_uri: `${url.origin}/jwks` })
          : Response.json({ keys: [] }),
      );
    },
  });
  await cache.keySet("https://a.example");
  await cache.keySet("https://b.example");
  await cache.keySet("https://a.example");
  await cache.keySet("https://c.example");
  assert.equal(cache.size, 2);
  assert.deepEqual(fetched, [
    "a.example",
    "a.example",
    "b.example",
    "b.example",
    "c.example",
    "c.example",
  ]);
  // a was used after b, so b went; a is still cached.
  await cache.keySet("https://a.example");
  assert.equal(fetched.length, 6);
  await cache.keySet("https://b.example");
  assert.equal(fetched.length, 8);
  assert.equal(cache.size, 2);
});

Deno.test("refetch gives a set another caller already loaded instead of asking again", async () => {
  const time = testClock();
  let jwksFetches = 0;
  const cache = new JwksCache({
    now: time.now,
    fetch: (input) => {
      const url = new URL(String(input));
      if (url.pathname.endsWith("/jwks")) jwksFetches++;
      return Promise.resolve(
        url.pathname === "/.well-known/openid-configuration"
          ? Response.json({ issuer: url.origin, jwks_uri: `${url.origin}/jwks` })
          : Response.json({ keys: [{ kty: "EC", kid: `k${jwksFetches}` }] }),
      );
    },
  });
  const issuer = "https://ci.example";
  const first = await cache.keySet(issuer);
  assert.equal(await cache.refetch(issuer, first), null);
  time.advance(60);
  const [one, two] = await Promise.all([
    cache.refetch(issuer, first),
    cache.refetch(issuer, first),
  ]);
  assert.equal(one, two);
  assert.equal(jwksFetches, 2);
  assert.deepEqual(one!.jwks.keys.map((key) => key.kid), ["k2"]);
  // A caller that still holds the first set gets the newer one, without a fetch.
  assert.equal(await cache.refetch(issuer, first), one);
  assert.equal(jwksFetches, 2);
  await assert.rejects(cache.keySet("ftp://ci.example"), OidcVerificationError);
});
