/**
 * Trust-policy claim patterns: exact values, `*` globs (one, several, across `/`), no match, a
 * missing or non-scalar claim; the first mismatching claim is named without its value; the
 * pattern rules a policy's validation uses. The glob matcher agrees with an anchored regular
 * expression on generated patterns and values.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  claimPatternsProblem,
  matchClaims,
  matchesGlob,
  MAX_CLAIM_PATTERN_LENGTH,
  MAX_CLAIM_PATTERNS,
} from "../../server/oidc/mod.ts";
import { LocalOidcIssuer } from "../support/oidc_issuer.ts";

const github = {
  repository: "octo-org/octo-repo",
  repository_owner: "octo-org",
  ref: "refs/heads/main",
  ref_type: "branch",
  environment: "production",
  workflow_ref: "octo-org/octo-repo/.github/workflows/deploy.yml@refs/heads/main",
  run_id: "9876543210",
  run_attempt: 1,
  repository_private: true,
  groups: ["a", "b"],
  nested: { a: 1 },
  nothing: null,
};

Deno.test("an exact value matches only itself", () => {
  assert.equal(matchesGlob("refs/heads/main", "refs/heads/main"), true);
  assert.equal(matchesGlob("refs/heads/main", "refs/heads/main2"), false);
  assert.equal(matchesGlob("refs/heads/main", "xrefs/heads/main"), false);
  assert.equal(matchesGlob("refs/heads/main", "refs/heads/Main"), false);
  assert.equal(matchesGlob("a.b", "aXb"), false, "a dot is literal");
  assert.equal(matchesGlob("a?", "ab"), false, "a question mark is literal");
  assert.equal(matchesGlob("[ab]", "a"), false, "brackets are literal");
  assert.equal(matchesGlob("[ab]", "[ab]"), true);
});

Deno.test("one * matches any run of characters, none and slashes included, anchored", () => {
  assert.equal(matchesGlob("refs/heads/*", "refs/heads/main"), true);
  assert.equal(matchesGlob("refs/heads/*", "refs/heads/release/2026/07"), true);
  assert.equal(matchesGlob("refs/heads/*", "refs/heads/"), true);
  assert.equal(matchesGlob("refs/heads/*", "refs/tags/v1"), false);
  assert.equal(matchesGlob("refs/heads/*", "xrefs/heads/main"), false);
  assert.equal(matchesGlob("*", ""), true);
  assert.equal(matchesGlob("*", "anything/at/all"), true);
  assert.equal(matchesGlob("*/octo-repo", "octo-org/octo-repo"), true);
  assert.equal(matchesGlob("*/octo-repo", "octo-org/octo-repo-fork"), false);
});

Deno.test("several * match in order, without overlapping the fixed ends", () => {
  const pattern = "octo-org/*/.github/workflows/*.yml@refs/heads/*";
  assert.equal(matchesGlob(pattern, github.workflow_ref), true);
  assert.equal(
    matchesGlob(pattern, "octo-org/octo-repo/.github/workflows/deploy.yaml@refs/heads/main"),
    false,
  );
  assert.equal(matchesGlob("a*b*c", "abc"), true);
  assert.equal(matchesGlob("a*b*c", "aXbYc"), true);
  assert.equal(matchesGlob("a*b*c", "acb"), false);
  assert.equal(matchesGlob("ab*ba", "aba"), false, "head and tail may not share a character");
  assert.equal(matchesGlob("a**b", "ab"), true);
  assert.equal(matchesGlob("*a*a*", "a"), false);
  assert.equal(matchesGlob("*a*a*", "xaxax"), true);
});

Deno.test("the glob matcher agrees with an anchored regular expression", () => {
  const alphabet = fc.constantFrom("a", "b", "/", ".", "*");
  const text = fc.constantFrom("a", "b", "/", ".");
  fc.assert(
    fc.property(
      fc.array(alphabet, { maxLength: 8 }).map((chars) => chars.join("")),
      fc.array(text, { maxLength: 10 }).map((chars) => chars.join("")),
      (pattern, value) => {
        const source = pattern.split("*").map((part) => part.replaceAll(".", "\\.")).join(".*");
        assert.equal(
          matchesGlob(pattern, value),
          new RegExp(`^${source}$`, "s").test(value),
          `${pattern} ~ ${value}`,
        );
      },
    ),
    { numRuns: 20_000 },
  );
});

