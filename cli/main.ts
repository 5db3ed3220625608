/**
 * The `automation-runtime` command line: argument dispatch only.
 *
 * Exit codes: 0 on success, 1 on a runtime failure, 2 on a usage error. Errors are one line on
 * stderr. No command takes a token as an argument. The commands, their flags and their help are
 * declared once, in the command table (`command_table.ts`).
 *
 * @example
 * ```sh
 * deno task cli init
 * deno task start
 * AUTOMATION_RUNTIME_TOKEN=... deno task cli principal list
 * AUTOMATION_RUNTIME_TOKEN=... deno task cli run start --agent agent_01 --message "Hello"
 * ```
 *
 * @module
 */
import { UsageError } from "./_args.ts";
import { printOut, reportError } from "./_output.ts";
// `serve` is imported, not loaded on demand: each `import()` builds a module graph of its own,
// which cost the service about 2.5 ms of its start. The client commands load theirs on demand.
import { serveCommand } from "./serve.ts";

/**
 * Dispatches `args` (without the program name) to a command and returns the exit code.
 *
 * @example
 * ```ts ignore
 * import { main } from "./main.ts";
 * Deno.exit(await main(["--help"]));
 * ```
 */
export async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  try {
    switch (command) {
      case undefined:
        throw new UsageError("", "Missing command");
      case "--help":
      case "-h":
      case "help":
        printOut((await import("./_help.ts")).mainHelp());
        return 0;
      case "init":
        return await (await import("./init.ts")).initCommand(rest);
      case "serve":
        return await serveCommand(rest);
      case "demo":
        return await (await import("./demo.ts")).demoCommand(rest);
      case "principal":
        return await (await import("./principal.ts")).principalCommand(rest);
      case "provider":
        return await (await import("./provider.ts")).providerCommand(rest);
      case "run":
        return await (await import("./run.ts")).runCommand(rest);
      case "audit":
        return await (await import("./audit.ts")).auditCommand(rest);
      case "usage":
        return await (await import("./usage.ts")).usageCommand(rest);
      case "call":
        return await (await import("./call.ts")).callCommand(rest);
      case "token":
        return await (await import("./token.ts")).tokenCommand(rest);
      default:
        throw new UsageError("", `Unknown command ${command.slice(0, 40)}`);
    }
  } catch (error) {
    return reportError(error);
  }
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
