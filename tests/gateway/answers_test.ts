/**
 * Tool requests through the gateway, against the in-process fake provider: pending requests
 * derived from the session history, exactly one answer (409 `alreadyAnswered` after it, from
 * anyone), 404 `toolUseNotFound`, who may answer what, a failed send that releases its claim, a
 * stale claim taken back, the fail-closed default after the pending timeout, and the audit log.
 */
import assert from "node:assert/strict";
import { assertCode, type Gateway, startGateway } from "./_harness.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const ASK = { type: "agent.tool_use", name: "bash", input: { command: "ls" } };
const CUSTOM = { type: "agent.custom_tool_use", name: "lookup", input: { q: "x" } };

/** Makes the fake's next turns ask for a confirmation and call a custom tool. */
function scriptToolCalls(gateway: Gateway, steps: Json[] = [
  { ...ASK, evaluated_permission: "ask" },
  CUSTOM,
]): void {
  gateway.fake.managedAgents!.script = () => steps;
}

function sessionEvents(gateway: Gateway, runId: string): Json[] {
  return gateway.fake.managedAgents!.sessions.get(runId)!.events;
}

/** The answers the fake provider took for a session, of one type. */
function received(gateway: Gateway, runId: string, type: string): Json[] {
  return sessionEvents(gateway, runId).filter((event) => event.type === type);
}

function toolUseIds(gateway: Gateway, runId: string): { ask: string; custom: string } {
  const events = sessionEvents(gateway, runId);
  return {
    ask: events.find((e) => e.type === "agent.tool_use")?.id,
    custom: events.find((e) => e.type === "agent.custom_tool_use")?.id,
  };
}

async function startRun(gateway: Gateway, bearer: string): Promise<string> {
  const answer = await gateway.request("POST", "/v1/runs", { bearer, body: { input: "go" } });
  assert.equal(answer.status, 201, answer.text);
  return answer.json.runId;
}

