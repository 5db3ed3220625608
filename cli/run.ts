/**
 * `automation-runtime run start|list|get|send|cancel|watch|pending|approve|respond`: runs of managed
 * agents through the runtime service, with the SDK. Each command prints the service's answer as
 * JSON on stdout; `watch` (and `start --follow`) print the run's events one JSON object a line, as
 * they come, and exit 0 when the run completed, 1 when it failed or was cancelled.
 *
 * Mutating commands (`start`, `send`, `cancel`) send an idempotency key: a fresh random one per
 * invocation (the SDK reuses it for its own retries), or `--idempotency-key KEY` so that a
 * script that reruns a command after a failure or a timeout does not start, send or cancel
 * twice: the same key with the same request replays the first answer.
 *
 * @module
 */
import {
  type ListRunsParams,
  RUN_STATES,
  type RuntimeServiceClient,
  RuntimeServiceError,
  type StartRunBody,
} from "../sdk/mod.ts";
import {
  checkPrincipalId,
  parseArgs,
  type ParsedArgs,
  parseIntegerFlag,
  UsageError,
} from "./_args.ts";
import { argSpecOf, commandHelp, groupHelp } from "./_help.ts";
import { clientFromEnvironment, describeServiceError, idempotencyKeyFlag } from "./_client.ts";
import { printOut, reportError } from "./_output.ts";
import { readStdinText } from "./_stdin.ts";
import { approveCommand, pendingCommand, respondCommand } from "./_run_answers.ts";

/** Largest message read from standard input: the service's default body limit. */
const MAX_MESSAGE_BYTES = 1024 * 1024;

const ID = /^[\x21-\x7e]{1,256}$/;

/**
 * Runs `run` with the arguments after the word `run` and returns the exit code: 0 on success,
 * 1 when the service refused or could not be reached, 2 on a usage error.
 *
 * @example
 * ```ts ignore
 * import { runCommand } from "./run.ts";
 * Deno.exit(await runCommand(["get", "sesn_01"]));
 * ```
 */
export async function runCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  try {
    switch (sub) {
      case "--help":
      case "-h":
        printOut(groupHelp("run"));
        return 0;
      case "start":
        return await start(rest);
      case "list":
        return await list(rest);
      case "get":
        return await get(rest);
      case "send":
        return await send(rest);
      case "cancel":
        return await cancel(rest);
      case "watch":
        return await watch(rest);
      case "pending":
        return await pendingCommand(rest);
      case "approve":
        return await approveCommand(rest);
      case "respond":
        return await respondCommand(rest);
      case undefined:
        throw new UsageError(
          "run",
          "Missing subcommand: start, list, get, send, cancel, watch, pending, approve or respond",
        );
      default:
        throw new UsageError("run", `Unknown subcommand ${sub.slice(0, 40)}`);
    }
  } catch (error) {
    return reportError(error instanceof RuntimeServiceError ? describeServiceError(error) : error);
  }
}

async function start(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("run start"));
  if (parsed.help) return help("start");
  const agent = idFlag(parsed, "agent");
  const environment = idFlag(parsed, "environment");
  const title = parsed.strings.get("title");
  const idempotencyKey = idempotencyKeyFlag("run", parsed.strings.get("idempotency-key"));
  const input = await messageOf(parsed);
  const body: StartRunBody = { input };
  if (title !== undefined) body.title = title;
  if (agent !== undefined || environment !== undefined) {
    body.metadata = {};
    if (agent !== undefined) body.metadata.agent_id = agent;
    if (environment !== undefined) body.metadata.environment_id = environment;
  }
  const client = await clientFromEnvironment();
  const record = await client.runs.start(body, { idempotencyKey });
  if (!parsed.booleans.has("follow")) {
    printJson(record);
    return 0;
  }
  printOut(JSON.stringify(record));
  return await follow(client, record.runId, 0);
}

async function watch(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("run watch"));
  if (parsed.help) return help("watch");
  const runId = runIdOf(parsed);
  const afterText = parsed.strings.get("after");
  const after = afterText === undefined
    ? 0
    : parseIntegerFlag(afterText, { command: "run", flag: "after", min: 0, max: 2 ** 52 });
  return await follow(await clientFromEnvironment(), runId, after);
}

