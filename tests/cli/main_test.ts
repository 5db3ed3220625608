import assert from "node:assert/strict";
import { makeTempHome, runCli } from "../support/cli.ts";

Deno.test("--help prints usage on stdout and exits 0 for every command", async () => {
  const temp = await makeTempHome();
  try {
    const cases: [string[], string][] = [
      [["--help"], "Commands:"],
      [["-h"], "Commands:"],
      [["init", "--help"], "--ttl-days"],
      [["principal", "--help"], "principal issue"],
      [["principal", "issue", "--help"], "--capabilities"],
      [["principal", "revoke", "-h"], "principal revoke ID"],
      [["principal", "list", "--help"], "principal list"],
      [["serve", "--help"], "serve"],
    ];
    for (const [args, expected] of cases) {
      const result = await runCli(args, { env: temp.env });
      assert.equal(result.code, 0, `${args.join(" ")}: ${result.stderr}`);
      assert.ok(result.stdout.includes(expected), `${args.join(" ")}: ${result.stdout}`);
    }
    await assert.rejects(Deno.stat(temp.secretFile), Deno.errors.NotFound, "help writes nothing");
  } finally {
    await temp.cleanup();
  }
});

Deno.test("usage errors exit 2 with one line on stderr", async () => {
  const temp = await makeTempHome();
  try {
    const cases: string[][] = [
      [],
      ["launch"],
      ["principal"],
      ["principal", "grant"],
      ["principal", "issue"],
      ["principal", "issue", "--capabilities", "session:read", "--ttl-days", "91"],
      ["principal", "issue", "--capabilities", "session:read", "--expires-at", "tomorrow"],
      [
        "principal",
        "issue",
        "--capabilities",
        "session:read",
        "--ttl-days",
        "1",
        "--expires-at",
        "2030-01-01T00:00:00Z",
      ],
      ["principal", "issue", "--capabilities", "session:read", "--principal-id", "NOT-A-UUID"],
      ["principal", "issue", "--capabilities", "session:read", "--token", "art_x"],
      ["principal", "revoke"],
      ["principal", "revoke", "abc"],
      ["principal", "list", "extra"],
    ];
    for (const args of cases) {
      const result = await runCli(args, { env: temp.env });
      assert.equal(result.code, 2, `${JSON.stringify(args)}: ${result.stderr}`);
      assert.equal(result.stdout, "");
      const lines = result.stderr.split("\n").filter((line) => line !== "");
      assert.equal(lines.length, 1, result.stderr);
    }
  } finally {
    await temp.cleanup();
  }
});

Deno.test("client commands fail with exit 1 and one line when no bearer is available", async () => {
  const temp = await makeTempHome();
  try {
    const result = await runCli(["principal", "list"], { env: temp.env });
    assert.equal(result.code, 1);
    const lines = result.stderr.split("\n").filter((line) => line !== "");
    assert.equal(lines.length, 1, result.stderr);
    assert.ok(lines[0].includes("AUTOMATION_RUNTIME_TOKEN"), lines[0]);
  } finally {
    await temp.cleanup();
  }
});

Deno.test("client commands fail with exit 1 naming the URL when the service is unreachable", async () => {
  const temp = await makeTempHome();
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  try {
    const result = await runCli(["principal", "list"], {
      env: {
        ...temp.env,
        AUTOMATION_RUNTIME_TOKEN: "art_" + "z".repeat(43),
        AUTOMATION_RUNTIME_URL: `http://127.0.0.1:${port}`,
      },
    });
    assert.equal(result.code, 1);
    const lines = result.stderr.split("\n").filter((line) => line !== "");
    assert.equal(lines.length, 1, result.stderr);
    assert.ok(lines[0].includes(`127.0.0.1:${port}`) && lines[0].includes("connectionFailed"));
    assert.ok(!result.stderr.includes("z".repeat(43)), "the bearer is not echoed");
  } finally {
    await temp.cleanup();
  }
});
