/**
 * `client.runs` and `client.audit` against the in-test gateway: what they send (method, path,
 * shared headers, idempotency key, body) and how they read answers and errors.
 */
import assert from "node:assert/strict";
import { RuntimeServiceClient, RuntimeServiceError } from "../../sdk/mod.ts";
import { FakeGateway, INTERFACE_VERSION } from "./_fake_gateway.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function clientFor(gateway: FakeGateway, token: string, maxRetries = 2): RuntimeServiceClient {
  return new RuntimeServiceClient({ baseUrl: gateway.url, token, maxRetries });
}

function isServiceError(code: string, status: number) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof RuntimeServiceError, String(error));
    assert.equal(error.code, code);
    assert.equal(error.status, status);
    return true;
  };
}

Deno.test("runs.start sends the shared headers, an idempotency key and the body, and returns the 201 record", async () => {
  const gateway = FakeGateway.start();
  try {
    const client = clientFor(gateway, gateway.writer.token);
    const run = await client.runs.start({
      input: "Summarise the open issues",
      title: "nightly",
      metadata: { agent_id: "agent_ok", environment_id: "env_1" },
    });
    assert.equal(run.principalId, gateway.writer.principalId);
    assert.equal(run.agentId, "agent_ok");
    assert.equal(run.environmentId, "env_1");
    assert.equal(run.title, "nightly");
    assert.equal(run.state, "running");
    assert.match(run.runId, /^sesn_/);

    const [sent] = gateway.requestsTo("POST", "/v1/runs");
    assert.equal(sent.headers.get("authorization"), `Bearer ${gateway.writer.token}`);
    assert.equal(sent.headers.get("x-interface-version"), INTERFACE_VERSION);
    assert.match(sent.headers.get("x-correlation-id")!, UUID);
    const deadline = Date.parse(sent.headers.get("x-deadline")!);
    assert.ok(deadline > Date.now() && deadline <= Date.now() + 60_000);
    assert.match(sent.headers.get("idempotency-key")!, UUID, "a fresh key when none is given");
    assert.equal(sent.headers.get("content-type"), "application/json");
    assert.deepEqual(JSON.parse(sent.body), {
      input: "Summarise the open issues",
      title: "nightly",
      metadata: { agent_id: "agent_ok", environment_id: "env_1" },
    });
    assert.equal(sent.query.toString(), "", "nothing in the URL");
  } finally {
    await gateway.close();
  }
});

Deno.test("the same idempotency key replays the first start instead of starting twice", async () => {
  const gateway = FakeGateway.start();
  try {
    const client = clientFor(gateway, gateway.admin.token);
    const body = { input: [{ role: "user" as const, content: "hello" }] };
    const first = await client.runs.start(body, { idempotencyKey: "start-once" });
    const again = await client.runs.start(body, { idempotencyKey: "start-once" });
    assert.deepEqual(again, first);
    assert.equal(gateway.runs.size, 1);
    const keys = gateway.requestsTo("POST", "/v1/runs").map((r) =>
      r.headers.get("idempotency-key")
    );
    assert.deepEqual(keys, ["start-once", "start-once"]);
    await assert.rejects(
      client.runs.start({ input: "something else" }, { idempotencyKey: "start-once" }),
      isServiceError("idempotencyConflict", 422),
    );
  } finally {
    await gateway.close();
  }
});

