/**
 * The command line face of a settings table (`server/settings.ts`): the flags a command accepts,
 * their values resolved with the environment, and the options block of its help, all derived
 * from the table.
 *
 * @module
 */
import {
  resolveSettings,
  type Setting,
  SettingError,
  type SettingTable,
  type SettingValues,
} from "../server/settings.ts";
import { parseArgs, UsageError } from "./_args.ts";

/** Options of {@linkcode parseSettingArgs}. */
export interface SettingArgsOptions<S extends SettingTable> {
  /** Command name for usage errors (`serve`). */
  command: string;
  /** The command's settings. */
  settings: S;
  /** The environment the variables are read from. */
  env: Readonly<Record<string, string | undefined>>;
}

/** What {@linkcode parseSettingArgs} found: help was asked for, or the resolved settings. */
export type SettingArgs<S extends SettingTable> =
  | { readonly help: true }
  | { readonly help: false; readonly settings: SettingValues<S> };

/**
 * Parses a command's arguments against its settings table and resolves every setting (flag,
 * else environment variable, else default). An unknown, repeated or invalid flag is a
 * {@linkcode UsageError}; an invalid variable an `Error` naming it. With `--help` nothing else is
 * read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SERVE_SETTINGS } from "../server/settings.ts";
 * import { parseSettingArgs } from "./_settings.ts";
 * const parsed = parseSettingArgs(["--port", "0"], {
 *   command: "serve",
 *   settings: SERVE_SETTINGS,
 *   env: {},
 * });
 * assert.equal(parsed.help, false);
 * if (!parsed.help) assert.equal(parsed.settings.port, 0);
 * ```
 */
export function parseSettingArgs<S extends SettingTable>(
  args: string[],
  options: SettingArgsOptions<S>,
): SettingArgs<S> {
  const flags = Object.values(options.settings).flatMap((setting) =>
    setting.flag === undefined ? [] : [setting.flag]
  );
  const parsed = parseArgs(args, { command: options.command, string: flags });
  if (parsed.help) return { help: true };
  try {
    return {
      help: false,
      settings: resolveSettings(options.settings, { flags: parsed.strings, env: options.env }),
    };
  } catch (error) {
    if (error instanceof SettingError && error.origin === "flag") {
      throw new UsageError(options.command, error.message);
    }
    throw error;
  }
}

/** Where the text of a help line starts. */
const HELP_COLUMN = 23;
/** Where help lines are wrapped. */
export const HELP_WIDTH = 96;

/**
 * The options block of a command's help: one entry a flag, its help line followed by what it
 * accepts and where its default comes from.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SERVE_SETTINGS } from "../server/settings.ts";
 * import { settingsHelp } from "./_settings.ts";
 * assert.match(settingsHelp(SERVE_SETTINGS), /^ {2}--port P {13}port to bind/m);
 * ```
 */
export function settingsHelp(settings: SettingTable): string {
  const blocks: string[] = [];
  for (const setting of Object.values(settings)) {
    if (setting.flag === undefined) continue;
    blocks.push(optionLines(`--${setting.flag} ${setting.placeholder}`, helpText(setting)));
  }
  return blocks.join("\n");
}

/**
 * One entry of an options block: `head` (such as `--port P`) indented by two, its text from
 * column 23 (on the next line when the head is longer), wrapped at 96 columns. Backticks are
 * dropped: they mark code in `docs/cli.md`, a terminal shows the words alone.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { optionLines } from "./_settings.ts";
 * assert.equal(optionLines("--force", "replace `it`"), "  --force              replace it");
 * ```
 */
export function optionLines(head: string, text: string): string {
  const indent = " ".repeat(HELP_COLUMN);
  const lines: string[] = [];
  let line = indent;
  const flag = `  ${head}`;
  if (flag.length < HELP_COLUMN) line = flag.padEnd(HELP_COLUMN);
  else lines.push(flag);
  let empty = true;
  for (const word of text.replaceAll("`", "").split(" ")) {
    if (!empty && line.length + 1 + word.length > HELP_WIDTH) {
      lines.push(line);
      line = indent;
      empty = true;
    }
    line += empty ? word : ` ${word}`;
    empty = false;
  }
  lines.push(line);
  return lines.join("\n");
}

// deno-lint-ignore no-explicit-any
function helpText(setting: Setting<any, any>): string {
  const from = [
    setting.env === undefined ? [] : [`$${setting.env}`],
    setting.providerFile === undefined ? [] : ["the provider file"],
    [setting.defaultText],
  ].flat().join(", else ");
  const accepts = setting.parser.accepts === undefined ? "" : `${setting.parser.accepts}; `;
  return `${setting.help} (${accepts}default: ${from})`;
}