async function waitFor(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

Deno.test("tool requests: pending, exactly one answer, 404 and 409, who may answer", async (t) => {
  const gateway = await startGateway();
  try {
    scriptToolCalls(gateway);
    const writer = await gateway.issue(["session:read", "session:write"]);
    const other = await gateway.issue(["session:read", "session:write"]);
    const approver = await gateway.issue(
      ["session:read", "session:approve"],
      { name: "Ada Approver" } as Json,
    );
    const runId = await startRun(gateway, writer.bearer);
    const ids = toolUseIds(gateway, runId);

    await t.step("GET pending lists both requests, derived from the history", async () => {
      const answer = await gateway.request("GET", `/v1/runs/${runId}/pending`, {
        bearer: writer.bearer,
      });
      assert.equal(answer.status, 200, answer.text);
      const pending = answer.json.pending;
      assert.deepEqual(pending.map((p: Json) => [p.toolUseId, p.kind, p.name]), [
        [ids.ask, "confirmation", "bash"],
        [ids.custom, "custom_tool", "lookup"],
      ]);
      assert.deepEqual(pending[0].input, { command: "ls" });
      assert.equal(typeof pending[0].requestedAt, "string");
      // Approvers read any run's requests; another plain principal gets 404.
      const seen = await gateway.request("GET", `/v1/runs/${runId}/pending`, {
        bearer: approver.bearer,
      });
      assert.equal(seen.json.pending.length, 2);
      assertCode(
        await gateway.request("GET", `/v1/runs/${runId}/pending`, { bearer: other.bearer }),
        404,
        "runNotFound",
      );
    });

    await t.step("a confirmation needs session:approve", async () => {
      assertCode(
        await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
          bearer: writer.bearer,
          body: { toolUseId: ids.ask, result: "allow" },
        }),
        403,
        "missingCapability",
      );
    });

    await t.step("an unknown tool use, or the wrong kind, is 404 toolUseNotFound", async () => {
      assertCode(
        await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
          bearer: approver.bearer,
          body: { toolUseId: "sevt_nope", result: "allow" },
        }),
        404,
        "toolUseNotFound",
      );
      assertCode(
        await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
          bearer: approver.bearer,
          body: { toolUseId: ids.custom, result: "allow" },
        }),
        404,
        "toolUseNotFound",
      );
      assertCode(
        await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
          bearer: approver.bearer,
          body: { toolUseId: ids.ask, result: "maybe" },
        }),
        422,
        "invalidRequest",
      );
    });

    await t.step("an approver denies another principal's request once", async () => {
      const answer = await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
        bearer: approver.bearer,
        body: { toolUseId: ids.ask, result: "deny", denyMessage: "not today" },
      });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.json.toolUseId, ids.ask);
      assert.equal(answer.json.result, "deny");
      assert.equal(answer.json.answeredBy, approver.principalId);
      assert.ok(!Number.isNaN(Date.parse(answer.json.answeredAt)));
      const sent = received(gateway, runId, "user.tool_confirmation");
      assert.equal(sent.length, 1);
      assert.equal(sent[0].tool_use_id, ids.ask);
      assert.equal(sent[0].result, "deny");
      assert.equal(sent[0].deny_message, "not today");
    });

    await t.step(
      "a second answer, by anyone, is 409 alreadyAnswered with who and what",
      async () => {
        const again = await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
          body: { toolUseId: ids.ask, result: "allow" },
        });
        assertCode(again, 409, "alreadyAnswered");
        assert.equal(again.json.error.answeredBy, approver.principalId);
        assert.equal(again.json.error.result, "deny");
        assert.equal(received(gateway, runId, "user.tool_confirmation").length, 1);
        const pending = await gateway.request("GET", `/v1/runs/${runId}/pending`, {
          bearer: writer.bearer,
        });
        assert.deepEqual(pending.json.pending.map((p: Json) => p.toolUseId), [ids.custom]);
      },
    );

    await t.step("custom tool results: only the owner (or an admin) answers", async () => {
      const body = { toolUseId: ids.custom, content: [{ type: "text", text: "42" }] };
      assertCode(
        await gateway.request("POST", `/v1/runs/${runId}/custom-tool-results`, {
          bearer: other.bearer,
          body,
        }),
        404,
        "runNotFound",
      );
      const answer = await gateway.request("POST", `/v1/runs/${runId}/custom-tool-results`, {
        bearer: writer.bearer,
        body,
      });
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(Object.keys(answer.json).sort(), ["answeredAt", "answeredBy", "toolUseId"]);
      assert.equal(answer.json.answeredBy, writer.principalId);
      const sent = received(gateway, runId, "user.custom_tool_result");
      assert.equal(sent.length, 1);
      assert.deepEqual(sent[0].content, [{ type: "text", text: "42" }]);
      assertCode(
        await gateway.request("POST", `/v1/runs/${runId}/custom-tool-results`, {
          bearer: writer.bearer,
          body,
        }),
        409,
        "alreadyAnswered",
      );
    });

    await t.step("GET answers: who answered what, with names, for every reader", async () => {
      const seen = await gateway.request("GET", `/v1/runs/${runId}/answers`, {
        bearer: writer.bearer,
      });
      assert.equal(seen.status, 200, seen.text);
      assert.deepEqual(
        seen.json.answers.map((a: Json) => [a.toolUseId, a.kind, a.result, a.answeredBy]),
        [
          [ids.ask, "confirmation", "deny", approver.principalId],
          [ids.custom, "custom_tool", "ok", writer.principalId],
        ],
      );
      assert.equal(seen.json.answers[0].answeredByName, "Ada Approver");
      assert.equal("answeredByName" in seen.json.answers[1], false, "the writer has no name");
      assert.ok(!Number.isNaN(Date.parse(seen.json.answers[0].answeredAt)));
      const byApprover = await gateway.request("GET", `/v1/runs/${runId}/answers`, {
        bearer: approver.bearer,
      });
      assert.deepEqual(byApprover.json, seen.json);
      assertCode(
        await gateway.request("GET", `/v1/runs/${runId}/answers`, { bearer: other.bearer }),
        404,
        "runNotFound",
      );
    });

    await t.step("an idempotent replay answers the recorded 200 and sends nothing", async () => {
      scriptToolCalls(gateway, [{ ...ASK, evaluated_permission: "ask" }]);
      const second = await startRun(gateway, writer.bearer);
      const ask = toolUseIds(gateway, second).ask;
      const key = crypto.randomUUID();
      const body = { toolUseId: ask, result: "allow" };
      const first = await gateway.request("POST", `/v1/runs/${second}/tool-confirmations`, {
        key,
        body,
      });
      assert.equal(first.status, 200, first.text);
      const replay = await gateway.request("POST", `/v1/runs/${second}/tool-confirmations`, {
        key,
        body,
      });
      assert.equal(replay.status, 200);
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
      assert.equal(received(gateway, second, "user.tool_confirmation").length, 1);
    });

    await t.step("the audit log holds tool.confirmed and tool.responded", async () => {
      const confirmed = await gateway.request("GET", "/v1/audit?action=tool.confirmed");
      assert.ok(
        confirmed.json.entries.some((e: Json) =>
          e.runId === runId && e.actorId === approver.principalId && e.outcome === "ok"
        ),
      );
      assert.ok(
        confirmed.json.entries.some((e: Json) =>
          e.runId === runId && e.outcome === "alreadyAnswered"
        ),
      );
      const responded = await gateway.request("GET", "/v1/audit?action=tool.responded");
      assert.ok(
        responded.json.entries.some((e: Json) =>
          e.runId === runId && e.actorId === writer.principalId && e.outcome === "ok"
        ),
      );
    });
  } finally {
    await gateway.close();
  }
});

