/**
 * CLI helpers of the gateway client tests: the shared runner (`tests/support/cli.ts`) under the
 * name these tests use, and line splitting.
 *
 * @module
 */
import { type CliResult, runCli, type RunCliOptions } from "../support/cli.ts";

/** Options of {@linkcode runCliWithInput}. */
export type RunCliWithInputOptions = RunCliOptions;

/** Runs `cli/main.ts` with `args`, feeding `options.stdin`, and collects its output. */
export function runCliWithInput(
  args: readonly string[],
  options: RunCliWithInputOptions,
): Promise<CliResult> {
  return runCli(args, options);
}

/** The non-empty lines of `text`. */
export function lines(text: string): string[] {
  return text.split("\n").filter((line) => line !== "");
}