Deno.test("runs.get, send and cancel hit their paths and return the record", async () => {
  const gateway = FakeGateway.start();
  try {
    const client = clientFor(gateway, gateway.writer.token);
    const run = await client.runs.start({ input: "go", metadata: { agent_id: "agent_ok" } });

    const read = await client.runs.get(run.runId);
    assert.deepEqual(read, run);
    const [get] = gateway.requestsTo("GET", `/v1/runs/${run.runId}`);
    assert.equal(get.headers.get("idempotency-key"), null, "reads carry no key");
    assert.equal(get.body, "");

    const cancelled = await client.runs.cancel(run.runId, { idempotencyKey: "cancel-1" });
    assert.equal(cancelled.state, "cancelled");
    assert.ok(cancelled.endedAt);
    const [cancel] = gateway.requestsTo("POST", `/v1/runs/${run.runId}/cancel`);
    assert.equal(cancel.headers.get("idempotency-key"), "cancel-1");
    assert.equal(cancel.headers.get("content-type"), null, "cancel has no body");
    assert.equal(cancel.body, "");

    const resumed = await client.runs.send(run.runId, { input: "one more thing" });
    assert.equal(resumed.state, "running");
    assert.equal(resumed.endedAt, undefined);
    const [message] = gateway.requestsTo("POST", `/v1/runs/${run.runId}/messages`);
    assert.deepEqual(JSON.parse(message.body), { input: "one more thing" });
    assert.match(message.headers.get("idempotency-key")!, UUID);
  } finally {
    await gateway.close();
  }
});

Deno.test("runs.list sends its filters in the query and listAll walks every page", async () => {
  const gateway = FakeGateway.start();
  try {
    const admin = clientFor(gateway, gateway.admin.token);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await admin.runs.start({ input: `run ${i}` })).runId);
    await admin.runs.cancel(ids[1]);

    const page = await admin.runs.list({ limit: 2 });
    assert.deepEqual(page.runs.map((r) => r.runId), [ids[4], ids[3]], "newest first");
    assert.equal(typeof page.nextCursor, "string");
    const second = await admin.runs.list({ limit: 2, cursor: page.nextCursor! });
    assert.deepEqual(second.runs.map((r) => r.runId), [ids[2], ids[1]]);
    const last = await admin.runs.list({ limit: 2, cursor: second.nextCursor! });
    assert.deepEqual(last.runs.map((r) => r.runId), [ids[0]]);
    assert.equal(last.nextCursor, null);

    const walked: string[] = [];
    for await (const run of admin.runs.listAll({ limit: 2 })) walked.push(run.runId);
    assert.deepEqual(walked, [...ids].reverse());

    const cancelled = await admin.runs.list({
      state: "cancelled",
      principalId: gateway.admin.principalId,
      limit: 10,
    });
    assert.deepEqual(cancelled.runs.map((r) => r.runId), [ids[1]]);
    const query = gateway.requestsTo("GET", "/v1/runs").at(-1)!.query;
    assert.equal(query.get("state"), "cancelled");
    assert.equal(query.get("principalId"), gateway.admin.principalId);
    assert.equal(query.get("limit"), "10");

    const writer = clientFor(gateway, gateway.writer.token);
    assert.deepEqual((await writer.runs.list()).runs, [], "a plain reader sees only its own");
  } finally {
    await gateway.close();
  }
});

Deno.test("run errors surface as RuntimeServiceError with their codes and fields", async () => {
  const gateway = FakeGateway.start();
  try {
    const admin = clientFor(gateway, gateway.admin.token);
    const writer = clientFor(gateway, gateway.writer.token);
    const reader = clientFor(gateway, gateway.reader.token);
    const adminRun = await admin.runs.start({ input: "admin's" });

    await assert.rejects(writer.runs.get(adminRun.runId), isServiceError("runNotFound", 404));
    await assert.rejects(writer.runs.cancel(adminRun.runId), isServiceError("runNotFound", 404));
    await assert.rejects(writer.runs.get("sesn_unknown"), isServiceError("runNotFound", 404));
    await assert.rejects(
      writer.runs.start({ input: "x", metadata: { agent_id: "agent_other" } }),
      isServiceError("agentNotAllowed", 403),
    );
    await assert.rejects(
      reader.runs.start({ input: "x" }),
      (error: unknown) =>
        error instanceof RuntimeServiceError && error.code === "missingCapability" &&
        error.details.requiredCapability === "session:write",
    );

    await writer.runs.start({ input: "1", metadata: { agent_id: "agent_ok" } });
    await writer.runs.start({ input: "2", metadata: { agent_id: "agent_ok" } });
    const before = gateway.requestsTo("POST", "/v1/runs").length;
    await assert.rejects(
      writer.runs.start({ input: "3", metadata: { agent_id: "agent_ok" } }),
      (error: unknown) => {
        assert.ok(error instanceof RuntimeServiceError);
        assert.equal(error.code, "runQuotaExceeded");
        assert.equal(error.status, 429);
        assert.equal(error.retryAfterMs, 30_000);
        return true;
      },
    );
    assert.equal(
      gateway.requestsTo("POST", "/v1/runs").length,
      before + 1,
      "a full quota is not retried",
    );
  } finally {
    await gateway.close();
  }
});