Deno.test("tool requests: a failed send releases the claim and a retry succeeds", async () => {
  const gateway = await startGateway();
  try {
    scriptToolCalls(gateway, [{ ...ASK, evaluated_permission: "ask" }]);
    const runId = await startRun(gateway, gateway.admin);
    const ask = toolUseIds(gateway, runId).ask;
    gateway.fake.failNext({
      method: "POST",
      path: `/v1/sessions/${runId}/events`,
      status: 400,
      message: "refused on purpose",
    });
    const failed = await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
      body: { toolUseId: ask, result: "allow" },
    });
    assertCode(failed, 502, "providerError");
    assert.equal(received(gateway, runId, "user.tool_confirmation").length, 0);
    assert.equal(await gateway.store.answers.get(runId, ask), null);
    const retried = await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
      body: { toolUseId: ask, result: "allow" },
    });
    assert.equal(retried.status, 200, retried.text);
    assert.equal(received(gateway, runId, "user.tool_confirmation").length, 1);
    assert.equal((await gateway.store.answers.get(runId, ask))?.state, "answered");
  } finally {
    await gateway.close();
  }
});

Deno.test("tool requests: a stale claim is taken back after checking the provider's history", async (t) => {
  const gateway = await startGateway({ answerTestHooks: { claimStaleMs: 200 } });
  try {
    scriptToolCalls(gateway, [
      { ...ASK, evaluated_permission: "ask" },
      { ...ASK, name: "rm", evaluated_permission: "ask" },
    ]);
    const runId = await startRun(gateway, gateway.admin);
    const [first, second] = sessionEvents(gateway, runId)
      .filter((e) => e.type === "agent.tool_use").map((e) => e.id);
    const dead = crypto.randomUUID();

    await t.step("a claim whose answer never left is released to the next caller", async () => {
      const claim = await gateway.store.answers.claim({
        runId,
        toolUseId: first,
        kind: "confirmation",
        principalId: dead,
        result: "allow",
        now: Date.now(),
        staleMs: 200,
      });
      assert.equal(claim.state, "claimed");
      const early = await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
        body: { toolUseId: first, result: "deny" },
      });
      assertCode(early, 409, "alreadyAnswered");
      await new Promise((resolve) => setTimeout(resolve, 250));
      const late = await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
        body: { toolUseId: first, result: "deny" },
      });
      assert.equal(late.status, 200, late.text);
      assert.equal(late.json.answeredBy, gateway.adminId);
      const sent = received(gateway, runId, "user.tool_confirmation");
      assert.deepEqual(sent.map((e) => [e.tool_use_id, e.result]), [[first, "deny"]]);
    });

    await t.step(
      "a claim whose answer reached the provider is recorded, not sent again",
      async () => {
        await gateway.store.answers.claim({
          runId,
          toolUseId: second,
          kind: "confirmation",
          principalId: dead,
          result: "allow",
          now: Date.now(),
          staleMs: 200,
        });
        // The dead replica's send arrived before it died.
        const response = await fetch(`${gateway.fake.baseUrl}/v1/sessions/${runId}/events`, {
          method: "POST",
          headers: {
            "x-api-key": gateway.providerKey,
            "content-type": "application/json",
            "provider-beta": "managed-agents-2026-04-01",
          },
          body: JSON.stringify({
            events: [{ type: "user.tool_confirmation", tool_use_id: second, result: "allow" }],
          }),
        });
        await response.body?.cancel();
        assert.equal(response.status, 200);
        await new Promise((resolve) => setTimeout(resolve, 250));
        const late = await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
          body: { toolUseId: second, result: "deny" },
        });
        assertCode(late, 409, "alreadyAnswered");
        assert.equal(late.json.error.answeredBy, dead);
        assert.equal(late.json.error.result, "allow");
        const record = await gateway.store.answers.get(runId, second);
        assert.equal(record?.state, "answered");
        assert.equal(record?.principalId, dead);
        assert.equal(
          received(gateway, runId, "user.tool_confirmation").filter((e) => e.tool_use_id === second)
            .length,
          1,
        );
      },
    );
  } finally {
    await gateway.close();
  }
});

