/**
 * Output helpers shared by the CLI commands: whole-line writes and the one-line error report.
 *
 * @module
 */
import { UsageError } from "./_args.ts";

/** Name of the executable, used in messages. */
export const PROGRAM = "automation-runtime";

function writeAll(target: { writeSync(p: Uint8Array): number }, text: string): void {
  const bytes = new TextEncoder().encode(text);
  let written = 0;
  while (written < bytes.length) written += target.writeSync(bytes.subarray(written));
}

/**
 * Writes one line to stdout.
 *
 * @example
 * ```ts
 * import { printOut } from "./_output.ts";
 * printOut("hello");
 * ```
 */
export function printOut(line: string): void {
  writeAll(Deno.stdout, line + "\n");
}

/**
 * Writes one line to stderr.
 *
 * @example
 * ```ts
 * import { printErr } from "./_output.ts";
 * printErr("note: something happened");
 * ```
 */
export function printErr(line: string): void {
  writeAll(Deno.stderr, line + "\n");
}

/**
 * Reports a failure as one line on stderr and returns the exit code: 2 for a
 * {@linkcode UsageError}, 1 for anything else.
 *
 * @example
 * ```ts
 * import { reportError } from "./_output.ts";
 * const code = reportError(new Error("Server unreachable"));
 * console.log(code); // 1
 * ```
 */
export function reportError(error: unknown): number {
  const message = error instanceof Error ? error.message : String(error);
  const line = message.replace(/\s*[\r\n]+\s*/g, " ").trim() || "Unexpected failure";
  if (error instanceof UsageError) {
    const help = error.command === "" ? PROGRAM : `${PROGRAM} ${error.command}`;
    printErr(`${PROGRAM}: ${line} (see \`${help} --help\`)`);
    return 2;
  }
  printErr(`${PROGRAM}: ${line}`);
  return 1;
}
