/**
 * The run policy rules of `server/runs/policy.ts` on their own: the subset rules of issuance (lists,
 * quotas and spend limits) against a limited issuer (the bootstrap can only test them against an
 * unlimited one over HTTP), and the start check over normalized start fields, repository URLs
 * included, and the files that content refers to.
 */
import assert from "node:assert/strict";
import {
  contentViolation,
  grantRunPolicy,
  referencedFileIds,
  repositoryOfUrl,
  type RunPolicy,
  runPolicyOf,
  startViolation,
} from "../../server/runs/policy.ts";

const issuer: RunPolicy = runPolicyOf({
  agentIds: ["agent_a", "agent_b"],
  environmentIds: ["env_a"],
  vaultIds: ["vlt_a", "vlt_b"],
  memoryStoreIds: ["memstore_a"],
  repositories: ["acme/tools"],
  fileIds: [],
  maxActiveRuns: 4,
});

Deno.test("policy: an issued policy is never wider than a limited issuer's", () => {
  const granted = grantRunPolicy({ vaultIds: ["vlt_b"], repositories: ["ACME/Tools"] }, issuer);
  assert.ok(!Array.isArray(granted));
  assert.deepEqual(granted.agentIds, ["agent_a", "agent_b"], "absent: the issuer's");
  assert.deepEqual(granted.environmentIds, ["env_a"], "absent: the issuer's");
  assert.deepEqual(granted.vaultIds, ["vlt_b"]);
  assert.deepEqual(granted.repositories, ["acme/tools"], "compared and kept in lower case");
  assert.deepEqual(granted.memoryStoreIds, [], "absent: none");
  assert.equal(granted.maxActiveRuns, 4);
  for (
    const [field, value] of [
      ["environmentIds", ["env_b"]],
      ["vaultIds", ["vlt_a", "vlt_c"]],
      ["memoryStoreIds", ["memstore_b"]],
      ["repositories", ["acme/other"]],
      ["fileIds", ["file_a"]],
    ] as const
  ) {
    const refused = grantRunPolicy({ [field]: value }, issuer);
    assert.ok(Array.isArray(refused), field);
    assert.equal(refused[0].path, field);
  }
  // An unlimited issuer (the bootstrap) grants any list, and nothing it is not asked for.
  const fromBootstrap = grantRunPolicy({ fileIds: ["file_z"] }, runPolicyOf({ bootstrap: true }));
  assert.ok(!Array.isArray(fromBootstrap));
  assert.equal(fromBootstrap.environmentIds, null);
  assert.deepEqual(fromBootstrap.vaultIds, []);
  assert.deepEqual(fromBootstrap.fileIds, ["file_z"]);
});

Deno.test("policy: issued spend limits are never wider than a limited issuer's", () => {
  const limited = runPolicyOf({
    budget: { amount: "1000", period: "month" },
    maxRunCost: { amount: "300" },
    maxRunSeconds: 600,
  });
  const inherited = grantRunPolicy({}, limited);
  assert.ok(!Array.isArray(inherited));
  assert.deepEqual(inherited.spend, {
    budget: { amount: 1000n, period: "month" },
    maxRunCost: 300n,
    maxRunSeconds: 600,
  }, "absent: the issuer's");
  const narrower = grantRunPolicy({
    budget: { amount: "500", currency: "USD", period: "total" },
    maxRunCost: { amount: "100", currency: "USD" },
    maxRunSeconds: 60,
  }, limited);
  assert.ok(!Array.isArray(narrower));
  assert.deepEqual(narrower.spend, {
    budget: { amount: 500n, period: "total" },
    maxRunCost: 100n,
    maxRunSeconds: 60,
  });
  for (
    const [fields, path] of [
      [{ budget: { amount: "1001", currency: "USD", period: "month" } }, "budget.amount"],
      // A day budget of the same amount allows about thirty times more a month.
      [{ budget: { amount: "1000", currency: "USD", period: "day" } }, "budget.period"],
      [{ maxRunCost: { amount: "301", currency: "USD" } }, "maxRunCost.amount"],
      [{ maxRunSeconds: 601 }, "maxRunSeconds"],
    ] as const
  ) {
    const refused = grantRunPolicy(fields, limited);
    assert.ok(Array.isArray(refused), path);
    assert.deepEqual(refused.map((detail) => detail.path), [path]);
  }
  // An unlimited issuer grants any limit, and none it is not asked for.
  const fromBootstrap = grantRunPolicy({ maxRunSeconds: 60 }, runPolicyOf({ bootstrap: true }));
  assert.ok(!Array.isArray(fromBootstrap));
  assert.deepEqual(fromBootstrap.spend, { budget: null, maxRunCost: null, maxRunSeconds: 60 });
});

