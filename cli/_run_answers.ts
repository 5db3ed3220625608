/**
 * `automation-runtime run pending|approve|respond`: the tool requests of a run (or of every run:
 * the inbox), with the SDK. Each command prints the service's answer as JSON on stdout;
 * `run pending --follow` then prints the activity feed a JSON object a line. `runCommand` in
 * `run.ts` dispatches to them and turns failures into one line on stderr.
 *
 * @module
 */
import { parseArgs, type ParsedArgs, UsageError } from "./_args.ts";
import { argSpecOf, commandHelp } from "./_help.ts";
import { clientFromEnvironment, idempotencyKeyFlag } from "./_client.ts";
import { printOut } from "./_output.ts";
import { readStdinText } from "./_stdin.ts";

/** Largest tool result read from standard input: the service's default body limit. */
const MAX_CONTENT_BYTES = 1024 * 1024;
const ID = /^[\x21-\x7e]{1,256}$/;

function help(sub: string): number {
  printOut(commandHelp(`run ${sub}`));
  return 0;
}

function printJson(value: unknown): void {
  printOut(JSON.stringify(value, null, 2));
}

function idsOf(parsed: ParsedArgs, count: 1 | 2): string[] {
  const names = ["run ID", "TOOL_USE_ID"];
  const ids = parsed.positionals.slice(0, count);
  for (let i = 0; i < count; i++) {
    const id = ids[i];
    if (id === undefined) throw new UsageError("run", `Missing ${names[i]}`);
    if (!ID.test(id) || id === "." || id === "..") {
      throw new UsageError("run", `The ${names[i]} must be 1 to 256 printable characters`);
    }
  }
  return ids;
}

/** `run pending [ID] [--follow]`. */
export async function pendingCommand(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("run pending"));
  if (parsed.help) return help("pending");
  const follow = parsed.booleans.has("follow");
  if (parsed.positionals.length > 0) {
    if (follow) throw new UsageError("run", "--follow follows the inbox: give no run ID");
    const [runId] = idsOf(parsed, 1);
    const client = await clientFromEnvironment();
    printJson({ pending: await client.runs.pending(runId) });
    return 0;
  }
  const client = await clientFromEnvironment();
  const first = await client.runs.inbox();
  const pending = [...first.pending];
  for (let cursor = first.nextCursor; cursor !== null;) {
    const page = await client.runs.inbox({ cursor });
    pending.push(...page.pending);
    cursor = page.nextCursor;
  }
  const inbox = { pending, activitySeq: first.activitySeq };
  if (!follow) {
    printJson(inbox);
    return 0;
  }
  printOut(JSON.stringify(inbox));
  for await (const change of client.runs.activity({ after: first.activitySeq })) {
    printOut(JSON.stringify(change));
  }
  return 0;
}

/** `run approve ID TOOL_USE_ID (--allow | --deny [--message M])`. */
export async function approveCommand(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("run approve"));
  if (parsed.help) return help("approve");
  const [runId, toolUseId] = idsOf(parsed, 2);
  const allow = parsed.booleans.has("allow");
  const deny = parsed.booleans.has("deny");
  if (allow === deny) throw new UsageError("run", "Give exactly one of --allow and --deny");
  const message = parsed.strings.get("message");
  if (message !== undefined && !deny) throw new UsageError("run", "--message goes with --deny");
  if (message !== undefined && message === "") {
    throw new UsageError("run", "--message must not be empty");
  }
  const idempotencyKey = idempotencyKeyFlag("run", parsed.strings.get("idempotency-key"));
  const client = await clientFromEnvironment();
  printJson(
    await client.runs.confirmTool(runId, {
      toolUseId,
      result: allow ? "allow" : "deny",
      ...(message !== undefined ? { denyMessage: message } : {}),
    }, { idempotencyKey }),
  );
  return 0;
}

/** `run respond ID TOOL_USE_ID` with the content JSON on standard input. */
export async function respondCommand(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("run respond"));
  if (parsed.help) return help("respond");
  const [runId, toolUseId] = idsOf(parsed, 2);
  const idempotencyKey = idempotencyKeyFlag("run", parsed.strings.get("idempotency-key"));
  if (Deno.stdin.isTerminal()) {
    throw new UsageError("run", "Pipe the result's content blocks (JSON) on standard input");
  }
  const text = await readStdinText(MAX_CONTENT_BYTES);
  let content: unknown;
  try {
    content = JSON.parse(text);
  } catch {
    throw new UsageError("run", "Standard input is not JSON: give an array of content blocks");
  }
  if (
    !Array.isArray(content) ||
    !content.every((block) =>
      typeof block === "object" && block !== null && !Array.isArray(block) &&
      typeof block.type === "string"
    )
  ) {
    throw new UsageError(
      "run",
      "Standard input must be a JSON array of content blocks with a type",
    );
  }
  const client = await clientFromEnvironment();
  printJson(
    await client.runs.respondCustomTool(runId, {
      toolUseId,
      content,
      ...(parsed.booleans.has("error") ? { isError: true } : {}),
    }, { idempotencyKey }),
  );
  return 0;
}