Deno.test("tool requests: past the pending timeout the runtime denies once and answers custom tools with an error", async () => {
  const gateway = await startGateway({ pendingTimeoutMs: 300 });
  try {
    scriptToolCalls(gateway);
    const runId = await startRun(gateway, gateway.admin);
    const ids = toolUseIds(gateway, runId);
    // The run's recorded state comes from the provider on read: requires_action.
    const read = await gateway.request("GET", `/v1/runs/${runId}`);
    assert.equal(read.json.state, "requires_action", read.text);
    await waitFor(() =>
      received(gateway, runId, "user.tool_confirmation").length === 1 &&
      received(gateway, runId, "user.custom_tool_result").length === 1
    );
    // Several more sweeps run; still exactly one answer each.
    await new Promise((resolve) => setTimeout(resolve, 600));
    const denied = received(gateway, runId, "user.tool_confirmation");
    assert.equal(denied.length, 1);
    assert.equal(denied[0].tool_use_id, ids.ask);
    assert.equal(denied[0].result, "deny");
    assert.match(denied[0].deny_message, /pending timeout/);
    const errored = received(gateway, runId, "user.custom_tool_result");
    assert.equal(errored.length, 1);
    assert.equal(errored[0].is_error, true);
    const record = await gateway.store.answers.get(runId, ids.ask);
    assert.equal(record?.principalId, "runtime");
    assert.equal(record?.result, "deny");
    const again = await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
      body: { toolUseId: ids.ask, result: "allow" },
    });
    assertCode(again, 409, "alreadyAnswered");
    assert.equal(again.json.error.answeredBy, "runtime");
    const audit = await gateway.request("GET", "/v1/audit?action=tool.confirmed");
    assert.ok(audit.json.entries.some((e: Json) => e.actorId === "runtime" && e.runId === runId));
    // Answered, the run went on at the provider; its record followed.
    await waitFor(async () => (await gateway.store.runs.get(runId))?.state === "completed");
  } finally {
    await gateway.close();
  }
});