Deno.test("policy: a start is checked over its normalized fields, version pins with their agent", () => {
  const start = { agentId: "agent_a", environmentId: "env_a" };
  assert.equal(startViolation(issuer, { ...start, agentVersion: 7 }), null);
  assert.equal(
    startViolation(issuer, { ...start, agentId: "agent_c", agentVersion: 1 })?.code,
    "agentNotAllowed",
  );
  assert.equal(
    startViolation(issuer, {
      ...start,
      vaultIds: ["vlt_a"],
      resources: [
        { type: "github_repository", url: "https://www.github.com/acme/tools/" },
        { type: "memory_store", memory_store_id: "memstore_a", access: "read_only" },
      ],
    }),
    null,
  );
  const file = startViolation(issuer, { ...start, resources: [{ type: "file", file_id: "f" }] });
  assert.deepEqual([file?.field, file?.policyField], ["resources", "fileIds"]);
  const missingId = startViolation(issuer, { ...start, resources: [{ type: "file" }] });
  assert.deepEqual([missingId?.code, missingId?.policyField], ["resourceNotAllowed", undefined]);
});

Deno.test("policy: only plain https://github.com/owner/name URLs name a repository", () => {
  assert.equal(repositoryOfUrl("https://github.com/acme/tools"), "acme/tools");
  assert.equal(repositoryOfUrl("https://github.com/acme/tools.git"), "acme/tools");
  assert.equal(repositoryOfUrl("https://github.com/acme/x/../tools"), "acme/tools");
  for (
    const url of [
      "http://github.com/acme/tools",
      "https://github.com:8443/acme/tools",
      "https://github.com/acme/tools?ref=main",
      "https://github.com/acme/tools#x",
      "https://github.com/acme",
      "https://github.com/acme/tools/tree/main",
      "https://github.com/acme%2Ftools",
      "https://gitlab.com/acme/tools",
      "https://github.com.evil.example/acme/tools",
      "git@github.com:acme/tools.git",
      42,
    ]
  ) {
    assert.equal(repositoryOfUrl(url), null, String(url));
  }
});

Deno.test("policy: every file_id in content is found, at any depth, without overflowing the stack", () => {
  const events = [
    { type: "user.message", content: [{ type: "image", source: { type: "file", file_id: "f1" } }] },
    { type: "user.define_outcome", rubric: { type: "file", file_id: "f2" } },
    { type: "user.custom_tool_result", content: [{ type: "container_upload", file_id: null }] },
  ];
  assert.deepEqual(referencedFileIds(events), ["f1", "f2", ""]);
  // A body of 1 MiB can nest far deeper than the call stack allows.
  let deep: unknown = { file_id: "f3" };
  for (let i = 0; i < 200_000; i++) deep = [deep];
  assert.deepEqual(referencedFileIds(deep), ["f3"]);
  const limited = runPolicyOf({ fileIds: ["f1", "f2"] });
  assert.equal(contentViolation(limited, "events", events.slice(0, 2)), null);
  const refused = contentViolation(limited, "events", events);
  assert.equal(refused?.code, "resourceNotAllowed");
  assert.equal(refused?.field, "events");
  assert.equal(contentViolation(runPolicyOf({}), "input", deep)?.policyField, "fileIds");
  assert.equal(contentViolation(runPolicyOf({ bootstrap: true }), "input", deep), null);
});
