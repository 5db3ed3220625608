/**
 * The command line's spend: `principal issue` with a budget, a per-run cap and a time limit, and
 * `usage` (its JSON, its refusals and its usage errors).
 */
import assert from "node:assert/strict";
import { makeTempHome, runCli } from "../support/cli.ts";
import { startServer } from "../support/server.ts";

Deno.test("cli: principal issue takes spend limits, usage prints the sums, and bad flags exit 2", async () => {
  const server = await startServer();
  const temp = await makeTempHome();
  try {
    const env = {
      ...temp.env,
      AUTOMATION_RUNTIME_URL: server.url,
      AUTOMATION_RUNTIME_TOKEN: server.bearer,
    };
    const issued = await runCli([
      "principal",
      "issue",
      "--capabilities",
      "session:read,session:write",
      "--budget",
      "5000",
      "--budget-period",
      "day",
      "--max-run-cost",
      "500",
      "--max-run-seconds",
      "1800",
    ], { env });
    assert.equal(issued.code, 0, issued.stderr);
    const created = JSON.parse(issued.stdout);
    assert.deepEqual(created.budget, { amount: "5000", currency: "USD", period: "day" });
    assert.deepEqual(created.maxRunCost, { amount: "500", currency: "USD" });
    assert.equal(created.maxRunSeconds, 1800);

    const usage = await runCli(["usage", "--group-by", "agent"], { env });
    assert.equal(usage.code, 0, usage.stderr);
    const page = JSON.parse(usage.stdout);
    assert.equal(page.groupBy, "agent");
    assert.deepEqual(page.groups, []);
    assert.deepEqual(page.total.listCost, { amount: "0", currency: "USD" });

    const notMine = await runCli(["usage", "--principal", crypto.randomUUID()], {
      env: { ...env, AUTOMATION_RUNTIME_TOKEN: created.bearer },
    });
    assert.equal(notMine.code, 1);
    assert.match(notMine.stderr, /missingCapability/);

    for (
      const args of [
        ["principal", "issue", "--capabilities", "session:read", "--budget", "10.50"],
        ["principal", "issue", "--capabilities", "session:read", "--budget-period", "day"],
        ["principal", "issue", "--capabilities", "session:read", "--max-run-seconds", "0"],
        ["usage", "--group-by", "week"],
        ["usage", "--from", "yesterday"],
      ]
    ) {
      const refused = await runCli(args, { env });
      assert.equal(refused.code, 2, `${args.join(" ")}: ${refused.stderr}`);
      assert.equal(refused.stderr.trim().split("\n").length, 1, refused.stderr);
    }
  } finally {
    await temp.cleanup();
    await server.stop();
  }
});
