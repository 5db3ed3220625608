/**
 * `run start|list|get|send|cancel` and `audit list` against the in-test gateway: what they
 * send, what they print (JSON on stdout), and their exit codes and one-line errors.
 */
import assert from "node:assert/strict";
import { makeTempHome, type TempHome } from "../support/cli.ts";
import { FakeGateway } from "./_fake_gateway.ts";
import { lines, runCliWithInput } from "./_cli.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function withGateway(
  fn: (gateway: FakeGateway, temp: TempHome) => Promise<void>,
): Promise<void> {
  const gateway = FakeGateway.start();
  const temp = await makeTempHome();
  try {
    await fn(gateway, temp);
  } finally {
    await temp.cleanup();
    await gateway.close();
  }
}

function envFor(gateway: FakeGateway, temp: TempHome, token: string): Record<string, string> {
  return { ...temp.env, AUTOMATION_RUNTIME_URL: gateway.url, AUTOMATION_RUNTIME_TOKEN: token };
}

Deno.test("run start sends the agent, environment, title and message and prints the record", async () => {
  await withGateway(async (gateway, temp) => {
    const env = envFor(gateway, temp, gateway.writer.token);
    const result = await runCliWithInput([
      "run",
      "start",
      "--agent",
      "agent_ok",
      "--environment",
      "env_7",
      "--title",
      "nightly triage",
      "--message",
      "Triage the inbox",
    ], { env });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, "");
    const printed = JSON.parse(result.stdout);
    assert.equal(printed.agentId, "agent_ok");
    assert.equal(printed.environmentId, "env_7");
    assert.equal(printed.title, "nightly triage");
    assert.deepEqual(printed, gateway.runs.get(printed.runId), "the record as the service sent it");

    const [sent] = gateway.requestsTo("POST", "/v1/runs");
    assert.deepEqual(JSON.parse(sent.body), {
      input: "Triage the inbox",
      title: "nightly triage",
      metadata: { agent_id: "agent_ok", environment_id: "env_7" },
    });
    assert.equal(sent.headers.get("authorization"), `Bearer ${gateway.writer.token}`);
    assert.match(sent.headers.get("idempotency-key")!, UUID);
    assert.ok(!result.stdout.includes(gateway.writer.token));
  });
});

Deno.test("run start and run send read the message from standard input", async () => {
  await withGateway(async (gateway, temp) => {
    const env = envFor(gateway, temp, gateway.admin.token);
    const message = "Line one\nLine two with ünïcödé";
    const started = await runCliWithInput(["run", "start"], { env, stdin: `${message}\n` });
    assert.equal(started.code, 0, started.stderr);
    const run = JSON.parse(started.stdout);
    assert.deepEqual(JSON.parse(gateway.requestsTo("POST", "/v1/runs")[0].body), {
      input: message,
    });

    const sent = await runCliWithInput(["run", "send", run.runId], { env, stdin: "And then?" });
    assert.equal(sent.code, 0, sent.stderr);
    assert.equal(JSON.parse(sent.stdout).runId, run.runId);
    const [posted] = gateway.requestsTo("POST", `/v1/runs/${run.runId}/messages`);
    assert.deepEqual(JSON.parse(posted.body), { input: "And then?" });

    const empty = await runCliWithInput(["run", "start"], { env, stdin: "  \n" });
    assert.equal(empty.code, 2, empty.stderr);
    assert.equal(lines(empty.stderr).length, 1);
    const none = await runCliWithInput(["run", "send", run.runId], { env });
    assert.equal(none.code, 2, none.stderr);
    assert.equal(
      gateway.requestsTo("POST", "/v1/runs").length,
      1,
      "nothing sent without a message",
    );
  });
});

