/**
 * The run routes end to end against the in-process fake provider: start, read back, list, cancel,
 * follow-up message, capabilities, ownership (404), agent policy, quotas, provider failures,
 * deadlines, idempotent replays and the audit log.
 */
import assert from "node:assert/strict";
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import { assertCode, type Gateway, startGateway, waitFor } from "./_harness.ts";

const BETA = "managed-agents-2026-04-01";

function sessionCreations(gateway: Gateway): number {
  return gateway.fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/sessions")
    .length;
}

function eventsSent(gateway: Gateway, runId: string): { type: string }[] {
  return gateway.fake.requests
    .filter((r) => r.method === "POST" && r.path === `/v1/sessions/${runId}/events`)
    .flatMap((r) => (r.body as { events: { type: string }[] }).events);
}

Deno.test("runs: start, read back, list, cancel and follow up through the gateway", async (t) => {
  const gateway = await startGateway();
  try {
    const writer = await gateway.issue(["session:read", "session:write"], {
      agentIds: [gateway.agentId],
      maxActiveRuns: 4,
    });
    const other = await gateway.issue(["session:read", "session:write"]);
    let runId = "";

    await t.step("GET /v1/runtime reports runs: true and the caller's run policy", async () => {
      const answer = await gateway.request("GET", "/v1/runtime", { bearer: writer.bearer });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.json.runs, true);
      assert.deepEqual(answer.json.agentIds, [gateway.agentId]);
      assert.equal(answer.json.maxActiveRuns, 4);
    });

    await t.step(
      "POST /v1/runs starts a session with the provider key and beta header",
      async () => {
        gateway.holdTurns(true);
        const before = gateway.fake.requests.length;
        const answer = await gateway.request("POST", "/v1/runs", {
          bearer: writer.bearer,
          body: { input: "Summarize the repository", title: "first" },
        });
        assert.equal(answer.status, 201, answer.text);
        const run = answer.json;
        runId = run.runId;
        assert.match(runId, /^sesn_/);
        assert.equal(run.principalId, writer.principalId);
        assert.equal(run.agentId, gateway.agentId);
        assert.equal(run.environmentId, gateway.environmentId);
        assert.equal(run.title, "first");
        assert.equal(run.state, "running");
        assert.equal(run.lastEventSeq, 0);
        assert.equal(typeof run.createdAt, "string");
        assert.equal(typeof run.updatedAt, "string");
        assert.ok(!("cancelRequested" in run));
        const calls = gateway.fake.requests.slice(before);
        // The start's own calls; the run's tail (GETs of the stream and history) may have begun.
        assert.deepEqual(calls.filter((r) => r.method === "POST").map((r) => `POST ${r.path}`), [
          "POST /v1/sessions",
          `POST /v1/sessions/${runId}/events`,
        ]);
        for (const call of calls) {
          assert.equal(call.auth, "x-api-key");
          assert.ok(call.headers["provider-beta"].split(",").includes(BETA));
        }
        assert.deepEqual(eventsSent(gateway, runId).map((e) => e.type), ["user.message"]);
      },
    );

    await t.step("GET /v1/runs/{runId} reads it back, refreshed from the provider", async () => {
      const answer = await gateway.request("GET", `/v1/runs/${runId}`, { bearer: writer.bearer });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.json.runId, runId);
      assert.equal(answer.json.state, "running");
      assert.ok(
        gateway.fake.requests.some((r) => r.method === "GET" && r.path === `/v1/sessions/${runId}`),
      );
    });

    await t.step(
      "GET /v1/runs lists only the caller's own runs; admins see every run",
      async () => {
        const theirs = await gateway.request("POST", "/v1/runs", {
          bearer: other.bearer,
          body: { input: "other work", metadata: { agent_id: gateway.otherAgentId } },
        });
        assert.equal(theirs.status, 201, theirs.text);
        const mine = await gateway.request("GET", "/v1/runs", { bearer: writer.bearer });
        assert.equal(mine.status, 200, mine.text);
        assert.deepEqual(mine.json.runs.map((r: { runId: string }) => r.runId), [runId]);
        assert.equal(mine.json.nextCursor, null);
        const all = await gateway.request("GET", "/v1/runs?limit=1");
        assert.equal(all.json.runs.length, 1);
        assert.equal(all.json.runs[0].runId, theirs.json.runId, "newest first");
        const next = await gateway.request("GET", `/v1/runs?limit=1&cursor=${all.json.nextCursor}`);
        assert.deepEqual(next.json.runs.map((r: { runId: string }) => r.runId), [runId]);
        const filtered = await gateway.request(
          "GET",
          `/v1/runs?principalId=${other.principalId}`,
        );
        assert.deepEqual(filtered.json.runs.map((r: { runId: string }) => r.runId), [
          theirs.json.runId,
        ]);
        const refused = await gateway.request("GET", `/v1/runs?principalId=${other.principalId}`, {
          bearer: writer.bearer,
        });
        assertCode(refused, 403, "missingCapability");
        assertCode(await gateway.request("GET", "/v1/runs?limit=0"), 422, "invalidRequest");
        assertCode(await gateway.request("GET", "/v1/runs?state=done"), 422, "invalidRequest");
      },
    );

    await t.step("another principal's run is 404 runNotFound, for reads and writes", async () => {
      assertCode(
        await gateway.request("GET", `/v1/runs/${runId}`, { bearer: other.bearer }),
        404,
        "runNotFound",
      );
      assertCode(
        await gateway.request("POST", `/v1/runs/${runId}/cancel`, { bearer: other.bearer }),
        404,
        "runNotFound",
      );
      assertCode(
        await gateway.request("POST", `/v1/runs/${runId}/messages`, {
          bearer: other.bearer,
          body: { input: "hijack" },
        }),
        404,
        "runNotFound",
      );
      assertCode(await gateway.request("GET", "/v1/runs/sesn_unknown"), 404, "runNotFound");
      assert.equal(eventsSent(gateway, runId).length, 1, "nothing reached the provider");
    });

    await t.step("an approver reads any run but cannot cancel it", async () => {
      const approver = await gateway.issue(["session:read", "session:write", "session:approve"]);
      const read = await gateway.request("GET", `/v1/runs/${runId}`, { bearer: approver.bearer });
      assert.equal(read.status, 200, read.text);
      assertCode(
        await gateway.request("POST", `/v1/runs/${runId}/cancel`, { bearer: approver.bearer }),
        404,
        "runNotFound",
      );
    });

    await t.step("POST /v1/runs/{runId}/cancel interrupts the session: 202 cancelled", async () => {
      const answer = await gateway.request("POST", `/v1/runs/${runId}/cancel`, {
        bearer: writer.bearer,
      });
      assert.equal(answer.status, 202, answer.text);
      assert.equal(answer.json.state, "cancelled");
      assert.equal(typeof answer.json.endedAt, "string");
      assert.deepEqual(eventsSent(gateway, runId).map((e) => e.type), [
        "user.message",
        "user.interrupt",
      ]);
      const read = await gateway.request("GET", `/v1/runs/${runId}`, { bearer: writer.bearer });
      assert.equal(read.json.state, "cancelled");
    });

    await t.step("POST /v1/runs/{runId}/messages sends a follow-up and wakes the run", async () => {
      const answer = await gateway.request("POST", `/v1/runs/${runId}/messages`, {
        bearer: writer.bearer,
        body: { input: [{ role: "user", content: "And the tests?" }] },
      });
      assert.equal(answer.status, 202, answer.text);
      assert.equal(answer.json.state, "running");
      assert.equal(answer.json.endedAt, undefined);
      assert.deepEqual(eventsSent(gateway, runId).map((e) => e.type), [
        "user.message",
        "user.interrupt",
        "user.message",
      ]);
    });

    await t.step("a finished turn reads back completed and frees its slot", async () => {
      gateway.holdTurns(false);
      const started = await gateway.request("POST", "/v1/runs", {
        bearer: writer.bearer,
        body: { input: "quick" },
      });
      assert.equal(started.status, 201, started.text);
      const id = started.json.runId;
      let state = "";
      for (let i = 0; i < 50 && state !== "completed"; i++) {
        state = (await gateway.request("GET", `/v1/runs/${id}`, { bearer: writer.bearer })).json
          .state;
        if (state !== "completed") await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(state, "completed");
      const slots = await gateway.store.runs.countSlots(writer.principalId, Date.now());
      assert.equal(slots, 1, "only the woken run holds a slot");
    });
  } finally {
    await gateway.close();
  }
});

