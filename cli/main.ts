/**
 * The `automation-runtime` command line: argument dispatch only.
 *
 * Exit codes: 0 on success, 1 on a runtime failure, 2 on a usage error. Errors are one line on
 * stderr. No command takes a token as an argument.
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
import { printOut, PROGRAM, reportError } from "./_output.ts";
// `serve` is imported, not loaded on demand: each `import()` builds a module graph of its own,
// which cost the service about 2.5 ms of its start. The client commands load theirs on demand.
import { serveCommand } from "./serve.ts";

/** Help text of the program. */
export const MAIN_HELP: string = `Usage: ${PROGRAM} <command> [options]

Commands:
  init                   Generate the bootstrap credential and write the secret file
  serve                  Run the runtime service
  principal issue        Issue a scoped principal (prints its one-time bearer)
  principal revoke ID    Revoke a principal
  principal list         List principals
  provider init          Store the provider API key (read from stdin) for serve
  run start              Start a run of an agent (message from --message or stdin)
  run list               List runs, newest first
  run get ID             Show a run
  run send ID            Send a follow-up message to a run
  run cancel ID          Cancel a run
  run watch ID           Print a run's events as they come (exit 0: completed)
  audit list             List audit log entries

Run \`${PROGRAM} <command> --help\` for the options of a command.
Client commands read the bearer from AUTOMATION_RUNTIME_TOKEN (else the secret file) and the
service URL from AUTOMATION_RUNTIME_URL (default http://127.0.0.1:7777).`;

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
        printOut(MAIN_HELP);
        return 0;
      case "init":
        return await (await import("./init.ts")).initCommand(rest);
      case "serve":
        return await serveCommand(rest);
      case "principal":
        return await (await import("./principal.ts")).principalCommand(rest);
      case "provider":
        return await (await import("./provider.ts")).providerCommand(rest);
      case "run":
        return await (await import("./run.ts")).runCommand(rest);
      case "audit":
        return await (await import("./audit.ts")).auditCommand(rest);
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