Deno.test("--idempotency-key makes a rerun replay the first answer; without it each run is new", async () => {
  await withGateway(async (gateway, temp) => {
    const env = envFor(gateway, temp, gateway.admin.token);
    const args = ["run", "start", "--message", "once", "--idempotency-key", "deploy-42"];
    const first = await runCliWithInput(args, { env });
    const second = await runCliWithInput(args, { env });
    assert.equal(first.code, 0, first.stderr);
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(JSON.parse(second.stdout), JSON.parse(first.stdout));
    assert.equal(gateway.runs.size, 1, "the rerun started nothing");
    const keys = gateway.requestsTo("POST", "/v1/runs").map((r) =>
      r.headers.get("idempotency-key")
    );
    assert.deepEqual(keys, ["deploy-42", "deploy-42"]);

    await runCliWithInput(["run", "start", "--message", "twice"], { env });
    await runCliWithInput(["run", "start", "--message", "twice"], { env });
    assert.equal(gateway.runs.size, 3, "a fresh key per invocation");
    const [, , third, fourth] = gateway.requestsTo("POST", "/v1/runs");
    assert.notEqual(third.headers.get("idempotency-key"), fourth.headers.get("idempotency-key"));

    const runId = JSON.parse(first.stdout).runId;
    const cancel = ["run", "cancel", runId, "--idempotency-key", "cancel-42"];
    assert.equal((await runCliWithInput(cancel, { env })).code, 0);
    const [sentCancel] = gateway.requestsTo("POST", `/v1/runs/${runId}/cancel`);
    assert.equal(sentCancel.headers.get("idempotency-key"), "cancel-42");
  });
});

Deno.test("run get, list and cancel print JSON; list passes its filters", async () => {
  await withGateway(async (gateway, temp) => {
    const env = envFor(gateway, temp, gateway.admin.token);
    const ids: string[] = [];
    for (const message of ["a", "b", "c"]) {
      const result = await runCliWithInput(["run", "start", "--message", message], { env });
      ids.push(JSON.parse(result.stdout).runId);
    }
    const got = await runCliWithInput(["run", "get", ids[0]], { env });
    assert.equal(got.code, 0, got.stderr);
    assert.deepEqual(JSON.parse(got.stdout), gateway.runs.get(ids[0]));

    const cancelled = await runCliWithInput(["run", "cancel", ids[1]], { env });
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.equal(JSON.parse(cancelled.stdout).state, "cancelled");
    assert.equal(gateway.requestsTo("POST", `/v1/runs/${ids[1]}/cancel`)[0].body, "");

    const page = await runCliWithInput(["run", "list", "--limit", "2"], { env });
    assert.equal(page.code, 0, page.stderr);
    const listed = JSON.parse(page.stdout);
    assert.deepEqual(listed.runs.map((r: { runId: string }) => r.runId), [ids[2], ids[1]]);
    assert.equal(typeof listed.nextCursor, "string");

    const next = await runCliWithInput(
      ["run", "list", "--limit", "2", "--cursor", listed.nextCursor],
      { env },
    );
    assert.deepEqual(JSON.parse(next.stdout).runs.map((r: { runId: string }) => r.runId), [ids[0]]);

    const all = await runCliWithInput(["run", "list", "--all", "--limit", "1"], { env });
    assert.deepEqual(JSON.parse(all.stdout), {
      runs: [...ids].reverse().map((id) => gateway.runs.get(id)),
      nextCursor: null,
    });

    const filtered = await runCliWithInput([
      "run",
      "list",
      "--state",
      "cancelled",
      "--principal",
      gateway.admin.principalId,
    ], { env });
    assert.equal(filtered.code, 0, filtered.stderr);
    assert.deepEqual(JSON.parse(filtered.stdout).runs.map((r: { runId: string }) => r.runId), [
      ids[1],
    ]);
    const query = gateway.requestsTo("GET", "/v1/runs").at(-1)!.query;
    assert.equal(query.get("state"), "cancelled");
    assert.equal(query.get("principalId"), gateway.admin.principalId);
  });
});