/** Prints a run's events a line each until its terminal event; the exit code follows it. */
async function follow(client: RuntimeServiceClient, runId: string, after: number): Promise<number> {
  let last = "";
  for await (const event of client.runs.events(runId, { after })) {
    printOut(JSON.stringify(event));
    last = event.type;
  }
  return last === "run.completed" ? 0 : 1;
}

async function list(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("run list"));
  if (parsed.help) return help("list");
  const state = parsed.strings.get("state");
  if (state !== undefined && !(RUN_STATES as readonly string[]).includes(state)) {
    throw new UsageError("run", `--state must be one of ${RUN_STATES.join(", ")}`);
  }
  const limitText = parsed.strings.get("limit");
  const limit = limitText === undefined
    ? undefined
    : parseIntegerFlag(limitText, { command: "run", flag: "limit", min: 1, max: 100 });
  const principalId = parsed.strings.get("principal");
  if (principalId !== undefined) checkPrincipalId(principalId, "run", "--principal");
  const cursor = parsed.strings.get("cursor");
  const all = parsed.booleans.has("all");
  if (all && cursor !== undefined) throw new UsageError("run", "Give either --all or --cursor");
  const params = { limit, state: state as ListRunsParams["state"], principalId };
  const client = await clientFromEnvironment();
  if (all) {
    const runs = [];
    for await (const run of client.runs.listAll(params)) runs.push(run);
    printJson({ runs, nextCursor: null });
  } else {
    printJson(await client.runs.list({ ...params, cursor }));
  }
  return 0;
}

async function get(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("run get"));
  if (parsed.help) return help("get");
  const runId = runIdOf(parsed);
  const client = await clientFromEnvironment();
  printJson(await client.runs.get(runId));
  return 0;
}

async function send(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("run send"));
  if (parsed.help) return help("send");
  const runId = runIdOf(parsed);
  const idempotencyKey = idempotencyKeyFlag("run", parsed.strings.get("idempotency-key"));
  const input = await messageOf(parsed);
  const client = await clientFromEnvironment();
  printJson(await client.runs.send(runId, { input }, { idempotencyKey }));
  return 0;
}

async function cancel(args: string[]): Promise<number> {
  const parsed = parseArgs(args, argSpecOf("run cancel"));
  if (parsed.help) return help("cancel");
  const runId = runIdOf(parsed);
  const idempotencyKey = idempotencyKeyFlag("run", parsed.strings.get("idempotency-key"));
  const client = await clientFromEnvironment();
  printJson(await client.runs.cancel(runId, { idempotencyKey }));
  return 0;
}

function help(sub: string): number {
  printOut(commandHelp(`run ${sub}`));
  return 0;
}

function printJson(value: unknown): void {
  printOut(JSON.stringify(value, null, 2));
}

function runIdOf(parsed: ParsedArgs): string {
  const [runId] = parsed.positionals;
  if (runId === undefined) throw new UsageError("run", "Missing run ID");
  if (!ID.test(runId) || runId === "." || runId === "..") {
    throw new UsageError("run", "The run ID must be 1 to 256 printable characters");
  }
  return runId;
}

function idFlag(parsed: ParsedArgs, flag: string): string | undefined {
  const value = parsed.strings.get(flag);
  if (value !== undefined && !ID.test(value)) {
    throw new UsageError("run", `--${flag} must be 1 to 256 printable characters`);
  }
  return value;
}

/**
 * The message of `start` and `send`: `--message`, else standard input when it is not a terminal,
 * without the one line break that ends a piped line.
 */
async function messageOf(parsed: ParsedArgs): Promise<string> {
  const flag = parsed.strings.get("message");
  if (flag !== undefined) return flag;
  if (Deno.stdin.isTerminal()) {
    throw new UsageError("run", "Give the message with --message or pipe it on standard input");
  }
  const text = await readStdinText(MAX_MESSAGE_BYTES);
  if (text.trim() === "") {
    throw new UsageError("run", "No message: standard input is empty; give --message TEXT");
  }
  return text.replace(/\r?\n$/, "");
}
