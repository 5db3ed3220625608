/**
 * The cross-run inbox (`GET /v1/pending`) and the activity feed's JSON pages
 * (`GET /v1/activity`) against the in-process fake provider: each kind of caller sees exactly
 * the requests and changes of the runs it may read, with `deniedAt`, the run's title, agent and
 * owner's name; an answer leaves the inbox and shows in the feed with who answered; the inbox
 * is served from the store (no provider call per run); paging and bad queries.
 */
import assert from "node:assert/strict";
import { assertCode, type Gateway, startGateway, waitFor } from "./_harness.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const TIMEOUT_MS = 120_000;

function scriptToolCalls(gateway: Gateway): void {
  gateway.fake.managedAgents!.script = () => [
    { type: "agent.tool_use", name: "bash", input: { command: "ls" }, evaluated_permission: "ask" },
    { type: "agent.custom_tool_use", name: "lookup", input: { q: "x" } },
  ];
}

async function inbox(gateway: Gateway, bearer: string, query = ""): Promise<Json> {
  const answer = await gateway.request("GET", `/v1/pending${query}`, { bearer });
  assert.equal(answer.status, 200, answer.text);
  return answer.json;
}

/** Starts a run and waits until the inbox of `bearer` lists its two requests. */
async function startWaitingRun(gateway: Gateway, bearer: string, title: string): Promise<string> {
  const started = await gateway.request("POST", "/v1/runs", {
    bearer,
    body: { input: "go", title },
  });
  assert.equal(started.status, 201, started.text);
  const runId = started.json.runId;
  await waitFor(async () => {
    const page = await inbox(gateway, bearer);
    return page.pending.filter((item: Json) => item.runId === runId).length === 2
      ? true
      : undefined;
  });
  return runId;
}

Deno.test("inbox: each caller sees exactly the pending requests of the runs it may read", async () => {
  const gateway = await startGateway({ pendingTimeoutMs: TIMEOUT_MS });
  try {
    scriptToolCalls(gateway);
    const named = (name: string) => ({ name }) as never;
    const alice = await gateway.issue(["session:read", "session:write"], named("Alice"));
    const bob = await gateway.issue(["session:read", "session:write"]);
    const approver = await gateway.issue(["session:read", "session:approve"], named("Ann"));
    const reader = await gateway.issue(["session:read"]);
    const aliceRun = await startWaitingRun(gateway, alice.bearer, "alice's run");
    const bobRun = await startWaitingRun(gateway, bob.bearer, "bob's run");

    const mine = await inbox(gateway, alice.bearer);
    assert.deepEqual(mine.pending.map((item: Json) => [item.runId, item.kind, item.name]), [
      [aliceRun, "confirmation", "bash"],
      [aliceRun, "custom_tool", "lookup"],
    ]);
    const item = mine.pending[0];
    assert.deepEqual(item.input, { command: "ls" });
    assert.equal(item.title, "alice's run");
    assert.equal(item.agentId, gateway.agentId);
    assert.equal(item.principalId, alice.principalId);
    assert.equal(item.principalName, "Alice");
    assert.equal(Date.parse(item.deniedAt) - Date.parse(item.requestedAt), TIMEOUT_MS);
    assert.equal(typeof mine.activitySeq, "number");
    assert.equal(mine.nextCursor, null);

    const bobs = await inbox(gateway, bob.bearer);
    assert.deepEqual(bobs.pending.map((p: Json) => p.runId), [bobRun, bobRun]);
    assert.equal(bobs.pending[0].principalName, undefined);
    assert.deepEqual((await inbox(gateway, reader.bearer)).pending, []);
    // Approvers and admins see every run's, newest run first.
    for (const bearer of [approver.bearer, gateway.admin]) {
      const all = await inbox(gateway, bearer);
      assert.deepEqual(all.pending.map((p: Json) => p.runId), [bobRun, bobRun, aliceRun, aliceRun]);
    }

    // Served from the store: listing the inbox asks the provider nothing.
    const reads = () =>
      gateway.fake.requests.filter((r) => r.method === "GET" && !r.path.includes("stream"))
        .length;
    const before = reads();
    await inbox(gateway, approver.bearer);
    await inbox(gateway, alice.bearer);
    assert.equal(reads(), before);

    // An answer leaves the inbox at once.
    const answer = await gateway.request("POST", `/v1/runs/${aliceRun}/tool-confirmations`, {
      bearer: approver.bearer,
      body: { toolUseId: item.toolUseId, result: "allow" },
    });
    assert.equal(answer.status, 200, answer.text);
    const after = await inbox(gateway, alice.bearer);
    assert.ok(!after.pending.some((p: Json) => p.toolUseId === item.toolUseId));

    // Paging by runs.
    const first = await inbox(gateway, approver.bearer, "?limit=1");
    assert.deepEqual(new Set(first.pending.map((p: Json) => p.runId)), new Set([bobRun]));
    assert.equal(typeof first.nextCursor, "string");
    const second = await inbox(
      gateway,
      approver.bearer,
      `?limit=1&cursor=${encodeURIComponent(first.nextCursor)}`,
    );
    assert.ok(second.pending.every((p: Json) => p.runId === aliceRun));
    assertCode(
      await gateway.request("GET", "/v1/pending?limit=0", { bearer: reader.bearer }),
      422,
      "invalidRequest",
    );
    assertCode(
      await gateway.request("GET", "/v1/pending?cursor=%25%25", { bearer: reader.bearer }),
      422,
      "invalidRequest",
    );
  } finally {
    await gateway.close();
  }
});