Deno.test("audit list prints entries and passes its filters", async () => {
  await withGateway(async (gateway, temp) => {
    const env = envFor(gateway, temp, gateway.admin.token);
    const started = await runCliWithInput(["run", "start", "--message", "x"], { env });
    const runId = JSON.parse(started.stdout).runId;
    await runCliWithInput(["run", "cancel", runId], { env });

    const result = await runCliWithInput([
      "audit",
      "list",
      "--action",
      "run.cancelled",
      "--principal",
      gateway.admin.principalId,
      "--limit",
      "5",
    ], { env });
    assert.equal(result.code, 0, result.stderr);
    const page = JSON.parse(result.stdout);
    assert.equal(page.entries.length, 1);
    assert.equal(page.entries[0].action, "run.cancelled");
    assert.equal(page.entries[0].runId, runId);
    assert.equal(page.nextCursor, null);
    const query = gateway.requestsTo("GET", "/v1/audit")[0].query;
    assert.equal(query.get("action"), "run.cancelled");
    assert.equal(query.get("principalId"), gateway.admin.principalId);
    assert.equal(query.get("limit"), "5");

    const all = await runCliWithInput(["audit", "list", "--all", "--limit", "1"], { env });
    assert.equal(JSON.parse(all.stdout).entries.length, 2);

    const refused = await runCliWithInput(["audit", "list"], {
      env: envFor(gateway, temp, gateway.writer.token),
    });
    assert.equal(refused.code, 1);
    assert.equal(lines(refused.stderr).length, 1);
    assert.ok(refused.stderr.includes("missingCapability"), refused.stderr);
  });
});

Deno.test("service refusals exit 1 with one line naming the code, and never the bearer", async () => {
  await withGateway(async (gateway, temp) => {
    const env = envFor(gateway, temp, gateway.writer.token);
    const cases: {
      args: string[];
      fault?: Parameters<FakeGateway["faults"]["push"]>[0];
      expect: string[];
    }[] = [
      { args: ["run", "get", "sesn_nope"], expect: ["runNotFound", "HTTP 404"] },
      {
        args: ["run", "start", "--agent", "agent_elsewhere", "--message", "x"],
        expect: ["agentNotAllowed", "HTTP 403"],
      },
      {
        args: ["run", "start", "--agent", "agent_ok", "--message", "x"],
        fault: {
          status: 502,
          code: "providerError",
          extra: { providerStatus: 529, providerErrorType: "overloaded_error" },
        },
        expect: ["providerError", "HTTP 502", "provider HTTP 529 overloaded_error"],
      },
      {
        args: ["run", "list"],
        fault: { status: 503, code: "providerNotConfigured" },
        expect: ["providerNotConfigured", "HTTP 503"],
      },
      {
        args: ["run", "cancel", "sesn_0001"],
        fault: { status: 429, code: "runQuotaExceeded", headers: { "retry-after": "30" } },
        expect: ["runQuotaExceeded", "HTTP 429", "retry after 30 s"],
      },
    ];
    for (const { args, fault, expect } of cases) {
      if (fault) gateway.faults.push(fault);
      const result = await runCliWithInput(args, { env });
      assert.equal(result.code, 1, `${args.join(" ")}: ${result.stderr}`);
      assert.equal(result.stdout, "");
      assert.equal(lines(result.stderr).length, 1, result.stderr);
      for (const text of expect) assert.ok(result.stderr.includes(text), result.stderr);
      assert.ok(!result.stderr.includes(gateway.writer.token));
      assert.equal(gateway.faults.length, 0, "the fault was consumed by this command");
    }

    const unreachable = await runCliWithInput(["run", "get", "sesn_1"], {
      env: { ...env, AUTOMATION_RUNTIME_URL: "http://127.0.0.1:9" },
    });
    assert.equal(unreachable.code, 1);
    assert.equal(lines(unreachable.stderr).length, 1, unreachable.stderr);
    assert.ok(unreachable.stderr.includes("connectionFailed"), unreachable.stderr);
  });
});