Deno.test("runs: a refresh that read the provider before a cancel does not reopen the run", async () => {
  const gateway = await startGateway();
  try {
    gateway.holdTurns(true);
    const started = await gateway.request("POST", "/v1/runs", { body: { input: "hi" } });
    assert.equal(started.status, 201, started.text);
    const runId = started.json.runId;
    // A read refreshes the run from the provider; its session read is held back...
    gateway.fake.delayNext({ method: "GET", path: `/v1/sessions/${runId}`, ms: 300 });
    const reading = gateway.request("GET", `/v1/runs/${runId}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // ...while the run is cancelled, and the provider, still winding the turn down, says running.
    const cancelled = await gateway.request("POST", `/v1/runs/${runId}/cancel`);
    assert.equal(cancelled.status, 202, cancelled.text);
    gateway.fake.managedAgents!.setStatus(runId, "running");
    const read = await reading;
    assert.equal(read.status, 200, read.text);
    assert.equal(read.json.state, "cancelled");
    assert.equal((await gateway.store.runs.get(runId))?.state, "cancelled");
  } finally {
    await gateway.close();
  }
});

Deno.test("runs: capabilities, agent policy and quotas refuse before the provider", async (t) => {
  const gateway = await startGateway({ maxActiveRuns: 3 });
  gateway.holdTurns(true);
  try {
    await t.step("a session:read-only principal gets 403 on start", async () => {
      const reader = await gateway.issue(["session:read"]);
      const before = gateway.fake.requests.length;
      const answer = await gateway.request("POST", "/v1/runs", {
        bearer: reader.bearer,
        body: { input: "hi" },
      });
      assertCode(answer, 403, "missingCapability");
      assert.equal(answer.json.error.requiredCapability, "session:write");
      assert.equal(gateway.fake.requests.length, before);
    });

    await t.step("an agent outside agentIds gets 403 agentNotAllowed", async () => {
      const limited = await gateway.issue(["session:read", "session:write"], {
        agentIds: [gateway.agentId],
      });
      const before = gateway.fake.requests.length;
      const answer = await gateway.request("POST", "/v1/runs", {
        bearer: limited.bearer,
        body: { input: "hi", metadata: { agent_id: gateway.otherAgentId } },
      });
      assertCode(answer, 403, "agentNotAllowed");
      assert.equal(gateway.fake.requests.length, before);
    });

    await t.step("issuance keeps run policies within the issuer's", async () => {
      const limited = await gateway.issue(["session:read", "session:write"], {
        agentIds: [gateway.agentId],
        maxActiveRuns: 2,
      });
      // The bootstrap lets an admin issue; a limited issuer cannot exist without authority:admin,
      // so the subset rules are checked here against the bootstrap's (any agent, 100 runs).
      const tooMany = await gateway.request("POST", "/v1/principals", {
        body: {
          principalId: crypto.randomUUID(),
          capabilities: ["session:read"],
          expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
          maxActiveRuns: 101,
        },
      });
      assertCode(tooMany, 422, "invalidRequest");
      const list = await gateway.request("GET", "/v1/principals");
      const entry = list.json.principals.find((p: { principalId: string }) =>
        p.principalId === limited.principalId
      );
      assert.deepEqual(entry.agentIds, [gateway.agentId]);
      assert.equal(entry.maxActiveRuns, 2);
    });

    await t.step("maxActiveRuns gets 429 runQuotaExceeded; a cancel frees a slot", async () => {
      const capped = await gateway.issue(["session:read", "session:write"], { maxActiveRuns: 2 });
      const runs = [];
      for (let i = 0; i < 2; i++) {
        const answer = await gateway.request("POST", "/v1/runs", {
          bearer: capped.bearer,
          body: { input: `run ${i}` },
        });
        assert.equal(answer.status, 201, answer.text);
        runs.push(answer.json.runId);
      }
      const before = sessionCreations(gateway);
      const refused = await gateway.request("POST", "/v1/runs", {
        bearer: capped.bearer,
        body: { input: "one too many" },
      });
      assertCode(refused, 429, "runQuotaExceeded");
      assert.ok(Number(refused.headers.get("retry-after")) >= 1);
      assert.equal(sessionCreations(gateway), before);
      const cancelled = await gateway.request("POST", `/v1/runs/${runs[0]}/cancel`, {
        bearer: capped.bearer,
      });
      assert.equal(cancelled.status, 202, cancelled.text);
      const again = await gateway.request("POST", "/v1/runs", {
        bearer: capped.bearer,
        body: { input: "now it fits" },
      });
      assert.equal(again.status, 201, again.text);
      // Waking the cancelled run would need a third slot.
      assertCode(
        await gateway.request("POST", `/v1/runs/${runs[0]}/messages`, {
          bearer: capped.bearer,
          body: { input: "wake up" },
        }),
        429,
        "runQuotaExceeded",
      );
    });

    await t.step("--max-active-runs caps the whole service", async () => {
      // Two runs are active; the service allows three.
      const someone = await gateway.issue(["session:read", "session:write"]);
      const third = await gateway.request("POST", "/v1/runs", {
        bearer: someone.bearer,
        body: { input: "the last one the service allows" },
      });
      assert.equal(third.status, 201, third.text);
      const refused = await gateway.request("POST", "/v1/runs", {
        bearer: someone.bearer,
        body: { input: "over the service limit" },
      });
      assertCode(refused, 429, "runQuotaExceeded");
      assert.match(refused.json.error.message, /runtime/);
    });

    await t.step("concurrent starts never exceed maxActiveRuns", async () => {
      const other = await startGateway();
      other.holdTurns(true);
      try {
        const capped = await other.issue(["session:read", "session:write"], { maxActiveRuns: 3 });
        const answers = await Promise.all(
          Array.from(
            { length: 8 },
            (_, i) =>
              other.request("POST", "/v1/runs", { bearer: capped.bearer, body: { input: `${i}` } }),
          ),
        );
        assert.equal(answers.filter((a) => a.status === 201).length, 3);
        assert.equal(answers.filter((a) => a.status === 429).length, 5);
        assert.equal(sessionCreations(other), 3);
      } finally {
        await other.close();
      }
    });
  } finally {
    await gateway.close();
  }
});

Deno.test("runs: a full quota refreshes the principal's runs; ended ones free their slots", async () => {
  const gateway = await startGateway();
  try {
    const single = await gateway.issue(["session:read", "session:write"], { maxActiveRuns: 1 });
    const first = await gateway.request("POST", "/v1/runs", {
      bearer: single.bearer,
      body: { input: "quick one" },
    });
    assert.equal(first.status, 201, first.text);
    // The fake's echo turn ends at once; nobody reads the run before the next start. Either the
    // run's tail records the end, or the start finding the quota full refreshes the run from the
    // provider (whichever comes first; a tail's write racing the refresh may hold the slot a
    // moment longer, so wait for the provider's idle and the record's end).
    const session = gateway.fake.managedAgents!.sessions.get(first.json.runId)!;
    for (let i = 0; i < 200; i++) {
      const record = await gateway.store.runs.get(first.json.runId);
      if (session.record.status === "idle" && record?.state === "completed") break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // The second run lasts (its tail would otherwise record its end before the check below).
    gateway.holdTurns(true);
    const second = await gateway.request("POST", "/v1/runs", {
      bearer: single.bearer,
      body: { input: "next one" },
    });
    assert.equal(second.status, 201, second.text);
    const read = await gateway.request("GET", `/v1/runs/${first.json.runId}`, {
      bearer: single.bearer,
    });
    assert.equal(read.json.state, "completed");
    assert.equal(read.json.stopReason, "end_turn");

    // A session the provider no longer knows ends its run as failed, freeing the slot.
    gateway.fake.managedAgents!.sessions.delete(second.json.runId);
    const gone = await gateway.request("GET", `/v1/runs/${second.json.runId}`, {
      bearer: single.bearer,
    });
    assert.equal(gone.status, 200, gone.text);
    assert.equal(gone.json.state, "failed");
    assert.equal(await gateway.store.runs.countSlots(single.principalId, Date.now()), 0);
  } finally {
    await gateway.close();
  }
});

Deno.test("runs: provider failures map to providerError and providerUnavailable", async (t) => {
  const gateway = await startGateway();
  gateway.holdTurns(true);
  const writer = await gateway.issue(["session:read", "session:write"], { maxActiveRuns: 1 });
  const fast = { "retry-after-ms": "1" };
  async function start() {
    return await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "hi" },
    });
  }
  try {
    await t.step("a provider 4xx is 502 providerError with its status and type", async () => {
      gateway.fake.failNext({ method: "POST", path: "/v1/sessions", status: 400 });
      const answer = await start();
      assertCode(answer, 502, "providerError");
      assert.equal(answer.json.error.providerStatus, 400);
      assert.equal(answer.json.error.providerErrorType, "invalid_request_error");
    });

    await t.step("a provider 5xx (after the client's retries) is 502 providerError", async () => {
      gateway.fake.failNext({
        method: "POST",
        path: "/v1/sessions",
        status: 500,
        times: 3,
        headers: fast,
      });
      const answer = await start();
      assertCode(answer, 502, "providerError");
      assert.equal(answer.json.error.providerStatus, 500);
    });

    await t.step("a provider 429 is 503 providerUnavailable with Retry-After", async () => {
      gateway.fake.failNext({
        method: "POST",
        path: "/v1/sessions",
        status: 429,
        times: 3,
        headers: fast,
      });
      const answer = await start();
      assertCode(answer, 503, "providerUnavailable");
      assert.equal(answer.json.error.providerStatus, 429);
      assert.ok(Number(answer.headers.get("retry-after")) >= 1);
    });

    await t.step("a failed kickoff deletes the session it created", async () => {
      gateway.fake.failNext({ method: "POST", path: /\/events$/, status: 400 });
      const answer = await start();
      assertCode(answer, 502, "providerError");
      const deleted = gateway.fake.requests.filter((r) => r.method === "DELETE");
      assert.equal(deleted.length, 1);
    });

    await t.step("the caller's x-deadline caps the wait on the provider", async () => {
      const sessions = gateway.fake.managedAgents!.sessions;
      const liveBefore = sessions.size;
      const deletes = () =>
        gateway.fake.requests.filter((r) =>
          r.method === "DELETE" && r.path.startsWith("/v1/sessions/")
        )
          .length;
      const deletesBefore = deletes();
      gateway.fake.delayNext({ method: "POST", path: "/v1/sessions", ms: 5_000 });
      const began = Date.now();
      const answer = await gateway.request("POST", "/v1/runs", {
        bearer: writer.bearer,
        body: { input: "hi" },
        headers: { "x-deadline": new Date(Date.now() + 600).toISOString() },
      });
      assertCode(answer, 503, "providerUnavailable");
      assert.ok(Date.now() - began < 4_000, "answered at the deadline, not after the provider");
      // The provider still made the session after the caller gave up: it is deleted, not left
      // behind as a run nobody knows of.
      for (let waited = 0; deletes() === deletesBefore && waited < 10_000; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(deletes(), deletesBefore + 1, "the late session was deleted");
      assert.equal(sessions.size, liveBefore, "no session is left behind");
    });

    await t.step("every failed start released its slot", async () => {
      assert.equal(await gateway.store.runs.countSlots(writer.principalId, Date.now()), 0);
      const answer = await start();
      assert.equal(answer.status, 201, answer.text);
    });
  } finally {
    await gateway.close();
  }

  await t.step("an unreachable provider is 503 providerUnavailable", async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = listener.addr.port;
    listener.close();
    const unreachable = await startGateway({ baseUrl: `http://127.0.0.1:${port}` });
    try {
      const answer = await unreachable.request("POST", "/v1/runs", { body: { input: "hi" } });
      assertCode(answer, 503, "providerUnavailable");
      assert.ok(Number(answer.headers.get("retry-after")) >= 1);
    } finally {
      await unreachable.close();
    }
  });

  await t.step("without a credential every run route is 503 providerNotConfigured", async () => {
    const off = await startGateway({ noCredential: true });
    const setup = off.fake.requests.length;
    try {
      const runtime = await off.request("GET", "/v1/runtime");
      assert.equal(runtime.json.runs, false);
      assertCode(
        await off.request("POST", "/v1/runs", { body: { input: "hi" } }),
        503,
        "providerNotConfigured",
      );
      assertCode(await off.request("GET", "/v1/runs"), 503, "providerNotConfigured");
      assertCode(await off.request("GET", "/v1/runs/sesn_1"), 503, "providerNotConfigured");
      assertCode(await off.request("POST", "/v1/runs/sesn_1/cancel"), 503, "providerNotConfigured");
      assertCode(
        await off.request("POST", "/v1/runs/sesn_1/messages", { body: { input: "x" } }),
        503,
        "providerNotConfigured",
      );
      assert.equal(off.fake.requests.length, setup, "nothing reached the provider");
    } finally {
      await off.close();
    }
  });

  await t.step("no agent or environment to resolve is 422 invalidRequest", async () => {
    const bare = await startGateway({ defaultEnvironment: null });
    try {
      const answer = await bare.request("POST", "/v1/runs", { body: { input: "hi" } });
      assertCode(answer, 422, "invalidRequest");
      assert.equal(answer.json.error.details[0].path, "metadata.environment_id");
    } finally {
      await bare.close();
    }
  });
});