Deno.test("provider errors: 502 providerError carries the provider's status and type and is not retried", async () => {
  const gateway = FakeGateway.start();
  try {
    const client = clientFor(gateway, gateway.admin.token);
    gateway.faults.push({
      status: 502,
      code: "providerError",
      extra: { providerStatus: 529, providerErrorType: "overloaded_error" },
    });
    await assert.rejects(client.runs.start({ input: "x" }), (error: unknown) => {
      assert.ok(error instanceof RuntimeServiceError);
      assert.equal(error.code, "providerError");
      assert.equal(error.status, 502);
      assert.equal(error.providerStatus, 529);
      assert.equal(error.providerErrorType, "overloaded_error");
      return true;
    });
    assert.equal(gateway.requestsTo("POST", "/v1/runs").length, 1);
  } finally {
    await gateway.close();
  }
});

Deno.test("503 providerNotConfigured is not retried; providerUnavailable is, with the same key", async () => {
  const gateway = FakeGateway.start();
  try {
    const client = clientFor(gateway, gateway.admin.token);
    gateway.providerConfigured = false;
    await assert.rejects(client.runs.list(), isServiceError("providerNotConfigured", 503));
    await assert.rejects(
      client.runs.start({ input: "x" }),
      isServiceError("providerNotConfigured", 503),
    );
    assert.equal(gateway.requests.length, 2, "one request each: a missing key does not heal");

    gateway.providerConfigured = true;
    gateway.faults.push({
      status: 503,
      code: "providerUnavailable",
      headers: { "retry-after": "0" },
    });
    const run = await client.runs.start({ input: "retry me" });
    const attempts = gateway.requestsTo("POST", "/v1/runs").slice(1);
    assert.equal(attempts.length, 2);
    assert.equal(
      attempts[0].headers.get("idempotency-key"),
      attempts[1].headers.get("idempotency-key"),
      "a retry reuses the key, so the service cannot start the run twice",
    );
    assert.equal(gateway.runs.size, 1);
    assert.equal(run.state, "running");

    gateway.faults.push({
      status: 503,
      code: "providerUnavailable",
      headers: { "retry-after": "120" },
    });
    await assert.rejects(client.runs.get(run.runId), (error: unknown) => {
      assert.ok(error instanceof RuntimeServiceError);
      assert.equal(error.code, "providerUnavailable");
      assert.equal(error.retryAfterMs, 120_000, "a wait past the deadline is left to the caller");
      return true;
    });
  } finally {
    await gateway.close();
  }
});

Deno.test("audit.list filters by principal and action; listAll walks pages; it needs authority:admin", async () => {
  const gateway = FakeGateway.start();
  try {
    const admin = clientFor(gateway, gateway.admin.token);
    const writer = clientFor(gateway, gateway.writer.token);
    const mine = await writer.runs.start({ input: "a", metadata: { agent_id: "agent_ok" } });
    await writer.runs.cancel(mine.runId);
    await admin.runs.start({ input: "b" });

    const page = await admin.audit.list({ principalId: gateway.writer.principalId, limit: 1 });
    assert.equal(page.entries.length, 1);
    assert.equal(page.entries[0].action, "run.cancelled");
    assert.equal(page.entries[0].runId, mine.runId);
    assert.equal(typeof page.nextCursor, "string");
    const query = gateway.requestsTo("GET", "/v1/audit")[0].query;
    assert.equal(query.get("principalId"), gateway.writer.principalId);
    assert.equal(query.get("limit"), "1");

    const started = [];
    for await (const entry of admin.audit.listAll({ action: "run.started", limit: 1 })) {
      started.push(entry.actorId);
    }
    assert.deepEqual(started, [gateway.admin.principalId, gateway.writer.principalId]);
    assert.equal(gateway.requestsTo("GET", "/v1/audit").length, 1 + 2);

    await assert.rejects(writer.audit.list(), isServiceError("missingCapability", 403));
  } finally {
    await gateway.close();
  }
});