Deno.test("run and audit help and usage errors", async () => {
  await withGateway(async (gateway, temp) => {
    const env = envFor(gateway, temp, gateway.admin.token);
    const help: [string[], string][] = [
      [["run", "--help"], "run start"],
      [["run", "start", "--help"], "--idempotency-key"],
      [["run", "list", "-h"], "--state"],
      [["run", "get", "--help"], "run get ID"],
      [["run", "send", "--help"], "run send ID"],
      [["run", "cancel", "--help"], "run cancel ID"],
      [["audit", "--help"], "audit list"],
      [["audit", "list", "--help"], "--action"],
      [["--help"], "run start"],
    ];
    for (const [args, expected] of help) {
      const result = await runCliWithInput(args, { env });
      assert.equal(result.code, 0, `${args.join(" ")}: ${result.stderr}`);
      assert.ok(result.stdout.includes(expected), `${args.join(" ")}: ${result.stdout}`);
    }
    const usage = [
      ["run"],
      ["run", "frobnicate", "sesn_1"],
      ["run", "watch", "sesn_1", "--after", "-1"],
      ["run", "get"],
      ["run", "get", "a", "b"],
      ["run", "get", ".."],
      ["run", "cancel"],
      ["run", "send"],
      ["run", "start", "--message", "x", "--fellow"],
      ["run", "start", "--message", "x", "--token", "art_x"],
      ["run", "start", "--message", "x", "--idempotency-key", "k".repeat(129)],
      ["run", "list", "--state", "sleeping"],
      ["run", "list", "--limit", "0"],
      ["run", "list", "--limit", "101"],
      ["run", "list", "--principal", "NOT-A-UUID"],
      ["run", "list", "--all", "--cursor", "o2"],
      ["audit"],
      ["audit", "list", "--action", "DROP TABLE"],
      ["audit", "list", "--limit", "x"],
      ["audit", "list", "extra"],
    ];
    for (const args of usage) {
      const result = await runCliWithInput(args, { env });
      assert.equal(result.code, 2, `${JSON.stringify(args)}: ${result.stderr}`);
      assert.equal(result.stdout, "");
      assert.equal(lines(result.stderr).length, 1, result.stderr);
    }
    assert.equal(gateway.requests.length, 0, "usage errors send nothing");
  });
});

Deno.test("principal issue --agent-ids, the resource policy flags and --max-active-runs send the run policy", async () => {
  await withGateway(async (gateway, temp) => {
    const env = envFor(gateway, temp, gateway.admin.token);
    const result = await runCliWithInput([
      "principal",
      "issue",
      "--capabilities",
      "session:read,session:write",
      "--agent-ids",
      "agent_a,agent_b",
      "--max-active-runs",
      "3",
      "--environment-ids",
      "env_a",
      "--vault-ids",
      "vlt_a,vlt_b",
      "--memory-store-ids",
      "memstore_a",
      "--repositories",
      "acme/tools,acme/docs",
      "--file-ids",
      "file_a",
    ], { env });
    assert.equal(result.code, 0, result.stderr);
    const body = JSON.parse(gateway.requestsTo("POST", "/v1/principals")[0].body);
    assert.deepEqual(body.agentIds, ["agent_a", "agent_b"]);
    assert.equal(body.maxActiveRuns, 3);
    assert.deepEqual(body.environmentIds, ["env_a"]);
    assert.deepEqual(body.vaultIds, ["vlt_a", "vlt_b"]);
    assert.deepEqual(body.memoryStoreIds, ["memstore_a"]);
    assert.deepEqual(body.repositories, ["acme/tools", "acme/docs"]);
    assert.deepEqual(body.fileIds, ["file_a"]);
    assert.deepEqual(JSON.parse(result.stdout).agentIds, ["agent_a", "agent_b"]);

    for (
      const extra of [
        ["--agent-ids", "a,,b"],
        ["--agent-ids", "a,a"],
        ["--vault-ids", "v a"],
        ["--repositories", "https://github.com/acme/tools"],
        ["--file-ids", ""],
        ["--agent-ids", Array.from({ length: 33 }, (_, i) => `a${i}`).join(",")],
        ["--max-active-runs", "0"],
        ["--max-active-runs", "101"],
      ]
    ) {
      const refused = await runCliWithInput(
        ["principal", "issue", "--capabilities", "session:read", ...extra],
        { env },
      );
      assert.equal(refused.code, 2, `${extra.join(" ")}: ${refused.stderr}`);
      assert.equal(lines(refused.stderr).length, 1);
    }
    assert.equal(gateway.requestsTo("POST", "/v1/principals").length, 1);
  });
});
