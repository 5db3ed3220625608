/**
 * Client commands print no `Download …` lines once Deno's cache is warm.
 *
 * Deno prefetches, in the background, the registry document (packument) of every npm package a
 * module graph names, and a short-lived process exits before it is saved: every run of a command
 * whose graph named one printed `Download https://registry.npmjs.org/…` again (with the package
 * tarballs cached, as `serve` leaves them). The client commands' graphs name none until they
 * stream, so an empty DENO_DIR stays quiet from the first run on; were one named again, the
 * second run would print its `Download` line.
 */
import assert from "node:assert/strict";
import { CLI_PERMISSIONS, REPO_ROOT } from "../support/cli.ts";

Deno.test("client commands print no Download lines on a warm cache", async () => {
  const denoDir = await Deno.makeTempDir({ prefix: "art-denodir-" });
  const home = await Deno.makeTempDir({ prefix: "art-cli-" });
  // A service that answers at once, so each command exits a few milliseconds after its start.
  const service = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) =>
      new URL(request.url).pathname === "/v1/principals"
        ? Response.json({ principals: [], nextCursor: null })
        : Response.json({ interfaceVersion: "2026-07-23" }),
  );
  try {
    const env = {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: home,
      XDG_CONFIG_HOME: `${home}/cfg`,
      DENO_DIR: denoDir,
      NO_COLOR: "1",
      AUTOMATION_RUNTIME_URL: `http://127.0.0.1:${service.addr.port}`,
      AUTOMATION_RUNTIME_TOKEN: `art_${"t".repeat(43)}`,
    };
    const run = async (args: string[]) => {
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", ...CLI_PERMISSIONS, "cli/main.ts", ...args],
        cwd: REPO_ROOT,
        env,
        clearEnv: true,
        stdin: "null",
      }).output();
      return { code: output.code, stderr: new TextDecoder().decode(output.stderr) };
    };
    for (const args of [["principal", "list"], ["call", "GET", "/v1/runtime"]]) {
      // The first run fills the cache; the second finds it warm.
      await run(args);
      const second = await run(args);
      assert.equal(second.code, 0, second.stderr);
      assert.equal(second.stderr, "", `${args.join(" ")}: stderr on a warm cache`);
    }
  } finally {
    await service.shutdown();
    await Deno.remove(home, { recursive: true });
    await Deno.remove(denoDir, { recursive: true });
  }
});
