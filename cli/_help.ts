/**
 * What the command line derives from its command table (`command_table.ts`): the program's
 * help, each command's and each group's help, and the argument spec each command parses with.
 *
 * @module
 */
import type { ArgSpec } from "./_args.ts";
import { HELP_WIDTH, optionLines, settingsHelp } from "./_settings.ts";
import {
  COMMANDS,
  type CommandSpec,
  commandSpec,
  DEFAULT_URL,
  PROGRAM,
  synopsis,
  TOKEN_VARIABLE,
  URL_VARIABLE,
} from "./command_table.ts";

/** `text` wrapped at the help width, each line after the first indented by `indent`. */
function wrap(text: string, indent = ""): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.replaceAll("`", "").split(" ")) {
    if (line !== "" && line.length + 1 + word.length > HELP_WIDTH) {
      lines.push(line);
      line = indent + word;
    } else {
      line = line === "" ? word : `${line} ${word}`;
    }
  }
  lines.push(line);
  return lines.join("\n");
}

/** The name and positionals of a command, as the command list shows them. */
function heading(spec: CommandSpec): string {
  return [spec.name, ...spec.positionals].join(" ");
}

/**
 * The help of the program: its commands from the table, each with its summary.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mainHelp } from "./_help.ts";
 * assert.match(mainHelp(), /^ {2}run approve ID TOOL_USE_ID +Allow or deny/m);
 * ```
 */
export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((spec) => heading(spec).length)) + 2;
  const list = COMMANDS.map((spec) => `  ${heading(spec).padEnd(width)}${spec.summary}`);
  return [
    `Usage: ${PROGRAM} <command> [options]`,
    "",
    "Commands:",
    ...list,
    "",
    `Run \`${PROGRAM} <command> --help\` for the options of a command.`,
    wrap(
      `Client commands read the bearer from ${TOKEN_VARIABLE} (else the secret file) and the ` +
        `service URL from ${URL_VARIABLE} (default ${DEFAULT_URL}).`,
    ),
  ].join("\n");
}

function optionsOf(spec: CommandSpec): string {
  if (spec.settings !== undefined) return settingsHelp(spec.settings);
  return spec.flags.map((flag) => {
    const head = flag.placeholder === undefined
      ? `--${flag.name}`
      : `--${flag.name} ${flag.placeholder}`;
    const extra = [
      ...(flag.required ? ["required"] : []),
      ...(flag.default !== undefined ? [`default: ${flag.default}`] : []),
    ];
    return optionLines(head, extra.length === 0 ? flag.help : `${flag.help} (${extra.join("; ")})`);
  }).join("\n");
}

function trailer(spec: CommandSpec): string[] {
  const codes = spec.exitCodes.map((exit) => `${exit.code} ${exit.when}`).join("; ");
  return [
    ...(spec.environment.length === 0 ? [] : [wrap(`Environment: ${spec.environment.join(", ")}`)]),
    wrap(`Exit codes: ${codes}.`),
  ];
}

/**
 * The help of one command: its synopsis, description, options, environment and exit codes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { commandHelp } from "./_help.ts";
 * assert.match(commandHelp("init"), /^ {2}--ttl-days N {9}lifetime in days/m);
 * ```
 */
export function commandHelp(name: string): string {
  const spec = commandSpec(name);
  const options = optionsOf(spec);
  return [
    wrap(`Usage: ${synopsis(spec)}`, "         "),
    "",
    wrap(spec.description),
    "",
    "Options:",
    ...(options === "" ? [] : [options]),
    optionLines("-h, --help", "show this help"),
    "",
    ...trailer(spec),
  ].join("\n");
}

/**
 * The help of a group of subcommands (`principal`, `run`, …): every synopsis, then each
 * subcommand with its summary and options.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { groupHelp } from "./_help.ts";
 * assert.match(groupHelp("principal"), /principal revoke ID/);
 * ```
 */
export function groupHelp(group: string): string {
  const specs = COMMANDS.filter((spec) => spec.name.startsWith(`${group} `));
  const blocks = specs.map((spec) => {
    const options = optionsOf(spec);
    return [
      `${heading(spec)}: ${wrap(spec.summary)}`,
      ...(options === "" ? [] : [options]),
    ].join("\n");
  });
  return [
    "Usage:",
    ...specs.map((spec) => `  ${wrap(synopsis(spec), "      ")}`),
    "",
    blocks.join("\n\n"),
    "",
    `Run \`${PROGRAM} ${group} <subcommand> --help\` for one subcommand's description.`,
    ...trailer(specs[0]),
  ].join("\n");
}

/**
 * The argument spec of a command for `parseArgs`: its flags with a placeholder take a value,
 * the others none; at most as many positionals as it declares. Usage errors name the command.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { argSpecOf } from "./_help.ts";
 * const spec = argSpecOf("principal revoke");
 * assert.deepEqual(spec.string, ["idempotency-key"]);
 * assert.equal(spec.maxPositionals, 1);
 * ```
 */
export function argSpecOf(name: string): ArgSpec {
  const spec = commandSpec(name);
  return {
    command: name,
    string: spec.flags.flatMap((flag) => flag.placeholder === undefined ? [] : [flag.name]),
    boolean: spec.flags.flatMap((flag) => flag.placeholder === undefined ? [flag.name] : []),
    maxPositionals: spec.positionals.length,
  };
}
