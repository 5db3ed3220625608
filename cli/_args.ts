/**
 * A small strict argument parser for the CLI: long flags only (`--name value`, `--name=value`),
 * `-h` for help, positionals in order, anything unknown is a usage error.
 *
 * @module
 */

/** A mistake in how a command was invoked; the CLI exits with code 2. */
export class UsageError extends Error {
  /** Stable error code. */
  readonly code = "usage" as const;
  /** The command whose help explains the right usage, such as `principal issue`. */
  readonly command: string;

  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { UsageError } from "./_args.ts";
   * const error = new UsageError("init", "--ttl-days must be an integer from 1 to 3650");
   * assert.equal(error.command, "init");
   * ```
   */
  constructor(command: string, message: string) {
    super(message);
    this.name = "UsageError";
    this.command = command;
  }
}

/** Which flags a command accepts. */
export interface ArgSpec {
  /** Command name for messages. */
  command: string;
  /** Flags that take a value. */
  string?: readonly string[];
  /** Flags that take no value. */
  boolean?: readonly string[];
  /** Largest number of positionals (default 0). */
  maxPositionals?: number;
}

/** Parsed arguments. */
export interface ParsedArgs {
  /** `--help` or `-h` was given. */
  help: boolean;
  /** Values of string flags. */
  strings: Map<string, string>;
  /** Boolean flags that were given. */
  booleans: Set<string>;
  /** Positionals in order. */
  positionals: string[];
}

/**
 * Parses `args` against `spec`. Throws {@linkcode UsageError} on an unknown flag, a repeated
 * flag, a missing value or too many positionals. After `--help` nothing else is checked.
 *
 * @example
 * ```ts
 * import { parseArgs } from "./_args.ts";
 * const parsed = parseArgs(["--ttl-days", "7", "--force"], {
 *   command: "init",
 *   string: ["ttl-days"],
 *   boolean: ["force"],
 * });
 * console.log(parsed.strings.get("ttl-days"), parsed.booleans.has("force")); // "7" true
 * ```
 */
export function parseArgs(args: readonly string[], spec: ArgSpec): ParsedArgs {
  const result: ParsedArgs = {
    help: false,
    strings: new Map(),
    booleans: new Set(),
    positionals: [],
  };
  if (args.includes("--help") || args.includes("-h")) {
    result.help = true;
    return result;
  }
  const strings = new Set(spec.string ?? []);
  const booleans = new Set(spec.boolean ?? []);
  let onlyPositionals = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (onlyPositionals || !arg.startsWith("-") || arg === "-") {
      result.positionals.push(arg);
      continue;
    }
    if (arg === "--") {
      onlyPositionals = true;
      continue;
    }
    if (!arg.startsWith("--")) {
      throw new UsageError(spec.command, `Unknown option ${arg.slice(0, 40)}`);
    }
    const equals = arg.indexOf("=");
    const name = arg.slice(2, equals < 0 ? undefined : equals);
    if (strings.has(name)) {
      if (result.strings.has(name)) throw new UsageError(spec.command, `--${name} given twice`);
      let value: string | undefined;
      if (equals >= 0) value = arg.slice(equals + 1);
      else if (i + 1 < args.length && !args[i + 1].startsWith("--")) value = args[++i];
      if (value === undefined || value === "") {
        throw new UsageError(spec.command, `--${name} needs a value`);
      }
      result.strings.set(name, value);
    } else if (booleans.has(name)) {
      if (equals >= 0) throw new UsageError(spec.command, `--${name} takes no value`);
      result.booleans.add(name);
    } else {
      throw new UsageError(spec.command, `Unknown option --${name.slice(0, 40)}`);
    }
  }
  if (result.positionals.length > (spec.maxPositionals ?? 0)) {
    const extra = result.positionals[spec.maxPositionals ?? 0];
    throw new UsageError(spec.command, `Unexpected argument ${extra.slice(0, 40)}`);
  }
  return result;
}

/**
 * Parses an integer flag value within `[min, max]`, or throws {@linkcode UsageError}.
 *
 * @example
 * ```ts
 * import { parseIntegerFlag } from "./_args.ts";
 * console.log(parseIntegerFlag("30", { command: "init", flag: "ttl-days", min: 1, max: 3650 }));
 * ```
 */
export function parseIntegerFlag(
  value: string,
  options: { command: string; flag: string; min: number; max: number },
): number {
  const number = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(number) || number < options.min || number > options.max) {
    throw new UsageError(
      options.command,
      `--${options.flag} must be an integer from ${options.min} to ${options.max}`,
    );
  }
  return number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Checks a principal id given on the command line (a lower-case UUID) and answers it, or throws
 * {@linkcode UsageError} naming `what` (`--principal`, say).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkPrincipalId, UsageError } from "./_args.ts";
 * const id = "0b7c1a52-3f1d-4d8e-9b0a-2c4e6f8a1b3d";
 * assert.equal(checkPrincipalId(id, "audit", "--principal"), id);
 * assert.throws(() => checkPrincipalId("ABC", "audit", "--principal"), UsageError);
 * ```
 */
export function checkPrincipalId(value: string, command: string, what: string): string {
  if (!UUID.test(value)) throw new UsageError(command, `${what} must be a lower-case UUID`);
  return value;
}