Deno.test("runs: a replayed start returns the same run and creates one provider session", async (t) => {
  const gateway = await startGateway();
  gateway.holdTurns(true);
  try {
    await t.step("a replay with the same key answers the recorded run", async () => {
      const key = crypto.randomUUID();
      const first = await gateway.request("POST", "/v1/runs", { key, body: { input: "once" } });
      assert.equal(first.status, 201, first.text);
      const again = await gateway.request("POST", "/v1/runs", { key, body: { input: "once" } });
      assert.equal(again.status, 201, again.text);
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      assert.deepEqual(again.json, first.json);
      assert.equal(sessionCreations(gateway), 1);
      assertCode(
        await gateway.request("POST", "/v1/runs", { key, body: { input: "other" } }),
        422,
        "idempotencyConflict",
      );
    });

    await t.step("two racing requests with one key create one session", async () => {
      const before = sessionCreations(gateway);
      gateway.fake.delayNext({ method: "POST", path: "/v1/sessions", ms: 200 });
      const key = crypto.randomUUID();
      const answers = await Promise.all([
        gateway.request("POST", "/v1/runs", { key, body: { input: "race" } }),
        gateway.request("POST", "/v1/runs", { key, body: { input: "race" } }),
      ]);
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(statuses, [201, 409], answers.map((a) => a.text).join("\n"));
      assertCode(answers.find((a) => a.status === 409)!, 409, "idempotencyInFlight");
      assert.equal(sessionCreations(gateway), before + 1);
      const later = await gateway.request("POST", "/v1/runs", { key, body: { input: "race" } });
      assert.equal(later.json.runId, answers.find((a) => a.status === 201)!.json.runId);
      assert.equal(sessionCreations(gateway), before + 1);
    });
  } finally {
    await gateway.close();
  }
});