Deno.test("bad arguments throw before anything is sent", async () => {
  const gateway = FakeGateway.start();
  try {
    const client = clientFor(gateway, gateway.admin.token);
    await assert.rejects(client.runs.get(".."), TypeError);
    await assert.rejects(client.runs.get(""), TypeError);
    await assert.rejects(client.runs.get("has space"), TypeError);
    await assert.rejects(client.runs.start({ input: "" }), TypeError);
    await assert.rejects(client.runs.start({ input: [] }), TypeError);
    await assert.rejects(
      client.runs.start({ input: "x" }, { idempotencyKey: "x".repeat(129) }),
      TypeError,
    );
    await assert.rejects(client.runs.send("sesn_1", { input: "" }), TypeError);
    await assert.rejects(client.runs.list({ limit: 0 }), RangeError);
    await assert.rejects(client.runs.list({ limit: 101 }), RangeError);
    // @ts-expect-error: not a run state
    await assert.rejects(client.runs.list({ state: "sleeping" }), TypeError);
    await assert.rejects(client.audit.list({ limit: 1.5 }), RangeError);
    assert.equal(gateway.requests.length, 0);
  } finally {
    await gateway.close();
  }
});

Deno.test("an id with a slash stays one path segment", async () => {
  const gateway = FakeGateway.start();
  try {
    const client = clientFor(gateway, gateway.admin.token);
    await assert.rejects(client.runs.get("a/../../audit"), isServiceError("runNotFound", 404));
    assert.equal(gateway.requests[0].path, "/v1/runs/a%2F..%2F..%2Faudit");
  } finally {
    await gateway.close();
  }
});

Deno.test("an aborted signal stops a run call with the signal's reason", async () => {
  const gateway = FakeGateway.start();
  try {
    const client = clientFor(gateway, gateway.admin.token);
    const controller = new AbortController();
    controller.abort(new Error("caller left"));
    await assert.rejects(
      client.runs.start({ input: "x" }, { signal: controller.signal }),
      /caller left/,
    );
    assert.equal(gateway.requests.length, 0);
  } finally {
    await gateway.close();
  }
});

Deno.test("createPrincipal sends the run policy: agentIds and maxActiveRuns", async () => {
  const gateway = FakeGateway.start();
  try {
    const client = clientFor(gateway, gateway.admin.token);
    const issued = await client.createPrincipal({
      capabilities: ["session:read", "session:write"],
      expiresAt: "2030-01-01T00:00:00Z",
      agentIds: ["agent_a", "agent_b"],
      maxActiveRuns: 3,
    });
    assert.deepEqual(issued.agentIds, ["agent_a", "agent_b"]);
    const [sent] = gateway.requestsTo("POST", "/v1/principals");
    const body = JSON.parse(sent.body);
    assert.deepEqual(body.agentIds, ["agent_a", "agent_b"]);
    assert.equal(body.maxActiveRuns, 3);

    await client.createPrincipal({
      capabilities: ["session:read"],
      expiresAt: "2030-01-01T00:00:00Z",
    });
    const plain = JSON.parse(gateway.requestsTo("POST", "/v1/principals")[1].body);
    assert.deepEqual(Object.keys(plain).sort(), ["capabilities", "expiresAt", "principalId"]);
  } finally {
    await gateway.close();
  }
});
