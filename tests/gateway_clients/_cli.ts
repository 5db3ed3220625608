/**
 * Runs the real CLI as a subprocess like `tests/support/cli.ts` does, with standard input
 * either closed or fed from a string.
 *
 * @module
 */
import { CLI_PERMISSIONS, type CliResult, REPO_ROOT } from "../support/cli.ts";

/** Options of {@linkcode runCliWithInput}. */
export interface RunCliWithInputOptions {
  /** The whole environment of the subprocess. */
  env: Record<string, string>;
  /** Text written to standard input, then closed; absent: standard input is /dev/null. */
  stdin?: string;
  /** Kill the process after this many ms (default 30000). */
  timeoutMs?: number;
}

/** Runs `cli/main.ts` with `args`, feeding `stdin`, and collects its output. */
export async function runCliWithInput(
  args: readonly string[],
  options: RunCliWithInputOptions,
): Promise<CliResult> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...CLI_PERMISSIONS, `${REPO_ROOT}cli/main.ts`, ...args],
    cwd: REPO_ROOT,
    env: options.env,
    clearEnv: true,
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, options.timeoutMs ?? 30_000);
  try {
    const output = await child.output();
    if (timedOut) throw new Error(`CLI ${args.join(" ")} did not exit in time`);
    const decoder = new TextDecoder();
    return {
      code: output.code,
      stdout: decoder.decode(output.stdout),
      stderr: decoder.decode(output.stderr),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** The non-empty lines of `text`. */
export function lines(text: string): string[] {
  return text.split("\n").filter((line) => line !== "");
}