Deno.test("audit: issuance, revocation and run actions are recorded; admins read them", async () => {
  const gateway = await startGateway();
  gateway.holdTurns(true);
  try {
    const writer = await gateway.issue(["session:read", "session:write"]);
    const started = await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "secret plans" },
    });
    const runId = started.json.runId;
    await gateway.request("POST", `/v1/runs/${runId}/messages`, {
      bearer: writer.bearer,
      body: { input: "more secret plans" },
    });
    await gateway.request("POST", `/v1/runs/${runId}/cancel`, { bearer: writer.bearer });
    const revoke = await gateway.request("DELETE", `/v1/principals/${writer.principalId}`);
    assert.equal(revoke.status, 204, revoke.text);

    const answer = await gateway.request("GET", "/v1/audit");
    assert.equal(answer.status, 200, answer.text);
    const actions = answer.json.entries.map((e: { action: string }) => e.action);
    assert.deepEqual(actions, [
      "principal.revoked",
      "run.cancelled",
      "run.message",
      "run.started",
      "principal.issued",
    ]);
    const started_ = answer.json.entries[3];
    assert.equal(started_.actorId, writer.principalId);
    assert.equal(started_.runId, runId);
    assert.equal(started_.outcome, "ok");
    assert.equal(typeof started_.correlationId, "string");
    assert.equal(answer.json.entries[4].subjectId, writer.principalId);
    assert.ok(!answer.text.includes("secret plans"), "no message content in the audit log");

    const filtered = await gateway.request("GET", "/v1/audit?action=run.started&limit=5");
    assert.equal(filtered.json.entries.length, 1);
    const page = await gateway.request("GET", "/v1/audit?limit=2");
    assert.equal(page.json.entries.length, 2);
    const rest = await gateway.request("GET", `/v1/audit?limit=10&cursor=${page.json.nextCursor}`);
    assert.equal(rest.json.entries.length, 3);
    assertCode(await gateway.request("GET", "/v1/audit?action=nope"), 422, "invalidRequest");
    const reader = await gateway.issue(["session:read"]);
    assertCode(
      await gateway.request("GET", "/v1/audit", { bearer: reader.bearer }),
      403,
      "missingCapability",
    );
  } finally {
    await gateway.close();
  }
});