Deno.test("every pattern must match; the answer gives the matched values for the audit", () => {
  assert.deepEqual(
    matchClaims(github, {
      repository: "octo-org/octo-repo",
      ref: "refs/heads/*",
      environment: "production",
      run_attempt: "1",
      repository_private: "true",
    }),
    {
      ok: true,
      matched: {
        repository: "octo-org/octo-repo",
        ref: "refs/heads/main",
        environment: "production",
        run_attempt: "1",
        repository_private: "true",
      },
    },
  );
});

Deno.test("another branch or another repository is a mismatch naming the claim, not its value", () => {
  const policy = { repository: "octo-org/octo-repo", ref: "refs/heads/main" };
  assert.deepEqual(matchClaims({ ...github, ref: "refs/heads/feature" }, policy), {
    ok: false,
    claim: "ref",
  });
  assert.deepEqual(matchClaims({ ...github, repository: "evil-org/octo-repo" }, policy), {
    ok: false,
    claim: "repository",
  });
  // The first mismatch in the policy's order.
  assert.deepEqual(
    matchClaims({ ...github, repository: "evil-org/x", ref: "refs/heads/x" }, policy),
    { ok: false, claim: "repository" },
  );
});

Deno.test("a claim the token lacks, or has as an object, array or null, never matches, even *", () => {
  for (const claim of ["missing", "groups", "nested", "nothing"]) {
    assert.deepEqual(matchClaims(github, { [claim]: "*" }), { ok: false, claim });
  }
  // Inherited properties are not claims.
  const inheriting = Object.create({ repository: "octo-org/octo-repo" });
  assert.deepEqual(matchClaims(inheriting, { repository: "*" }), {
    ok: false,
    claim: "repository",
  });
  assert.deepEqual(matchClaims(github, { toString: "*" }), { ok: false, claim: "toString" });
  assert.deepEqual(matchClaims(github, { constructor: "*" }), { ok: false, claim: "constructor" });
});

Deno.test("a GitHub-shaped token's claims match a typical policy", async () => {
  const issuer = await LocalOidcIssuer.start();
  try {
    const claims = issuer.claims();
    const policy = {
      repository: "octo-org/octo-repo",
      ref: "refs/heads/main",
      job_workflow_ref: "octo-org/octo-repo/.github/workflows/*@refs/heads/main",
      environment: "production",
    };
    const match = matchClaims(claims, policy);
    assert.equal(match.ok, true);
    const pullRequest = issuer.claims({ ref: "refs/pull/7/merge" });
    assert.deepEqual(matchClaims(pullRequest, policy), { ok: false, claim: "ref" });
  } finally {
    await issuer.close();
  }
});

Deno.test("claim patterns: at least one, bounded, no verification claims, no control characters", () => {
  assert.equal(claimPatternsProblem({ repository: "octo-org/*", ref: "refs/heads/main" }), null);
  assert.equal(claimPatternsProblem({ environment: "*" }), null);
  assert.match(claimPatternsProblem({})!, /at least one/);
  const many = Object.fromEntries(
    Array.from({ length: MAX_CLAIM_PATTERNS + 1 }, (_, i) => [`c${i}`, "x"]),
  );
  assert.notEqual(claimPatternsProblem(many), null);
  delete many.c0;
  assert.equal(claimPatternsProblem(many), null);
  for (const claim of ["iss", "aud", "exp", "iat", "nbf", "jti"]) {
    assert.notEqual(claimPatternsProblem({ [claim]: "*" }), null, claim);
  }
  assert.notEqual(claimPatternsProblem({ "": "x" }), null);
  assert.notEqual(claimPatternsProblem({ ["c".repeat(129)]: "x" }), null);
  assert.notEqual(claimPatternsProblem({ "re\npo": "x" }), null);
  assert.notEqual(claimPatternsProblem({ ref: "" }), null);
  assert.notEqual(claimPatternsProblem({ ref: "refs/heads/\u0000" }), null);
  assert.notEqual(claimPatternsProblem({ ref: "x".repeat(MAX_CLAIM_PATTERN_LENGTH + 1) }), null);
  assert.equal(claimPatternsProblem({ ref: "x".repeat(MAX_CLAIM_PATTERN_LENGTH) }), null);
  assert.notEqual(claimPatternsProblem({ ref: 7 as unknown as string }), null);
});