Deno.test("activity pages: each caller sees the changes of its runs, answers with who answered", async () => {
  const gateway = await startGateway({ pendingTimeoutMs: TIMEOUT_MS });
  try {
    scriptToolCalls(gateway);
    const alice = await gateway.issue(["session:read", "session:write"]);
    const bob = await gateway.issue(["session:read", "session:write"]);
    const approver = await gateway.issue(
      ["session:read", "session:approve"],
      { name: "Ann" } as never,
    );
    const aliceRun = await startWaitingRun(gateway, alice.bearer, "a");
    const bobRun = await startWaitingRun(gateway, bob.bearer, "b");
    const pending = (await inbox(gateway, alice.bearer)).pending[0];
    const answer = await gateway.request("POST", `/v1/runs/${aliceRun}/tool-confirmations`, {
      bearer: approver.bearer,
      body: { toolUseId: pending.toolUseId, result: "deny", denyMessage: "no" },
    });
    assert.equal(answer.status, 200, answer.text);

    const page = async (bearer: string, query = "") => {
      const got = await gateway.request("GET", `/v1/activity${query}`, { bearer });
      assert.equal(got.status, 200, got.text);
      return got.json;
    };
    const everything = await page(approver.bearer);
    const runs = new Set(everything.events.map((e: Json) => e.runId));
    assert.deepEqual(runs, new Set([aliceRun, bobRun]));
    const types = everything.events.filter((e: Json) => e.runId === aliceRun).map((e: Json) =>
      e.type
    );
    assert.deepEqual(types.slice(0, 4), [
      "run.created",
      "run.state",
      "tool.pending",
      "tool.pending",
    ]);
    const answered = everything.events.find((e: Json) => e.type === "tool.answered");
    assert.equal(answered.toolUseId, pending.toolUseId);
    assert.equal(answered.result, "deny");
    assert.equal(answered.answeredBy, approver.principalId);
    assert.equal(answered.answeredByName, "Ann");
    assert.equal(answered.principalId, alice.principalId);
    const waiting = everything.events.find((e: Json) => e.type === "run.state");
    assert.deepEqual([waiting.previousState, waiting.state], ["running", "requires_action"]);
    const toolPending = everything.events.find((e: Json) => e.type === "tool.pending");
    assert.equal(toolPending.input, undefined);
    assert.equal(
      Date.parse(toolPending.deniedAt) - Date.parse(toolPending.requestedAt),
      TIMEOUT_MS,
    );
    // Seqs increase; a page after a seq starts after it.
    const seqs = everything.events.map((e: Json) => e.seq);
    assert.deepEqual(seqs, [...seqs].sort((a: number, b: number) => a - b));
    const rest = await page(approver.bearer, `?after=${seqs[1]}&limit=2`);
    assert.deepEqual(rest.events.map((e: Json) => e.seq), seqs.slice(2, 4));
    assert.equal(rest.nextAfter, seqs[3]);

    const bobs = await page(bob.bearer);
    assert.ok(bobs.events.length > 0);
    assert.ok(bobs.events.every((e: Json) => e.runId === bobRun));
    assert.equal(bobs.nextAfter, seqs.at(-1));
    assertCode(
      await gateway.request("GET", "/v1/activity?after=-1", { bearer: bob.bearer }),
      422,
      "invalidRequest",
    );
  } finally {
    await gateway.close();
  }
});

Deno.test("inbox and activity: 503 providerNotConfigured without a provider credential", async () => {
  const gateway = await startGateway({ noCredential: true });
  try {
    assertCode(await gateway.request("GET", "/v1/pending"), 503, "providerNotConfigured");
    assertCode(await gateway.request("GET", "/v1/activity"), 503, "providerNotConfigured");
  } finally {
    await gateway.close();
  }
});
