/**
 * Reads of an active run (`GET /v1/runs/{runId}`) and its pending tool requests are served from
 * the run record and the event log; the provider is asked at most once a second per run across
 * callers (one shared read in flight per run on a replica) and across replicas (the "read at"
 * time stored on the run record): 100 concurrent reads cause a handful of provider calls, not
 * 100, on the service's one provider key.
 */
import assert from "node:assert/strict";
import { openKvStore } from "../../server/store/kv/mod.ts";
import { type Gateway, startGateway } from "./_harness.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/**
 * Provider calls of a run so far: its status reads (a session read, with a filtered look at its
 * latest status events) and the history listings of its pending requests (1,000 events a page;
 * the run's tail pages the history by 100).
 */
function providerReads(gateway: Gateway, runId: string) {
  const calls = gateway.fake.requests.filter((call) => call.method === "GET");
  return {
    status: calls.filter((call) => call.path === `/v1/sessions/${runId}`).length,
    history:
      calls.filter((call) =>
        call.path === `/v1/sessions/${runId}/events` && call.query === "limit=1000"
      ).length,
  };
}

/** A run waiting on a tool confirmation, its tail settled. */
async function waitingRun(gateway: Gateway, bearer: string): Promise<string> {
  gateway.fake.managedAgents!.script = () => [
    { type: "agent.tool_use", name: "bash", input: { command: "ls" }, evaluated_permission: "ask" },
  ];
  const started = await gateway.request("POST", "/v1/runs", { bearer, body: { input: "go" } });
  assert.equal(started.status, 201, started.text);
  const runId = started.json.runId;
  for (let i = 0; i < 100; i++) {
    const record = await gateway.store.runs.get(runId);
    if (record?.state === "requires_action") break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // A second past anything the start or the tail read, so the budget is open.
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  return runId;
}

Deno.test("provider reads: 100 concurrent reads of an active run ask the provider once or twice", async () => {
  const gateway = await startGateway({ serverOptions: { inFlightQuota: 500 } });
  try {
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const runId = await waitingRun(gateway, bearer);
    const before = providerReads(gateway, runId);
    const reads = await Promise.all(
      Array.from({ length: 100 }, () => gateway.request("GET", `/v1/runs/${runId}`, { bearer })),
    );
    for (const read of reads) {
      assert.equal(read.status, 200, read.text);
      assert.equal(read.json.state, "requires_action");
      assert.equal("statusReadAt" in read.json, false, "the budget's time stays inside");
    }
    const pendings = await Promise.all(
      Array.from(
        { length: 100 },
        () => gateway.request("GET", `/v1/runs/${runId}/pending`, { bearer }),
      ),
    );
    for (const pending of pendings) {
      assert.equal(pending.status, 200, pending.text);
      assert.equal(pending.json.pending.length, 1);
    }
    const after = providerReads(gateway, runId);
    assert.ok(after.status - before.status <= 2, `${after.status - before.status} status reads`);
    assert.ok(after.history - before.history <= 2, `${after.history - before.history} listings`);
  } finally {
    await gateway.close();
  }
});

Deno.test("provider reads: a reader in a loop gets at most one provider read a second", async () => {
  const gateway = await startGateway();
  try {
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const runId = await waitingRun(gateway, bearer);
    const before = providerReads(gateway, runId);
    const began = Date.now();
    let reads = 0;
    while (Date.now() - began < 1_500) {
      const [run, pending] = await Promise.all([
        gateway.request("GET", `/v1/runs/${runId}`, { bearer }),
        gateway.request("GET", `/v1/runs/${runId}/pending`, { bearer }),
      ]);
      assert.equal(run.status, 200, run.text);
      assert.equal(pending.status, 200, pending.text);
      reads++;
    }
    const after = providerReads(gateway, runId);
    assert.ok(reads > 20, `${reads} reads`);
    assert.ok(after.status - before.status <= 2, `${after.status - before.status} status reads`);
    assert.ok(after.history - before.history <= 2, `${after.history - before.history} listings`);
  } finally {
    await gateway.close();
  }
});

Deno.test("provider reads: two replicas on one store share the budget", async () => {
  const dir = await Deno.makeTempDir({ prefix: "provider-reads-" });
  const store = (namespace: string) => openKvStore({ path: `${dir}/store.kv`, namespace });
  const a = await startGateway({ store });
  const b = await startGateway({ store, replicaOf: a });
  try {
    const { bearer } = await a.issue(["session:read", "session:write"]);
    const runId = await waitingRun(a, bearer);
    const before = providerReads(a, runId);
    // A reads the status from the provider; B, within the second, answers from the record A
    // brought up to date: the stored "read at" is the budget both replicas spend.
    assert.equal((await a.request("GET", `/v1/runs/${runId}`, { bearer })).status, 200);
    assert.equal((await b.request("GET", `/v1/runs/${runId}`, { bearer })).status, 200);
    assert.equal(providerReads(a, runId).status - before.status, 1);
    // The same for the history behind pending requests: B, holding no listing of its own, waits
    // for the budget rather than asking within A's second.
    const listedAt = Date.now();
    const first = await a.request("GET", `/v1/runs/${runId}/pending`, { bearer });
    const second = await b.request("GET", `/v1/runs/${runId}/pending`, { bearer });
    assert.deepEqual(second.json, first.json);
    assert.equal(first.json.pending.length, 1);
    assert.equal(providerReads(a, runId).history - before.history, 2);
    assert.ok(Date.now() - listedAt >= 900, "the second listing waited for the budget");
  } finally {
    await b.close();
    await a.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("provider reads: a finished run's pending requests come from its record, no provider call", async () => {
  const gateway = await startGateway();
  try {
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const runId = await waitingRun(gateway, bearer);
    const cancelled = await gateway.request("POST", `/v1/runs/${runId}/cancel`, { bearer });
    assert.equal(cancelled.status, 202, cancelled.text);
    const before = providerReads(gateway, runId);
    const pending = await gateway.request("GET", `/v1/runs/${runId}/pending`, { bearer });
    assert.deepEqual(pending.json, { pending: [] });
    const read = await gateway.request("GET", `/v1/runs/${runId}`, { bearer });
    assert.equal(read.json.state, "cancelled");
    assert.deepEqual(providerReads(gateway, runId), before);
  } finally {
    await gateway.close();
  }
});
