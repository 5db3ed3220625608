/**
 * `run start --follow` and `run watch ID [--after N]` against a real gateway (in process, served
 * over HTTP): one JSON event a line, in order, and the exit code of the run's end.
 *
 * @module
 */
import assert from "node:assert/strict";
import { makeTempHome } from "../support/cli.ts";
import { lines, runCliWithInput } from "../gateway_clients/_cli.ts";
import { startGateway } from "../gateway/_harness.ts";

Deno.test("cli: run start --follow and run watch print the events and exit by the run's end", async () => {
  const gateway = await startGateway();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => gateway.server.handler(request),
  );
  const temp = await makeTempHome();
  try {
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const env = {
      ...temp.env,
      AUTOMATION_RUNTIME_URL: `http://127.0.0.1:${server.addr.port}`,
      AUTOMATION_RUNTIME_TOKEN: bearer,
    };
    const started = await runCliWithInput(["run", "start", "--follow", "--message", "hi"], { env });
    assert.equal(started.code, 0, started.stderr);
    assert.equal(started.stderr, "");
    const [recordLine, ...eventLines] = lines(started.stdout);
    const record = JSON.parse(recordLine);
    const events = eventLines.map((line) => JSON.parse(line));
    assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1));
    assert.equal(events[0].type, "run.started");
    assert.equal(events.at(-1).type, "run.completed");
    assert.ok(events.every((e) => e.runId === record.runId));

    const watched = await runCliWithInput(["run", "watch", record.runId, "--after", "2"], { env });
    assert.equal(watched.code, 0, watched.stderr);
    assert.deepEqual(lines(watched.stdout).map((line) => JSON.parse(line)), events.slice(2));

    // A cancelled run: exit 1.
    gateway.fake.managedAgents!.script = () => [{ delayMs: 600_000 }];
    const long = await gateway.request("POST", "/v1/runs", { bearer, body: { input: "long" } });
    const cancelled = await gateway.request("POST", `/v1/runs/${long.json.runId}/cancel`, {
      bearer,
    });
    assert.equal(cancelled.status, 202, cancelled.text);
    const watchedCancel = await runCliWithInput(["run", "watch", long.json.runId], { env });
    assert.equal(watchedCancel.code, 1, watchedCancel.stderr);
    assert.equal(JSON.parse(lines(watchedCancel.stdout).at(-1)!).type, "run.cancelled");

    const usage = await runCliWithInput(["run", "watch", record.runId, "--after", "x"], { env });
    assert.equal(usage.code, 2);
    assert.equal(lines(usage.stderr).length, 1, usage.stderr);
  } finally {
    await temp.cleanup();
    await server.shutdown();
    await gateway.close();
  }
});