Deno.test({
  name: `runs: two replicas on one PostgreSQL store keep maxActiveRuns together${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const open = (namespace: string) => openPostgresStore({ url: db.url, namespace });
    const first = await startGateway({ store: open });
    const second = await startGateway({ store: open, replicaOf: first });
    first.holdTurns(true);
    try {
      const capped = await first.issue(["session:read", "session:write"], { maxActiveRuns: 3 });
      const answers = await Promise.all(
        Array.from(
          { length: 10 },
          (_, i) =>
            (i % 2 === 0 ? first : second).request("POST", "/v1/runs", {
              bearer: capped.bearer,
              body: { input: `replica start ${i}` },
            }),
        ),
      );
      assert.equal(
        answers.filter((a) => a.status === 201).length,
        3,
        answers.map((a) => a.text).join("\n"),
      );
      assert.equal(answers.filter((a) => a.status === 429).length, 7);
      assert.equal(sessionCreations(first), 3);
      // A run started on one replica is read and cancelled on the other.
      const run = answers.find((a) => a.status === 201)!.json;
      const read = await second.request("GET", `/v1/runs/${run.runId}`, { bearer: capped.bearer });
      assert.equal(read.status, 200, read.text);
      const cancelled = await second.request("POST", `/v1/runs/${run.runId}/cancel`, {
        bearer: capped.bearer,
      });
      assert.equal(cancelled.status, 202, cancelled.text);
      const again = await first.request("POST", "/v1/runs", {
        bearer: capped.bearer,
        body: { input: "the freed slot" },
      });
      assert.equal(again.status, 201, again.text);
      // A replayed start on the other replica answers the same run.
      const key = crypto.randomUUID();
      await first.request("POST", `/v1/runs/${again.json.runId}/cancel`, {
        bearer: capped.bearer,
      });
      const once = await first.request("POST", "/v1/runs", {
        key,
        bearer: capped.bearer,
        body: { input: "replayed across replicas" },
      });
      const replay = await second.request("POST", "/v1/runs", {
        key,
        bearer: capped.bearer,
        body: { input: "replayed across replicas" },
      });
      assert.equal(once.status, 201, once.text);
      assert.deepEqual(replay.json, once.json);
    } finally {
      await second.close();
      await first.close();
    }
  },
});

Deno.test("runs: a message longer than one Deno KV commit holds (900 KiB, echoed back as long) reaches both logs whole, and the turn after it follows", async () => {
  const gateway = await startGateway();
  try {
    const started = await gateway.request("POST", "/v1/runs", { body: { input: "hi" } });
    assert.equal(started.status, 201, started.text);
    const runId = started.json.runId as string;
    const events = async () =>
      (await gateway.request("GET", `/v1/runs/${runId}/events?limit=100`)).json.events as {
        type: string;
        text?: string;
      }[];
    const completed = (n: number) => async () => {
      const log = await events();
      return log.filter((event) => event.type === "run.completed").length >= n ? log : undefined;
    };
    await waitFor(completed(1));
    const text = "x".repeat(900 * 1024);
    const sent = await gateway.request("POST", `/v1/runs/${runId}/messages`, {
      body: { input: text },
    });
    assert.equal(sent.status, 202, sent.text);
    await waitFor(completed(2), 15_000);
    // The turn after it is not held up behind it either.
    const after = await gateway.request("POST", `/v1/runs/${runId}/messages`, {
      body: { input: "after" },
    });
    assert.equal(after.status, 202, after.text);
    const log = await waitFor(completed(3), 15_000);
    // The simulator echoes each message back as the agent's reply.
    const replies = log.filter((event) => event.type === "message.completed");
    assert.deepEqual(replies.map((event) => event.text?.length), [8, text.length + 6, 11]);
    assert.ok(replies[1].text === `Echo: ${text}`);
    const native = await gateway.request("GET", `/provider/v1/sessions/${runId}/events?limit=100`);
    assert.equal(native.status, 200, native.text);
    const users = (native.json.data as { type: string; content: { text: string }[] }[])
      .filter((event) => event.type === "user.message")
      .map((event) => event.content[0].text);
    assert.deepEqual(users, ["hi", text, "after"]);
    assert.equal(gateway.logs.filter((line) => line.includes("run tail reconnecting")).length, 0);
  } finally {
    await gateway.close();
  }
});
